import Foundation
import TestSupport
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
        await waitUntil(timeout: seconds) { self.count >= n }
    }

    /// What a driver delivered against what its camera sent, over the time the driver takes to count
    /// `frames` more (deadline `timeout` seconds): counts for the assertions (every frame the camera sent
    /// arrived, none twice), the rate only for the log (rates are measured in `make bench`, not asserted).
    struct Window {
        var delivered: Int
        var sent: Int
        var complete: Bool
        var fps: Double
        /// Every frame the camera sent in the window reached the driver once: none lost beyond the one
        /// or two in flight at either end, none invented or delivered twice.
        var oneForOne: Bool { delivered >= sent - 2 && delivered <= sent + 2 }
    }

    static func window(frames n: Int, timeout: Double = 15, delivered: () -> Int, sent: () -> Int) async -> Window {
        let d0 = delivered(), s0 = sent(), t0 = MonotonicClock.nanos()
        let complete = await waitUntil(timeout: timeout, poll: .milliseconds(10)) { delivered() >= d0 + n }
        let d1 = delivered(), s1 = sent()
        let seconds = Double(MonotonicClock.nanos() - t0) / 1e9
        return Window(delivered: d1 - d0, sent: s1 - s0, complete: complete, fps: Double(d1 - d0) / max(seconds, 1e-9))
    }

    /// Largest gap between consecutive frames collected after `from` (ns), in seconds.
    func largestGap(after from: UInt64) -> Double {
        let times = all.map(\.at).filter { $0 >= from }
        var gap: UInt64 = 0
        for (a, b) in zip(times, times.dropFirst()) { gap = max(gap, b &- a) }
        return Double(gap) / 1e9
    }
}

