/// Where a LUMIX camera is and how to talk to it:
/// `panasonic://HOST[:PORT][?lvport=N&name=NAME&dlnaport=N]`. `PORT` is the `cam.cgi` HTTP port
/// (default 80); `lvport` the UDP port the gateway binds for the live view (default 49152; 0 = any
/// free port); `dlnaport` the camera's UPnP port, where its card is listed (default 60606).
public struct PanasonicEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var liveViewPort: Int
    /// The name shown in the camera's "connect?" prompt.
    public var clientName: String
    /// The camera's UPnP port (ContentDirectory `/Server0/CDS_control`).
    public var dlnaPort: Int

    public static let defaultLiveViewPort = 49152
    public static let defaultDLNAPort = 60606

    public init(host: String, port: Int = 80, liveViewPort: Int = PanasonicEndpoint.defaultLiveViewPort,
                clientName: String = "livegate", dlnaPort: Int = PanasonicEndpoint.defaultDLNAPort) {
        self.host = host
        self.dlnaPort = dlnaPort
        self.port = port
        self.liveViewPort = liveViewPort
        self.clientName = clientName
    }

    /// The endpoint a camera URL names (options `lvport`/`udp`, `name`, `dlnaport`).
    public init(url: CameraURL) throws(CameraURLError) {
        try url.checkOptions(allowed: ["lvport", "udp", "name", "dlnaport"])
        self.init(host: try url.host(default: nil), port: url.port(default: 80))
        if let p = try url.portOption("lvport", "udp") { liveViewPort = p }
        if let p = try url.portOption("dlnaport") {
            guard p != 0 else { throw CameraURLError(url.description, "option 'dlnaport' must be a port from 1 to 65535") }
            dlnaPort = p
        }
        if let (_, raw) = url.option("name") {
            let name = PanasonicCamCGI.percentDecode(raw)
            guard !name.isEmpty else { throw CameraURLError(url.description, "option 'name' must not be empty") }
            clientName = name
        }
    }

    /// Parses `panasonic://HOST[:PORT][/][?lvport=N&name=NAME&dlnaport=N]`; nil for anything else.
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
