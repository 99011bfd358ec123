import JPEGKit
internal import CGStreamer
internal import CGStreamerShim
import Dispatch
import Foundation
import LiveViewCore
public import Logging

/// Virtual webcam output: a v4l2loopback device (`v4l2sink device=/dev/videoN`) that always streams
/// one fixed size and format (default 1280×720 YUY2 at 30 fps), whatever the camera does. The
/// camera's annotated pictures are scaled and letterboxed into that size; a ticker thread pushes a
/// frame every 1/fps, repeating the newest picture, and switches to a grey "camera offline" slate when
/// no picture has arrived for `offlineAfter`, so the device stays open and consumers never see a
/// renegotiation. See `deploy/v4l2loopback.conf` for the module options (`exclusive_caps=1`).
public final class VirtualWebcamOutput: Sendable {
    /// Device settings.
    public struct Configuration: Sendable {
        /// The v4l2loopback device.
        public var device: String = "/dev/video10"
        /// The fixed output size and rate.
        public var width: Int = 1280
        public var height: Int = 720
        public var fps: Int = 30
        /// GStreamer raw format name (YUY2 works with Chrome, Zoom, Teams; I420 is an option).
        public var format: String = "YUY2"
        /// How long the last picture is repeated before the offline slate is shown.
        public var offlineAfter: Duration = .seconds(2)
        /// A replacement for the sink (launch syntax), e.g. `fakesink` or `filesink location=…` where no
        /// v4l2loopback device exists; nil uses `pipelines/v4l2-sink.pipeline` with `device`.
        public var sink: String?
        /// The output's name in stats and logs: "v4l2" or "pipewire".
        public var output = "v4l2"
        /// After a GStreamer error, open the sink again with a fresh pipeline (1 s, doubling to
        /// 10 s). Off for v4l2loopback: after v4l2-compliance had the device, opening it again
        /// crashed inside v4l2sink (SIGSEGV, in the QEMU guest of `make test-webcam`), so the
        /// webcam stops with one clear error instead; on for PipeWire.
        public var reopenAfterError = false

        /// Defaults for a device.
        public init(device: String = "/dev/video10") {
            self.device = device
        }

        /// A PipeWire camera: a `Video/Source` node called `node` with `media.role=Camera`
        /// (`pipelines/pipewire-sink.pipeline`), same fixed size and format as the v4l2 device.
        public static func pipewire(node: String) throws -> Configuration {
            var c = Configuration(device: node)
            c.output = "pipewire"
            c.reopenAfterError = true
            c.sink = try PipelineTemplates.render(PipelineTemplates.pipewireSink, ["node": node])
            return c
        }
    }

    /// The settings in use.
    public let configuration: Configuration
    /// The pipeline and its appsrc; replaced by a fresh one when the device's stream broke.
    private let active: Mutex<Active>
    private let launch: String
    private let runtime: GStreamerRuntime
    /// Errors of pipelines that were replaced.
    private let pastErrors = Atomic<Int>(0)

    struct Active: Sendable {
        let pipeline: MediaPipeline
        let source: AppSource
    }
    private var pipeline: MediaPipeline { active.withLock { $0.pipeline } }
    private var source: AppSource { active.withLock { $0.source } }
    private let state = Mutex(State())
    private let slate: I420Picture
    private let counters = Counters()
    private let logger: Logger
    private let tickerDone = DispatchSemaphore(value: 0)

    struct State: Sendable {
        var latest: I420Picture?
        var latestAt: UInt64 = 0
        var stream: AnnotatedStream?
        var subscription: AnnotatedStream.Subscription?
        var running = false
        var stopping = false
    }

    final class Counters: Sendable {
        let pictures = Atomic<Int>(0)
        let pushed = Atomic<Int>(0)
        let slates = Atomic<Int>(0)
        let late = Atomic<Int>(0)
        let restarts = Atomic<Int>(0)
    }

    /// Builds the pipeline (not started).
    public init(runtime: GStreamerRuntime, configuration: Configuration, logger: Logger = Logger(label: "livegate.v4l2")) throws {
        self.configuration = configuration
        self.logger = logger
        let sink = try configuration.sink ?? PipelineTemplates.render(PipelineTemplates.v4l2Sink,
                                                                     ["device": PipelineTemplates.escapeQuoted(configuration.device)])
        let launch = try PipelineTemplates.render(PipelineTemplates.v4l2, [
            "format": configuration.format, "width": "\(configuration.width)", "height": "\(configuration.height)",
            "fps": "\(max(1, configuration.fps))", "sink": sink,
            // v4l2loopback offers one colorimetry per format, the one of its sRGB colorspace
            // (2:4:7:1): asking for another (bt601) fails to negotiate, so the device's is taken and
            // videoconvert converts into it. A PipeWire node takes what it is given: BT.601.
            "colorimetry": configuration.output == "pipewire" ? ",colorimetry=bt601" : "",
        ])
        self.launch = launch
        self.runtime = runtime
        active = Mutex(try Self.build(launch: launch, name: configuration.output, runtime: runtime, logger: logger))
        slate = I420Picture(width: configuration.width, height: configuration.height)
        Self.paintSlate(slate)
    }

    deinit { stop() }

    private static func build(launch: String, name: String, runtime: GStreamerRuntime, logger: Logger) throws -> Active {
        let pipeline = try MediaPipeline(launch: launch, name: name, runtime: runtime, logger: logger)
        guard let src = pipeline.child("src") else { throw MediaError("\(name) pipeline has no appsrc 'src'") }
        return Active(pipeline: pipeline, source: AppSource(element: src))
    }

    /// A fresh pipeline in place of one whose stream broke (its elements, the device's buffer pool
    /// among them, are not reused), playing; the old one stopped.
    private func reopen() throws {
        // The old one lets go of the device first: with exclusive_caps=1 a v4l2loopback device is an
        // output only while no writer holds it ("not a output device" otherwise).
        let old = active.withLock { $0 }
        old.pipeline.stop()
        let fresh = try Self.build(launch: launch, name: configuration.output, runtime: runtime, logger: logger)
        try fresh.pipeline.play()
        active.withLock { $0 = fresh }
        pastErrors.wrappingAdd(old.pipeline.errorCount, ordering: .relaxed)
    }

    /// The device would not take the picture (not-negotiated: a size or format it does not offer).
    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts streaming (the slate until a camera is shown). Throws when the device cannot be
    /// opened, and `Refused` when it does not take the first picture within 3 s (its caps are
    /// negotiated before the ticker runs: one clear error, never a silent stop).
    public func start() throws {
        let go = state.withLock { s -> Bool in
            guard !s.running else { return false }
            s.running = true
            return true
        }
        guard go else { return }
        do {
            try pipeline.play()
        } catch {
            state.withLock { $0.running = false }
            if configuration.output == "pipewire" {
                throw MediaError("PipeWire camera '\(configuration.device)': \(error) (is a PipeWire daemon running for this user? XDG_RUNTIME_DIR must point at its socket)")
            }
            throw MediaError("virtual webcam \(configuration.device): \(error) (is v4l2loopback loaded? see deploy/v4l2loopback.conf)")
        }
        // The first picture (the slate) now: the caps are negotiated with the device before the
        // ticker starts, so a device that refuses them is an error at start.
        let errorsBefore = pipeline.errorCount
        let pushedFirst = pushSlateNow()
        // An error comes when the first buffer reaches the sink, which a live pipeline may do just
        // after PLAYING: wait for PLAYING plus 300 ms (3 s at most).
        let deadline = MonotonicClock.nanos() + 3_000_000_000
        var playingSince: UInt64 = 0
        while pipeline.errorCount == errorsBefore && MonotonicClock.nanos() < deadline {
            if playingSince == 0, GStreamerTime.isPlaying(pipeline.element) { playingSince = MonotonicClock.nanos() }
            if playingSince != 0, MonotonicClock.elapsed(from: playingSince, to: MonotonicClock.nanos()) >= 300_000_000 { break }
            usleep(10_000)
        }
        if pipeline.errorCount != errorsBefore || !pushedFirst {
            let why = pipeline.lastError ?? "the first picture was not accepted"
            pipeline.stop()
            state.withLock { $0.running = false }
            let what = "\(configuration.format) \(configuration.width)x\(configuration.height) at \(configuration.fps) fps"
            throw Refused(description: configuration.output == "pipewire"
                ? "the PipeWire camera '\(configuration.device)' did not take \(what): \(why)"
                : "the virtual webcam \(configuration.device) refused \(what): \(why) (another program may hold the device with other caps, or v4l2loopback was loaded with max_width/max_height below this size; try --webcam-size or --webcam-format)")
        }
        let t = Thread { [self] in tick() }
        t.name = "\(configuration.output)-ticker"
        t.start()
        logger.info("virtual webcam streaming", metadata: ["output": "\(configuration.output)", "device": "\(configuration.device)",
                    "size": "\(configuration.width)x\(configuration.height)", "format": "\(configuration.format)"])
    }

    /// Shows a camera's annotated stream (nil: the slate only). Switching keeps the device streaming.
    public func show(_ stream: AnnotatedStream?) {
        let old = state.withLock { s -> (AnnotatedStream?, AnnotatedStream.Subscription?) in
            let o = (s.stream, s.subscription)
            s.stream = nil
            s.subscription = nil
            return o
        }
        if let st = old.0, let sub = old.1 { st.unsubscribe(sub) }
        guard let stream else { return }
        let box = StateRef(self)
        let sub = stream.subscribe { pic in box.target?.received(pic) }
        state.withLock { s in
            s.stream = stream
            s.subscription = sub
        }
    }

    func received(_ pic: I420Picture) {
        counters.pictures.wrappingAdd(1, ordering: .relaxed)
        pic.retain()
        let old = state.withLock { s -> I420Picture? in
            let o = s.latest
            s.latest = pic
            s.latestAt = MonotonicClock.nanos()
            return o
        }
        old?.release()
    }

    /// Stops the ticker and the pipeline. Idempotent.
    public func stop() {
        show(nil)
        let wasRunning = state.withLock { s -> Bool in
            let r = s.running && !s.stopping
            s.stopping = true
            return r
        }
        if wasRunning { _ = tickerDone.wait(timeout: .now() + 3) }
        pipeline.stop()
        state.withLock { s in
            s.latest?.release()
            s.latest = nil
        }
    }

    /// True while the slate is being sent (no recent picture).
    public var isShowingSlate: Bool {
        let (at, has) = state.withLock { ($0.latestAt, $0.latest != nil) }
        return !has || !Self.isFresh(pictureAt: at, now: MonotonicClock.nanos(), offlineAfter: offlineNanos)
    }

    /// A picture stored at `pictureAt` is still shown at `now` (else the slate). `now` may be read
    /// before a newer picture was stored (another thread, under the lock): such a picture is fresh.
    static func isFresh(pictureAt: UInt64, now: UInt64, offlineAfter: UInt64) -> Bool {
        MonotonicClock.elapsed(from: pictureAt, to: now) <= offlineAfter
    }

    private var offlineNanos: UInt64 { configuration.offlineAfter.nanoseconds }

    /// The picture to send at `now` (retained; nil: the slate). `now` is read before the lock, so a
    /// picture stored meanwhile on the camera's thread may be newer than it.
    func pictureToShow(now: UInt64) -> I420Picture? {
        state.withLock { s -> I420Picture? in
            guard let p = s.latest, Self.isFresh(pictureAt: s.latestAt, now: now, offlineAfter: offlineNanos) else { return nil }
            p.retain()
            return p
        }
    }

    /// Pushes one slate picture at once (start-up); false when the appsrc refused it.
    private func pushSlateNow() -> Bool {
        source.ensureRawCaps(width: slate.width, height: slate.height, fps: configuration.fps)
        let interval = 1_000_000_000 / UInt64(max(1, configuration.fps))
        // Before the pipeline has a clock the running time is 0: the first buffer starts there.
        let pts = source.runningTime(arrivalNanos: MonotonicClock.nanos()) ?? 0
        return source.push(picture: slate, pts: pts, duration: interval)
    }

    private func tick() {
        let interval = 1_000_000_000 / UInt64(max(1, configuration.fps))
        var next = MonotonicClock.nanos()
        var current = active.withLock { $0 }
        var errorsSeen = current.pipeline.errorCount
        var restartAt: UInt64 = 0
        var restartDelay: UInt64 = 1_000_000_000
        while !state.withLock({ $0.stopping }) {
            let now = MonotonicClock.nanos()
            // A GStreamer error stops the pipeline (a consumer that broke the device's buffers, a
            // device that went away): said once; with `reopenAfterError` opened again with a
            // back-off (1 s doubling to 10 s), the slate and pictures going on where they left off.
            let errors = current.pipeline.errorCount
            if errors != errorsSeen {
                errorsSeen = errors
                var metadata: Logger.Metadata = ["output": "\(configuration.output)", "device": "\(configuration.device)",
                                                 "error": "\(current.pipeline.lastError ?? "?")"]
                if configuration.reopenAfterError {
                    restartAt = now + restartDelay
                    counters.restarts.wrappingAdd(1, ordering: .relaxed)
                    metadata["in"] = "\(restartDelay / 1_000_000) ms"
                    logger.error("virtual webcam stopped; opening it again", metadata: metadata)
                } else {
                    logger.error("virtual webcam stopped; restart livegate (and, if it keeps failing, reload v4l2loopback) to use it again",
                                 metadata: metadata)
                }
            }
            if restartAt != 0 {
                if now >= restartAt {
                    restartAt = 0
                    do {
                        try reopen()
                        current = active.withLock { $0 }
                        errorsSeen = current.pipeline.errorCount
                        logger.info("virtual webcam streaming again", metadata: ["device": "\(configuration.device)"])
                        restartDelay = 1_000_000_000
                    } catch {
                        restartAt = now + restartDelay
                        restartDelay = min(restartDelay * 2, 10_000_000_000)
                    }
                } else {
                    usleep(UInt32(min(restartAt - now, 100_000_000) / 1000))
                    continue
                }
            }
            let pic = pictureToShow(now: now)
            let frame = pic ?? slate
            if pic == nil { counters.slates.wrappingAdd(1, ordering: .relaxed) }
            let source = current.source
            source.ensureRawCaps(width: frame.width, height: frame.height, fps: configuration.fps)
            if let pts = source.runningTime(arrivalNanos: now),
               source.push(picture: frame, pts: pts, duration: interval) {
                counters.pushed.wrappingAdd(1, ordering: .relaxed)
            }
            pic?.release()
            next += interval
            let after = MonotonicClock.nanos()
            if next > after {
                usleep(UInt32((next - after) / 1000))
            } else if after - next > 4 * interval {
                counters.late.wrappingAdd(1, ordering: .relaxed)
                next = after  // fell far behind: do not burst
            }
        }
        tickerDone.signal()
    }

    /// framesIn = pictures received, framesOut = frames pushed to the device, dropped = ticks that
    /// fell far behind, errors = GStreamer errors; `slateFrames` counts offline frames.
    public func stats(camera: String = "") -> OutputStats {
        var s = OutputStats(output: configuration.output, camera: camera)
        s.framesIn = counters.pictures.load(ordering: .relaxed)
        s.framesOut = counters.pushed.load(ordering: .relaxed)
        s.dropped = counters.late.load(ordering: .relaxed)
        s.errors = pastErrors.load(ordering: .relaxed) + pipeline.errorCount
        return s
    }

    /// Times the pipeline was opened again after an error.
    public var restarts: Int { counters.restarts.load(ordering: .relaxed) }

    /// Frames of the offline slate sent so far.
    public var slateFrames: Int { counters.slates.load(ordering: .relaxed) }

    /// A mid-grey card with a darker band (BT.601 full range; converted like camera pictures).
    static func paintSlate(_ p: I420Picture) {
        p.fill(y: 110, u: 128, v: 128)
        let band = p.height / 6
        AFOverlay().fillRect(x: 0, y: (p.height - band) / 2, w: p.width, h: band, color: YUVColor(y: 60, u: 128, v: 128), p)
    }
}

/// A weak reference to the output for the subscription closure (no retain cycle).
final class StateRef: Sendable {
    weak let target: VirtualWebcamOutput?
    init(_ t: VirtualWebcamOutput) { target = t }
}
