internal import CGStreamer
internal import CGStreamerShim
import Foundation
import LiveViewCore

/// webrtcbin's side of a WHEP offer/answer (non-trickle): the offer becomes the remote description,
/// webrtcbin's answer the local one, and the answer goes back once ICE gathering is complete, so it
/// carries every candidate (0.2–0.4 s on loopback). The C shim only emits webrtcbin's signals and
/// reads its properties (GLib's variadic calls); the sequence is here. Blocks the calling thread
/// (WHEP negotiates on a thread of its own).
enum WebRTCNegotiation {
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// The answer's SDP text for `offer` on `webrtc` (its pipeline PLAYING), or why there is none.
    static func answer(_ webrtc: UnsafeMutablePointer<GstElement>, offer: String,
                       gatherTimeout: Duration) -> Result<String, Refusal> {
        var parsed: UnsafeMutablePointer<GstSDPMessage>?
        guard gst_sdp_message_new_from_text(offer, &parsed) == GST_SDP_OK, let sdp = parsed,
              gst_sdp_message_medias_len(sdp) > 0 else {
            if let parsed { gst_sdp_message_free(parsed) }
            return .failure(Refusal(description: "the offer is not an SDP with media"))
        }
        // The description owns the SDP message from here.
        let remote = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp)
        defer { gst_webrtc_session_description_free(remote) }
        if let why = wait({ lg_webrtc_set_description(webrtc, 1, remote, $0) }, read: { _ in () }).failure {
            return .failure(why)
        }
        let created = wait({ lg_webrtc_create_answer(webrtc, $0) }, read: { lg_promise_reply_answer($0) })
        guard case .success(let made) = created, let local = made else {
            return .failure(created.failure ?? Refusal(description: "webrtcbin made no answer"))
        }
        defer { gst_webrtc_session_description_free(local) }
        if let why = wait({ lg_webrtc_set_description(webrtc, 0, local, $0) }, read: { _ in () }).failure {
            return .failure(why)
        }
        let end = MonotonicClock.nanos() + gatherTimeout.nanoseconds
        while lg_webrtc_gathering_state(webrtc) != Int32(GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE.rawValue),
              MonotonicClock.nanos() < end {
            usleep(10_000)
        }
        guard let text = lg_webrtc_local_sdp(webrtc) else {
            return .failure(Refusal(description: "webrtcbin has no local description"))
        }
        defer { g_free(text) }
        return .success(String(cString: text))
    }

    /// Emits a signal with a new promise (`emit`), waits for the reply and reads it with `read`
    /// (nil when the promise ended without one); fails with the reply's error.
    private static func wait<T>(_ emit: (UnsafeMutablePointer<GstPromise>) -> Void,
                                read: (UnsafePointer<GstStructure>?) -> T) -> Result<T, Refusal> {
        let promise = gst_promise_new()!
        defer { gst_promise_unref(promise) }
        emit(promise)
        let reply = gst_promise_wait(promise) == GST_PROMISE_RESULT_REPLIED ? gst_promise_get_reply(promise) : nil
        if let error = lg_promise_reply_error(reply) {
            defer { g_free(error) }
            return .failure(Refusal(description: String(cString: error)))
        }
        return .success(read(reply))
    }
}

extension Result {
    /// The error, when this is a failure.
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
