import LiveViewCore
import Logging

/// The GStreamer outputs of every camera (RTSP, HLS, webcam, recorder).
final class OutputSet: @unchecked Sendable {
    let options: GatewayOptions
    let logger: Logger
    var hlsRoot: String? { nil }

    init(options: GatewayOptions, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    func startServers() throws {}
    func attach(_ cam: CameraRuntime) throws {}
    func stop() {}
    func writeMetrics(into m: inout MetricsWriter, cameras: [CameraRuntime]) {}
}
