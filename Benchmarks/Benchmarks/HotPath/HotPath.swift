// Allocations per frame on ingest → hub → the media graph's JPEG branch (what RTSP /raw sessions
// consume), after warm-up (target 0). One benchmark iteration = one camera frame. See
// Benchmarks/README.md; `make bench-check` fails when `hotpath.a` or `hotpath.b` allocate per frame.
import Benchmark
import BenchGst
import BenchSupport
import CameraWire
import Foundation
import LiveViewCore
@_spi(Benchmarks) import MediaKit

let metrics: [BenchmarkMetric] = [.mallocCountTotal, .wallClock, .throughput]

func config(_ warmup: Int = 60, iterations: Int = 3000,
            thresholds: [BenchmarkMetric: BenchmarkThresholds]? = nil) -> Benchmark.Configuration {
    .init(metrics: metrics, timeUnits: .microseconds, warmupIterations: warmup, maxDuration: .seconds(5),
          maxIterations: iterations, thresholds: thresholds)
}

/// The allocation gate of `make bench-check` (`swift package benchmark thresholds check`): the p90 of
/// mallocs per iteration may not exceed the committed static threshold at all. The static threshold
/// itself is `Thresholds/HotPath.<benchmark name>.p90.json`, `{"mallocCountTotal": 0}`, so a path that
/// allocates on (nearly) every frame fails, while a rare allocation on another thread (a GStreamer or
/// timer thread, counted too by the interposer) does not.
var zeroMallocsPerFrame: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: .init(absolute: [.p90: 0])]
}

/// Waits (spinning, allocation-free) until `counter` reaches `target`; false after ~2 s.
@inline(never) func wait(_ counter: OpaquePointer?, _ target: UInt64) -> Bool {
    let deadline = MonotonicClock.nanos() + 2_000_000_000
    while bench_counter_value(counter) < target {
        if MonotonicClock.nanos() > deadline { return false }
        sched_yield()
    }
    return true
}

nonisolated(unsafe) var runtime: GStreamerRuntime?
func gst() throws -> GStreamerRuntime {
    if let r = runtime { return r }
    let r = try GStreamerRuntime()
    runtime = r
    return r
}

let simpleRaw = "appsrc name=src is-live=true format=time do-timestamp=false max-buffers=3 leaky-type=downstream "
    + "caps=image/jpeg,framerate=30/1 ! fakesink name=sink sync=false"

/// The real `/raw` mount pipeline with the RTP payloader's output going to a fakesink.
func realRawPipeline() throws -> String {
    var s = try PipelineTemplates.render(PipelineTemplates.rtspRaw,
                                         ["fps": "30", "mtu": "\(RTSPOutput.Configuration().effectiveRawPacketSize)"])
    s = s.trimmingCharacters(in: CharacterSet(charactersIn: "() \n"))
    return s + " ! fakesink name=sink sync=false"
}

/// State built by a benchmark's first (warm-up) iteration and kept for the following ones.
final class Once<T>: @unchecked Sendable {
    private var value: T?
    func get(_ make: () throws -> T) rethrows -> T {
        if let v = value { return v }
        let v = try make()
        value = v
        return v
    }
}

/// Ingest feeding a consumer whose frames are counted by a buffer probe (GStreamer cases).
struct GstCase {
    let ingest: SonyIngest?
    let counter: OpaquePointer?
    var done: UInt64
    let extra: [AnyObject]
}

final class Box<T>: @unchecked Sendable { var v: T; init(_ v: T) { self.v = v } }

let stream = try! SonyPacketStream(count: 30)
let swiftCase = Once<(SonyIngest, FramePacer)>()
let stage1 = Once<SonyIngest>()
let stage2 = Once<SonyIngest>()
let gstB = Once<Box<GstCase>>()
let gstB2 = Once<Box<GstCase>>()
let gstOnly = Once<(Box<GstCase>, Frame, UnsafeMutableRawPointer, Box<UInt64>)>()

/// The ingest's hub feeds a real `CameraGraph` (MediaKit's `RTSPMountProbe`) whose JPEG branch has
/// `launch`'s appsrc as its one consumer, as an RTSP `/raw` session's media would be.
func mountCase(launch: String, count element: String) throws -> Box<GstCase> {
    let rt = try gst()
    let ingest = SonyIngest(stream: stream)
    let probe = try RTSPMountProbe(runtime: rt, hub: ingest.hub)
    let p = try probe.attach(launch: launch, h264: false)
    let counter = bench_count_buffers(p.element(named: element), "sink")
    Thread.sleep(forTimeInterval: 0.3)  // PLAYING, clock running
    return Box(GstCase(ingest: ingest, counter: counter, done: bench_counter_value(counter), extra: [probe, p]))
}

func step(_ c: Box<GstCase>, _ b: Benchmark) {
    c.v.ingest!.feedOne()
    c.v.done += 1
    if !wait(c.v.counter, c.v.done) {
        c.v.done = bench_counter_value(c.v.counter)
        b.error("frame did not reach the sink within 2 s")
    }
}

let benchmarks: @Sendable () -> Void = {
    // (a) Swift only: handler's scratch copy → SonyRemoteParser → FramePublisher → FrameHub →
    // FramePacer → a consumer doing the raw worker's Swift work (see swiftRawConsumer).
    Benchmark("hotpath.a swift: sony parse+publish+hub+raw consumer",
              configuration: config(iterations: 10_000, thresholds: zeroMallocsPerFrame)) { b in
        let (ingest, pacer) = swiftCase.get {
            let i = SonyIngest(stream: stream)
            let p = swiftRawConsumer()
            i.hub.attach(p)
            return (i, p)
        }
        b.startMeasurement()
        ingest.feedOne()
        b.stopMeasurement()
        blackHole(pacer.delivered)
    }

    // Bisecting (a): the parser alone (with the handler's scratch copy), and parse+publish into a hub
    // without consumers.
    Benchmark("hotpath.stage1 parse only (scratch copy + SonyRemoteParser)", configuration: config(iterations: 10_000)) { b in
        let ingest = stage1.get {
            let i = SonyIngest(stream: stream)
            i.parseOnly = true
            return i
        }
        b.startMeasurement()
        ingest.feedOne()
        b.stopMeasurement()
    }
    Benchmark("hotpath.stage2 parse+publish+hub (no consumer)", configuration: config(iterations: 10_000)) { b in
        let ingest = stage2.get { SonyIngest(stream: stream) }
        b.startMeasurement()
        ingest.feedOne()
        b.stopMeasurement()
    }

    // (b) the same ingest into the real JPEG branch of a camera graph (its pacer, worker thread, RTP/JPEG
    // check, AppSource wrap + push) with `appsrc ! fakesink` as the one consumer's media; one iteration
    // ends when the frame reached the fakesink.
    Benchmark("hotpath.b gst: ... + JPEG branch + AppSource wrap+push into appsrc ! fakesink",
              configuration: config(iterations: 5000, thresholds: zeroMallocsPerFrame)) { b in
        let c = try gstB.get { try mountCase(launch: simpleRaw, count: "sink") }
        b.startMeasurement()
        step(c, b)
        b.stopMeasurement()
    }

    // (b2) with the real /raw pipeline: rtpjpegpay (RTP packets to a fakesink); the
    // iteration ends when the JPEG reached the payloader.
    Benchmark("hotpath.b2 gst: ... + real /raw pipeline rtpjpegpay ! fakesink", configuration: config(iterations: 5000)) { b in
        let c = try gstB2.get { try mountCase(launch: try realRawPipeline(), count: "pay0") }
        b.startMeasurement()
        step(c, b)
        b.stopMeasurement()
    }

    // GStreamer alone: wrap a pooled frame zero-copy (gst_buffer_new_wrapped_full + destroy notify)
    // and push it into `appsrc ! fakesink` from this thread.
    Benchmark("hotpath.gst-only wrap+push into appsrc ! fakesink", configuration: config(iterations: 5000)) { b in
        let (c, frame, src, pts) = try gstOnly.get {
            let rt = try gst()
            let probe = try RTSPMountProbe(runtime: rt, hub: FrameHub())
            let p = try probe.attach(launch: simpleRaw, h264: false)
            // Only the pipeline is wanted here: stopping the graph takes the appsrc off its JPEG
            // branch (and stops its slate ticker), the pipeline keeps playing until probe.stop().
            probe.graph.stop()
            let counter = bench_count_buffers(p.element(named: "sink"), "sink")
            let pool = FramePool(capacity: 8)
            let frame = pool.take()
            frame.setJPEG(stream.jpegs[0])
            Thread.sleep(forTimeInterval: 0.3)
            let c = Box(GstCase(ingest: nil, counter: counter, done: bench_counter_value(counter), extra: [probe, p, pool]))
            return (c, frame, p.element(named: "src")!, Box<UInt64>(0))
        }
        b.startMeasurement()
        frame.retain()
        let user = Unmanaged.passRetained(frame).toOpaque()
        pts.v += 33_333_333
        let rc = bench_push_wrapped(src, frame.bytes.baseAddress, frame.count, user, { u in
            Unmanaged<Frame>.fromOpaque(u!).takeRetainedValue().release()
        }, pts.v)
        c.v.done += 1
        if rc != 0 || !wait(c.v.counter, c.v.done) {
            c.v.done = bench_counter_value(c.v.counter)
            b.error("push failed")
        }
        b.stopMeasurement()
    }
}
