import LiveViewCore
import NIOCore

/// The pauses of a driver's watchdog loop over one stream: on the stream's event loop timer (one
/// thread wakes, where `Task.sleep` wakes three), and ended at once when the stream closes, so a
/// camera that drops is noticed without waiting for the next check.
final class ChannelWatchPauses: Sendable {
    private let channel: any Channel
    private let waiting = Mutex<EventLoopPromise<Void>?>(nil)

    init(channel: any Channel) {
        self.channel = channel
        channel.closeFuture.whenComplete { [self] _ in
            waiting.withLock { $0 }?.succeed()
        }
    }

    /// Returns after `delay`, or as soon as the stream is closed (at once when it already is).
    func pause(_ delay: Duration) async {
        let loop = channel.eventLoop
        let promise = loop.makePromise(of: Void.self)
        waiting.withLock { $0 = promise }
        // Closed before the promise was in place: the close callback may have missed it.
        if !channel.isActive { promise.succeed() }
        let timer = loop.scheduleTask(in: TimeAmount(delay)) { promise.succeed() }
        try? await promise.futureResult.get()
        timer.cancel()
        waiting.withLock { $0 = nil }
    }
}
