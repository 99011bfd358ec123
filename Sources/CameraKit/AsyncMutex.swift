/// A lock for async critical sections that suspend (a PTP transaction on a shared connection, a
/// LUMIX camera switched to play mode for its card): waiters suspend instead of blocking a thread,
/// and are let in in arrival order.
actor AsyncMutex {
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        if !locked {
            locked = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Takes the lock only when it is free.
    func tryLock() -> Bool {
        guard !locked else { return false }
        locked = true
        return true
    }

    func unlock() {
        if waiters.isEmpty { locked = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` holding the lock if it is free now; nil (without waiting) when it is not.
    nonisolated func withLockIfFree<T: Sendable>(_ body: () async throws -> T) async rethrows -> T? {
        guard await tryLock() else { return nil }
        return try await holding(body)
    }

    /// Runs `body` holding the lock.
    nonisolated func withLock<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await lock()
        return try await holding(body)
    }

    /// Runs `body` with the lock taken, and gives it back however `body` ends.
    private nonisolated func holding<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        do {
            let v = try await body()
            await unlock()
            return v
        } catch {
            await unlock()
            throw error
        }
    }
}
