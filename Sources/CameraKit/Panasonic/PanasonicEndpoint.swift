/// Where a LUMIX camera is and how to talk to it: `panasonic://HOST[:PORT][?lvport=N&name=NAME]`.
/// `PORT` is the `cam.cgi` HTTP port (default 80); `lvport` the UDP port the gateway binds for the
/// live view (default 49152; 0 = any free port).
public struct PanasonicEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var liveViewPort: Int
    /// The name shown in the camera's "connect?" prompt.
    public var clientName: String

    public static let defaultLiveViewPort = 49152

    public init(host: String, port: Int = 80, liveViewPort: Int = PanasonicEndpoint.defaultLiveViewPort,
                clientName: String = "livegate") {
        self.host = host
        self.port = port
        self.liveViewPort = liveViewPort
        self.clientName = clientName
    }

    /// Parses `panasonic://HOST[:PORT][/][?lvport=N&name=NAME]`; nil for anything else.
    public static func parse(url text: String) -> PanasonicEndpoint? {
        let prefix = "panasonic://"
        guard text.lowercased().hasPrefix(prefix) else { return nil }
        var rest = Substring(text.dropFirst(prefix.count))
        var query = Substring("")
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), let (host, port) = HTTPURL.splitHostPort(String(rest), defaultPort: 80) else { return nil }
        var ep = PanasonicEndpoint(host: host, port: port)
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { return nil }
            switch kv[0] {
            case "lvport", "udp":
                guard let p = Int(kv[1]), (0...65535).contains(p) else { return nil }
                ep.liveViewPort = p
            case "name":
                let name = PanasonicCamCGI.percentDecode(kv[1])
                guard !name.isEmpty else { return nil }
                ep.clientName = name
            default:
                return nil
            }
        }
        return ep
    }

    /// True when the camera is on this machine (tests, emulators): the live-view socket then binds
    /// to loopback only.
    public var isLoopback: Bool {
        host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "panasonic://\(h):\(port)"
    }
}
