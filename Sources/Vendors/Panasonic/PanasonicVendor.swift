public import CameraEmulators
public import CameraKit
public import CameraWire

/// Panasonic LUMIX (cam.cgi over HTTP, live view as UDP datagrams).
public struct PanasonicVendor: CameraVendor {
    public init() {}
    public var name: String { "panasonic" }
    public var summary: String { "Panasonic LUMIX" }
    public var schemes: [String] { ["panasonic"] }
    public var urlSyntax: String { "panasonic://HOST[:PORT][?lvport=UDP_PORT&name=NAME&dlnaport=UPNP_PORT]" }
    public var capabilities: CameraCapabilities { [.liveView, .afAreas, .touchAF, .shutter, .transfer, .files] }
    public var properties: [PropertyName] { PropertyName.allCases }
    public var wireFormats: [WireFormat] { [.panasonicUDP] }
    public var ssdp: SSDPMatcher? { .panasonic }
    public var hasEmulator: Bool { true }

    public func check(_ url: CameraURL) throws(CameraURLError) {
        _ = try PanasonicEndpoint(url: url)
    }

    public func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver {
        PanasonicDriver(endpoint: try PanasonicEndpoint(url: url), group: context.group,
                        cameraIndex: context.cameraIndex, logger: context.logger)
    }

    public func makeEmulator(_ r: EmulatorRequest) throws -> (any CameraEmulator)? {
        // LUMIX bodies send a VGA (4:3) live view, whatever the requested size.
        var config = PanasonicEmulator.Configuration()
        config.fps = r.fps
        config.mood = r.mood
        return PanasonicEmulator(host: r.host, port: r.port, configuration: config,
                                 source: try TestPatternSource(width: 640, height: 480), group: r.group)
    }
}
