public import CameraWire

/// Where an Olympus / OM System body is and how to talk to it:
/// `olympus://[HOST][:PORT][/][?lvport=UDP_PORT&lvqty=640x480&afspace=jpeg|lvqty&fps=N]`.
///
/// `HOST` defaults to the cameras' fixed address 192.168.0.10, `PORT` (the `*.cgi` HTTP port) to 80.
/// `lvport` is the local UDP port the live view is sent to (0 = any free port, the default);
/// `lvqty` the live-view size asked for in `switch_cammode` (default 0640x0480). `afspace` says
/// in which pixels the camera's AF/face coordinates are: `jpeg` (default: those of the JPEG it
/// sends, which is the lvqty size on real bodies) or `lvqty` (scaled from the requested lvqty to
/// the JPEG when the two differ — the literal reading of the OPC spec; UNCONFIRMED by a capture).
/// `fps` is the live view's frame rate (default 30; not stated by the camera, olympus.md §6.1): the
/// RTP timestamp counts frames, and a frame's PTS is its number at this rate.
public struct OlympusEndpoint: Sendable, Hashable, CustomStringConvertible {
    public enum AFSpace: String, Sendable, Hashable {
        case jpeg
        case lvqty
    }

    public var host: String
    public var port: Int
    public var liveViewPort: Int
    public var liveViewSize: OlympusLiveViewSize
    public var afSpace: AFSpace
    /// The live view's frame rate, for PTS from the frame numbers.
    public var fps: Double = 30

    public static let defaultHost = "192.168.0.10"

    public init(host: String = OlympusEndpoint.defaultHost, port: Int = 80, liveViewPort: Int = 0,
                liveViewSize: OlympusLiveViewSize = .vga, afSpace: AFSpace = .jpeg) {
        self.host = host
        self.port = port
        self.liveViewPort = liveViewPort
        self.liveViewSize = liveViewSize
        self.afSpace = afSpace
    }

    /// The endpoint a camera URL names (host default 192.168.0.10; options `lvport`/`udp`, `lvqty`, `afspace`, `fps`).
    public init(url: CameraURL) throws(CameraURLError) {
        try url.checkOptions(allowed: ["lvport", "udp", "lvqty", "afspace", "fps"])
        self.init(host: try url.host(default: Self.defaultHost), port: url.port(default: 80))
        if let p = try url.portOption("lvport", "udp") { liveViewPort = p }
        if let (_, v) = url.option("lvqty") {
            guard let s = OlympusLiveViewSize(v) else {
                throw CameraURLError(url.description, "option 'lvqty=\(v)' must be WIDTHxHEIGHT, e.g. 640x480")
            }
            liveViewSize = s
        }
        if let (_, v) = url.option("afspace") {
            guard let s = AFSpace(rawValue: v) else {
                throw CameraURLError(url.description, "option 'afspace=\(v)' must be jpeg or lvqty")
            }
            afSpace = s
        }
        if let (_, v) = url.option("fps") {
            guard let f = Double(v), f > 0, f <= 120 else {
                throw CameraURLError(url.description, "option 'fps=\(v)' must be a number in (0, 120]")
            }
            fps = f
        }
    }

    /// Parses an `olympus://…` URL; nil for anything else or a bad option.
    public static func parse(url text: String) -> OlympusEndpoint? {
        guard let url = CameraURL(text), url.scheme == "olympus" else { return nil }
        return try? OlympusEndpoint(url: url)
    }

    /// True when the camera is on this machine (tests, emulators).
    public var isLoopback: Bool {
        host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// True when `host` is a dotted IPv4 address (then only datagrams from it are accepted).
    public var isIPv4Literal: Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "olympus://\(h):\(port)"
    }
}
