import LiveViewCore

/// A card listing kept for the requests that follow it (a download or thumbnail right after the
/// list, which would otherwise list the card again): entries by path, for `lifetime`.
final class CardListing<Entry: Sendable>: Sendable {
    private let state = Mutex<(entries: [String: Entry], at: ContinuousClock.Instant?)>(([:], nil))
    let lifetime: Duration

    init(lifetime: Duration = .seconds(5)) { self.lifetime = lifetime }

    /// The entries of a listing younger than `lifetime`, else nil.
    var fresh: [String: Entry]? {
        state.withLock { s in
            guard let at = s.at, ContinuousClock.now - at < lifetime else { return nil }
            return s.entries
        }
    }

    /// Keeps a listing (the first of two entries with one path wins) and returns it by path.
    @discardableResult
    func store(_ entries: [Entry], path: (Entry) -> String) -> [String: Entry] {
        let byPath = Dictionary(entries.map { (path($0), $0) }, uniquingKeysWith: { a, _ in a })
        state.withLock {
            $0.entries = byPath
            $0.at = .now
        }
        return byPath
    }

    /// The card changed (a shot was taken, a new session began): the next request lists it again.
    func invalidate() { state.withLock { $0.at = nil } }
}
