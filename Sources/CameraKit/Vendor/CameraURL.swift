/// A camera URL as every vendor writes it: `scheme://HOST[:PORT][/][?key=value&…]`.
///
/// One parser for all vendors: the syntax is checked here (with an error naming the bad part),
/// the host (`host(default:)`: empty when not written) and the options are interpreted by the
/// vendor's endpoint (`option(_:)`, `checkOptions(allowed:)`).
public struct CameraURL: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    /// nil when the URL gives none (the vendor's default applies).
    public var port: Int?
    public var query: [String: String]

    public init(scheme: String, host: String, port: Int?, query: [String: String] = [:]) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.query = query
    }

    /// Lenient form: nil where `parse` throws.
    public init?(_ text: String) {
        guard let url = try? CameraURL.parse(text) else { return nil }
        self = url
    }

    /// Parses a camera URL; the error names the part that is wrong.
    public static func parse(_ text: String) throws(CameraURLError) -> CameraURL {
        guard let sep = text.range(of: "://") else {
            throw CameraURLError(text, "expected SCHEME://HOST[:PORT]")
        }
        let scheme = text[..<sep.lowerBound].lowercased()
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw CameraURLError(text, "scheme '\(scheme)' may only use letters, digits and '-'")
        }
        var rest = Substring(text[sep.upperBound...])
        // A user or password never reaches a log or an error (and no camera here takes one).
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        if let at = authority.lastIndex(of: "@") {
            let shown = "\(scheme)://***@\(text[text.index(after: at)...])"
            throw CameraURLError(shown, "a user or password in the camera URL is not supported (not shown here)")
        }
        var query: [String: String] = [:]
        if let q = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: q)...].split(separator: "&") where !pair.isEmpty {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(kv[0])
                guard !key.isEmpty else { throw CameraURLError(text, "option '\(pair)' has no name") }
                guard query[key] == nil else { throw CameraURLError(text, "option '\(key)' is given twice") }
                query[key] = kv.count > 1 ? String(kv[1]) : ""
            }
            rest = rest[..<q]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if let slash = rest.firstIndex(of: "/") {
            throw CameraURLError(text, "unexpected path '\(rest[slash...])' (a camera URL is SCHEME://HOST[:PORT][?OPTIONS])")
        }
        var host = String(rest)
        var port: Int?
        func parsePort(_ s: Substring) throws(CameraURLError) -> Int {
            guard let p = Int(s), (1...65535).contains(p) else {
                throw CameraURLError(text, "port '\(s)' must be a number from 1 to 65535")
            }
            return p
        }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw CameraURLError(text, "IPv6 host '\(host)' lacks its ']'") }
            let after = host[host.index(after: close)...]
            let inner = String(host[host.index(after: host.startIndex)..<close])
            if after.hasPrefix(":") {
                port = try parsePort(after.dropFirst())
            } else if !after.isEmpty {
                throw CameraURLError(text, "unexpected '\(after)' after the IPv6 host")
            }
            host = inner
        } else if let colon = host.lastIndex(of: ":") {
            port = try parsePort(host[host.index(after: colon)...])
            host = String(host[..<colon])
        }
        let bracketed = text.contains("[")
        if let bad = host.first(where: { $0 == " " || $0 == "@" || ($0 == ":" && !bracketed) }) {
            throw CameraURLError(text, "host '\(host)' may not contain '\(bad)'")
        }
        return CameraURL(scheme: scheme, host: host, port: port, query: query)
    }

    /// The host; a URL without one (`olympus://`, `olympus://:81`) gets `fallback`, or is refused
    /// when the vendor has no fixed address.
    public func host(default fallback: String?) throws(CameraURLError) -> String {
        if !host.isEmpty { return host }
        guard let fallback else { throw CameraURLError(description, "missing host") }
        return fallback
    }

    /// The port, or `fallback` when the URL gives none.
    public func port(default fallback: Int) -> Int { port ?? fallback }

    /// Refuses options other than `allowed` (names compared as written).
    public func checkOptions(allowed: [String]) throws(CameraURLError) {
        for key in query.keys.sorted() where !allowed.contains(key) {
            let known = allowed.isEmpty ? "this camera takes no options" : "known options: \(allowed.joined(separator: ", "))"
            throw CameraURLError(description, "unknown option '\(key)'; \(known)")
        }
    }

    /// The first of `keys` that is given, with its value.
    public func option(_ keys: String...) -> (key: String, value: String)? {
        for k in keys { if let v = query[k] { return (k, v) } }
        return nil
    }

    /// A local UDP/TCP port option (0 = any free port); nil when absent.
    public func portOption(_ keys: String...) throws(CameraURLError) -> Int? {
        for k in keys {
            guard let v = query[k] else { continue }
            guard let p = Int(v), (0...65535).contains(p) else {
                throw CameraURLError(description, "option '\(k)=\(v)' must be a port from 0 to 65535")
            }
            return p
        }
        return nil
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        var s = "\(scheme)://\(h)"
        if let port { s += ":\(port)" }
        if !query.isEmpty { s += "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&") }
        return s
    }
}

/// Why a camera URL was refused: the URL and the bad part.
public struct CameraURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var url: String
    public var reason: String

    public init(_ url: String, _ reason: String) {
        self.url = url
        self.reason = reason
    }

    public var description: String { "camera URL '\(url)': \(reason)" }
}
