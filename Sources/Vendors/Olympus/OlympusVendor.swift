public import CameraEmulators
public import CameraKit
public import CameraWire

/// Olympus / OM System (OI.Share HTTP control, RTP/JPEG live view over UDP).
public struct OlympusVendor: CameraVendor {
    public init() {}
    public var name: String { "olympus" }
    public var summary: String { "Olympus / OM System (OI.Share)" }
    public var schemes: [String] { ["olympus"] }
    public var urlSyntax: String {
        "olympus://[HOST][:PORT][?lvport=UDP_PORT&lvqty=640x480&afspace=jpeg|lvqty&fps=30] (the camera is 192.168.0.10:80)"
    }
    public var capabilities: CameraCapabilities { [.liveView, .afAreas, .touchAF, .shutter, .transfer, .files] }
    public var properties: [PropertyName] { PropertyName.allCases }
    public var wireFormats: [WireFormat] { [.olympusRTP] }
    public var hasEmulator: Bool { true }

    public func check(_ url: CameraURL) throws(CameraURLError) {
        _ = try OlympusEndpoint(url: url)
    }

    public func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver {
        OlympusDriver(endpoint: try OlympusEndpoint(url: url), group: context.group, cameraIndex: context.cameraIndex,
                      logger: context.logger)
    }

    public func makeEmulator(_ r: EmulatorRequest) throws -> (any CameraEmulator)? {
        var config = OlympusEmulator.Configuration()
        config.fps = r.fps
        config.mood = r.mood
        // Bodies send a 4:3 lvqty size (VGA unless asked otherwise), whatever the requested size.
        return OlympusEmulator(host: r.host, port: r.port, configuration: config,
                               source: try TestPatternSource(width: 640, height: 480), group: r.group)
    }
}
