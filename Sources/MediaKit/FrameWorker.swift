import Dispatch
import Foundation
import LiveViewCore

/// A dedicated thread that takes frames from a `FramePacer` (its `deliver`), runs a handler on each,
/// then releases the frame and calls the pacer's completion. Because the pacer hands over one frame
/// at a time, a single slot is enough; heavy work (decode, encode) stays off the publisher's thread
/// and off the cooperative pool.
final class FrameWorker: Sendable {
    private struct Pending: Sendable {
        var frame: Frame?
        var completion: PacerCompletion?
        var stopping = false
    }
    private let slot = Mutex(Pending())
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    let name: String
    private let handler: @Sendable (Frame) -> Void

    init(name: String, handler: @escaping @Sendable (Frame) -> Void) {
        self.name = name
        self.handler = handler
    }

    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let t = Thread { [self] in run() }
        t.name = name
        t.start()
    }

    /// The pacer's delivery: hands the frame to the thread.
    func deliver(_ frame: Frame, _ completion: PacerCompletion) {
        let rejected = slot.withLock { p -> Bool in
            if p.stopping { return true }
            p.frame = frame
            p.completion = completion
            return false
        }
        if rejected {
            frame.release()
            completion()
        } else {
            wake.signal()
        }
    }

    /// Stops the thread after the frame in hand (if any); waits for it.
    func stop() {
        let wasStarted = started.load(ordering: .acquiring)
        slot.withLock { $0.stopping = true }
        wake.signal()
        if wasStarted { _ = done.wait(timeout: .now() + 5) }
    }

    private func run() {
        while true {
            wake.wait()
            let (frame, completion, stopping) = slot.withLock { p -> (Frame?, PacerCompletion?, Bool) in
                let r = (p.frame, p.completion, p.stopping)
                p.frame = nil
                p.completion = nil
                return r
            }
            if let frame {
                handler(frame)
                frame.release()
            }
            completion?()
            if stopping { break }
        }
        done.signal()
    }
}
