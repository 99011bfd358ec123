import LiveViewCore
public import NIOCore
public import Logging

/// An error after which reconnecting makes no sense (the user refused the connection on the
/// camera, say): the lifecycle stops retrying and the camera's state becomes `failed`.
public protocol FatalDriverError: Error, CustomStringConvertible {}

/// The part every driver shares: its state, the session task, and the reconnect loop with
/// exponential back-off (250 ms doubling to `maxBackoff`, so a camera that comes back is
/// streaming again within a few seconds).
public final class DriverLifecycle: Sendable {
    private let stateBox = Mutex(CameraState.stopped)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// The stall clock: when the last frame (or datagram, or session start) was noted, in
    /// nanoseconds of `elapsedNanos` (lock-free: it is written per frame or datagram).
    private let lastActivity = Atomic<UInt64>(0)
    private let lastErrorBox = Mutex<String?>(nil)
    let logger: Logger
    let name: String
    let stats: DriverStats
    /// Largest pause between reconnect attempts.
    public let maxBackoff: Duration
    /// What the back-off pauses and the drivers' watchdog ticks sleep on, and what the stall clock
    /// reads (a test's manual clock in the unit tests).
    let clock: any Clock<Duration>
    /// Nanoseconds on `clock` since this lifecycle was made. Read per frame: for the real clock it
    /// is the monotonic clock read directly (the generic `Clock` arithmetic cost a few percent of
    /// an ingest thread's time); a test's manual clock goes through `Clock`.
    private let elapsedNanos: @Sendable () -> UInt64
    /// The event loop whose timer the watchdog ticks sleep on while `clock` is the real one (one
    /// thread wakes per tick, where `Task.sleep` wakes three); nil: the clock's own sleep.
    private let loop: (any EventLoop)?

    public init(name: String, logger: Logger, stats: DriverStats, maxBackoff: Duration = .seconds(2),
                clock: some Clock<Duration> = ContinuousClock(), loop: (any EventLoop)? = nil) {
        self.name = name
        self.logger = logger
        self.stats = stats
        self.maxBackoff = maxBackoff
        self.clock = clock
        self.loop = clock is ContinuousClock ? loop : nil
        if clock is ContinuousClock {
            let origin = MonotonicClock.nanos()
            elapsedNanos = { MonotonicClock.nanos() &- origin }
        } else {
            let origin = clock.now
            elapsedNanos = { origin.duration(to: clock.now).nanoseconds }
        }
    }

    private var nowNanos: UInt64 { elapsedNanos() }

    public var state: CameraState { stateBox.withLock { $0 } }

    public func setState(_ s: CameraState) {
        let old = stateBox.withLock { v -> CameraState in
            let o = v
            v = s
            return o
        }
        if old != s { logger.info("camera \(name): \(s.rawValue)") }
    }

    /// Notes a frame (for the stall watchdog) and marks the camera as streaming.
    public func frameArrived() {
        resetStallClock()
        if state != .streaming { setState(.streaming) }
    }

    /// Nanoseconds since the last frame (or since `resetStallClock`), on the lifecycle's clock.
    public var idleNanos: UInt64 {
        let last = lastActivity.load(ordering: .relaxed)  // before "now": a frame noted in between is not a stall
        let now = nowNanos
        return now > last ? now - last : 0
    }

    /// Starts the stall clock afresh: at the start of a session, and for every sign of life that
    /// is not a frame (a datagram of one, a restarted stream).
    public func resetStallClock() { lastActivity.store(nowNanos, ordering: .relaxed) }

    /// One tick of a driver's watchdog loop: sleeps on the lifecycle's clock, on the event loop's
    /// timer when it has one (throws when the session's task is cancelled).
    public func tick(_ interval: Duration) async throws {
        if let loop {
            try await Self.sleep(for: interval, on: loop)
        } else {
            try await clock.sleep(for: interval)
        }
    }

    /// Sleeps for `duration` on `loop`'s timer; throws `CancellationError` when the task is
    /// cancelled (at once: the timer is cancelled with it).
    public static func sleep(for duration: Duration, on loop: any EventLoop) async throws {
        try Task.checkCancellation()
        let promise = loop.makePromise(of: Void.self)
        let timer = loop.scheduleTask(in: TimeAmount(duration)) { promise.succeed() }
        // A loop shut down while the timer waits fails it: the sleep ends with that error.
        timer.futureResult.whenFailure { promise.fail($0) }
        try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            // The promise first: the timer's own failure (cancelled) must not be what the task sees.
            promise.fail(CancellationError())
            timer.cancel()
        }
    }

    /// True once the camera streams, waiting up to `within` while it is between sessions (a live
    /// view restarted after card work, a reconnect under way); false at once when it is stopped or
    /// failed. For requests that arrive in such a gap: they wait for it instead of failing.
    public func streaming(within: Duration) async -> Bool {
        await waitUntil(within: within) { state == .streaming }
    }

    /// True once `isUp` holds, checked every 50 ms for up to `within` (real time); false when the
    /// time is up, the caller's task is cancelled, or the camera is stopped or failed.
    public func waitUntil(within: Duration, _ isUp: () -> Bool) async -> Bool {
        let by = ContinuousClock.now + within
        while true {
            if isUp() { return true }
            if state == .stopped || state == .failed { return false }
            guard ContinuousClock.now < by, (try? await Task.sleep(for: .milliseconds(50))) != nil else { return false }
        }
    }

    /// The last session error, for diagnostics.
    public var lastError: String? { lastErrorBox.withLock { $0 } }

    /// Runs `session` again and again until `stop()`: each return or error is a drop, followed by
    /// `afterSession` (drop per-session state), a back-off pause and a reconnect. A
    /// `FatalDriverError` ends the loop with the state `failed`.
    public func start(session: @escaping @Sendable () async throws -> Void,
                      afterSession: @escaping @Sendable () -> Void = {}) {
        let t = Task { [self] in
            var backoff: Duration = .milliseconds(250)
            var first = true
            while !Task.isCancelled {
                if first { setState(.connecting) } else { stats.reconnected() }
                first = false
                do {
                    try await session()
                    backoff = .milliseconds(250)
                } catch is CancellationError where Task.isCancelled {
                    break
                } catch let e as any FatalDriverError {
                    lastErrorBox.withLock { $0 = e.description }
                    logger.error("camera \(name): \(e.description); not retrying")
                    setState(.failed)
                    return
                } catch {
                    lastErrorBox.withLock { $0 = "\(error)" }
                    logger.warning("camera \(name): \(error)")
                }
                afterSession()
                if Task.isCancelled { break }
                setState(.reconnecting)
                try? await clock.sleep(for: backoff)
                backoff = min(backoff * 2, maxBackoff)
            }
        }
        task.withLock { $0 = t }
    }

    /// Cancels the session task and waits for it to end.
    public func stop() async {
        let t = task.withLock { v -> Task<Void, Never>? in
            let o = v
            v = nil
            return o
        }
        t?.cancel()
        await t?.value
        setState(.stopped)
    }
}
