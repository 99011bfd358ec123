import LiveViewCore
import Logging
import MediaKit
import ServiceLifecycle

/// The outputs as services of the application's group, next to the gateway, the HTTP server, the
/// reloader and the cameras. They are started by `Gateway.start()` (so a port in use stops the
/// program with one clear message before anything serves); each service ends its part on the
/// group's graceful shutdown, in the group's reverse order:
///
/// cameras (driver, in-process emulator) → each camera's media graph → reloader → HTTP server →
/// HLS and WebRTC → RTSP server → gateway (finishes the recordings, stops webcams and pushes).
///
/// A camera's media graph is the service of its branches: the JPEG, picture and encoded branches
/// start and stop with their consumers under the graph (a branch lives seconds to hours and may
/// come back many times a minute, which a group of services that each end once does not model),
/// and the graph's service stops all of them at shutdown. A graph removed by a reload is stopped at
/// once; its service then only waits for the shutdown (a service that ends while the group shuts
/// down others fails the group).
struct OutputService: Service {
    /// How the shutdown order names it ("graph cam0", "rtsp", "http-media").
    let name: String
    let order: ShutdownOrder
    /// What ends it; runs once the group's graceful shutdown reaches the service.
    let stop: @Sendable () async -> Void

    func run() async {
        try? await gracefulShutdown()
        await stop()
        order.note(name)
    }

    /// A camera's media graph: its branches, stopped on a thread of their own. The graph is looked
    /// up then: a camera removed by a reload has none left (the service holds none meanwhile).
    static func graph(_ camera: String, of outputs: OutputSet, order: ShutdownOrder) -> OutputService {
        OutputService(name: "graph \(camera)", order: order) {
            if let graph = outputs.graph(camera) { await blocking("graph-stop-\(camera)") { graph.stop() } }
        }
    }

    /// The RTSP server (every camera's mounts).
    static func rtsp(_ outputs: OutputSet, order: ShutdownOrder) -> OutputService {
        OutputService(name: "rtsp", order: order) { await blocking("rtsp-stop") { outputs.stopRTSPServer() } }
    }

    /// The media served over HTTP beside the API: HLS and WebRTC (their reapers, then their sessions).
    static func httpMedia(_ outputs: OutputSet, order: ShutdownOrder) -> OutputService {
        OutputService(name: "http-media", order: order) { await outputs.stopHTTPMedia() }
    }
}

/// What stopped in which order at shutdown (logged, and read by the tests).
final class ShutdownOrder: Sendable {
    private let list = Mutex<[String]>([])
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func note(_ what: String) {
        list.withLock { $0.append(what) }
        logger.debug("stopped: \(what)")
    }

    var stopped: [String] { list.withLock { $0 } }
}
