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
        var target = String(rest[slash...])
        if target.isEmpty { target = "/" } else if target.first == "?" { target = "/" + target }
        guard let (h, p) = Self.splitHostPort(String(authority), defaultPort: 80) else { return nil }
        host = h
        port = p
        self.target = target
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
}
