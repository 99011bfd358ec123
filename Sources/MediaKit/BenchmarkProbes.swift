internal import CGStreamer
internal import CGStreamerShim
public import LiveViewCore
public import Logging

// Hooks for the Benchmarks package (`@_spi(Benchmarks) import MediaKit`), not API: they drive the
// RTSP output's own per-frame code (the raw mount's worker and the H.264 mount's subscriber, with
// `AppSource` wrapping frames/pictures into GStreamer buffers) into pipelines a benchmark chooses,
// e.g. `appsrc name=src … ! fakesink`, without an RTSP server or client in the process.

/// One camera's RTSP mounts (the real `RTSPCamera`) whose appsrcs are benchmark pipelines.
@_spi(Benchmarks)
public final class RTSPMountProbe: @unchecked Sendable {
    private let camera: RTSPCamera
    private var pipelines: [BenchPipeline] = []
    private let runtime: GStreamerRuntime

    /// `hub` feeds the raw mount (through its pacer and worker thread), `annotate` the H.264 mount.
    public init(runtime: GStreamerRuntime, hub: FrameHub, annotate: AnnotatedStream, fps: Int = 30,
                logger: Logger = Logger(label: "livegate.bench")) throws {
        self.runtime = runtime
        camera = try RTSPCamera(id: "bench", fps: fps, hub: hub, annotate: annotate, reencodeQuality: 85, logger: logger)
        camera.start()
    }

    /// Starts `launch` (it must have an `appsrc name=src`) and registers its appsrc as a viewer's
    /// media of the raw (`h264: false`) or H.264 mount.
    @discardableResult
    public func attach(launch: String, h264: Bool) throws -> BenchPipeline {
        let p = try BenchPipeline(runtime: runtime, launch: launch, name: h264 ? "bench-h264" : "bench-raw")
        guard let src = p.pipeline.child("src") else { throw MediaError("bench pipeline has no appsrc 'src'") }
        let owner = UInt(pipelines.count + 1)
        camera.add(AppSource(element: src, owner: owner), kind: h264 ? .h264 : .raw)
        pipelines.append(p)
        return p
    }

    /// Frames the raw mount pushed into its appsrcs / pictures the H.264 mount pushed (allocation-free).
    public var rawFramesOut: Int { camera.counters.rawOut.load(ordering: .relaxed) }
    public var h264FramesOut: Int { camera.counters.h264Out.load(ordering: .relaxed) }

    /// Detaches from the hub, stops the worker and the pipelines.
    public func stop() {
        camera.shutdown()
        for p in pipelines { p.stop() }
        pipelines.removeAll()
    }
}

/// A running pipeline built from a launch string (MediaKit's `MediaPipeline`).
@_spi(Benchmarks)
public final class BenchPipeline: @unchecked Sendable {
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
