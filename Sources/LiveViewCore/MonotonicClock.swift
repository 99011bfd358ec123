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
}

extension Duration {
    /// Whole nanoseconds, for comparisons with `MonotonicClock` (negative durations count as zero).
    public var nanoseconds: UInt64 {
        let c = components
        guard c.seconds >= 0 else { return 0 }
        return UInt64(c.seconds) * 1_000_000_000 + UInt64(max(0, c.attoseconds) / 1_000_000_000)
    }
}
