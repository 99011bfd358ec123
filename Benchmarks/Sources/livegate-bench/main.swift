// livegate-bench: the end-to-end benchmarks (see Benchmarks/README.md).
//   livegate-bench latency [--frames N] [--mount raw|h264|both]   camera send → RTSP client, loopback
//   livegate-bench cpu [--frames N]                               CPU per annotated, encoded frame vs ffmpeg
//   livegate-bench capacity [--mode raw|h264|both] [--seconds S] [--warmup S] [--from N] [--max N]
//                                                                 cameras per machine at 30 fps without drops
//   livegate-bench datasets                                       what the parse benchmarks feed
import JPEGKit
import BenchGst
import BenchSupport
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Logging
@_spi(Benchmarks) import MediaKit
import NIOPosix
import Synchronization

let args = Array(CommandLine.arguments.dropFirst())
let command = args.first ?? "help"
nonisolated func option(_ name: String, _ def: String) -> String {
    if let i = args.firstIndex(of: name), i + 1 < args.count { return args[i + 1] }
    return def
}
LoggingSystem.bootstrap { label in
    var h = StreamLogHandler.standardError(label: label)
    h.logLevel = .warning
    return h
}

/// Prints at once (stdout is block-buffered into a pipe).
func say(_ s: String) {
    FileHandle.standardOutput.write((s + "\n").data(using: .utf8)!)
}

func fmt(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

// MARK: latency

/// The emulator's picture source, recording when each frame number leaves the source (right before
/// the emulator serializes and writes it).
final class RecordingSource: EmulatorFrameSource, @unchecked Sendable {
    let inner: TestPatternSource
    let sent = Mutex<[Int: UInt64]>([:])
    init(width: Int, height: Int) throws { inner = try TestPatternSource(width: width, height: height) }
    func frame(index: Int) -> EmulatedFrame {
        let f = inner.frame(index: index)
        let now = MonotonicClock.nanos()
        sent.withLock { $0[index % 1_000_000] = now }
        return f
    }
    func focus(atX x: Double, y: Double) { inner.focus(atX: x, y: y) }
}

struct MountResult {
    var latenciesMs: [Double] = []
    var fps = 0.0
    var arrivals = 0
    var unidentified = 0
}

func luma(from a: bench_arrival, into pic: I420Picture) -> Bool {
    var w: Int32 = 0, h: Int32 = 0, stride: Int32 = 0
    var copy = a
    bench_arrival_video_info(&copy, &w, &h, &stride)
    guard w > 0, h > 0, stride > 0 else { return false }
    pic.resize(width: Int(w), height: Int(h))
    for row in 0..<Int(h) {
        (pic.y + row * pic.layout.yStride).update(from: a.data + row * Int(stride), count: Int(w))
    }
    return true
}

func measureMount(url: String, h264: Bool, frames: Int, warmup: Int, source: RecordingSource,
                  width: Int, height: Int) throws -> MountResult {
    var err: UnsafeMutablePointer<CChar>?
    guard let client = bench_client_new(url, h264 ? 1 : 0, &err) else {
        throw BenchError("client: " + (err.map { String(cString: $0) } ?? "?"))
    }
    defer { bench_client_free(client) }
    // (arrival, pts, JPEG bytes for /raw)
    var got: [(ns: UInt64, pts: UInt64, jpeg: [UInt8])] = []
    var seen = 0
    let deadline = Date().addingTimeInterval(Double(frames + warmup) / 30 * 3 + 20)
    while got.count < frames && Date() < deadline {
        var a = bench_arrival()
        guard bench_client_pop(client, 0, 500, &a) == 1 else { continue }
        seen += 1
        if seen > warmup {
            got.append((a.arrival_ns, a.pts, h264 ? [] : Array(UnsafeBufferPointer(start: a.data, count: a.size))))
        }
        bench_arrival_free(&a)
    }
    var r = MountResult()
    r.arrivals = got.count
    guard got.count > 1 else { return r }
    r.fps = Double(got.count - 1) / (Double(got.last!.ns - got.first!.ns) / 1e9)
    let sent = source.sent.withLock { $0 }
    let pic = I420Picture(width: width, height: height)
    var counters: [Int?] = []
    if h264 {
        // Decoded pictures come from the tee's second branch with the same PTS.
        Thread.sleep(forTimeInterval: 0.5)
        bench_client_stop(client)
        var byPTS: [UInt64: Int] = [:]
        var a = bench_arrival()
        var popped = 0
        while popped < seen + 100, bench_client_pop(client, 1, 200, &a) == 1 {
            popped += 1
            if luma(from: a, into: pic), let c = TestPattern.readCounter(from: pic, patternWidth: width, patternHeight: height) {
                byPTS[a.pts] = c
            }
            bench_arrival_free(&a)
        }
        counters = got.map { byPTS[$0.pts] }
    } else {
        let decoder = try JPEGDecoder()
        for g in got {
            counters.append(g.jpeg.withUnsafeBytes { raw -> Int? in
                guard (try? decoder.decode(raw, into: pic)) != nil else { return nil }
                return TestPattern.readCounter(from: pic, patternWidth: width, patternHeight: height)
            })
        }
    }
    for (g, c) in zip(got, counters) {
        guard let c, let s = sent[c], g.ns > s else { r.unidentified += 1; continue }
        r.latenciesMs.append(Double(g.ns - s) / 1e6)
    }
    return r
}

func latency() async throws {
    let frames = Int(option("--frames", "300"))!
    let mount = option("--mount", "both")
    let width = 768, height = 432
    let logger = Logger(label: "bench")
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let source = try RecordingSource(width: width, height: height)
    let emulator = SonyEmulator(port: 0, fps: 30, source: source, group: group)
    let port = try await emulator.start()
    say("emulator on :\(port)")
    let runtime = try GStreamerRuntime()
    let hub = FrameHub()
    let driver = SonyDriver(endpoint: HTTPURL(host: "127.0.0.1", port: port, target: "/sony/camera"), group: group, logger: logger)
    driver.start(hub: hub)
    // The camera's media graph as the gateway builds it (OutputSet.attach): JPEG branch for /cam/raw,
    // picture branch (decode + AF overlay) → the one shared x264 encoder for /cam.
    var graphConfig = CameraGraph.Configuration(id: "cam")
    graphConfig.fps = 30
    graphConfig.overlay = true
    let graph = try CameraGraph(configuration: graphConfig, hub: hub, runtime: runtime, presence: {
        CameraPresence(state: driver.state.rawValue)
    }, logger: logger)
    let rtsp = try RTSPOutput(runtime: runtime, configuration: .init(address: "127.0.0.1", port: 0))
    try rtsp.addCamera(graph)
    say("rtsp on :\(rtsp.port)")
    try await Task.sleep(for: .seconds(2))
    say("camera: Sony emulator 30 fps \(width)x\(height) → SonyDriver → FrameHub → CameraGraph → RTSPOutput :\(rtsp.port); driver frames so far \(driver.stats.frames)")
    for (name, h264) in [("raw", false), ("h264", true)] where mount == "both" || mount == name {
        let url = rtsp.url(for: "cam", raw: !h264)
        let r = try measureMount(url: url, h264: h264, frames: frames, warmup: 45, source: source, width: width, height: height)
        let l = r.latenciesMs
        say("latency \(name == "raw" ? "/cam/raw" : "/cam (H.264)"): frames \(l.count)/\(r.arrivals) identified, "
              + "p50 \(fmt(percentile(l, 50))) ms, p90 \(fmt(percentile(l, 90))) ms, p99 \(fmt(percentile(l, 99))) ms, "
              + "min \(fmt(l.min() ?? .nan)) ms, client fps \(fmt(r.fps, 2))")
        say("RESULT latency.\(name) p50=\(fmt(percentile(l, 50))) p90=\(fmt(percentile(l, 90))) p99=\(fmt(percentile(l, 99))) fps=\(fmt(r.fps)) n=\(l.count)")
    }
    say("driver: frames \(driver.stats.frames), drops \(driver.stats.drops); graph " + graph.stats().map { "\($0.output) in \($0.framesIn) out \($0.framesOut) dropped \($0.dropped)" }.joined(separator: "; ")
          + "; encoder starts \(graph.encoded.starts), key frames \(graph.encoded.keyframes), slate frames \(graph.slateFrames)")
    rtsp.stop()
    graph.stop()
    await driver.stop()
    await emulator.stop()
    runtime.shutdown()
    try await group.shutdownGracefully()
}

// MARK: cpu

func cpuNow() -> Double {
    var u: UInt64 = 0, s: UInt64 = 0
    bench_rusage_self(&u, &s)
    return Double(u + s) / 1000
}

/// The H.264 consumer's media: the RTSP H.264 mount's template (appsrc with H.264 byte-stream caps) with
/// its payloader replaced by a fakesink. The encoder is the graph's own (`PipelineTemplates.encoder`).
func h264ConsumerLaunch() throws -> String {
    var s = try PipelineTemplates.render(PipelineTemplates.rtspH264, [:])
    s = s.trimmingCharacters(in: CharacterSet(charactersIn: "() \n"))
    guard let r = s.range(of: "rtph264pay") else { throw BenchError("template without rtph264pay") }
    return String(s[..<r.lowerBound]) + "fakesink name=sink sync=false"
}

func runChild(_ argv: [String]) -> (status: Int32, cpuMs: Double) {
    var cargs = argv.map { strdup($0) }
    cargs.append(nil)
    defer { for p in cargs { free(p) } }
    var u: UInt64 = 0, s: UInt64 = 0
    let rc = cargs.withUnsafeMutableBufferPointer { bench_run_child($0.baseAddress!, &u, &s) }
    return (rc, Double(u + s) / 1000)
}

func cpu() throws {
    let frames = Int(option("--frames", "600"))!
    if args.contains("--variant") {
        // The encoder is the graph's (PipelineTemplates.encoder, EncodedBranch.Configuration), which
        // RTSPMountProbe does not let a benchmark change; see Benchmarks/README.md.
        say("cpu: --variant is no longer supported (the x264 encoder is the media graph's own)")
        exit(2)
    }
    let stream = try SonyPacketStream(count: 30)
    let runtime = try GStreamerRuntime()

    // Gateway: Sony ingest → hub → a camera graph (RTSPMountProbe): picture branch (libjpeg-turbo →
    // I420, AF overlay) → the graph's one shared encoder (appsrc ! x264enc ! h264parse ! appsink) →
    // one consumer, an H.264 mount's appsrc ! fakesink. Fed as fast as it encodes: the next frame
    // after the previous one's access unit reached the fakesink.
    let ingest = SonyIngest(stream: stream)
    let probe = try RTSPMountProbe(runtime: runtime, hub: ingest.hub, fps: 30, overlay: true)
    let p = try probe.attach(launch: try h264ConsumerLaunch(), h264: true)
    let counter = bench_count_buffers(p.element(named: "sink"), "sink")
    Thread.sleep(forTimeInterval: 0.5)
    var target = bench_counter_value(counter)
    func one() -> Bool {
        ingest.feedOne()
        target += 1
        let deadline = MonotonicClock.nanos() + 2_000_000_000
        while bench_counter_value(counter) < target {
            if MonotonicClock.nanos() > deadline { target = bench_counter_value(counter); return false }
            usleep(200)
        }
        return true
    }
    for _ in 0..<30 { _ = one() }
    // The ingest part alone (parse + publish into a hub nobody decodes from), to show its share.
    let ingestOnly = SonyIngest(stream: stream)
    let c0 = cpuNow()
    for _ in 0..<frames { ingestOnly.feedOne() }
    let ingestMs = (cpuNow() - c0) / Double(frames)

    let start = cpuNow(), wall0 = MonotonicClock.nanos()
    var missed = 0
    for _ in 0..<frames where !one() { missed += 1 }
    let gatewayMs = (cpuNow() - start) / Double(frames)
    let wallMs = Double(MonotonicClock.nanos() - wall0) / 1e6 / Double(frames)
    let decodeMs = probe.graph.pictures.meanDecodeMilliseconds
    let encoded = probe.h264FramesOut, keyframes = probe.graph.encoded.keyframes
    probe.stop()
    say("gateway: \(frames) frames 768x432, CPU \(fmt(gatewayMs, 3)) ms/frame (process user+sys, of which ingest "
          + "\(fmt(ingestMs, 3))), wall \(fmt(wallMs, 3)) ms/frame, decode+overlay mean \(fmt(decodeMs, 3)) ms, missed \(missed); "
          + "encoder: \(encoded) access units, \(keyframes) key frames")

    // ffmpeg on the same JPEGs (the stream's 30 test-pattern JPEGs looped to `frames`).
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-bench-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    func write(_ n: Int, _ name: String) throws -> String {
        var all: [UInt8] = []
        for i in 0..<n { all += stream.jpegs[i % stream.jpegs.count] }
        let path = dir.appendingPathComponent(name).path
        _ = FileManager.default.createFile(atPath: path, contents: Data(all))
        return path
    }
    let many = try write(frames, "frames.mjpeg"), one1 = try write(1, "one.mjpeg")
    func ffmpeg(_ input: String, threads: Bool) -> (Int32, Double) {
        var a = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"]
        if threads { a += ["-threads", "1"] }
        a += ["-f", "mjpeg", "-i", input, "-vf", "drawbox=x=300:y=170:w=128:h=86:color=yellow@1.0:t=2"]
        if threads { a += ["-threads", "1"] }
        a += ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-f", "null", "-"]
        return runChild(a)
    }
    for single in [false, true] {
        let (rc1, full) = ffmpeg(many, threads: single)
        let (rc2, startup) = ffmpeg(one1, threads: single)
        guard rc1 == 0, rc2 == 0 else { say("ffmpeg failed (\(rc1), \(rc2))"); continue }
        let marginal = (full - startup) / Double(frames - 1)
        let whole = full / Double(frames)
        let label = single ? "ffmpeg -threads 1" : "ffmpeg (default threads)"
        say("\(label): CPU \(fmt(whole, 3)) ms/frame incl. start-up, \(fmt(marginal, 3)) ms/frame marginal; "
              + "gateway/ffmpeg = \(fmt(gatewayMs / marginal, 3)) (marginal), \(fmt(gatewayMs / whole, 3)) (incl. start-up)")
        say("RESULT cpu.\(single ? "ffmpeg1" : "ffmpeg") gateway_ms=\(fmt(gatewayMs, 3)) ffmpeg_ms=\(fmt(marginal, 3)) ffmpeg_incl_startup_ms=\(fmt(whole, 3)) ratio=\(fmt(gatewayMs / marginal, 3))")
    }
    runtime.shutdown()
}

// MARK: datasets

func datasets() throws {
    for c in try ParseCase.all() {
        let r = ParseRunner(c)
        let f = r.pass()
        say("\(c.format.rawValue): \(c.units.count) units, \(c.bytes) bytes, \(f) frames per pass, issues \(r.issues) — \(c.source)")
    }
}

switch command {
case "latency": try await latency()
case "cpu": try cpu()
case "capacity":
    let mode = option("--mode", "both")
    guard mode == "both" || CapacityMode(rawValue: mode) != nil else {
        say("capacity: --mode raw|h264|both")
        exit(2)
    }
    let modes = CapacityMode.allCases.filter { mode == "both" || $0.rawValue == mode }
    let maxOption = Int(option("--max", "0")) ?? 0
    try capacity(modes: modes, seconds: Double(option("--seconds", "10")) ?? 10,
                 warmup: Double(option("--warmup", "3")) ?? 3, from: Int(option("--from", "1")) ?? 1,
                 maxCameras: [.raw: maxOption > 0 ? maxOption : 960, .h264: maxOption > 0 ? maxOption : 96])
case "datasets": try datasets()
default:
    say("usage: livegate-bench latency [--frames 300] [--mount raw|h264|both] | cpu [--frames 600] | "
          + "capacity [--mode raw|h264|both] [--seconds 10] [--warmup 3] [--from N] [--max N] | datasets")
}
