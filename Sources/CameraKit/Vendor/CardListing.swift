import LiveViewCore

/// A card listing kept for the requests that follow it (a download or thumbnail right after the
/// list, the next page of a big card), entries by path, for `lifetime` or until `invalidate()`.
///
/// A listing takes a `ticket` before it asks the camera and hands it to `store`: a change
/// announced while it was listing (a shot, a new session) makes that listing unfit to keep, so it
/// is answered but not stored, and the next request lists the card again.
final class CardListing<Entry: Sendable>: Sendable {
    private struct State {
        var entries: [String: Entry] = [:]
        var at: ContinuousClock.Instant?
        var generation: UInt64 = 0
    }
    private let state = Mutex(State())
    let lifetime: Duration

    init(lifetime: Duration = .seconds(5)) { self.lifetime = lifetime }

    /// The entries of a listing younger than `lifetime`, else nil.
    var fresh: [String: Entry]? {
        state.withLock { s in
            guard let at = s.at, ContinuousClock.now - at < lifetime else { return nil }
            return s.entries
        }
    }

    /// Taken before a listing asks the camera (see `store`).
    var ticket: UInt64 { state.withLock { $0.generation } }

    /// A listing by path (the first of two entries with one path wins), kept when nothing was
    /// invalidated since `ticket` was taken.
    @discardableResult
    func store(_ entries: [Entry], path: (Entry) -> String, since ticket: UInt64) -> [String: Entry] {
        let byPath = Dictionary(entries.map { (path($0), $0) }, uniquingKeysWith: { a, _ in a })
        state.withLock {
            guard $0.generation == ticket else { return }
            $0.entries = byPath
            $0.at = .now
        }
        return byPath
    }

    /// The card changed (a shot was taken, a new session began): the next request lists it again,
    /// and a listing under way is not kept.
    func invalidate() {
        state.withLock {
            $0.at = nil
            $0.generation &+= 1
        }
    }
}
