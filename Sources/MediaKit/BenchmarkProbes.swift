internal import CGStreamer
internal import CGStreamerShim
public import LiveViewCore
public import Logging

// Hooks for the Benchmarks package (`@_spi(Benchmarks) import MediaKit`), not API: they drive the
// RTSP output's own per-frame code (the raw mount's worker and the H.264 mount's subscriber, with
// `AppSource` wrapping frames/pictures into GStreamer buffers) into pipelines a benchmark chooses,
// e.g. `appsrc name=src … ! fakesink`, without an RTSP server or client in the process.

/// One camera's media graph (the real `CameraGraph`) whose consumers are benchmark pipelines.
@_spi(Benchmarks)
public final class RTSPMountProbe: Sendable {
    /// The graph under test.
    public let graph: CameraGraph
    private let pipelines = Mutex<[BenchPipeline]>([])
    private let runtime: GStreamerRuntime

    /// `hub` feeds the graph (the camera counts as streaming, so no slate is shown).
    public init(runtime: GStreamerRuntime, hub: FrameHub, fps: Int = 30, overlay: Bool = true,
                logger: Logger = Logger(label: "livegate.bench")) throws {
        self.runtime = runtime
        var config = CameraGraph.Configuration(id: "bench")
        config.fps = fps
        config.overlay = overlay
        graph = try CameraGraph(configuration: config, hub: hub, runtime: runtime,
                                presence: { CameraPresence(state: "streaming") }, logger: logger)
    }

    /// Starts `launch` (it must have an `appsrc name=src`) and registers its appsrc as a consumer of
    /// the JPEG branch (`h264: false`, caps image/jpeg) or the encoded branch (`h264: true`, caps
    /// video/x-h264 byte-stream).
    @discardableResult
    public func attach(launch: String, h264: Bool) throws -> BenchPipeline {
        let p = try BenchPipeline(runtime: runtime, launch: launch, name: h264 ? "bench-h264" : "bench-raw")
        guard let src = p.pipeline.child("src") else { throw MediaError("bench pipeline has no appsrc 'src'") }
        let owner = UInt(pipelines.withLock { $0.count } + 1)
        let source = AppSource(element: src, owner: owner)
        if h264 {
            _ = graph.encoded.addConsumer(kind: .stream, source: source)
        } else {
            graph.jpeg.add(source)
        }
        pipelines.withLock { $0.append(p) }
        return p
    }

    /// Frames the JPEG branch pushed into its appsrcs / buffers the encoder produced.
    public var rawFramesOut: Int { graph.jpeg.counters.out.load(ordering: .relaxed) }
    public var h264FramesOut: Int { graph.encoded.outputStats().framesOut }

    /// Stops the graph and the pipelines.
    public func stop() {
        graph.stop()
        for p in pipelines.withLock({ l in defer { l.removeAll() }; return l }) { p.stop() }
    }
}

/// A running pipeline built from a launch string (MediaKit's `MediaPipeline`).
@_spi(Benchmarks)
public final class BenchPipeline: Sendable {
    let pipeline: MediaPipeline

    init(runtime: GStreamerRuntime, launch: String, name: String) throws {
        pipeline = try MediaPipeline(launch: launch, name: name, runtime: runtime, logger: runtime.logger)
        try pipeline.play()
    }

    /// A child element by name as a `GstElement *` with a new reference (the caller unrefs it).
    public func element(named name: String) -> UnsafeMutableRawPointer? {
        pipeline.child(name).map { UnsafeMutableRawPointer($0) }
    }

    /// Errors posted on the pipeline's bus.
    public var errorCount: Int { pipeline.errorCount }

    /// Stops the pipeline.
    public func stop() { pipeline.stop() }
}
