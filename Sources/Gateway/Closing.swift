import LiveViewCore

/// The gateway is closing (SIGTERM/SIGINT, or `stop()`): long-lived answers that register here
/// (MJPEG viewers) end now, cleanly, instead of holding the HTTP server's graceful shutdown open
/// until their client goes. Fired once; what registers after it runs at once. (The event stream
/// ends through `EventStream.close`; anything else still running 2.5 s after the signal, a card
/// download from a slow camera among them, is cancelled by the service group.)
public final class ClosingSignal: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var handlers: [Int: @Sendable () -> Void] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs every handler once (outside the lock). Idempotent.
    public func close() {
        let handlers = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.closed else { return [] }
            s.closed = true
            defer { s.handlers = [:] }
            return Array(s.handlers.values)
        }
        for h in handlers { h() }
    }

    /// Calls `handler` when the gateway closes (at once when it has). Keep the token and give it to
    /// `forget` when the answer ends first.
    @discardableResult
    public func onClose(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let token = state.withLock { s -> Int? in
            guard !s.closed else { return nil }
            s.next += 1
            s.handlers[s.next] = handler
            return s.next
        }
        if token == nil { handler() }
        return token
    }

    public func forget(_ token: Int?) {
        guard let token else { return }
        _ = state.withLock { $0.handlers.removeValue(forKey: token) }
    }
}
