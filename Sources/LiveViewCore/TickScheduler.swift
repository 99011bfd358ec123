/// Runs a short piece of work after a delay: the timer behind the gateway's periodic checks (a
/// camera graph's watch over its camera and sessions, a driver's stall check).
///
/// Each `Task.sleep` that ends wakes three threads (the runtime's timer thread, a thread of the
/// cooperative pool, which wakes a second one) and the timer thread once more to arm the next
/// sleep: about 0.23 ms of CPU per tick on the 2-core reference machine, which a few ticks a second
/// turn into a third of an idle camera's cost. The gateway therefore schedules its checks on an
/// event loop (`EventLoopTickScheduler` in CameraKit: one thread wakes); `TaskTickScheduler` is the
/// portable one for tests and tools.
///
/// `work` must not block: it runs on a thread that also carries I/O.
public protocol TickScheduler: Sendable {
    /// Runs `work` once, `delay` from now; the handle cancels it while it has not started.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledTick
}

/// A scheduled piece of work, which can be cancelled until it starts.
public struct ScheduledTick: Sendable {
    private let cancelling: @Sendable () -> Void

    public init(cancel: @escaping @Sendable () -> Void) {
        cancelling = cancel
    }

    /// Cancels the work if it has not started (idempotent).
    public func cancel() { cancelling() }
}

/// A `TickScheduler` on Swift concurrency's sleep (a detached task per tick).
public struct TaskTickScheduler: TickScheduler {
    public init() {}

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledTick {
        let task = Task.detached {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            work()
        }
        return ScheduledTick { task.cancel() }
    }
}
