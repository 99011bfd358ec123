import Foundation
public import LiveViewCore
public import Logging

/// One camera's media graph: the camera's hub feeds branches that exist only while consumed.
///
/// * `jpeg`: the camera's bytes, no decode (RTSP `/raw`, later MJPEG over HTTP).
/// * `pictures`: one decode + AF overlay (virtual webcam, and the encoder below).
/// * `encoded`: ONE H.264 encoder shared by every H.264 consumer (RTSP H.264 sessions, HLS, …).
///
/// The first consumer of a branch starts it, and it stops `linger` after the last one leaves. While
/// the camera is away (not streaming, or no frame for `stallAfter`) and someone watches, the graph
/// publishes the offline slate into the hub at `slateFPS`, in the size of the last live frame (or
/// the nominal size), so every output keeps a picture and its caps. A watchdog logs and counts
/// consumers that got no media for `starveAfter`.
public final class CameraGraph: Sendable {
    /// Graph settings.
    public struct Configuration: Sendable {
        /// The camera id (mount names, logs).
        public var id: String
        /// Nominal frame rate of the camera.
        public var fps: Int = 30
        /// Draw AF areas on decoded pictures.
        public var overlay = true
        /// How long a branch outlives its last consumer.
        public var linger: Duration = .seconds(10)
        /// The slate's size while the camera has never streamed.
        public var nominalWidth = 640
        public var nominalHeight = 480
        /// No live frame for this long counts as "away" even while the driver says streaming.
        public var stallAfter: Duration = .seconds(2)
        /// Slate frames per second while the camera is away.
        public var slateFPS = 5
        /// A consumer without media for this long is logged and counted.
        public var starveAfter: Duration = .seconds(5)
        /// The shared encoder.
        public var encoder = EncodedBranch.Configuration()
        /// JPEG quality of `/raw` frames that RTP/JPEG cannot carry as they are.
        public var reencodeQuality = 85

        public init(id: String) {
            self.id = id
        }
    }

    public let configuration: Configuration
    /// The camera's frames (the driver publishes here; so does the slate).
    public let hub: FrameHub
    /// The JPEG branch.
    public let jpeg: JPEGBranch
    /// The picture branch (decode + overlay).
    public let pictures: AnnotatedStream
    /// The encoded branch (one H.264 encoder).
    public let encoded: EncodedBranch
    private let slate: SlateSource
    private let presence: @Sendable () -> CameraPresence
    private let logger: Logger
    private let scheduler: any TickScheduler
    private let ticker = Mutex<ScheduledTick?>(nil)
    private let slatePeriod: Duration
    private let livePeriod: Duration
    private let watch = Mutex(Watch())
    private let starvedCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    private struct Watch {
        var lastLive = 0
        var lastLiveAt: UInt64 = MonotonicClock.nanos()
        var liveWidth = 0
        var liveHeight = 0
        var away = false
        var starving: Set<ObjectIdentifier> = []
    }

    /// Builds the graph (no branch runs until a consumer comes). `presence` tells the camera's state.
    /// The graph's watch (slate, stall, starved sessions) runs on `scheduler`'s timer: the gateway
    /// passes an event loop's, so a tick wakes one thread.
    public init(configuration: Configuration, hub: FrameHub, runtime: GStreamerRuntime,
                presence: @escaping @Sendable () -> CameraPresence,
                scheduler: any TickScheduler = TaskTickScheduler(), logger: Logger) throws {
        self.configuration = configuration
        self.hub = hub
        self.presence = presence
        self.scheduler = scheduler
        self.logger = logger
        let id = configuration.id
        jpeg = JPEGBranch(id: id, hub: hub, linger: configuration.linger, fps: configuration.fps,
                          reencodeQuality: configuration.reencodeQuality, logger: logger)
        pictures = try AnnotatedStream(name: id, hub: hub, overlay: configuration.overlay,
                                       linger: configuration.linger, logger: logger)
        var enc = configuration.encoder
        enc.fps = configuration.fps
        enc.linger = configuration.linger
        encoded = EncodedBranch(id: id, pictures: pictures, runtime: runtime, configuration: enc, logger: logger)
        slate = SlateSource(name: id)
        slatePeriod = Duration.nanoseconds(Int64(1_000_000_000 / max(1, configuration.slateFPS)))
        // While the camera streams, the tick watches for the camera leaving (the slate must follow
        // within a second: viewers never go longer without a picture), a stall and starved
        // sessions: 2 ticks a second. While it is away, the slate's rate.
        livePeriod = max(slatePeriod, .milliseconds(500))
        scheduleTick(after: slatePeriod)
    }

    /// Arms the next tick; each tick arms the one after it, at the rate the camera's state asks for.
    private func scheduleTick(after delay: Duration) {
        let next = scheduler.schedule(after: delay) { [weak self] in
            guard let self, !self.stopped.load(ordering: .relaxed) else { return }
            self.scheduleTick(after: self.tick() ? self.slatePeriod : self.livePeriod)
        }
        ticker.withLock { $0 = next }
        // A stop() that came between the check above and this tick's arming cancels it here.
        if stopped.load(ordering: .relaxed) { next.cancel() }
    }

    deinit { stop() }

    /// Stops every branch and the slate at once (shutdown). Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        ticker.withLock { $0 }?.cancel()
        encoded.shutdown()
        jpeg.shutdown()
        pictures.stop()
    }

    /// True while some branch runs (someone watches, or a linger is running).
    public var isWatched: Bool { jpeg.isRunning || pictures.isRunning || encoded.isRunning }
    /// True while the slate is being shown.
    public var showingSlate: Bool { watch.withLock { $0.away } }
    /// Slate frames published so far.
    public var slateFrames: Int { slate.framesPublished }
    /// Consumers that went without media for `starveAfter` (each episode counted once).
    public var starvedSessions: Int { starvedCount.load(ordering: .relaxed) }
    /// The number of H.264 encoders running for this camera (0 or 1).
    public var runningEncoders: Int { encoded.isRunning ? 1 : 0 }

    /// Counters of the graph's branches.
    public func stats() -> [OutputStats] {
        [jpeg.outputStats(), jpeg.viewerStats(), pictures.stats(camera: configuration.id), encoded.outputStats()]
    }

    /// Returns true while the camera is away or not streaming (the slate's rate applies).
    private func tick() -> Bool {
        let now = MonotonicClock.nanos()
        let published = hub.published - slate.framesPublished
        let stallNanos = configuration.stallAfter.nanoseconds
        let p = presence()
        let (away, size, presenceNow) = watch.withLock { w -> (Bool, (Int, Int), CameraPresence) in
            if published != w.lastLive {
                w.lastLive = published
                w.lastLiveAt = now
            }
            var shown = p
            var away = p.state != "streaming"
            if !away, now &- w.lastLiveAt > stallNanos {
                away = true
                shown = CameraPresence(state: "stalled", reason: "no frames for \(Int(configuration.stallAfter.components.seconds)) s")
            }
            w.away = away
            return (away, (w.liveWidth, w.liveHeight), shown)
        }
        if !away {
            if let f = hub.latest() {
                if !f.isSlate, f.width > 0, f.height > 0 {
                    watch.withLock { w in
                        w.liveWidth = f.width
                        w.liveHeight = f.height
                    }
                }
                f.release()
            }
        } else if isWatched {
            let (w, h) = size.0 > 0 ? size : (configuration.nominalWidth, configuration.nominalHeight)
            slate.publish(presenceNow, width: w, height: h, into: hub)
        }
        checkStarvation(now: now)
        return away || p.state != "streaming"
    }

    private func checkStarvation(now: UInt64) {
        let limit = configuration.starveAfter.nanoseconds
        let sources = jpeg.sources + encoded.sources
        var newlyStarved: [AppSource] = []
        watch.withLock { w in
            var current: Set<ObjectIdentifier> = []
            for s in sources {
                let last = max(s.lastPushNanos, s.createdAt)
                guard now > last, now - last > limit else { continue }
                let key = ObjectIdentifier(s)
                current.insert(key)
                if !w.starving.contains(key) { newlyStarved.append(s) }
            }
            w.starving = current
        }
        for s in newlyStarved {
            starvedCount.wrappingAdd(1, ordering: .relaxed)
            logger.warning("an output session got no media", metadata: [
                "camera": "\(configuration.id)", "seconds": "\(configuration.starveAfter.components.seconds)",
                "pushed": "\(s.pushed)", "clockResets": "\(s.clockResets)"])
        }
    }
}
