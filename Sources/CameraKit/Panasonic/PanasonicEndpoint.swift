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

    /// The endpoint a camera URL names (options `lvport`/`udp`, `name`).
    public init(url: CameraURL) throws(CameraURLError) {
        try url.checkOptions(allowed: ["lvport", "udp", "name"])
        self.init(host: try url.host(default: nil), port: url.port(default: 80))
        if let p = try url.portOption("lvport", "udp") { liveViewPort = p }
        if let (_, raw) = url.option("name") {
            let name = PanasonicCamCGI.percentDecode(raw)
            guard !name.isEmpty else { throw CameraURLError(url.description, "option 'name' must not be empty") }
            clientName = name
        }
    }

    /// Parses `panasonic://HOST[:PORT][/][?lvport=N&name=NAME]`; nil for anything else.
    public static func parse(url text: String) -> PanasonicEndpoint? {
        guard let url = CameraURL(text), url.scheme == "panasonic" else { return nil }
        return try? PanasonicEndpoint(url: url)
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
