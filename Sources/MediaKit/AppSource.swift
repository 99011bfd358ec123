import JPEGKit
internal import CGStreamer
internal import CGStreamerShim
import LiveViewCore

/// One `appsrc` (a reference is held) with the timing and caps state of the thread pushing into it.
/// Unchecked because it holds a C pointer (the appsrc, with a reference of its own); its timing
/// state is behind `state`.
final class AppSource: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    /// Identity of the owner (e.g. the RTSP media), for removal.
    let owner: UInt
    private struct State {
        var capsWidth = 0
        var capsHeight = 0
        var lastPTS: UInt64 = 0
        var stamped = 0
        var pushed = 0
        var notReady = 0
        var clockResets = 0
        var lastPushAt: UInt64 = 0
    }
    private let state = Mutex(State())

    /// When this appsrc was handed to the gateway (monotonic nanoseconds).
    let createdAt = MonotonicClock.nanos()

    /// Takes over one reference of `element`.
    init(element: UnsafeMutablePointer<GstElement>, owner: UInt = 0) {
        self.element = element
        self.owner = owner
    }

    deinit { lg_object_unref(element) }

    /// Running time in the appsrc's pipeline for a frame that arrived at `arrivalNanos` on the
    /// gateway's monotonic clock: running time now minus the frame's age. Nil before the pipeline
    /// has a clock (not yet PLAYING). Increases from buffer to buffer and is never ahead of the
    /// running time now: a buffer stamped in the future waits in a synchronised sink, and a series of
    /// them (the old "never go backwards" rule after the pipeline's base time moved) starves a client
    /// silently. When the running time itself went back (a new base time), the stamps restart there.
    func runningTime(arrivalNanos: UInt64) -> UInt64? {
        guard let rt = GStreamerTime.runningTime(of: element) else {
            state.withLock { $0.notReady += 1 }
            return nil
        }
        let now = MonotonicClock.nanos()
        let age = arrivalNanos > 0 && arrivalNanos < now ? now - arrivalNanos : 0
        let running = UInt64(rt)
        var pts = running > age ? running - age : 0
        state.withLock { s in
            if s.stamped > 0 {
                if running < s.lastPTS {
                    s.clockResets += 1
                } else if pts <= s.lastPTS {
                    pts = min(s.lastPTS + 1_000, running)
                }
            }
            s.lastPTS = pts
            s.stamped += 1
        }
        return pts
    }

    /// Times the pipeline's running time was found behind the last stamp (base time moved).
    var clockResets: Int { state.withLock { $0.clockResets } }

    /// Buffers waiting in the appsrc's queue.
    var queuedBuffers: Int { Int(lg_app_src_current_level_buffers(element)) }

    /// Pushes a GStreamer buffer (takes it over). Returns true when the appsrc accepted it.
    func push(buffer: UnsafeMutablePointer<GstBuffer>) -> Bool { finishPush(buffer) }

    /// Nanoseconds (monotonic) of the last accepted push, 0 before the first.
    var lastPushNanos: UInt64 { state.withLock { $0.lastPushAt } }

    /// Sets raw-video caps for a decoded picture size when it changed (full-range BT.601, as decoded JPEGs are).
    func ensureRawCaps(width: Int, height: Int, fps: Int) {
        setCaps(width: width, height: height) {
            "video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(fps)/1,pixel-aspect-ratio=1/1,colorimetry=1:4:0:0"
        }
    }

    /// Sets JPEG caps with the frame's size when it changed. The payloader (`rtpjpegpay`) wants the
    /// size in its caps; the JPEG branch already knows it from the SOF, so no `jpegparse` runs per
    /// frame. `fps` is the camera's nominal rate (the SDP's framerate).
    func ensureJPEGCaps(width: Int, height: Int, fps: Int) {
        setCaps(width: width, height: height) { "image/jpeg,width=\(width),height=\(height),framerate=\(max(1, fps))/1" }
    }

    /// Sets the caps `text()` describes when the size differs from the last caps set (the string is
    /// built only then: nothing is allocated per frame).
    /// Under the state's lock, so two threads pushing frames of different sizes (the JPEG branch's
    /// publisher and its re-encoder) leave the caps and the recorded size in agreement.
    private func setCaps(width: Int, height: Int, _ text: () -> String) {
        state.withLock { s in
            guard s.capsWidth != width || s.capsHeight != height else { return }
            s.capsWidth = width
            s.capsHeight = height
            _ = lg_app_src_set_caps_string(element, text())
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
        lg_buffer_set_timing(buf, guint64(pts), guint64(duration ?? GStreamerTime.none))
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
        lg_buffer_set_timing(buf, guint64(pts), guint64(duration ?? GStreamerTime.none))
        for a in picture.afAreas where a.kind != .invalid {
            guard let r = a.pixels.clamped(toWidth: picture.width, height: picture.height) else { continue }
            lg_buffer_add_roi(buf, "af", guint(r.x), guint(r.y), guint(r.width), guint(r.height))
        }
        return finishPush(buf)
    }

    private func finishPush(_ buf: UnsafeMutablePointer<GstBuffer>) -> Bool {
        let rc = lg_app_src_push(element, buf)
        let ok = rc == Int32(GST_FLOW_OK.rawValue)
        if ok {
            let now = MonotonicClock.nanos()
            state.withLock { s in
                s.pushed += 1
                s.lastPushAt = now
            }
        }
        return ok
    }

    var pushed: Int { state.withLock { $0.pushed } }
}
