/// Where a TomTom Bandit is: `bandit://HOST[:PORT][?udp=PORT]`.
///
/// REST is `http://HOST:PORT/api/...` (the camera uses port 80 at 192.168.1.101); `udp` is the local
/// port the gateway binds for the viewfinder datagrams (default 4001, 0 = any free port).
public struct BanditEndpoint: Sendable, Hashable, CustomStringConvertible {
    public static let defaultHost = "192.168.1.101"
    public static let defaultRESTPort = 80
    public static let defaultViewfinderPort = 4001

    public var host: String
    public var port: Int
    /// Local UDP port for the viewfinder stream (0 = let the system pick one).
    public var viewfinderPort: Int

    public init(host: String = BanditEndpoint.defaultHost, port: Int = BanditEndpoint.defaultRESTPort,
                viewfinderPort: Int = BanditEndpoint.defaultViewfinderPort) {
        self.host = host
        self.port = port
        self.viewfinderPort = viewfinderPort
    }

    /// Parses `bandit://HOST[:PORT][/][?udp=PORT]`; nil for anything else (other scheme, bad port,
    /// unknown query key).
    public static func parse(url text: String) -> BanditEndpoint? {
        guard text.lowercased().hasPrefix("bandit://") else { return nil }
        var rest = Substring(text.dropFirst("bandit://".count))
        var query: Substring = ""
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { return nil }
        guard let (host, port) = HTTPURL.splitHostPort(String(rest), defaultPort: defaultRESTPort) else { return nil }
        var endpoint = BanditEndpoint(host: host, port: port)
        for item in query.split(separator: "&") where !item.isEmpty {
            let kv = item.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0] == "udp", let p = Int(kv[1]), (0...65535).contains(p) else { return nil }
            endpoint.viewfinderPort = p
        }
        return endpoint
    }

    /// `http://HOST:PORT` + `target`.
    public func url(_ target: String) -> HTTPURL { HTTPURL(host: host, port: port, target: target) }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let udp = viewfinderPort == Self.defaultViewfinderPort ? "" : "?udp=\(viewfinderPort)"
        return "bandit://\(h):\(port)\(udp)"
    }
}
