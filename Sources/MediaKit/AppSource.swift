internal import CGStreamer
internal import CGStreamerShim
import LiveViewCore
import Synchronization

/// One `appsrc` (a reference is held) with the timing and caps state of the thread pushing into it.
final class AppSource: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    /// Identity of the owner (e.g. the RTSP media), for removal.
    let owner: UInt
    private struct State {
        var capsWidth = 0
        var capsHeight = 0
        var lastPTS: UInt64 = 0
        var pushed = 0
        var notReady = 0
    }
    private let state = Mutex(State())

    /// Takes over one reference of `element`.
    init(element: UnsafeMutablePointer<GstElement>, owner: UInt = 0) {
        self.element = element
        self.owner = owner
    }

    deinit { lg_object_unref(element) }

    /// Running time in the appsrc's pipeline for a frame that arrived at `arrivalNanos` on the
    /// gateway's monotonic clock: running time now minus the frame's age. Nil before the pipeline
    /// has a clock (not yet PLAYING). Never goes backwards.
    func runningTime(arrivalNanos: UInt64) -> UInt64? {
        let rt = lg_element_running_time(element)
        guard rt != lg_clock_time_none() else {
            state.withLock { $0.notReady += 1 }
            return nil
        }
        let now = MonotonicClock.nanos()
        let age = arrivalNanos > 0 && arrivalNanos < now ? now - arrivalNanos : 0
        var pts = UInt64(rt) > age ? UInt64(rt) - age : 0
        state.withLock { s in
            if s.pushed > 0 && pts <= s.lastPTS { pts = s.lastPTS + 1_000_000 }
            s.lastPTS = pts
        }
        return pts
    }

    /// Sets raw-video caps for a decoded picture size when it changed (full-range BT.601, as decoded JPEGs are).
    func ensureRawCaps(width: Int, height: Int, fps: Int) {
        let changed = state.withLock { s -> Bool in
            guard s.capsWidth != width || s.capsHeight != height else { return false }
            s.capsWidth = width
            s.capsHeight = height
            return true
        }
        if changed {
            _ = lg_app_src_set_caps_string(element,
                "video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(fps)/1,pixel-aspect-ratio=1/1,colorimetry=1:4:0:0")
        }
    }

    /// Pushes the frame's JPEG bytes without copying: the buffer holds one owner of the frame and
    /// releases it in its destroy notify. Returns true when the appsrc accepted the buffer.
    @discardableResult
    func push(frame: Frame, pts: UInt64, duration: UInt64?) -> Bool {
        frame.retain()
        let user = Unmanaged.passRetained(frame).toOpaque()
        let buf = lg_buffer_new_wrapped(frame.bytes.baseAddress, gsize(frame.count), user, { p in
            Unmanaged<Frame>.fromOpaque(p!).takeRetainedValue().release()
        })!
        lg_buffer_set_timing(buf, guint64(pts), guint64(duration ?? UInt64(lg_clock_time_none())))
        return finishPush(buf)
    }

    /// Pushes a picture's planes without copying (one owner held by the buffer).
    @discardableResult
    func push(picture: I420Picture, pts: UInt64, duration: UInt64?) -> Bool {
        picture.retain()
        let user = Unmanaged.passRetained(picture).toOpaque()
        let buf = lg_buffer_new_wrapped(picture.bytes.baseAddress, gsize(picture.layout.byteCount), user, { p in
            Unmanaged<I420Picture>.fromOpaque(p!).takeRetainedValue().release()
        })!
        lg_buffer_set_timing(buf, guint64(pts), guint64(duration ?? UInt64(lg_clock_time_none())))
        for a in picture.afAreas where a.kind != .invalid {
            guard let r = a.pixels.clamped(toWidth: picture.width, height: picture.height) else { continue }
            lg_buffer_add_roi(buf, "af", guint(r.x), guint(r.y), guint(r.width), guint(r.height))
        }
        return finishPush(buf)
    }

    private func finishPush(_ buf: UnsafeMutablePointer<GstBuffer>) -> Bool {
        let rc = lg_app_src_push(element, buf)
        let ok = rc == Int32(GST_FLOW_OK.rawValue)
        if ok { state.withLock { $0.pushed += 1 } }
        return ok
    }

    var pushed: Int { state.withLock { $0.pushed } }
}
