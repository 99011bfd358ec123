/// A parsed `http://host[:port]/path?query` URL (the only scheme cameras speak).
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// Path with query, starting with "/".
    public var target: String

    public init(host: String, port: Int, target: String) {
        self.host = host
        self.port = port
        self.target = target
    }

    /// Parses an absolute http URL; nil for anything else.
    public init?(_ text: String) {
        guard text.lowercased().hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[rest.startIndex..<slash]
        // A fragment never goes to the server (a camera's URL with one is asked for without it).
        var target = String(rest[slash...].prefix { $0 != "#" })
        if target.isEmpty { target = "/" } else if target.first == "?" { target = "/" + target }
        guard let (h, p) = Self.splitHostPort(String(authority), defaultPort: 80) else { return nil }
        host = h
        port = p
        self.target = target
    }

    /// A URL a camera lists for one of its files, taken on `host` — the camera's own, never another
    /// host the listing names — with the listed port and path; nil when it is no usable address.
    static func listed(_ text: String, onHost host: String) -> HTTPURL? {
        guard let listed = HTTPURL(text), listed.target.hasPrefix("/"), !listed.target.contains("/../") else { return nil }
        return HTTPURL(host: host, port: listed.port, target: listed.target)
    }

    /// Splits "host", "host:port", "[v6]:port"; nil when the port is not a number in 1...65535.
    public static func splitHostPort(_ s: String, defaultPort: Int) -> (String, Int)? {
        var host = s
        var port = defaultPort
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            host = String(s[s.index(after: s.startIndex)..<close])
            let after = s[s.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }
                port = p
            } else if !after.isEmpty { return nil }
        } else if let colon = s.lastIndex(of: ":") {
            host = String(s[..<colon])
            guard let p = Int(s[s.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else { return nil }
        return (host, port)
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "http://\(h):\(port)\(target)"
    }

    /// The URL as sent: the target with every byte a URL may not carry percent-encoded (a card file
    /// called "A B#1.JPG" is asked for as `A%20B%231.JPG`, not cut at the `#`); `/`, `?`, `&`, `=`
    /// and existing `%XX` escapes stay as they are.
    public var requestString: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "http://\(h):\(port)\(Self.encodeTarget(target))"
    }

    /// A raw file path (a card's folder and file names as the camera lists them) as a URL path:
    /// every byte but unreserved ones, sub-delimiters, `:`, `@` and `/` percent-encoded, `%` and `?`
    /// included (a file called "A%41.JPG" is asked for as `A%2541.JPG`, not as "AA.JPG").
    public static func encodePath(_ raw: String) -> String {
        percentEncode(raw, keeping: pathBytes, keepEscapes: false)
    }

    /// Percent-encodes what RFC 3986 does not allow in a path or query (`#` included: a camera's
    /// target never carries a fragment); a `%` not followed by two hex digits becomes `%25`.
    static func encodeTarget(_ target: String) -> String {
        percentEncode(target, keeping: targetBytes, keepEscapes: true)
    }

    /// Bytes a path may carry as they are besides letters and digits: unreserved, sub-delimiters, `:@/`.
    private static let pathBytes = Set("-._~!$&'()*+,;=:@/".utf8)
    /// The same for a path with its query (`?`).
    private static let targetBytes = pathBytes.union("?".utf8)

    /// `text` with every byte that is not a letter, a digit or in `keeping` written as `%XX`;
    /// with `keepEscapes`, a `%` followed by two hex digits stays (an escape already made).
    private static func percentEncode(_ text: String, keeping: Set<UInt8>, keepEscapes: Bool) -> String {
        func isHex(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x66) }
        func allowed(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || keeping.contains(b)
        }
        let bytes = Array(text.utf8)
        guard bytes.contains(where: { !allowed($0) }) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + 16)
        for (i, b) in bytes.enumerated() {
            if allowed(b) || (keepEscapes && b == 0x25 && i + 2 < bytes.count && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
                out.append(b)
            } else {
                out += [0x25, hex[Int(b >> 4)], hex[Int(b & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
