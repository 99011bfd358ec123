public import CameraEmulators
public import CameraKit
public import CameraWire
public import Logging
public import NIOCore

/// What a driver factory gets besides the URL.
public struct DriverContext: Sendable {
    public var group: any EventLoopGroup
    /// The camera's position in the gateway's list (for logs and port choices).
    public var cameraIndex: Int
    public var logger: Logger

    public init(group: any EventLoopGroup, cameraIndex: Int, logger: Logger) {
        self.group = group
        self.cameraIndex = cameraIndex
        self.logger = logger
    }
}

/// What an emulator factory gets: where to listen and what to show.
public struct EmulatorRequest: Sendable {
    public var host: String
    /// 0 = any free port.
    public var port: Int
    public var fps: Double
    public var width: Int
    public var height: Int
    public var group: any EventLoopGroup
    /// Prompt (default) or moody like a real body (`livegate emulate VENDOR --moody`).
    public var mood: EmulatorMood

    public init(host: String, port: Int, fps: Double, width: Int, height: Int, group: any EventLoopGroup,
                mood: EmulatorMood = .prompt) {
        self.mood = mood
        self.host = host
        self.port = port
        self.fps = fps
        self.width = width
        self.height = height
        self.group = group
    }
}

/// A camera vendor as one plug-in: everything the gateway, the CLI and the API need to know about
/// it. Gateway, CLI and API go through `Vendors` and name no vendor.
public protocol CameraVendor: Sendable {
    /// Short name: the API's `vendor`, `emulator:NAME`, `livegate emulate NAME`.
    var name: String { get }
    /// One line for help texts ("Sony Camera Remote API (JSON-RPC over HTTP)").
    var summary: String { get }
    /// URL schemes this vendor answers (the first is the one to write).
    var schemes: [String] { get }
    /// The URL syntax with its options, for help and errors.
    var urlSyntax: String { get }
    /// What livegate can do with these cameras.
    var capabilities: CameraCapabilities { get }
    /// The common properties the vendor maps.
    var properties: [PropertyName] { get }
    /// Live-view wire formats for `livegate inspect`.
    var wireFormats: [WireFormat] { get }
    /// SSDP recogniser for `livegate discover` (nil: the vendor is not found by SSDP).
    var ssdp: SSDPMatcher? { get }
    /// Whether `makeEmulator` gives an emulator.
    var hasEmulator: Bool { get }

    /// Checks a URL's host, port and options; the error names the bad part.
    func check(_ url: CameraURL) throws(CameraURLError)
    /// The driver for a checked URL.
    func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver
    /// A loopback camera speaking this vendor's protocol (nil when there is none).
    func makeEmulator(_ request: EmulatorRequest) throws -> (any CameraEmulator)?
    /// Why a capability is missing, for the API's 501 answers.
    func unsupportedReason(_ capability: CameraCapabilities) -> String
    /// The plug-in for what the camera turned out to be, once its driver knows (`driverVendor` is
    /// the driver's `vendor`): a generic scheme (`ptpip://`) names no dialect, the camera does.
    /// Every other plug-in is itself.
    func resolved(driverVendor: String) -> any CameraVendor
}

extension CameraVendor {
    public var wireFormats: [WireFormat] { [] }
    public var ssdp: SSDPMatcher? { nil }
    public var hasEmulator: Bool { false }
    public func makeEmulator(_ request: EmulatorRequest) throws -> (any CameraEmulator)? { nil }
    public func unsupportedReason(_ capability: CameraCapabilities) -> String { genericUnsupportedReason(capability) }
    public func resolved(driverVendor: String) -> any CameraVendor { self }

    /// "shutter is not available for Panasonic LUMIX cameras".
    public func genericUnsupportedReason(_ capability: CameraCapabilities) -> String {
        let what = CameraCapabilities.named.first { $0.capability == capability }?.name ?? "this"
        return "\(what) is not available for \(summary) cameras"
    }
}
