public import CameraKit
public import JPEGKit
public import LiveViewCore
public import Vendors

/// One camera inside the gateway: its driver, its hub and what is attached.
public final class CameraRuntime: Sendable {
    public let id: String
    public let index: Int
    public let url: String
    public let driver: any CameraDriver
    public let hub: FrameHub
    /// The plug-in the camera's URL named.
    public let plugin: any CameraVendor
    /// The vendor plug-in for what the camera turned out to be (a `ptpip://` camera's dialect once
    /// DeviceInfo said it): capabilities and the reasons for what is missing.
    public var vendor: any CameraVendor { plugin.resolved(driverVendor: driver.vendor) }
    /// The camera's JPEGs with their AF areas drawn, for MJPEG viewers that ask (idle until one does).
    public let afJPEG = AFJPEGAnnotator()

    public init(id: String, index: Int, url: String, driver: any CameraDriver, hub: FrameHub, vendor: any CameraVendor) {
        self.id = id
        self.index = index
        self.url = url
        self.driver = driver
        self.hub = hub
        self.plugin = vendor
    }

    /// The turn (clockwise degrees) the camera asks for its newest frame (0 when upright).
    public var frameRotation: Int {
        guard let f = hub.latest() else { return 0 }
        defer { f.release() }
        return f.rotation
    }

    /// Size of the newest frame (0×0 before the first).
    public var frameSize: (width: Int, height: Int) {
        guard let f = hub.latest() else { return (0, 0) }
        defer { f.release() }
        return (f.width, f.height)
    }
}
