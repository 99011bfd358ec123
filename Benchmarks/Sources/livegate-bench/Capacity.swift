// livegate-bench capacity: how many cameras one machine carries at 30 fps without drops.
//
// N simulated cameras in this process, each with its own FrameHub, FramePool and real media graph
// (`RTSPMountProbe` → `CameraGraph`), fed by ONE feeder thread on a fixed schedule with
// pre-rendered test-pattern JPEGs (the per-frame work is the ingest's publish: one copy into a
// pooled frame, metadata, AF area). Each camera has one consumer: the RTSP media of its mount
// (template from `PipelineTemplates`, the server's part replaced by `fakesink name=sink`), whose
// RTP packets are counted at the fakesink (frames = packets with the RTP marker bit).
import BenchGst
import BenchSupport
import CameraKit
import CameraWire
import Dispatch
import Foundation
import LiveViewCore
@_spi(Benchmarks) import MediaKit
import Synchronization

enum CapacityMode: String, CaseIterable {
    case raw, h264
}

/// The camera's frames as the Sony ingest would publish them: the Sony emulator's 30 test-pattern
/// JPEGs (768×432, AF box on the moving subject) serialized as Sony packets and parsed ONCE here into
/// `WireFrame`s (JPEG bytes, SOF info, AF area in JPEG pixels). Publishing one is then exactly what
/// `FramePublisher` does per frame in a driver; rendering and parsing are not measured.
func capacityFrames(count: Int = 30) throws -> [WireFrame] {
    let stream = try SonyPacketStream(count: count)
    var parser = SonyRemoteParser()
    var frames: [WireFrame] = []
    for packet in stream.packets {
        parser.feed(packet) { ev in
            guard case .frame(var wf) = ev else { return }
            wf.jpeg = ArraySlice(Array(wf.jpeg))  // own storage, not the parser's buffer
            frames.append(wf)
        }
    }
    guard frames.count == count, frames.allSatisfy({ !$0.af.isEmpty && $0.width == stream.width }) else {
        throw BenchError("capacity: expected \(count) frames with an AF area, parsed \(frames.count)")
    }
    return frames
}

/// ONE thread that feeds every camera at `fps` on a fixed schedule: camera i's frame n is due at
/// start + n/fps + i/(fps·N) (the cameras' phases are spread over the frame period, as independent
/// cameras are). An event is published at its due time; one that the thread reaches more than half a
/// period late is skipped and counted (no catching up: a camera never gets a burst).
final class CameraFeeder: Sendable {
    private let publishers: [FramePublisher]
    private let frames: [WireFrame]
    private let fps: Int
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Events skipped because the thread was more than half a period late.
    let skipped = Atomic<Int>(0)
    /// Largest lateness of a published event since the last `takeMaxLate()`, in ns.
    private let maxLate = Atomic<Int>(0)
    /// Events published that were more than 2 ms late.
    let lateOver2ms = Atomic<Int>(0)

    init(publishers: [FramePublisher], frames: [WireFrame], fps: Int = 30) {
        self.publishers = publishers
        self.frames = frames
        self.fps = fps
    }

    func start() {
        let t = Thread { [self] in
            run()
            done.signal()
        }
        t.name = "capacity-feeder"
        t.start()
    }

    /// Stops the thread and waits for it.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
    }

    /// The largest lateness since the previous call, in ms.
    func takeMaxLateMs() -> Double { Double(maxLate.exchange(0, ordering: .relaxed)) / 1e6 }

    private func run() {
        let n = UInt64(publishers.count)
        guard n > 0 else { return }
        let slot = 1e9 / Double(fps) / Double(n)  // ns between two events
        let halfPeriod = UInt64(1e9 / Double(fps) / 2)
        let start = MonotonicClock.nanos() + 5_000_000
        var k: UInt64 = 0
        while !stopping.load(ordering: .relaxed) {
            let i = Int(k % n)
            let frameNumber = Int(k / n)
            let due = start + UInt64(Double(k) * slot)
            var now = MonotonicClock.nanos()
            if due > now + 20_000 {
                var ts = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
                now = MonotonicClock.nanos()
            }
            let late = now > due ? now - due : 0
            if late > halfPeriod {
                skipped.wrappingAdd(1, ordering: .relaxed)
            } else {
                if late > 2_000_000 { lateOver2ms.wrappingAdd(1, ordering: .relaxed) }
                if Int(late) > maxLate.load(ordering: .relaxed) { maxLate.store(Int(late), ordering: .relaxed) }
                // Cameras show different frames of the pattern at the same moment.
                publishers[i].publish(frames[(frameNumber + i * 7) % frames.count])
            }
            k += 1
        }
    }
}

/// One camera under test: its graph (probe), hub and the RTP counter at its consumer's fakesink.
private struct SimCamera {
    let hub: FrameHub
    let pool: FramePool
    let probe: RTSPMountProbe
    var counter: OpaquePointer?
}

/// Counters of one camera at one instant.
private struct CameraSample {
    var published = 0
    var sinkFrames = 0
    var sinkPackets = 0
    var jpegReplaced = 0
    var annotateReplaced = 0
    var annotateIn = 0
    var encoderIn = 0
    var encoderOut = 0
    var encoderConsumerDrops = 0
    var slate = 0
}

/// Frames each camera lost so far (published − reached the sink), without the frames in flight: the
/// smallest difference over 12 looks 5 ms apart (with a frame every 33 ms and a few ms from publish
/// to sink, a camera has nothing in flight at some of them). A window's loss is the difference of two
/// of these, so it is exact instead of ±1 frame at each end.
private func settledLoss(_ cams: [SimCamera]) -> [Int] {
    var lost = [Int](repeating: .max, count: cams.count)
    for look in 0..<12 {
        if look > 0 { usleep(5000) }
        for (i, c) in cams.enumerated() {
            let sunk = c.counter.map { Int(bench_rtp_counter_frames($0)) } ?? 0
            lost[i] = min(lost[i], c.hub.published - sunk)  // sink read first: in flight adds, never hides a loss
        }
    }
    return lost
}

private func sample(_ c: SimCamera) -> CameraSample {
    var s = CameraSample()
    s.published = c.hub.published
    if let counter = c.counter {
        s.sinkFrames = Int(bench_rtp_counter_frames(counter))
        s.sinkPackets = Int(bench_rtp_counter_packets(counter))
    }
    for st in c.probe.graph.stats() {
        switch st.output {
        case "rtsp-raw": s.jpegReplaced = st.dropped
        case "annotate":
            s.annotateReplaced = st.dropped
            s.annotateIn = st.framesIn
        case "h264-encoder":
            s.encoderIn = st.framesIn
            s.encoderOut = st.framesOut
            s.encoderConsumerDrops = st.dropped
        default: break
        }
    }
    s.slate = c.probe.graph.slateFrames
    return s
}

struct CapacityStep {
    var mode: CapacityMode
    var cameras: Int
    var seconds = 0.0
    var cpuPercent = 0.0
    /// Process CPU per published camera frame, in ms.
    var cpuMsPerFrame = 0.0
    var fpsMin = 0.0
    var fpsMedian = 0.0
    /// Worst camera: frames lost (published, never at the sink) ÷ published over the window, in %.
    var dropMaxPercent = 0.0
    var published = 0
    var sinkFrames = 0
    var sinkPackets = 0
    /// Frames replaced in the graph's pacers (JPEG branch / picture branch), over the window.
    var replaced = 0
    var encoderIn = 0
    var encoderOut = 0
    var encoderConsumerDrops = 0
    var failingCameras = 0
    var feederSkipped = 0
    var feederLateOver2ms = 0
    var feederMaxLateMs = 0.0
    /// Over the whole step (from the consumers' start to a drained stop): published − sink frames.
    var lostTotal = 0
    var slateFrames = 0
    var setupSeconds = 0.0
    var carried = false
    var saturated = false
}

/// The consumer's media: the RTSP mount's template with the server's side (the payloader's pad
/// `pay0` towards the RTSP stream) replaced by a fakesink, i.e. what one RTSP session runs.
func capacityConsumerLaunch(_ mode: CapacityMode, fps: Int) throws -> String {
    let template = mode == .raw ? PipelineTemplates.rtspRaw : PipelineTemplates.rtspH264
    var s = try PipelineTemplates.render(template, ["fps": "\(fps)", "mtu": "\(RTSPOutput.Configuration().effectiveRawPacketSize)"])
    s = s.trimmingCharacters(in: CharacterSet(charactersIn: "() \n"))
    return s + " ! fakesink name=sink"
}

private func runStep(mode: CapacityMode, cameras n: Int, seconds: Double, warmup: Double,
                     frames: [WireFrame], runtime: GStreamerRuntime, launch: String) throws -> CapacityStep {
    var step = CapacityStep(mode: mode, cameras: n)
    let t0 = MonotonicClock.nanos()
    // Graphs first, then the feeder, then the consumers: a graph that is watched but has had no frame
    // for 2 s would show the slate.
    var cams: [SimCamera] = []
    var publishers: [FramePublisher] = []
    for i in 0..<n {
        let hub = FrameHub()
        let pool = FramePool(capacity: 16, frameBytes: 128 * 1024)
        publishers.append(FramePublisher(hub: hub, pool: pool, stats: DriverStats(), cameraIndex: i))
        let probe = try RTSPMountProbe(runtime: runtime, hub: hub, fps: 30, overlay: true)
        cams.append(SimCamera(hub: hub, pool: pool, probe: probe, counter: nil))
    }
    let feeder = CameraFeeder(publishers: publishers, frames: frames, fps: 30)
    feeder.start()
    var base: [Int] = []
    for i in 0..<n {
        let p = try cams[i].probe.attach(launch: launch, h264: mode == .h264)
        guard let sink = p.element(named: "sink") else { throw BenchError("consumer without a fakesink") }
        cams[i].counter = bench_count_rtp_frames(sink, "sink")
        bench_object_unref(sink)
        base.append(cams[i].hub.published)
    }
    step.setupSeconds = Double(MonotonicClock.nanos() - t0) / 1e9
    Thread.sleep(forTimeInterval: warmup)

    let skipped0 = feeder.skipped.load(ordering: .relaxed), late0 = feeder.lateOver2ms.load(ordering: .relaxed)
    _ = feeder.takeMaxLateMs()
    let cpu0 = cpuNow(), wall0 = MonotonicClock.nanos()
    let a = cams.map(sample)
    let lostA = settledLoss(cams)
    Thread.sleep(forTimeInterval: seconds)
    let b = cams.map(sample)
    let wall = Double(MonotonicClock.nanos() - wall0) / 1e9
    let cpu = cpuNow() - cpu0
    let lostB = settledLoss(cams)
    step.feederMaxLateMs = feeder.takeMaxLateMs()
    step.feederSkipped = feeder.skipped.load(ordering: .relaxed) - skipped0
    step.feederLateOver2ms = feeder.lateOver2ms.load(ordering: .relaxed) - late0

    feeder.stop()
    Thread.sleep(forTimeInterval: 0.5)  // let the pipelines drain
    let c = cams.map(sample)
    for cam in cams { cam.probe.stop() }
    for cam in cams { if let counter = cam.counter { bench_rtp_counter_free(counter) } }
    cams.removeAll()

    step.seconds = wall
    step.cpuPercent = cpu / 1000 / wall * 100
    var fps: [Double] = []
    for i in 0..<n {
        let published = b[i].published - a[i].published
        let sunk = b[i].sinkFrames - a[i].sinkFrames
        let f = Double(sunk) / wall
        let drop = published > 0 ? Double(max(0, lostB[i] - lostA[i])) / Double(published) * 100 : 100
        fps.append(f)
        step.dropMaxPercent = max(step.dropMaxPercent, drop)
        if f < 29.5 || drop > 0.5 { step.failingCameras += 1 }
        step.published += published
        step.sinkFrames += sunk
        step.sinkPackets += b[i].sinkPackets - a[i].sinkPackets
        step.replaced += (b[i].jpegReplaced - a[i].jpegReplaced) + (b[i].annotateReplaced - a[i].annotateReplaced)
        step.encoderIn += b[i].encoderIn - a[i].encoderIn
        step.encoderOut += b[i].encoderOut - a[i].encoderOut
        step.encoderConsumerDrops += b[i].encoderConsumerDrops - a[i].encoderConsumerDrops
        step.lostTotal += (c[i].published - base[i]) - c[i].sinkFrames
        step.slateFrames += c[i].slate
    }
    step.cpuMsPerFrame = step.published > 0 ? cpu / Double(step.published) : 0
    step.fpsMin = fps.min() ?? 0
    step.fpsMedian = median(fps)
    step.carried = step.failingCameras == 0 && step.slateFrames == 0
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
    step.saturated = step.cpuPercent >= 95 * cores
    return step
}

func capacitySteps(_ mode: CapacityMode, from: Int, max: Int) -> [Int] {
    let base = mode == .raw ? [10, 20, 30, 40, 50, 60, 80, 100, 120, 160, 200, 240, 320, 400, 480, 560, 640, 720, 800, 960]
                            : [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 72, 80, 96]
    var steps = base.filter { $0 >= from && $0 <= max }
    if let last = steps.last, last < max, max < base.last! { steps.append(max) }
    if steps.isEmpty { steps = [max] }
    return steps
}

func capacity(modes: [CapacityMode], seconds: Double, warmup: Double, from: Int, maxCameras: [CapacityMode: Int]) throws {
    let frames = try capacityFrames()
    let runtime = try GStreamerRuntime()
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let meanJPEG = frames.reduce(0) { $0 + $1.jpeg.count } / frames.count
    say("capacity: \(cores) cores; each camera 30 fps, \(frames[0].width)x\(frames[0].height) JPEG (mean \(meanJPEG / 1024) KiB, "
          + "\(frames.count) pre-rendered frames with an AF area), one feeder thread; \(fmt(warmup, 0)) s warm-up, \(fmt(seconds, 0)) s measured per step")
    say("a step carries N when every camera's sink gets >= 29.5 fps and loses <= 0.5 % of its frames (published - sink); "
          + "stepping stops at the first step that fails or saturates the CPU (>= 95 % of \(cores) cores)")
    var best: [CapacityMode: (n: Int, capped: Bool)] = [:]
    for mode in modes {
        let launch = try capacityConsumerLaunch(mode, fps: 30)
        let maxN = maxCameras[mode]!
        say("")
        say("mode \(mode.rawValue): graph branch \(mode == .raw ? "JPEG (no decode)" : "picture (decode + AF overlay) → the camera's x264 encoder"); consumer per camera: \(launch)")
        say("    N   CPU %  ms/frame  fps min  fps med  drop max %  replaced  published  sink frames  "
              + (mode == .h264 ? "enc in / out  " : "") + "feeder skip/late>2ms/max ms  setup s  verdict")
        var carriedN = 0
        var stopped = false
        for n in capacitySteps(mode, from: from, max: maxN) {
            let s = try runStep(mode: mode, cameras: n, seconds: seconds, warmup: warmup, frames: frames,
                                runtime: runtime, launch: launch)
            var verdict = s.carried ? "carried" : "FAILED (\(s.failingCameras) of \(n) cameras)"
            if s.saturated { verdict += ", CPU saturated" }
            if s.slateFrames > 0 { verdict += ", slate shown (\(s.slateFrames))" }
            let pad = { (v: String, w: Int) in String(repeating: " ", count: max(0, w - v.count)) + v }
            var row = pad("\(n)", 5) + pad(fmt(s.cpuPercent, 1), 8) + pad(fmt(s.cpuMsPerFrame, 3), 10)
                + pad(fmt(s.fpsMin, 2), 9) + pad(fmt(s.fpsMedian, 2), 9) + pad(fmt(s.dropMaxPercent, 2), 12)
                + pad("\(s.replaced)", 10) + pad("\(s.published)", 11) + pad("\(s.sinkFrames)", 13)
            if mode == .h264 { row += pad("\(s.encoderIn) / \(s.encoderOut)", 14) }
            row += pad("\(s.feederSkipped)/\(s.feederLateOver2ms)/\(fmt(s.feederMaxLateMs, 1))", 29)
                + pad(fmt(s.setupSeconds, 1), 9) + "  " + verdict
            say(row)
            say("RESULT capacity.\(mode.rawValue).\(n) carried=\(s.carried ? 1 : 0) cpu_pct=\(fmt(s.cpuPercent, 1)) cpu_ms_per_frame=\(fmt(s.cpuMsPerFrame, 3)) "
                  + "fps_min=\(fmt(s.fpsMin)) fps_median=\(fmt(s.fpsMedian)) drop_max_pct=\(fmt(s.dropMaxPercent)) "
                  + "replaced=\(s.replaced) published=\(s.published) sink_frames=\(s.sinkFrames) rtp_packets=\(s.sinkPackets) "
                  + "encoder_in=\(s.encoderIn) encoder_out=\(s.encoderOut) encoder_consumer_drops=\(s.encoderConsumerDrops) "
                  + "feeder_skipped=\(s.feederSkipped) lost_total=\(s.lostTotal) seconds=\(fmt(s.seconds))")
            if s.carried { carriedN = n }
            Thread.sleep(forTimeInterval: 1)  // let the torn-down step's threads go
            if !s.carried || s.saturated {
                stopped = true
                break
            }
        }
        best[mode] = (carriedN, !stopped)
        say("mode \(mode.rawValue): largest N carried = \(carriedN)"
              + (carriedN == 0 ? " (no step tried carried)" : stopped ? "" : " (the largest step tried, --max \(maxN); more may fit)"))
    }
    runtime.shutdown()
    say("")
    func part(_ m: CapacityMode, _ label: String, _ target: Int) -> String? {
        guard let b = best[m] else { return nil }
        let verdict = b.n >= target ? "met" : (b.capped ? "not reached within --max" : "NOT met")
        return "\(b.capped ? ">= " : "")\(b.n) \(label) (target >= \(target): \(verdict))"
    }
    let parts = [part(.raw, "raw JPEG cameras", 50), part(.h264, "annotated H.264 cameras", 6)].compactMap { $0 }
    say("capacity: one machine (\(cores) cores) carries " + parts.joined(separator: " and ") + " at 30 fps without drops")
    say("RESULT capacity " + modes.map { "\($0.rawValue)=\(best[$0]?.n ?? 0)" }.joined(separator: " "))
}
