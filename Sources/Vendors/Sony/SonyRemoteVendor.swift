public import CameraEmulators
public import CameraKit
public import CameraWire

/// Sony Camera Remote API (JSON-RPC over HTTP, liveview over HTTP).
public struct SonyRemoteVendor: CameraVendor {
    public init() {}
    public var name: String { "sony" }
    public var summary: String { "Sony Camera Remote API" }
    public var schemes: [String] { ["sony"] }
    public var urlSyntax: String { "sony://HOST[:PORT] (JSON-RPC at http://HOST:PORT/sony/camera, default port 8080)" }
    public var capabilities: CameraCapabilities { [.liveView, .afAreas, .touchAF, .shutter, .transfer, .events, .files] }
    public var properties: [PropertyName] { PropertyName.allCases }
    public var wireFormats: [WireFormat] { [.sonyRemote] }
    public var ssdp: SSDPMatcher? { .sony }
    public var hasEmulator: Bool { true }

    public func check(_ url: CameraURL) throws(CameraURLError) {
        try url.checkOptions(allowed: [])
        _ = try url.host(default: nil)
    }

    public func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver {
        try check(url)
        return SonyDriver(endpoint: HTTPURL(host: url.host, port: url.port(default: 8080), target: "/sony/camera"),
                          group: context.group, cameraIndex: context.cameraIndex, logger: context.logger)
    }

    public func makeEmulator(_ r: EmulatorRequest) throws -> (any CameraEmulator)? {
        SonyEmulator(host: r.host, port: r.port, fps: r.fps, source: try TestPatternSource(width: r.width, height: r.height),
                     group: r.group, mood: r.mood)
    }
}
