import CameraEmulators
import CameraKit
public import Foundation
public import GatewayAPI
import LiveViewCore
public import MediaKit
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Vendors

/// The composition root: cameras (drivers or in-process emulators) → hubs → outputs, plus the
/// metrics the control API exports. Runs as a service; graceful shutdown stops the cameras and
/// finishes the recording segments.
public final class Gateway: ControlModel, Service, Sendable {
    public let options: GatewayOptions
    /// Watches the HTTP server's connections (timeouts, counts); the server is built from it.
    public let httpGuard: HTTPConnectionGuard
    let logger: Logger
    let group: any EventLoopGroup
    /// A running camera with the spec it was started from and what stops it (and its in-process
    /// emulator, if any).
    struct Camera: Sendable {
        let runtime: CameraRuntime
        let spec: CameraSpec
        /// Stops its driver and in-process emulator once (its service, a removal or the gateway's stop).
        let stopper: CameraStopper
    }
    /// The application's service group: each camera runs as a service in it (none in tests that
    /// run the gateway alone; `stop()` then stops the cameras itself).
    private let serviceGroup = Mutex<ServiceGroup?>(nil)
    /// What the services stopped, in order, at the group's shutdown.
    let shutdownOrder: ShutdownOrder
    private let runtimes = Mutex<[Camera]>([])
    private let nextIndex = Mutex(0)
    private let reloading = Mutex(false)
    private let reloadProvider = Mutex<(@Sendable () throws -> [CameraSpec])?>(nil)
    let outputs: OutputSet
    private let events: EventStream
    let captureStore: CaptureStore
    let metrics = GatewayMetrics()
    private let captureFailures = Atomic<Int>(0)
    private let capturesSaved = Mutex<[String: Int]>([:])
    private let started = Mutex(false)
    /// True from the end of `start()` (every camera and output up) until `stop()` begins: the only
    /// time a reload may add or remove cameras.
    private let running = Atomic(false)
    public let startedAt = Date()

    public init(options: GatewayOptions, logger: Logger, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.options = options
        self.httpGuard = HTTPConnectionGuard(limits: options.httpLimits)
        self.logger = logger
        self.group = group
        self.outputs = OutputSet(options: options, logger: logger)
        self.shutdownOrder = ShutdownOrder(logger: logger)
        self.captureStore = CaptureStore(root: options.capturesDirectory)
        let events = EventStream()
        self.events = events
        events.readCameras { [weak self] in self?.runtimes.withLock { $0.map(\.runtime) } ?? [] }
        outputs.recordingObserver.withLock { $0 = { events.recordingSegment($0) } }
        outputs.pushObserver.withLock { $0 = { events.push(camera: $0, $1) } }
    }

    /// A new listener of `GET /api/v1/events`.
    public func eventStream(lastEventID: Int?) -> AsyncStream<String>? { events.subscribe(lastEventID: lastEventID) }

    /// Fired once the gateway is closing: long-lived HTTP answers end on it.
    public let closing = ClosingSignal()

    /// The gateway is closing: the event stream ends for every listener (and for any that comes
    /// later) and MJPEG viewers end, each cleanly, so no client holds the shutdown.
    public func beginClosing() {
        guard !closing.isClosed else { return }
        logger.info("closing: ending event streams and MJPEG viewers")
        events.close()
        closing.close()
    }

    /// Tells the event stream's listeners at once.
    public func propertyWasSet(camera: String, name: String, value: APIValue) {
        events.propertySet(camera: camera, name: name, value: value)
    }

    public var cameras: [CameraRuntime] { runtimes.withLock { $0.map(\.runtime) } }
    public var hlsRoot: String? { outputs.hlsRoot }

    /// Starts emulators, drivers and outputs. Throws when an output cannot start (port in use…).
    public func start() async throws {
        guard !started.withLock({ v in defer { v = true }; return v }) else { return }
        let outputs = self.outputs
        try await blocking("outputs-start") { try outputs.startServers() }
        for spec in options.cameras {
            do {
                try await addCamera(spec)
            } catch {
                await stop()
                throw error
            }
        }
        running.store(true, ordering: .releasing)
    }

    /// Starts one camera (its emulator when it is one, its driver, its media graph on every output).
    func addCamera(_ spec: CameraSpec) async throws {
        let i = nextIndex.withLock { n in defer { n += 1 }; return n }
        let driver: any CameraDriver
        let url: String
        let vendor: any CameraVendor
        var emulator: (any CameraEmulator)?
        let context = DriverContext(group: group, cameraIndex: i, logger: logger)
        switch spec.source {
        case .camera(let cameraURL):
            url = cameraURL.description
            guard let v = Vendors.vendor(forScheme: cameraURL.scheme) else {
                throw CameraSpecError.unsupported(url, "unknown scheme '\(cameraURL.scheme)'")
            }
            vendor = v
            driver = try v.makeDriver(cameraURL, context: context)
        case .emulator(let name):
            let request = EmulatorRequest(host: "127.0.0.1", port: 0, fps: options.emulatorFPS,
                                          width: options.emulatorWidth, height: options.emulatorHeight, group: group)
            guard let v = Vendors.vendor(named: name), let emu = try v.makeEmulator(request) else {
                throw CameraSpecError.unsupported("emulator:\(name)", "no emulator for \(name)")
            }
            try await emu.start()
            emulator = emu
            let emuURL: CameraURL
            do { emuURL = try CameraURL.parse(emu.cameraURL) } catch {
                await emu.stop()
                throw CameraSpecError.badURL(emu.cameraURL, "emulator gave an unusable URL: \(error.reason)")
            }
            url = "emulator:\(name) (\(emu.cameraURL))"
            vendor = v
            do { driver = try v.makeDriver(emuURL, context: context) } catch {
                await emu.stop()
                throw error
            }
        }
        let cam = CameraRuntime(id: spec.id, index: i, url: url, driver: driver, hub: FrameHub(), vendor: vendor)
        let nominal: (width: Int, height: Int)? = {
            if case .emulator = spec.source { return (options.emulatorWidth, options.emulatorHeight) }
            return nil
        }()
        let encodeLatency = metrics.timer("livegate_encode_latency_seconds", camera: spec.id)
        let outputs = self.outputs
        do {
            try await blocking("attach-\(spec.id)") {
                try outputs.attach(cam, spec: spec, nominalSize: nominal,
                                   encodeLatency: { encodeLatency.recordNanoseconds(Int64(clamping: $0)) })
            }
        } catch {
            await blocking("detach-\(spec.id)") { outputs.detach(cam.id, index: i) }
            await emulator?.stop()
            throw error
        }
        if let still = driver as? any StillCapturing {
            let id = spec.id
            still.setImageSink { [weak self] event in
                guard let self else { return }
                switch event {
                case .image(let image):
                    self.store(camera: id, image)
                case .lost(let name, let reason):
                    self.captureFailures.add(1, ordering: .relaxed)
                    self.logger.error("LOST \(name) from \(id): the camera announced it but it could not be fetched: \(reason)")
                    self.events.captureFailed(camera: id, name: name, reason: reason)
                }
            }
        }
        driver.start(hub: cam.hub)
        let stopper = CameraStopper(driver: driver, emulator: emulator)
        runtimes.withLock { $0.append(Camera(runtime: cam, spec: spec, stopper: stopper)) }
        if let group = serviceGroup.withLock({ $0 }) {
            // Added after its graph's service, so a shutdown stops the camera, then its graph.
            if outputs.graph(spec.id) != nil {
                await group.addServiceUnlessShutdown(.init(service: OutputService.graph(spec.id, of: outputs, order: shutdownOrder),
                                                           successTerminationBehavior: .ignore))
            }
            await group.addServiceUnlessShutdown(.init(service: CameraService(id: spec.id, stopper: stopper, order: shutdownOrder),
                                                       successTerminationBehavior: .ignore))
        }
    }

    /// Runs every camera and its media graph as services of `group` (the application's), from the
    /// next camera started on: call it before `start()`.
    public func runCameras(in group: ServiceGroup) {
        serviceGroup.withLock { $0 = group }
    }

    /// The outputs' services for the application's group, to follow the gateway's and come before
    /// the HTTP server's: the RTSP server, then HLS and WebRTC (a shutdown stops them in reverse,
    /// after the HTTP server and before the gateway finishes the recordings).
    public var outputServices: [ServiceGroupConfiguration.ServiceConfiguration] {
        [.init(service: OutputService.rtsp(outputs, order: shutdownOrder)),
         .init(service: OutputService.httpMedia(outputs, order: shutdownOrder))]
    }

    /// What the services stopped, in order, at the group's shutdown ("camera ID", "graph ID",
    /// "http-media", "rtsp", "gateway").
    public var stoppedInOrder: [String] { shutdownOrder.stopped }

    /// Stops one camera and takes it off every output; its recording is finished cleanly.
    func removeCamera(_ id: String) async {
        guard let entry = runtimes.withLock({ list -> Camera? in
            guard let i = list.firstIndex(where: { $0.runtime.id == id }) else { return nil }
            return list.remove(at: i)
        }) else { return }
        await entry.stopper.stopDriver()
        let outputs = self.outputs
        await blocking("detach-\(id)") { outputs.detach(id, index: entry.runtime.index) }
        await entry.stopper.stopEmulator()
        entry.stopper.wasRemoved()
        metrics.cameraRemoved(id)
        logger.info("camera \(id) removed")
    }

    /// Where `reload()` reads the cameras from (the CLI sets it: the config file under the
    /// environment and the flags). Nil: nothing to reload.
    public var reloadSource: (@Sendable () throws -> [CameraSpec])? {
        get { reloadProvider.withLock { $0 } }
        set { reloadProvider.withLock { $0 = newValue } }
    }

    /// Reads the cameras again and adds, removes or restarts (when its settings changed) only the
    /// cameras that differ; the others' streams are not touched. One reload at a time.
    public func reload() async throws -> GatewayAPI.ReloadResult {
        guard let source = reloadSource else {
            throw APIError(.conflict, "nothing to reload: livegate was not started with --config")
        }
        // Before start() is done the outputs may not be up (a camera added then would get none);
        // once stop() began, a camera added would outlive it.
        guard running.load(ordering: .acquiring) else {
            throw APIError(.conflict, "livegate is starting or stopping; reload once it is running")
        }
        let wanted: [CameraSpec]
        do { wanted = try source() } catch {
            logger.error("reload refused: \(error)")
            throw APIError(.badRequest, "the configuration was not changed: \(error)")
        }
        let ids = wanted.map(\.id)
        guard Set(ids).count == ids.count else {
            throw APIError(.badRequest, "the configuration was not changed: camera names must be unique: \(ids)")
        }
        guard reloading.withLock({ r in defer { r = true }; return !r }) else {
            throw APIError(.conflict, "a reload is already running")
        }
        defer { reloading.withLock { $0 = false } }
        let current = runtimes.withLock { $0.map { ($0.runtime.id, $0.spec) } }
        var result = GatewayAPI.ReloadResult()
        for (id, spec) in current where wanted.first(where: { $0.id == id }) != spec {
            await removeCamera(id)
            result.removed.append(id)
        }
        for spec in wanted {
            if current.contains(where: { $0.0 == spec.id && $0.1 == spec }) {
                result.unchanged.append(spec.id)
                continue
            }
            try await addCamera(spec)
            result.added.append(spec.id)
        }
        logger.info("reloaded: added \(result.added), removed \(result.removed), unchanged \(result.unchanged)")
        events.reloaded(added: result.added, removed: result.removed)
        return result
    }

    /// Stops cameras, outputs (finishing recordings) and emulators.
    public func stop() async {
        beginClosing()
        running.store(false, ordering: .releasing)
        let all = runtimes.withLock { $0 }
        // Every camera at once, each waited for at most CameraStopper.driverStopLimit.
        await withTaskGroup(of: Void.self) { g in
            for cam in all {
                g.addTask {
                    if !(await cam.stopper.stopDriver()) {
                        self.logger.warning("camera \(cam.runtime.id) did not stop in time (a request to it is still open); going on without it")
                    }
                }
            }
        }
        let outputs = self.outputs
        await outputs.endReapers()
        await blocking("outputs-stop") { outputs.stop() }
        for cam in all { await cam.stopper.stopEmulator() }
    }

    /// Called once every camera and output has started (the CLI prints the URLs then).
    public var onStarted: (@Sendable (Gateway) -> Void)? {
        get { startedHandler.withLock { $0 } }
        set { startedHandler.withLock { $0 = newValue } }
    }
    private let startedHandler = Mutex<(@Sendable (Gateway) -> Void)?>(nil)

    /// Service entry: start, wait for graceful shutdown, stop.
    public func run() async throws {
        try await start()
        onStarted?(self)
        try? await gracefulShutdown()
        logger.info("shutting down")
        await stop()
        shutdownOrder.note("gateway")
    }

    public func urls(for camera: CameraRuntime) -> [String: String] {
        var u: [String: String] = [
            "rtsp": "rtsp://\(displayHost):\(rtspPort)/\(camera.id)",
            "rtspRaw": "rtsp://\(displayHost):\(rtspPort)/\(camera.id)/raw",
        ]
        if options.hls { u["hls"] = "http://\(displayHost):\(options.httpPort)/hls/\(camera.id)/index.m3u8" }
        u["whep"] = "http://\(displayHost):\(options.httpPort)/whep/\(camera.id)"
        u["mjpeg"] = "http://\(displayHost):\(options.httpPort)/mjpeg/\(camera.id)"
        u["snapshot"] = "http://\(displayHost):\(options.httpPort)/snapshot/\(camera.id).jpg"
        if let d = options.v4l2Device, camera.index == 0 { u["v4l2"] = d }
        if let n = options.pipewireNode, camera.index == 0 { u["pipewire"] = n }
        if let r = options.recordDirectory { u["recording"] = r }
        return u
    }

    /// A player asked for a camera's HLS playlist or segment.
    public func hlsRequest(camera: String, playlist: Bool) async -> HLSOutput.Readiness {
        await outputs.hlsRequest(camera: camera, playlist: playlist)
    }

    /// A camera's pushes to media servers: URL (without credentials), state, reason.
    public func pushes(camera: String) -> [PushState] {
        outputs.pushes(camera: camera).map(EventStream.pushState)
    }

    /// What runs for a camera right now: its media-graph branches and whether it shows the slate.
    public func branches(camera: String) -> [String: Bool] { outputs.branches(camera: camera) }

    /// A WebRTC viewer's offer (WHEP).
    public func whepOffer(camera: String, sdp: String) async throws(WHEPOutput.Failure) -> WHEPOutput.Answer {
        guard let whep = outputs.whep else { throw .failed("WebRTC is not available (webrtcbin or libnice missing)") }
        return try await whep.offer(camera: camera, sdp: sdp)
    }

    /// Ends a WebRTC session of `camera`; false when there is none.
    public func whepEnd(camera: String, session: String) -> Bool {
        guard let whep = outputs.whep, whep.camera(ofSession: session) == camera else { return false }
        return whep.end(session: session)
    }

    /// A new MJPEG viewer of a camera's JPEG branch.
    public func mjpegSubscribe(camera: String) -> JPEGSubscription? { outputs.graph(camera)?.jpeg.subscribe() }

    /// The RTSP port in use (the bound one when the option was 0).
    public var rtspPort: Int { outputs.rtspPort ?? options.rtspPort }

    /// Recording segments written so far for a camera.
    public func recordingPaths(camera: String) -> [String] { outputs.recordingPaths(camera: camera) }

    var displayHost: String {
        options.listen == "0.0.0.0" || options.listen == "::" ? "127.0.0.1" : options.listen
    }

    /// Saves one image; a failure is logged, counted and announced, never silent.
    @discardableResult
    func store(camera: String, _ image: CameraImage) -> SavedCapture? {
        do {
            let file = try captureStore.save(camera: camera, image: image)
            logger.info("saved \(file.path) (\(file.bytes) bytes\(image.fromBody ? ", shot on the camera" : ""))")
            capturesSaved.withLock { $0[camera, default: 0] += 1 }
            events.captureSaved(file.api)
            return file
        } catch {
            captureFailures.add(1, ordering: .relaxed)
            logger.error("could not save \(image.name) from \(camera): \(error)")
            events.captureFailed(camera: camera, name: image.name, reason: "\(error)")
            return nil
        }
    }

    public func capture(camera cam: CameraRuntime, autofocus: Bool) async throws -> [SavedCapture] {
        guard let still = cam.driver as? any StillCapturing else {
            throw CameraControlError.notSupported("capture")
        }
        let began = ContinuousClock.now
        let images = try await still.capture(autofocus: autofocus)
        var files: [SavedCapture] = []
        for image in images {
            guard let f = store(camera: cam.id, image) else {
                throw CameraControlError.unavailable("the shot was taken but \(image.name) could not be saved (see the log)")
            }
            files.append(f)
        }
        metrics.timer("livegate_capture_duration_seconds", camera: cam.id).record(duration: ContinuousClock.now - began)
        return files
    }

    public func captures(camera: String) -> [SavedCapture] { captureStore.list(camera: camera) }

    public func metricsText() -> String {
        var m = MetricsSnapshot()
        m.help("livegate_uptime_seconds", "Seconds since the gateway started.", type: "gauge")
        m.sample("livegate_uptime_seconds", [:], Date().timeIntervalSince(startedAt))
        let cams = cameras
        m.help("livegate_frames_received_total", "Frames received from the camera.", type: "counter")
        for c in cams { m.sample("livegate_frames_received_total", ["camera": c.id], Double(c.driver.stats.frames)) }
        m.help("livegate_received_bytes_total", "JPEG bytes received from the camera.", type: "counter")
        for c in cams { m.sample("livegate_received_bytes_total", ["camera": c.id], Double(c.driver.stats.bytes)) }
        m.help("livegate_camera_reconnects_total", "Reconnects to the camera.", type: "counter")
        for c in cams { m.sample("livegate_camera_reconnects_total", ["camera": c.id], Double(c.driver.stats.reconnects)) }
        m.help("livegate_datagrams_dropped_total", "Live-view datagrams dropped unread, by reason (foreign-source: not from the camera's address and stream port).", type: "counter")
        for c in cams { m.sample("livegate_datagrams_dropped_total", ["camera": c.id, "reason": "foreign-source"], Double(c.driver.stats.foreignDatagrams)) }
        m.help("livegate_af_unmatched_total", "Frames that waited for their AF information (sent after the JPEG) and went out without it.", type: "counter")
        for c in cams { m.sample("livegate_af_unmatched_total", ["camera": c.id], Double(c.driver.stats.afUnmatched)) }
        m.help("livegate_camera_frames_per_second", "Frames per second from the camera over the last second.", type: "gauge")
        for c in cams { m.sample("livegate_camera_frames_per_second", ["camera": c.id], c.driver.stats.fps) }
        m.help("livegate_camera_connected", "1 while the camera is streaming.", type: "gauge")
        for c in cams { m.sample("livegate_camera_connected", ["camera": c.id], c.driver.state == .streaming ? 1 : 0) }
        m.help("livegate_hub_published_total", "Frames published to the outputs.", type: "counter")
        for c in cams { m.sample("livegate_hub_published_total", ["camera": c.id], Double(c.hub.published)) }
        m.help("livegate_captures_saved_total", "Images saved from the camera (API and body shots).", type: "counter")
        let saved = capturesSaved.withLock { $0 }
        for c in cams { m.sample("livegate_captures_saved_total", ["camera": c.id], Double(saved[c.id] ?? 0)) }
        m.help("livegate_capture_failures_total", "Images the camera produced that could not be fetched or saved.", type: "counter")
        m.sample("livegate_capture_failures_total", [:], Double(captureFailures.load(ordering: .relaxed)))
        outputs.writeMetrics(into: &m, cameras: cams)
        httpGuard.writeMetrics(into: &m)
        return metrics.exposition(m)
    }
}
