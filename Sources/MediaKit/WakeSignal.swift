/// Wakes a background loop that had nothing to follow, so it needs no timer meanwhile: the loop
/// waits on `wakeups` while idle, and whoever gives it work calls `wake()` (the newest wake-up is
/// kept when the loop is not yet waiting). Iterating ends when the waiting task is cancelled.
final class WakeSignal: Sendable {
    let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { continuation.yield() }
}
