import LiveViewCore
import Foundation

/// Runs a branch of the media graph only while it has consumers: the first consumer starts it, and
/// it stops a linger after the last one leaves (unless a consumer came back meanwhile), so a viewer
/// that reconnects at once does not pay for a restart. `start` and `stop` are called one at a time,
/// in order (the start on the acquiring thread, a delayed stop on a short-lived thread).
final class DemandGate: Sendable {
    private struct State {
        var consumers = 0
        var running = false
        /// Bumped by every change; a scheduled stop only runs when nothing happened since.
        var generation: UInt64 = 0
        var starts = 0
        var stops = 0
        /// Shut down for good: consumers that come later start nothing.
        var closed = false
    }

    private let state = Mutex(State())
    /// Serialises start/stop so a stop never overlaps a start.
    private let transitions = Mutex(())
    private let name: String
    private let linger: Duration
    private typealias Actions = (start: @Sendable () -> Void, stop: @Sendable () -> Void)
    private let actions = Mutex<Actions?>(nil)

    /// A gate whose actions are given now.
    convenience init(name: String, linger: Duration, start: @escaping @Sendable () -> Void, stop: @escaping @Sendable () -> Void) {
        self.init(name: name, linger: linger)
        bind(start: start, stop: stop)
    }

    /// A gate whose actions come later through `bind` (when they need the owner's `self`).
    init(name: String, linger: Duration) {
        self.linger = linger
        self.name = name
    }

    /// Sets what starting and stopping the branch does (once, before the first consumer).
    func bind(start: @escaping @Sendable () -> Void, stop: @escaping @Sendable () -> Void) {
        actions.withLock { $0 = (start, stop) }
    }

    private func onStart() { actions.withLock { $0 }?.start() }
    private func onStop() { actions.withLock { $0 }?.stop() }

    /// Adds a consumer; starts the branch (synchronously, on this thread) when it is not running.
    func acquire() {
        transitions.withLock { _ in
            let mustStart = state.withLock { s -> Bool in
                guard !s.closed else { return false }
                s.consumers += 1
                s.generation &+= 1
                guard !s.running else { return false }
                s.running = true
                s.starts += 1
                return true
            }
            if mustStart { onStart() }
        }
    }

    /// Removes a consumer; the last one schedules the stop after the linger. `lingering: false`
    /// stops at once (on this thread) when it was the last: for a consumer that lingered already
    /// (a branch downstream that stops after its own linger), so lingers never add up.
    func release(lingering: Bool = true) {
        let (idle, generation) = state.withLock { s -> (Bool, UInt64) in
            s.consumers = max(0, s.consumers - 1)
            s.generation &+= 1
            return (s.consumers == 0, s.generation)
        }
        guard idle else { return }
        guard lingering else {
            stopIfStill(generation)
            return
        }
        // A plain thread sleeps through the linger (stopping may block on GStreamer state changes, so
        // it stays off the cooperative pool; releases come with client departures, so they are rare).
        let nanos = linger.nanoseconds
        let thread = Thread { [self] in
            var remaining = nanos
            while remaining > 0 {
                let step = min(remaining, 1_000_000_000)
                usleep(UInt32(step / 1000))
                remaining -= step
            }
            stopIfStill(generation)
        }
        thread.name = "linger-\(name)"
        thread.start()
    }

    private func stopIfStill(_ generation: UInt64) {
        transitions.withLock { _ in
            let mustStop = state.withLock { s -> Bool in
                guard s.generation == generation, s.consumers == 0, s.running else { return false }
                s.running = false
                s.stops += 1
                return true
            }
            if mustStop { onStop() }
        }
    }

    /// Stops at once whatever the consumers, for good (shutdown): a consumer that comes later
    /// (a viewer connecting while the outputs shut down) starts nothing.
    func shutdown() {
        transitions.withLock { _ in
            let mustStop = state.withLock { s -> Bool in
                s.closed = true
                s.consumers = 0
                s.generation &+= 1
                guard s.running else { return false }
                s.running = false
                s.stops += 1
                return true
            }
            if mustStop { onStop() }
        }
    }

    var isRunning: Bool { state.withLock { $0.running } }
    var consumers: Int { state.withLock { $0.consumers } }
    /// How often the branch was started and stopped.
    var transitionsCount: (starts: Int, stops: Int) { state.withLock { ($0.starts, $0.stops) } }
}
