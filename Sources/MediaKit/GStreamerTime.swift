internal import CGStreamer

/// GStreamer's clock values in Swift (the C macros `GST_CLOCK_TIME_NONE` and `GST_STATE` do not
/// import, the functions behind them do).
enum GStreamerTime {
    /// `GST_CLOCK_TIME_NONE`: no time.
    static let none: UInt64 = .max

    /// Running time of `element` now (its clock's time minus its base time), or nil unless it is
    /// PLAYING with a base time. While a pipeline goes to PLAYING it has its clock before its base
    /// time, and "clock time − 0" is the machine's uptime: a timestamp a synchronised sink would wait
    /// for (a session without media for as long as the machine has been up).
    /// The element is PLAYING now (without waiting for a change in progress).
    static func isPlaying(_ element: UnsafeMutablePointer<GstElement>) -> Bool {
        var state = GST_STATE_VOID_PENDING
        _ = gst_element_get_state(element, &state, nil, 0)
        return state == GST_STATE_PLAYING
    }

    static func runningTime(of element: UnsafeMutablePointer<GstElement>) -> UInt64? {
        var state = GST_STATE_VOID_PENDING
        // Timeout 0: the current state, without waiting for a change in progress.
        _ = gst_element_get_state(element, &state, nil, 0)
        guard state == GST_STATE_PLAYING else { return nil }
        let base = gst_element_get_base_time(element)
        guard base != 0, base != none, let clock = gst_element_get_clock(element) else { return nil }
        let now = gst_clock_get_time(clock)
        gst_object_unref(clock)
        return now < base ? 0 : UInt64(now - base)
    }
}
