internal import CGStreamer
internal import CGStreamerShim
import Dispatch
import Foundation
import LiveViewCore
public import Logging

/// HLS on demand: per camera a pipeline `appsrc ! hlssink2` that takes the camera's shared H.264
/// (`CameraGraph.encoded`, as a segmented consumer) and writes `<root>/<camera>/index.m3u8` and
/// MPEG-TS segments. Nothing runs until a player asks: the first request for a camera starts its
/// HLS pipeline (and with it the encoder, if no one else uses it), `request` waits until the first
/// playlist exists, and the pipeline stops `linger` after the last request for a playlist or segment.
/// Segments split only at the encoder's 1 s grid of key frames.
public final class HLSOutput: Sendable {
    /// HLS settings.
    public struct Configuration: Sendable {
        /// Root folder; each camera writes into `<root>/<camera>/`.
        public var root: String
        /// Segment target duration in seconds (the encoder's key frame grid is 1 s).
        public var targetDuration: Int = 1
        /// Segments listed in the playlist.
        public var playlistLength: Int = 5
        /// Segments kept on disk.
        public var maxFiles: Int = 10
        /// How long HLS keeps running after the last request.
        public var linger: Duration = .seconds(10)
        /// How long a first request waits for the first playlist.
        public var startTimeout: Duration = .seconds(3)

        /// Settings with defaults and the given root folder.
        public init(root: String) {
            self.root = root
        }
    }

    /// What a request found.
    public enum Readiness: Sendable, Equatable {
        /// The playlist exists.
        case ready
        /// Still starting: answer 503 with Retry-After.
        case starting
        /// No such camera.
        case unknownCamera
    }

    /// The settings in use.
    public let configuration: Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let cameras: HLSCameraList
    private let reaper: Task<Void, Never>

    /// An HLS output without cameras.
    public init(runtime: GStreamerRuntime, configuration: Configuration, logger: Logger = Logger(label: "livegate.hls")) {
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
        let cameras = HLSCameraList()
        self.cameras = cameras
        let linger = configuration.linger.nanoseconds
        // Stops a camera's HLS once nobody asked for its playlist or segments for `linger`.
        reaper = Task.detached {
            var started = cameras.started.wakeups.makeAsyncIterator()
            while !Task.isCancelled {
                // No camera's HLS running: no timer either, until a request starts one.
                if !cameras.all.contains(where: \.isRunning) {
                    guard await started.next() != nil else { return }
                    continue
                }
                try? await Task.sleep(for: .milliseconds(500))
                let now = MonotonicClock.nanos()
                for c in cameras.all where c.isRunning && now &- c.lastRequest > linger {
                    c.stop()
                }
            }
        }
    }

    deinit { stop() }

    /// The playlist path of a camera.
    public func playlistPath(for id: String) -> String { "\(configuration.root)/\(id)/index.m3u8" }

    /// Serves HLS for a camera's graph (its folder is created; stale files from an earlier run go).
    public func addCamera(_ graph: CameraGraph) throws {
        let id = graph.configuration.id
        precondition(!id.isEmpty && !id.contains("/"), "camera id must be one path segment")
        let dir = "\(configuration.root)/\(id)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        HLSCamera.clean(dir)
        let camera = HLSCamera(graph: graph, directory: dir, configuration: configuration, runtime: runtime, logger: logger)
        cameras.map.withLock { $0[id] = camera }
    }

    /// A player asked for a camera's playlist (`playlist: true`) or a segment: starts HLS when it is
    /// not running and, for a playlist, waits (up to `startTimeout`) until the first one is written.
    public func request(camera id: String, playlist: Bool) async -> Readiness {
        guard let camera = cameras.map.withLock({ $0[id] }) else { return .unknownCamera }
        camera.touch()
        if !camera.isRunning {
            camera.start()
            cameras.started.wake()
        }
        guard playlist else { return .ready }
        let deadline = MonotonicClock.nanos() + configuration.startTimeout.nanoseconds
        while !FileManager.default.fileExists(atPath: playlistPath(for: id)) {
            if MonotonicClock.nanos() >= deadline { return .starting }
            try? await Task.sleep(for: .milliseconds(50))
            camera.touch()
        }
        return .ready
    }

    /// True while a camera's HLS pipeline runs.
    public func isRunning(camera id: String) -> Bool { cameras.map.withLock { $0[id] }?.isRunning ?? false }

    /// Stops a camera's HLS (EOS, so the playlist gets its end tag) and forgets it.
    public func removeCamera(id: String) {
        cameras.map.withLock { $0.removeValue(forKey: id) }?.stop()
    }

    /// Ends the reaper and waits until it has (a stop that follows never races it).
    public func endReaper() async {
        reaper.cancel()
        await reaper.value
    }

    /// Stops every camera.
    public func stop() {
        reaper.cancel()
        for c in cameras.map.withLock({ c -> [HLSCamera] in let v = Array(c.values); c.removeAll(); return v }) { c.stop() }
    }

    /// One entry per camera ("hls").
    public func stats() -> [OutputStats] {
        cameras.map.withLock { Array($0.values) }.map { $0.stats() }.sorted { $0.camera < $1.camera }
    }
}

/// The cameras of an HLS output (shared with its reaper task).
final class HLSCameraList: Sendable {
    let map = Mutex<[String: HLSCamera]>([:])
    var all: [HLSCamera] { map.withLock { Array($0.values) } }
    /// Wakes the idle reaper when a request started a camera's HLS.
    let started = WakeSignal()
}

/// One camera's HLS: started by requests, stopped by the reaper.
final class HLSCamera: Sendable {
    let id: String
    private let graph: CameraGraph
    private let directory: String
    private let configuration: HLSOutput.Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private struct Running {
        var pipeline: MediaPipeline
        var source: AppSource
        var consumer: EncodedBranch.Consumer
    }
    private let running = Mutex<Running?>(nil)
    private let lastRequestAt = Atomic<UInt64>(0)
    private let startCount = Atomic<Int>(0)
    private let errors = Atomic<Int>(0)

    init(graph: CameraGraph, directory: String, configuration: HLSOutput.Configuration, runtime: GStreamerRuntime, logger: Logger) {
        self.id = graph.configuration.id
        self.graph = graph
        self.directory = directory
        self.configuration = configuration
        self.runtime = runtime
        self.logger = logger
    }

    var isRunning: Bool { running.withLock { $0 != nil } }
    var lastRequest: UInt64 { lastRequestAt.load(ordering: .relaxed) }
    func touch() { lastRequestAt.store(MonotonicClock.nanos(), ordering: .relaxed) }

    /// Starts the pipeline and joins the encoded branch (no-op when running).
    func start() {
        running.withLock { r in
            guard r == nil else { return }
            do {
                Self.clean(directory)
                let launch = try PipelineTemplates.render(PipelineTemplates.hls, [
                    "segmentPattern": PipelineTemplates.escapeQuoted(directory + "/segment%05d.ts"),
                    "playlist": PipelineTemplates.escapeQuoted(directory + "/index.m3u8"),
                    "targetDuration": "\(configuration.targetDuration)", "playlistLength": "\(configuration.playlistLength)",
                    "maxFiles": "\(configuration.maxFiles)",
                ])
                let pipeline = try MediaPipeline(launch: launch, name: "hls-\(id)", runtime: runtime, logger: logger)
                guard let src = pipeline.child("src") else { throw MediaError("HLS pipeline has no appsrc 'src'") }
                let source = AppSource(element: src)
                try pipeline.play()
                let consumer = graph.encoded.addConsumer(kind: .segmented, source: source)
                r = Running(pipeline: pipeline, source: source, consumer: consumer)
                startCount.wrappingAdd(1, ordering: .relaxed)
                logger.info("HLS started", metadata: ["camera": "\(id)", "playlist": "\(directory)/index.m3u8"])
            } catch {
                errors.wrappingAdd(1, ordering: .relaxed)
                logger.error("cannot start HLS", metadata: ["camera": "\(id)", "error": "\(error)"])
            }
        }
    }

    /// Leaves the encoded branch, ends the playlist (EOS) and removes the files.
    func stop() {
        guard let r = running.withLock({ v -> Running? in let o = v; v = nil; return o }) else { return }
        // HLS lingered (no requests for the linger) before this: the encoder need not linger again.
        graph.encoded.removeConsumer(r.consumer, lingering: false)
        r.pipeline.finish(appsrc: r.source.element, timeout: 2)
        r.pipeline.stop()
        Self.clean(directory)
        logger.info("HLS stopped (no requests)", metadata: ["camera": "\(id)"])
    }

    static func clean(_ dir: String) {
        for f in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where f.hasSuffix(".ts") || f.hasSuffix(".m3u8") {
            try? FileManager.default.removeItem(atPath: "\(dir)/\(f)")
        }
    }

    func stats() -> OutputStats {
        var s = OutputStats(output: "hls", camera: id)
        let r = running.withLock { $0 }
        s.framesOut = r?.source.pushed ?? 0
        s.errors = errors.load(ordering: .relaxed) + (r?.pipeline.errorCount ?? 0)
        s.clients = r == nil ? 0 : 1
        return s
    }
}
