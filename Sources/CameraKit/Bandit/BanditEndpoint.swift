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

    /// The endpoint a camera URL names (option `udp`: the local viewfinder port).
    public init(url: CameraURL) throws(CameraURLError) {
        try url.checkOptions(allowed: ["udp"])
        self.init(host: try url.host(default: nil), port: url.port(default: Self.defaultRESTPort))
        if let p = try url.portOption("udp") { viewfinderPort = p }
    }

    /// Parses `bandit://HOST[:PORT][/][?udp=PORT]`; nil for anything else (other scheme, bad port,
    /// unknown query key).
    public static func parse(url text: String) -> BanditEndpoint? {
        guard let url = CameraURL(text), url.scheme == "bandit" else { return nil }
        return try? BanditEndpoint(url: url)
    }

    /// `http://HOST:PORT` + `target`.
    public func url(_ target: String) -> HTTPURL { HTTPURL(host: host, port: port, target: target) }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let udp = viewfinderPort == Self.defaultViewfinderPort ? "" : "?udp=\(viewfinderPort)"
        return "bandit://\(h):\(port)\(udp)"
    }
}
