import LiveViewCore

/// Cameras that show their card only in a mode that ends the live view — a LUMIX body's play mode
/// (panasonic.md §5), a Sony's "Contents Transfer" function (sony.md §8.3) — lend that mode to card
/// work (listing, downloads, fetching a shot) while the driver's session loop keeps the camera
/// connected: the loop neither goes back to shooting nor counts the missing frames as a stall while
/// the lease is open, and it ends the lease — back to shooting, live view again — once no card work
/// has run for the linger.
final class CardModeLease: Sendable {
    /// One card operation at a time, and never a mode switch in the middle of one.
    let serial = AsyncMutex()

    private struct State {
        var inCardMode = false
        var users = 0
        var lastUse = ContinuousClock.now
        var linger: Duration = .zero
    }
    private let state = Mutex(State())

    /// True while the camera is (or is being put) in its card mode for card work, or card work waits
    /// for its turn.
    var isOpen: Bool { state.withLock { $0.inCardMode || $0.users > 0 } }

    /// Card work is coming (counted before it waits for `serial`, so the session loop never queues
    /// behind it).
    func began() {
        state.withLock { $0.users += 1 }
    }

    /// The camera says it is shooting again while the card mode lingers for nobody (a half press
    /// on the body, a body drifting back): the card mode is over.
    func cameraLeftPlay() {
        state.withLock { if $0.users == 0 { $0.inCardMode = false } }
    }

    func entered() { state.withLock { $0.inCardMode = true } }
    func left() { state.withLock { $0.inCardMode = false } }
    var inCardMode: Bool { state.withLock { $0.inCardMode } }

    /// Runs `body` as card work: counted from now, then one at a time; shooting may come back
    /// `linger` after it ends.
    func run<T: Sendable>(linger: Duration, _ body: () async throws -> T) async throws -> T {
        began()
        defer { ended(linger: linger) }
        return try await serial.withLock { try await body() }
    }

    /// The card work ended; shooting may come back `linger` from now.
    func ended(linger: Duration) {
        state.withLock {
            $0.users -= 1
            $0.lastUse = .now
            $0.linger = linger
        }
    }

    /// Ends the lease with `leave` (back to shooting) when nobody has used the card for the linger,
    /// checked again under the lock, so card work that got its turn first is never cut short; when
    /// the lock is taken (card work or a capture runs) the caller's loop is not held up behind it
    /// and tries again later. True when `leave` ran.
    @discardableResult
    func closeIfIdle(_ leave: () async -> Void) async -> Bool {
        guard shouldClose else { return false }
        return await serial.withLockIfFree {
            guard shouldClose else { return false }
            await leave()
            return true
        } ?? false
    }

    /// True when the camera sits in its card mode that nobody has used for the linger.
    var shouldClose: Bool {
        state.withLock { $0.inCardMode && $0.users == 0 && ContinuousClock.now - $0.lastUse >= $0.linger }
    }
}
