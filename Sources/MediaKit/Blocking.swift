import Foundation

/// Runs `work`, which blocks (GStreamer state changes, recorders starting or finishing their files,
/// the RTSP server's drain, a WebRTC negotiation), on a thread of its own called `name`, and waits
/// for its result without holding one of Swift concurrency's few threads meanwhile. Throws what
/// `work` throws.
public func blocking<T: Sendable, E: Error>(_ name: String, _ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { done in
        let thread = Thread {
            do throws(E) {
                done.resume(returning: .success(try work()))
            } catch {
                done.resume(returning: .failure(error))
            }
        }
        thread.name = name
        thread.start()
    }
    return try result.get()
}
