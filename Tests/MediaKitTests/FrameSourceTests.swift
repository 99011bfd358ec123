import CGStreamer
import CGStreamerShim
import Dispatch
import LiveViewCore
@testable import MediaKit
import Testing

/// `lgframesrc`, the raw RTSP mounts' live source: it refuses buffers until its pipeline runs,
/// keeps the newest three while its streaming thread is held up (the oldest go, counted), hands
/// them on in order, lets a size change travel with the buffers (also when the buffer that
/// brought it was dropped), and ends the stream on request.
@Suite struct FrameSourceTests {
    /// What the sink saw (its callback runs on the streaming thread).
    final class Seen: Sendable {
        let pts = Mutex<[UInt64]>([])
        let first = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
    }

    @Test func keepsTheNewestInOrderWithTheirCapsAndEnds() throws {
        let runtime = try GStreamerRuntime()
        defer { _ = runtime.shutdown() }
        let pipeline = try MediaPipeline(launch: "lgframesrc name=src ! appsink name=sink sync=false",
                                         name: "framesrc", runtime: runtime, logger: runtime.logger)
        defer { pipeline.stop() }
        let src = AppSource(element: try #require(pipeline.child("src")))
        let sink = try #require(pipeline.child("sink"))
        defer { lg_object_unref(sink) }
        let seen = Seen()
        lg_app_sink_on_buffer(sink, { buf, user in
            guard let buf, let user else { return }
            let seen = Unmanaged<Seen>.fromOpaque(user).takeUnretainedValue()
            let count = seen.pts.withLock { p -> Int in
                p.append(UInt64(lg_buffer_get_pts(buf)))
                return p.count
            }
            if count == 1 {
                seen.first.signal()
                _ = seen.release.wait(timeout: .now() + 10)  // hold the streaming thread up
            }
        }, Unmanaged.passRetained(seen).toOpaque(), { user in
            if let user { Unmanaged<Seen>.fromOpaque(user).release() }
        })
        let frame = Frame(copying: [0xFF, 0xD8, 0xFF, 0xD9])

        #expect(!src.push(frame: frame, pts: 500, duration: nil), "a source that is not running takes nothing")
        try pipeline.play()
        src.ensureJPEGCaps(width: 64, height: 48, fps: 30)
        #expect(src.push(frame: frame, pts: 1_000, duration: nil))
        #expect(seen.first.wait(timeout: .now() + 5) == .success, "the first buffer never reached the sink")
        // The streaming thread is held in the sink: 2 000…6 000 fill the three places, 2 000 and
        // 3 000 are dropped; 2 000 brought the new size, which 4 000 must carry instead.
        src.ensureJPEGCaps(width: 32, height: 24, fps: 30)
        for pts in stride(from: 2_000, through: 6_000, by: 1_000) {
            #expect(src.push(frame: frame, pts: UInt64(pts), duration: nil))
        }
        #expect(src.queuedBuffers == 3)
        #expect(lg_frame_src_dropped(src.element) == 2)
        seen.release.signal()
        #expect(pipeline.finish(appsrc: src.element, timeout: 5), "no end of stream at the sink")
        #expect(seen.pts.withLock { $0 } == [1_000, 4_000, 5_000, 6_000])

        let pad = try #require(gst_element_get_static_pad(sink, "sink"))
        defer { gst_object_unref(UnsafeMutableRawPointer(pad)) }
        let caps = try #require(gst_pad_get_current_caps(pad))
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(caps).assumingMemoryBound(to: GstMiniObject.self)) }
        let text = try #require(gst_caps_to_string(caps))
        defer { g_free(text) }
        #expect(String(cString: text).contains("width=(int)32"), "the size change was lost with its buffer: \(String(cString: text))")
    }
}
