import LiveViewCore

/// A LUMIX body shows its card only in play mode (`camcmd&value=playmode`), and play mode ends the
/// live view (panasonic.md §5). The gate lets card work (listing, downloads, fetching a shot) borrow
/// play mode while the session loop keeps the camera connected: the loop neither re-enters record
/// mode nor counts the missing frames as a stall while the gate is open, and it closes the gate —
/// `recmode`, `startstream` — once no card work has run for the linger.
final class PanasonicPlayMode: Sendable {
    /// One card operation at a time, and never a mode switch in the middle of one.
    let serial = AsyncMutex()

    private struct State {
        var inPlay = false
        var users = 0
        var lastUse = ContinuousClock.now
        var linger: Duration = .zero
    }
    private let state = Mutex(State())

    /// True while the camera is (or is being put) in play mode for card work, or card work waits
    /// for its turn.
    var isOpen: Bool { state.withLock { $0.inPlay || $0.users > 0 } }

    /// Card work is coming (counted before it waits for `serial`, so the session loop never queues
    /// behind it).
    func began() {
        state.withLock { $0.users += 1 }
    }

    /// The camera says it is in record mode while play mode lingers for nobody (a half press on
    /// the body, a body drifting back): play mode is over.
    func cameraLeftPlay() {
        state.withLock { if $0.users == 0 { $0.inPlay = false } }
    }

    func entered() { state.withLock { $0.inPlay = true } }
    func left() { state.withLock { $0.inPlay = false } }
    var inPlay: Bool { state.withLock { $0.inPlay } }

    /// Runs `body` as card work: counted from now, then one at a time; record mode may come back
    /// `linger` after it ends.
    func run<T: Sendable>(linger: Duration, _ body: () async throws -> T) async throws -> T {
        began()
        defer { ended(linger: linger) }
        return try await serial.withLock { try await body() }
    }

    /// The card work ended; record mode may come back `linger` from now.
    func ended(linger: Duration) {
        state.withLock {
            $0.users -= 1
            $0.lastUse = .now
            $0.linger = linger
        }
    }

    /// True when the camera sits in play mode that nobody has used for the linger.
    var shouldClose: Bool {
        state.withLock { $0.inPlay && $0.users == 0 && ContinuousClock.now - $0.lastUse >= $0.linger }
    }
}
