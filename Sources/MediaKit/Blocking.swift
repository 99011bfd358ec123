import Foundation
import LiveViewCore

/// Runs `work`, which blocks (GStreamer state changes, recorders starting or finishing their files,
/// the RTSP server's drain, a WebRTC negotiation), on a thread of its own called `name`, and waits
/// for its result without holding one of Swift concurrency's few threads meanwhile. Throws what
/// `work` throws.
///
/// The result travels in a locked box, not through the continuation: when the thread finishes
/// before the caller has suspended, the caller goes on without the runtime's hand-over, and only
/// the lock orders the thread's writes before the caller's reads (for ThreadSanitizer as well).
public func blocking<T: Sendable, E: Error>(_ name: String, _ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let box = BlockingResult<T, E>()
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        let thread = Thread {
            do throws(E) {
                let value = try work()
                box.value.withLock { $0 = .success(value) }
            } catch {
                box.value.withLock { $0 = .failure(error) }
            }
            done.resume()
        }
        thread.name = name
        thread.start()
    }
    // The thread stored a result before resuming.
    return try box.value.withLock { $0! }.get()
}

private final class BlockingResult<T: Sendable, E: Error>: Sendable {
    let value = Mutex<Result<T, E>?>(nil)
}
