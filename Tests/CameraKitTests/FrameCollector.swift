import Foundation
import LiveViewCore

/// Collects what a hub publishes, for every driver test: a paced consumer that copies each
/// frame's bytes and metadata and completes at once.
final class FrameCollector: @unchecked Sendable {
    struct Seen {
        var seq: UInt64?
        var pts: Int64?
        var timeBase: Frame.TimeBase
        var width: Int
        var height: Int
        var af: [AFArea]
        var bytes: [UInt8]
        /// The frame's arrival time at the driver (monotonic ns).
        var arrival: UInt64
        /// When the collector got it (monotonic ns).
        var at: UInt64
    }

    let frames = Mutex<[Seen]>([])
    lazy var pacer = FramePacer(name: "collector") { [unowned self] f, done in
        let s = Seen(seq: f.sequence, pts: f.cameraPTS, timeBase: f.timeBase, width: f.width, height: f.height,
                     af: f.afAreas, bytes: Array(f.bytes), arrival: f.arrivalNanos, at: MonotonicClock.nanos())
        self.frames.withLock { $0.append(s) }
        f.release()
        done()
    }

    var count: Int { frames.withLock { $0.count } }
    var all: [Seen] { frames.withLock { $0 } }

    /// Waits until `n` frames arrived or `seconds` passed.
    func wait(for n: Int, seconds: Double = 10) async -> Bool {
        await waitUntil(seconds: seconds) { self.count >= n }
    }

    /// Frames per second over a window of `seconds` measured from now.
    func measureFPS(seconds: Double = 1.0) async -> Double {
        let n0 = count
        let t0 = MonotonicClock.nanos()
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        let n1 = count
        let t1 = MonotonicClock.nanos()
        return Double(n1 - n0) * 1e9 / Double(t1 - t0)
    }

    /// Largest gap between consecutive frames collected after `from` (ns), in seconds.
    func largestGap(after from: UInt64) -> Double {
        let times = all.map(\.at).filter { $0 >= from }
        var gap: UInt64 = 0
        for (a, b) in zip(times, times.dropFirst()) { gap = max(gap, b &- a) }
        return Double(gap) / 1e9
    }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() && Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    return condition()
}
