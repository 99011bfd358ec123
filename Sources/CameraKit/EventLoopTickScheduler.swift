public import LiveViewCore
public import NIOCore

/// A `TickScheduler` on a SwiftNIO event loop's timer: a tick wakes that loop's thread only (no
/// hop through Swift concurrency's timer thread and cooperative pool). The work runs on the loop,
/// so it must be short and never block.
public struct EventLoopTickScheduler: TickScheduler {
    public let loop: any EventLoop

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledTick {
        let scheduled = loop.scheduleTask(in: TimeAmount(delay), work)
        return ScheduledTick { scheduled.cancel() }
    }
}
