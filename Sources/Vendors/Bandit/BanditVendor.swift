public import CameraEmulators
public import CameraKit
public import CameraWire

/// TomTom Bandit (REST over HTTP, viewfinder as UDP datagrams).
public struct BanditVendor: CameraVendor {
    public init() {}
    public var name: String { "bandit" }
    public var summary: String { "TomTom Bandit" }
    public var schemes: [String] { ["bandit"] }
    public var urlSyntax: String { "bandit://HOST[:PORT][?udp=PORT]" }
    public var capabilities: CameraCapabilities { [.liveView, .shutter, .transfer, .files, .events] }
    public var properties: [PropertyName] { [.whiteBalance] }
    public var wireFormats: [WireFormat] { [.banditUDP] }
    public var hasEmulator: Bool { true }

    public func check(_ url: CameraURL) throws(CameraURLError) {
        _ = try BanditEndpoint(url: url)
    }

    public func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver {
        BanditDriver(endpoint: try BanditEndpoint(url: url), group: context.group,
                     cameraIndex: context.cameraIndex, logger: context.logger)
    }

    public func makeEmulator(_ r: EmulatorRequest) throws -> (any CameraEmulator)? {
        BanditEmulator(host: r.host, port: r.port, fps: r.fps, source: try TestPatternSource(width: r.width, height: r.height),
                       group: r.group, sentFrameHistory: 0, mood: r.mood)
    }

    public func unsupportedReason(_ capability: CameraCapabilities) -> String {
        capability == .touchAF || capability == .afAreas
            ? "the TomTom Bandit is a fixed-focus camera" : genericUnsupportedReason(capability)
    }
}
