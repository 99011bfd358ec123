/// A `--camera [NAME=]URL` argument.
public struct CameraSpec: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// A real camera: `scheme://HOST[:PORT][?key=value&…]`.
        case camera(CameraURL)
        /// An emulated camera started in-process on a free loopback port.
        case emulator(vendor: String)
    }

    public var id: String
    public var source: Source

    public init(id: String, source: Source) {
        self.id = id
        self.source = source
    }

    /// Parses `[NAME=]URL`; `index` gives the default id (cam0, cam1 …).
    public static func parse(_ text: String, index: Int) throws(CameraSpecError) -> CameraSpec {
        var id = "cam\(index)"
        var url = text
        if let eq = text.firstIndex(of: "="), !text[..<eq].contains(":") {
            id = String(text[..<eq])
            url = String(text[text.index(after: eq)...])
            guard isValidID(id) else { throw .badID(id) }
        }
        let lower = url.lowercased()
        if lower.hasPrefix("emulator:") {
            let vendor = String(lower.dropFirst("emulator:".count))
            guard VendorRegistry.emulatorVendors.contains(vendor) else {
                throw .unsupported(url, "emulated vendors: \(VendorRegistry.emulatorVendors.joined(separator: ", "))")
            }
            return CameraSpec(id: id, source: .emulator(vendor: vendor))
        }
        guard let parsed = CameraURL(url) else {
            throw .badURL(url, "expected SCHEME://HOST[:PORT] with a port from 1 to 65535; schemes: \(VendorRegistry.schemes.map { "\($0)://" }.joined(separator: ", ")), or emulator:VENDOR")
        }
        guard let vendor = VendorRegistry.vendor(forScheme: parsed.scheme) else {
            throw .unsupported(url, "unknown scheme '\(parsed.scheme)'; supported: \(VendorRegistry.schemes.map { "\($0)://" }.joined(separator: ", "))")
        }
        try vendor.validate(parsed)
        return CameraSpec(id: id, source: .camera(parsed))
    }

    /// Camera ids are used in RTSP paths, file names and URLs: letters, digits, '-' and '_'.
    public static func isValidID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}

/// `scheme://host[:port][/][?k=v&…]` as the camera URLs are written.
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

    public init?(_ text: String) {
        guard let sep = text.range(of: "://") else { return nil }
        let scheme = text[..<sep.lowerBound].lowercased()
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else { return nil }
        var rest = Substring(text[sep.upperBound...])
        var query: [String: String] = [:]
        if let q = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: q)...].split(separator: "&") where !pair.isEmpty {
                let kv = pair.split(separator: "=", maxSplits: 1)
                query[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
            }
            rest = rest[..<q]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        var host = String(rest)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            let inner = String(host[host.index(after: host.startIndex)..<close])
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }
                port = p
            } else if !after.isEmpty { return nil }
            host = inner
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
            host = String(host[..<colon])
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "@" || $0 == ":" && !text.contains("[") }) else { return nil }
        self.init(scheme: scheme, host: host, port: port, query: query)
    }

    /// The port, or `fallback` when the URL gives none.
    public func port(default fallback: Int) -> Int { port ?? fallback }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        var s = "\(scheme)://\(h)"
        if let port { s += ":\(port)" }
        if !query.isEmpty { s += "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&") }
        return s
    }
}

/// Why a `--camera` argument was refused.
public enum CameraSpecError: Error, Sendable, CustomStringConvertible {
    case badID(String)
    case badURL(String, String)
    case unsupported(String, String)

    public var description: String {
        switch self {
        case .badID(let id): return "camera name '\(id)' may only use letters, digits, '-' and '_'"
        case .badURL(let u, let why): return "camera URL '\(u)': \(why)"
        case .unsupported(let u, let why): return "camera URL '\(u)': \(why)"
        }
    }
}
