#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The gateway's monotonic clock in nanoseconds (CLOCK_MONOTONIC), shared by every module so that
/// arrival times, GStreamer running time and latency figures agree.
public enum MonotonicClock {
    public static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Nanoseconds from `then` to `now`, 0 when `then` is later. Two readings taken on different
    /// threads (one stored under a lock, the other read before taking it) are not ordered: a
    /// plain `now - then` traps when the stored one is newer. Every elapsed-time subtraction
    /// between such readings goes through here.
    @inline(__always)
    public static func elapsed(from then: UInt64, to now: UInt64) -> UInt64 {
        now > then ? now - then : 0
    }
}

extension Duration {
    /// Whole nanoseconds, for comparisons with `MonotonicClock` (negative durations count as zero).
    public var nanoseconds: UInt64 {
        let c = components
        guard c.seconds >= 0 else { return 0 }
        return UInt64(c.seconds) * 1_000_000_000 + UInt64(max(0, c.attoseconds) / 1_000_000_000)
    }
}
