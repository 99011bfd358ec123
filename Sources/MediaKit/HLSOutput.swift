internal import CGStreamer
internal import CGStreamerShim
import Foundation
public import Logging
import Synchronization

/// HLS output: per camera a pipeline `appsrc ! videoconvert ! x264enc ! h264parse ! hlssink2` fed from
/// the camera's shared annotated stream, writing `<root>/<camera>/index.m3u8` and MPEG-TS segments
/// (`segment00001.ts` …). hlssink2 cuts at key frames, so the GOP is one second (`key-int-max = fps`)
/// and the target duration defaults to 1 s. The control server serves the folder at `/hls/<camera>/`.
public final class HLSOutput: Sendable {
    /// HLS settings.
    public struct Configuration: Sendable {
        /// Root folder; each camera writes into `<root>/<camera>/`.
        public var root: String
        /// Segment target duration in seconds.
        public var targetDuration: Int = 1
        /// Segments listed in the playlist.
        public var playlistLength: Int = 5
        /// Segments kept on disk.
        public var maxFiles: Int = 10
        /// H.264 bitrate in kbit/s.
        public var bitrateKbps: Int = 2500
        /// x264 threads.
        public var x264Threads: Int = 1

        /// Settings with defaults and the given root folder.
        public init(root: String) {
            self.root = root
        }
    }

    /// The settings in use.
    public let configuration: Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let cameras = Mutex<[String: HLSCamera]>([:])

    /// An HLS output without cameras (`addCamera` starts one pipeline per camera).
    public init(runtime: GStreamerRuntime, configuration: Configuration, logger: Logger = Logger(label: "livegate.hls")) {
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
    }

    deinit { stop() }

    /// The playlist path of a camera.
    public func playlistPath(for id: String) -> String { "\(configuration.root)/\(id)/index.m3u8" }

    /// Starts HLS for a camera (its folder is created; stale segments from an earlier run are removed).
    public func addCamera(id: String, annotate: AnnotatedStream, fps: Int = 30) throws {
        precondition(!id.isEmpty && !id.contains("/"), "camera id must be one path segment")
        let dir = "\(configuration.root)/\(id)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for f in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where f.hasSuffix(".ts") || f.hasSuffix(".m3u8") {
            try? FileManager.default.removeItem(atPath: "\(dir)/\(f)")
        }
        let fps = max(1, fps)
        let launch = try PipelineTemplates.render(PipelineTemplates.hls, [
            "fps": "\(fps)", "keyint": "\(fps * max(1, configuration.targetDuration))", "threads": "\(max(1, configuration.x264Threads))", "bitrate": "\(configuration.bitrateKbps)",
            "segmentPattern": PipelineTemplates.escapeQuoted(dir + "/segment%05d.ts"),
            "playlist": PipelineTemplates.escapeQuoted(dir + "/index.m3u8"),
            "targetDuration": "\(configuration.targetDuration)", "playlistLength": "\(configuration.playlistLength)",
            "maxFiles": "\(configuration.maxFiles)",
        ])
        let pipeline = try MediaPipeline(launch: launch, name: "hls-\(id)", runtime: runtime, logger: logger)
        guard let src = pipeline.child("src") else { throw MediaError("HLS pipeline has no appsrc 'src'") }
        try pipeline.play()
        let camera = HLSCamera(id: id, fps: fps, pipeline: pipeline, source: AppSource(element: src), annotate: annotate)
        let old = cameras.withLock { c -> HLSCamera? in
            let o = c[id]
            c[id] = camera
            return o
        }
        old?.stop()
        logger.info("HLS started", metadata: ["camera": "\(id)", "playlist": "\(dir)/index.m3u8"])
    }

    /// Stops a camera's HLS (EOS, so the playlist gets its end tag).
    public func removeCamera(id: String) {
        cameras.withLock { $0.removeValue(forKey: id) }?.stop()
    }

    /// Stops every camera.
    public func stop() {
        for c in cameras.withLock({ c -> [HLSCamera] in let v = Array(c.values); c.removeAll(); return v }) { c.stop() }
    }

    /// One entry per camera ("hls").
    public func stats() -> [OutputStats] {
        cameras.withLock { Array($0.values) }.map { $0.stats() }.sorted { $0.camera < $1.camera }
    }
}

final class HLSCamera: Sendable {
    let id: String
    private let pipeline: MediaPipeline
    private let source: AppSource
    private let annotate: AnnotatedStream
    private let subscription: AnnotatedStream.Subscription
    private let stopped = Atomic<Bool>(false)
    private let box: HLSCounterBox

    init(id: String, fps: Int, pipeline: MediaPipeline, source: AppSource, annotate: AnnotatedStream) {
        self.id = id
        self.pipeline = pipeline
        self.source = source
        self.annotate = annotate
        let duration = UInt64(1_000_000_000 / fps)
        let box = HLSCounterBox()
        self.box = box
        subscription = annotate.subscribe { pic in
            box.framesIn.wrappingAdd(1, ordering: .relaxed)
            source.ensureRawCaps(width: pic.width, height: pic.height, fps: fps)
            guard let pts = source.runningTime(arrivalNanos: pic.arrivalNanos) else { return }
            if source.push(picture: pic, pts: pts, duration: duration) { box.framesOut.wrappingAdd(1, ordering: .relaxed) }
        }
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        annotate.unsubscribe(subscription)
        pipeline.finish(appsrc: source.element, timeout: 3)
        pipeline.stop()
    }

    func stats() -> OutputStats {
        var s = OutputStats(output: "hls", camera: id)
        s.framesIn = box.framesIn.load(ordering: .relaxed)
        s.framesOut = box.framesOut.load(ordering: .relaxed)
        s.dropped = s.framesIn - s.framesOut
        s.errors = pipeline.errorCount
        return s
    }
}

final class HLSCounterBox: Sendable {
    let framesIn = Atomic<Int>(0)
    let framesOut = Atomic<Int>(0)
}
