import Synchronization

/// Waits for `task` at most `limit`: true when it ended in time. The task is not cancelled and
/// goes on after a timeout; only the caller stops waiting (a shutdown that must end within its
/// budget while a camera that stopped answering holds a request open until its own timeout).
public func waitForTask(_ task: Task<Void, Never>, atMost limit: Duration) async -> Bool {
    let slot = Mutex<CheckedContinuation<Bool, Never>?>(nil)
    let resume: @Sendable (Bool) -> Void = { ended in
        slot.withLock { c -> CheckedContinuation<Bool, Never>? in
            defer { c = nil }
            return c
        }?.resume(returning: ended)
    }
    return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
        slot.withLock { $0 = c }
        let timer = Task {
            try? await Task.sleep(for: limit)
            resume(false)
        }
        Task {
            await task.value
            timer.cancel()
            resume(true)
        }
    }
}
