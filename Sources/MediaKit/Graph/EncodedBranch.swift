import JPEGKit
internal import CGStreamer
internal import CGStreamerShim
import Foundation
import LiveViewCore
import Logging

/// The encoded branch of a camera's media graph: ONE H.264 encoder per camera, fed by the picture
/// branch, shared by every H.264 consumer (RTSP H.264 sessions, HLS, and what comes next).
///
/// `appsrc ! x264enc ! h264parse config-interval=-1 ! appsink`: the encoder's input PTS is the
/// picture's arrival on the gateway's monotonic clock (minus the branch's epoch), so every encoded
/// buffer maps back to its arrival and each consumer restamps it in its own pipeline's running time.
/// Key frames follow a 1 s grid on that clock (GOP = 1 s whatever the rate, also while the slow
/// offline slate is shown); `h264parse` puts SPS/PPS in front of every IDR. A consumer starts at a
/// key frame (its first buffer: SPS, PPS, IDR, with a PTS); a joining consumer asks for one at once
/// unless the grid brings one soon (rate-limited). Segmenting consumers (HLS) see only the grid's key
/// frames as key frames, so extra IDRs for joiners never cut a short segment.
public final class EncodedBranch: Sendable {
    /// Encoder settings.
    public struct Configuration: Sendable {
        /// Largest H.264 bitrate in kbit/s (the VBV cap of constant-quality coding).
        public var bitrateKbps: Int = 4000
        /// Constant quality (x264's CRF: lower is better; 23 is x264's default).
        public var quality: Int = 23
        /// x264 threads (1 keeps the lowest latency).
        public var threads: Int = 1
        /// Seconds between grid key frames (HLS segment length).
        public var keyframeInterval: Double = 1
        /// Nominal frame rate (caps and the encoder's rate control).
        public var fps: Int = 30
        /// How long the encoder keeps running after its last consumer left.
        public var linger: Duration = .seconds(10)
        /// Key frames forced for joiners are at least this far apart.
        public var joinKeyframeSpacing: Double = 0.25
        /// Told, for each encoded frame, the nanoseconds from the picture's arrival at the gateway
        /// to the encoded frame (the metrics' encode latency histogram).
        public var latencyObserver: (@Sendable (UInt64) -> Void)?
        public init() {}
    }

    /// What a consumer does with the encoded stream.
    public enum ConsumerKind: Sendable {
        /// Every IDR is a key frame (RTSP, WebRTC).
        case stream
        /// Only the 1 s grid's IDRs are marked as key frames (HLS segments split there).
        case segmented
    }

    /// A consumer handle.
    public struct Consumer: Sendable, Hashable {
        let id: Int
    }

    let id: String
    let configuration: Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let pictures: AnnotatedStream
    private let sinks = Mutex<[Int: EncodedSink]>([:])
    private let nextID = Atomic<Int>(1)
    private let encoder = Mutex<EncoderPipeline?>(nil)
    private let stats = EncodedStats()
    private let gate: DemandGate

    init(id: String, pictures: AnnotatedStream, runtime: GStreamerRuntime, configuration: Configuration, logger: Logger) {
        self.id = id
        self.pictures = pictures
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
        gate = DemandGate(name: "encoded-\(id)", linger: configuration.linger)
        gate.bind(start: { [weak self] in self?.startEncoder() }, stop: { [weak self] in self?.stopEncoder() })
    }

    /// Adds a consumer: `push` gets every encoded buffer from the next key frame on (on the encoder's
    /// streaming thread). Starts the encoder when it is the first.
    func addConsumer(kind: ConsumerKind, source: AppSource) -> Consumer {
        let cid = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let sink = EncodedSink(source: source, kind: kind)
        sinks.withLock { $0[cid] = sink }
        gate.acquire()
        encoder.withLock { $0 }?.requestJoinKeyframe()
        return Consumer(id: cid)
    }

    /// A client is about to join a consumer shared by several clients (an RTSP PLAY on the shared
    /// H.264 media): nothing goes to it until `joined` (or `limit`), so the newcomer's first
    /// packet can only be the key frame `joined` asks for. The others see a short pause, no damage:
    /// what follows the pause is a key frame.
    func holdForJoin(_ c: Consumer, limit: Duration = .seconds(1)) {
        sinks.withLock { $0[c.id] }?.hold(until: MonotonicClock.nanos() + UInt64(limit.nanoseconds))
    }

    /// The joining client is in: the consumer resumes at the next key frame, asked for at once
    /// (rate-limited, see `joinKeyframeSpacing`).
    func joined(_ c: Consumer) {
        guard let sink = sinks.withLock({ $0[c.id] }) else { return }
        sink.resumeAtKeyframe()
        encoder.withLock { $0 }?.requestJoinKeyframe()
    }

    /// A consumer's client lost or lacks a picture (RTCP PLI/FIR): a key frame for everyone soon,
    /// rate-limited like the joiners' (`joinKeyframeSpacing`), the consumer carrying on meanwhile.
    func keyframeAsked(by c: Consumer) {
        guard sinks.withLock({ $0[c.id] }) != nil else { return }
        encoder.withLock { $0 }?.requestJoinKeyframe()
    }

    /// Removes a consumer; the encoder stops a linger after the last one (at once with
    /// `lingering: false`, for a consumer that lingered before leaving, such as HLS).
    func removeConsumer(_ c: Consumer, lingering: Bool = true) {
        guard sinks.withLock({ $0.removeValue(forKey: c.id) }) != nil else { return }
        gate.release(lingering: lingering)
    }

    /// Stops the encoder at once (shutdown).
    func shutdown() {
        gate.shutdown()
        sinks.withLock { $0.removeAll() }
    }

    /// The consumers' appsrcs (for the no-media watchdog).
    var sources: [AppSource] { sinks.withLock { $0.values.map(\.source) } }

    /// True while the encoder runs.
    public var isRunning: Bool { gate.isRunning }
    /// Number of consumers.
    public var consumerCount: Int { sinks.withLock { $0.count } }
    /// How often the encoder was started.
    public var starts: Int { gate.transitionsCount.starts }

    /// The branch's counters.
    public func outputStats() -> OutputStats {
        var s = OutputStats(output: "h264-encoder", camera: id)
        s.framesIn = stats.picturesIn.load(ordering: .relaxed)
        s.framesOut = stats.buffersOut.load(ordering: .relaxed)
        s.dropped = stats.consumerDrops.load(ordering: .relaxed)
        s.errors = encoder.withLock { $0 }?.pipeline.errorCount ?? 0
        s.clients = consumerCount
        return s
    }

    /// Key frames the encoder made so far (grid + joiners).
    public var keyframes: Int { stats.keyframes.load(ordering: .relaxed) }

    private func startEncoder() {
        do {
            let e = try EncoderPipeline(branch: self, stats: stats, runtime: runtime)
            encoder.withLock { $0 = e }
            let subscription = pictures.subscribe { [weak e] pic in e?.encode(pic) }
            e.subscription.withLock { $0 = subscription }
            logger.info("H.264 encoder started", metadata: ["camera": "\(id)"])
        } catch {
            logger.error("cannot start the H.264 encoder", metadata: ["camera": "\(id)", "error": "\(error)"])
        }
    }

    private func stopEncoder() {
        guard stopEncoderPipeline() else { return }
        // x264's frames and the pipeline's buffers are freed now: give their pages back to the
        // system (glibc would keep them in its arenas; each start/stop cycle left megabytes).
        malloc_trim(0)
        logger.info("H.264 encoder stopped", metadata: ["camera": "\(id)"])
    }

    /// Stops and drops the encoder pipeline; false when none ran.
    private func stopEncoderPipeline() -> Bool {
        guard let e = encoder.withLock({ v -> EncoderPipeline? in let o = v; v = nil; return o }) else { return false }
        // The encoder lingered already: the picture branch it alone used stops with it.
        if let s = e.subscription.withLock({ $0 }) { pictures.unsubscribe(s, lingering: false) }
        e.pipeline.stop()
        return true
    }

    /// Fans one encoded buffer out (encoder streaming thread).
    fileprivate func distribute(_ buffer: UnsafeMutablePointer<GstBuffer>, arrivalNanos: UInt64, keyframe: Bool, boundary: Bool) {
        stats.buffersOut.wrappingAdd(1, ordering: .relaxed)
        if keyframe { stats.keyframes.wrappingAdd(1, ordering: .relaxed) }
        let now = MonotonicClock.nanos()
        for sink in sinks.withLock({ Array($0.values) }) {
            let markKey = sink.kind == .stream ? keyframe : boundary
            if !sink.accept(keyframe: markKey, now: now) { continue }
            guard let pts = sink.source.runningTime(arrivalNanos: arrivalNanos) else {
                sink.restart()
                continue
            }
            if sink.source.queuedBuffers > 45 {
                // The consumer's pipeline does not keep up: drop, and resume at the next key frame.
                stats.consumerDrops.wrappingAdd(1, ordering: .relaxed)
                sink.restart()
                continue
            }
            let copy = lg_buffer_copy_shallow(buffer)!
            lg_buffer_set_pts_dts(copy, guint64(pts), guint64(GStreamerTime.none))
            lg_buffer_set_delta_unit(copy, markKey ? 0 : 1)
            if !sink.source.push(buffer: copy) { sink.restart() }
        }
    }
}

/// One consumer of the encoded stream: its appsrc, whether it has seen its first key frame, and
/// whether it is held while a client joins it.
final class EncodedSink: Sendable {
    let source: AppSource
    let kind: EncodedBranch.ConsumerKind
    private let started = Atomic<Bool>(false)
    /// Monotonic nanoseconds until which nothing is sent (0: not held).
    private let heldUntil = Atomic<UInt64>(0)

    init(source: AppSource, kind: EncodedBranch.ConsumerKind) {
        self.source = source
        self.kind = kind
    }

    /// True when this buffer goes to the consumer (from its first key frame on, never while held).
    func accept(keyframe: Bool, now: UInt64) -> Bool {
        let hold = heldUntil.load(ordering: .acquiring)
        if hold != 0 {
            if now < hold { return false }
            // The join never completed: carry on from the next key frame.
            heldUntil.store(0, ordering: .releasing)
            started.store(false, ordering: .relaxed)
        }
        if started.load(ordering: .relaxed) { return true }
        guard keyframe else { return false }
        started.store(true, ordering: .relaxed)
        return true
    }

    /// Waits for the next key frame again (after a drop).
    func restart() { started.store(false, ordering: .relaxed) }

    /// Sends nothing until `deadline` or `resumeAtKeyframe`.
    func hold(until deadline: UInt64) { heldUntil.store(deadline, ordering: .releasing) }

    /// Ends a hold: from the next key frame on.
    func resumeAtKeyframe() {
        started.store(false, ordering: .relaxed)
        heldUntil.store(0, ordering: .releasing)
    }
}

final class EncodedStats: Sendable {
    let picturesIn = Atomic<Int>(0)
    let buffersOut = Atomic<Int>(0)
    let keyframes = Atomic<Int>(0)
    let consumerDrops = Atomic<Int>(0)
}

/// The running encoder pipeline and its clocks. `encode` runs on the picture branch's thread,
/// the appsink callback on the encoder's streaming thread.
final class EncoderPipeline: Sendable {
    /// Set right after init, before any picture arrives.
    let subscription = Mutex<AnnotatedStream.Subscription?>(nil)
    let pipeline: MediaPipeline
    private let source: AppSource
    private let encoderElement: GstElementRef
    private weak let branch: EncodedBranch?
    private let stats: EncodedStats
    private let fps: Int
    private let gridNanos: UInt64
    private let joinSpacingNanos: UInt64
    private struct Clock {
        var epoch: UInt64 = 0
        var lastInput: UInt64 = 0
        var nextGrid: UInt64 = 0
        var lastForced: UInt64 = 0
        var pictures = 0
        var lastBoundary: UInt64?
        var joinPending = false
        var outputShift: Int64?
    }
    private let clock = Mutex(Clock())
    private let joinRequested = Atomic<Bool>(false)
    private let latencyObserver: (@Sendable (UInt64) -> Void)?

    init(branch: EncodedBranch, stats: EncodedStats, runtime: GStreamerRuntime) throws {
        let c = branch.configuration
        latencyObserver = c.latencyObserver
        fps = max(1, c.fps)
        gridNanos = UInt64(max(0.1, c.keyframeInterval) * 1e9)
        joinSpacingNanos = UInt64(max(0, c.joinKeyframeSpacing) * 1e9)
        let launch = try PipelineTemplates.render(PipelineTemplates.encoder, [
            "keyint": "\(fps * 4)", "threads": "\(max(1, c.threads))", "bitrate": "\(c.bitrateKbps)",
            "quality": "\(min(51, max(0, c.quality)))",
        ])
        pipeline = try MediaPipeline(launch: launch, name: "h264-\(branch.id)", runtime: runtime, logger: runtime.logger)
        guard let src = pipeline.child("src"), let enc = pipeline.child("enc"), let sink = pipeline.child("sink") else {
            throw MediaError("encoder pipeline lacks src, enc or sink")
        }
        source = AppSource(element: src)
        encoderElement = GstElementRef(enc)
        self.branch = branch
        self.stats = stats
        let user = Unmanaged.passRetained(EncoderCallbackBox(self)).toOpaque()
        lg_app_sink_on_buffer(sink, { buf, user in
            guard let buf, let user else { return }
            Unmanaged<EncoderCallbackBox>.fromOpaque(user).takeUnretainedValue().target?.encoded(buf)
        }, user, { user in
            if let user { Unmanaged<EncoderCallbackBox>.fromOpaque(user).release() }
        })
        lg_object_unref(sink)
        try pipeline.play()
    }


    func requestJoinKeyframe() { joinRequested.store(true, ordering: .relaxed) }

    /// Feeds one picture (picture branch thread).
    func encode(_ pic: I420Picture) {
        stats.picturesIn.wrappingAdd(1, ordering: .relaxed)
        let join = joinRequested.exchange(false, ordering: .relaxed)
        let (pts, forceKey) = clock.withLock { c -> (UInt64, Bool) in
            if c.pictures == 0 {
                c.epoch = pic.arrivalNanos > 1_000_000_000 ? pic.arrivalNanos - 1_000_000_000 : 0
            }
            var pts = pic.arrivalNanos > c.epoch ? pic.arrivalNanos - c.epoch : 0
            if c.pictures > 0 && pts <= c.lastInput { pts = c.lastInput + 1_000_000 }
            c.lastInput = pts
            c.joinPending = c.joinPending || join
            var force = false
            if c.pictures == 0 || pts >= c.nextGrid {
                // The 1 s grid: the first picture at or after each whole interval is a key frame.
                force = c.pictures > 0
                c.nextGrid = (c.pictures == 0 ? pts : c.nextGrid) + gridNanos
                while c.nextGrid <= pts { c.nextGrid += gridNanos }
                c.joinPending = false
            } else if c.joinPending {
                if c.nextGrid - pts <= gridNanos / 5 {
                    c.joinPending = false  // the grid's key frame comes soon enough
                } else if pts &- c.lastForced >= joinSpacingNanos {
                    force = true
                    c.joinPending = false
                }  // else: too soon after the last forced one; stays pending
            }
            if force { c.lastForced = pts }
            c.pictures += 1
            return (pts, force)
        }
        if forceKey { lg_request_key_frame(encoderElement.element) }
        source.ensureRawCaps(width: pic.width, height: pic.height, fps: fps)
        source.push(picture: pic, pts: pts, duration: UInt64(1_000_000_000 / fps))
    }

    /// One encoded access unit (encoder streaming thread).
    fileprivate func encoded(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let raw = lg_buffer_get_pts(buffer)
        guard UInt64(raw) != GStreamerTime.none else { return }
        let pts = UInt64(raw)
        let keyframe = lg_buffer_is_delta(buffer) == 0
        let (arrival, boundary) = clock.withLock { c -> (UInt64, Bool) in
            var boundary = false
            if keyframe {
                // A segment boundary at most once per ~interval (90 %), whatever extra IDRs joiners got.
                if let last = c.lastBoundary, pts &- last < gridNanos * 9 / 10 {
                    boundary = false
                } else {
                    boundary = true
                    c.lastBoundary = pts
                }
            }
            return (c.epoch + pts, boundary)
        }
        if let latencyObserver {
            // x264enc shifts its output timestamps (GstVideoEncoder makes room for negative DTS: the
            // first frame comes out at 1000 hours). Frames leave in the order they went in (zero
            // latency tuning, no B-frames), so the first output is the first input, whose PTS is
            // the 1 s the epoch leaves: the shift is learnt from it.
            let input = clock.withLock { c -> UInt64 in
                if c.outputShift == nil { c.outputShift = Int64(bitPattern: pts) - 1_000_000_000 }
                return UInt64(bitPattern: Int64(bitPattern: arrival) - (c.outputShift ?? 0))
            }
            let now = MonotonicClock.nanos()
            if now > input { latencyObserver(now - input) }
        }
        branch?.distribute(buffer, arrivalNanos: arrival, keyframe: keyframe, boundary: boundary)
    }
}

/// A weak reference for the appsink callback (no retain cycle through GStreamer).
final class EncoderCallbackBox: Sendable {
    weak let target: EncoderPipeline?
    init(_ t: EncoderPipeline) { target = t }
}
