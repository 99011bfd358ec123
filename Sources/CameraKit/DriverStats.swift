public import CameraWire
import LiveViewCore

/// Counters a driver keeps; read from any thread.
public final class DriverStats: Sendable {
    private let framesCount = Atomic<Int>(0)
    private let bytesCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let reconnectCount = Atomic<Int>(0)
    private let afUnmatchedCount = Atomic<Int>(0)
    private let foreignCount = Atomic<Int>(0)
    private let lastFrameNanos = Atomic<UInt64>(0)
    private let firstFrameNanos = Atomic<UInt64>(0)
    private let windowStart = Atomic<UInt64>(0)
    private let windowFrames = Atomic<Int>(0)
    private let fpsMilli = Atomic<Int>(0)
    private let dropReasons = Mutex<[String: Int]>([:])

    public init() {}

    /// Counts one received frame of `bytes` bytes at `nanos` (monotonic).
    public func frame(bytes: Int, at nanos: UInt64) {
        framesCount.wrappingAdd(1, ordering: .relaxed)
        bytesCount.wrappingAdd(bytes, ordering: .relaxed)
        lastFrameNanos.store(nanos, ordering: .relaxed)
        _ = firstFrameNanos.compareExchange(expected: 0, desired: nanos, ordering: .relaxed)
        let start = windowStart.load(ordering: .relaxed)
        let n = windowFrames.wrappingAdd(1, ordering: .relaxed).newValue
        if start == 0 {
            windowStart.store(nanos, ordering: .relaxed)
        } else if nanos - start >= 1_000_000_000 {
            fpsMilli.store(Int(Double(n - 1) * 1e12 / Double(nanos - start)), ordering: .relaxed)
            windowStart.store(nanos, ordering: .relaxed)
            windowFrames.store(1, ordering: .relaxed)
        }
    }

    /// Counts damaged or incomplete frames that were dropped, under the reason they were (see
    /// `WireError.dropReason`; also `incomplete` when a frame's datagrams never all came,
    /// `sequence-gap` when the camera's frame numbers skip).
    public func dropped(_ n: Int = 1, reason: String) {
        guard n > 0 else { return }
        droppedCount.wrappingAdd(n, ordering: .relaxed)
        dropReasons.withLock { $0[reason, default: 0] += n }
    }
    /// A frame the parser gave up on, counted under its problem.
    public func dropped(_ issue: WireIssue) { dropped(1, reason: issue.error.dropReason) }
    /// Frames dropped so far, by reason.
    public var dropsByReason: [String: Int] { dropReasons.withLock { $0 } }
    /// Counts a datagram that did not come from the camera's address and stream port (dropped unread).
    public func foreignDatagram() { foreignCount.wrappingAdd(1, ordering: .relaxed) }
    public var foreignDatagrams: Int { foreignCount.load(ordering: .relaxed) }
    /// Counts frames that waited for their AF information and went out without it.
    public func afUnmatched(_ n: Int) { afUnmatchedCount.wrappingAdd(n, ordering: .relaxed) }
    public var afUnmatched: Int { afUnmatchedCount.load(ordering: .relaxed) }
    /// Counts a reconnect.
    public func reconnected() { reconnectCount.wrappingAdd(1, ordering: .relaxed) }

    public var frames: Int { framesCount.load(ordering: .relaxed) }
    public var bytes: Int { bytesCount.load(ordering: .relaxed) }
    public var drops: Int { droppedCount.load(ordering: .relaxed) }
    public var reconnects: Int { reconnectCount.load(ordering: .relaxed) }
    /// Frames per second over the last full second (0 when stalled for more than 2 s).
    public var fps: Double {
        let last = lastFrameNanos.load(ordering: .relaxed)
        // `last` may be stored by the ingest thread after this thread's reading of the clock.
        if last == 0 || MonotonicClock.elapsed(from: last, to: MonotonicClock.nanos()) > 2_000_000_000 { return 0 }
        return Double(fpsMilli.load(ordering: .relaxed)) / 1000
    }
}
