import CameraEmulators
import CameraKit
public import Foundation
import LiveViewCore
public import MediaKit
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization
import Vendors

/// The composition root: cameras (drivers or in-process emulators) → hubs → outputs, plus the
/// metrics the control API exports. Runs as a service; graceful shutdown stops the cameras and
/// finishes the recording segments.
public final class Gateway: ControlModel, Service, @unchecked Sendable {
    public let options: GatewayOptions
    let logger: Logger
    let group: any EventLoopGroup
    private let runtimes = Locked<[CameraRuntime]>([])
    private let emulators = Locked<[any CameraEmulator]>([])
    let outputs: OutputSet
    private let events: EventStream
    let captureStore: CaptureStore
    private let captureFailures = Atomic<Int>(0)
    private let capturesSaved = Locked<[String: Int]>([:])
    private let started = Locked(false)
    public let startedAt = Date()

    public init(options: GatewayOptions, logger: Logger, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.options = options
        self.logger = logger
        self.group = group
        self.outputs = OutputSet(options: options, logger: logger)
        self.captureStore = CaptureStore(root: options.capturesDirectory)
        let runtimes = self.runtimes
        let events = EventStream(cameras: { runtimes.withLock { $0 } })
        self.events = events
        outputs.recordingObserver.withLock { $0 = { events.recordingSegment($0) } }
    }

    /// A new listener of `GET /api/v1/events`.
    public func eventStream(lastEventID: Int?) -> AsyncStream<String>? { events.subscribe(lastEventID: lastEventID) }

    /// Tells the event stream's listeners at once.
    public func propertyWasSet(camera: String, name: String, value: Any) {
        events.propertySet(camera: camera, name: name, value: value)
    }

    public var cameras: [CameraRuntime] { runtimes.withLock { $0 } }
    public var hlsRoot: String? { outputs.hlsRoot }

    /// Starts emulators, drivers and outputs. Throws when an output cannot start (port in use…).
    public func start() async throws {
        guard !started.withLock({ v in defer { v = true }; return v }) else { return }
        try outputs.startServers()
        var list: [CameraRuntime] = []
        for (i, spec) in options.cameras.enumerated() {
            let driver: any CameraDriver
            let url: String
            let vendor: any CameraVendor
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
                emulators.withLock { $0.append(emu) }
                let emuURL: CameraURL
                do { emuURL = try CameraURL.parse(emu.cameraURL) } catch {
                    throw CameraSpecError.badURL(emu.cameraURL, "emulator gave an unusable URL: \(error.reason)")
                }
                url = "emulator:\(name) (\(emu.cameraURL))"
                vendor = v
                driver = try v.makeDriver(emuURL, context: context)
            }
            let cam = CameraRuntime(id: spec.id, index: i, url: url, driver: driver, hub: FrameHub(), vendor: vendor)
            let nominal: (width: Int, height: Int)? = {
                if case .emulator = spec.source { return (options.emulatorWidth, options.emulatorHeight) }
                return nil
            }()
            try outputs.attach(cam, nominalSize: nominal)
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
            list.append(cam)
        }
        runtimes.withLock { $0 = list }
    }

    /// Stops cameras, outputs (finishing recordings) and emulators.
    public func stop() async {
        for cam in cameras { await cam.driver.stop() }
        outputs.stop()
        for emu in emulators.withLock({ $0 }) { await emu.stop() }
    }

    /// Called once every camera and output has started (the CLI prints the URLs then).
    public var onStarted: (@Sendable (Gateway) -> Void)?

    /// Service entry: start, wait for graceful shutdown, stop.
    public func run() async throws {
        try await start()
        onStarted?(self)
        try? await gracefulShutdown()
        logger.info("shutting down")
        await stop()
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
        if let r = options.recordDirectory { u["recording"] = r }
        return u
    }

    /// A player asked for a camera's HLS playlist or segment.
    public func hlsRequest(camera: String, playlist: Bool) async -> HLSOutput.Readiness {
        await outputs.hlsRequest(camera: camera, playlist: playlist)
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
            events.captureSaved(file.json)
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
        let images = try await still.capture(autofocus: autofocus)
        var files: [SavedCapture] = []
        for image in images {
            guard let f = store(camera: cam.id, image) else {
                throw CameraControlError.unavailable("the shot was taken but \(image.name) could not be saved (see the log)")
            }
            files.append(f)
        }
        return files
    }

    public func captures(camera: String) -> [SavedCapture] { captureStore.list(camera: camera) }

    public func metricsText() -> String {
        var m = MetricsWriter()
        m.help("livegate_up_seconds", "Seconds since the gateway started.", type: "gauge")
        m.sample("livegate_up_seconds", [:], Date().timeIntervalSince(startedAt))
        let cams = cameras
        m.help("livegate_camera_frames_total", "Frames received from the camera.", type: "counter")
        for c in cams { m.sample("livegate_camera_frames_total", ["camera": c.id], Double(c.driver.stats.frames)) }
        m.help("livegate_camera_bytes_total", "JPEG bytes received from the camera.", type: "counter")
        for c in cams { m.sample("livegate_camera_bytes_total", ["camera": c.id], Double(c.driver.stats.bytes)) }
        m.help("livegate_camera_dropped_frames_total", "Damaged or incomplete frames dropped at ingest.", type: "counter")
        for c in cams { m.sample("livegate_camera_dropped_frames_total", ["camera": c.id], Double(c.driver.stats.drops)) }
        m.help("livegate_camera_reconnects_total", "Reconnects to the camera.", type: "counter")
        for c in cams { m.sample("livegate_camera_reconnects_total", ["camera": c.id], Double(c.driver.stats.reconnects)) }
        m.help("livegate_camera_fps", "Frames per second over the last second.", type: "gauge")
        for c in cams { m.sample("livegate_camera_fps", ["camera": c.id], c.driver.stats.fps) }
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
        return m.text
    }
}

/// Builds Prometheus text exposition.
public struct MetricsWriter {
    public private(set) var text = ""
    public init() {}

    public mutating func help(_ name: String, _ help: String, type: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    public mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        var l = ""
        if !labels.isEmpty {
            l = "{" + labels.sorted { $0.key < $1.key }.map { k, v in
                let esc = v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    .replacingOccurrences(of: "\n", with: "\\n")
                return "\(k)=\"\(esc)\""
            }.joined(separator: ",") + "}"
        }
        let v = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        text += "\(name)\(l) \(v)\n"
    }
}
