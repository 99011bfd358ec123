public import LiveViewCore

/// One viewer of a camera's JPEGs as they came from the camera (MJPEG over HTTP): a single slot
/// with the newest frame and at most one waiting reader. Latest wins: a viewer that reads slower
/// than the camera sends skips frames (counted), it never queues them, so a slow client costs one
/// held frame and never memory or delay.
public final class JPEGSubscription: Sendable {
    private struct State {
        var latest: Frame?
        var waiter: CheckedContinuation<Frame?, Never>?
        var closed = false
        var delivered = 0
        var skipped = 0
    }
    private let state = Mutex(State())
    private let onClose: @Sendable (JPEGSubscription) -> Void

    init(onClose: @escaping @Sendable (JPEGSubscription) -> Void) {
        self.onClose = onClose
    }

    deinit { state.withLock { $0.latest }?.release() }

    /// The newest frame not read yet, waiting for one when there is none; the caller owns one
    /// owner of it (`release()` it). Nil once the subscription is cancelled (also when the calling
    /// task is cancelled).
    public func next() async -> Frame? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Frame?, Never>) in
                let ready: Frame?? = state.withLock { s in
                    if let f = s.latest {
                        s.latest = nil
                        return .some(f)
                    }
                    if s.closed { return .some(nil) }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Ends the subscription: a waiting `next()` returns nil, the held frame is released, the
    /// branch forgets the viewer. Idempotent.
    public func cancel() {
        let (wasOpen, waiter, held) = state.withLock { s -> (Bool, CheckedContinuation<Frame?, Never>?, Frame?) in
            let r = (!s.closed, s.waiter, s.latest)
            s.closed = true
            s.waiter = nil
            s.latest = nil
            return r
        }
        waiter?.resume(returning: nil)
        held?.release()
        if wasOpen { onClose(self) }
    }

    /// Frames handed to this viewer, and frames it skipped because it had not read the one before.
    public var counts: (delivered: Int, skipped: Int) { state.withLock { ($0.delivered, $0.skipped) } }

    /// A new frame (publisher's thread; the caller keeps its own owner).
    func deliver(_ frame: Frame) {
        frame.retain()
        let (reader, drop) = state.withLock { s -> (CheckedContinuation<Frame?, Never>?, Frame?) in
            if s.closed { return (nil, frame) }
            s.delivered += 1
            if let w = s.waiter {
                s.waiter = nil
                return (w, nil)
            }
            let old = s.latest
            if old != nil { s.skipped += 1 }
            s.latest = frame
            return (nil, old)
        }
        reader?.resume(returning: frame)
        drop?.release()
    }
}
