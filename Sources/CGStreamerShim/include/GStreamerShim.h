// C helpers for the GStreamer/GLib macros, variadic functions and casts that Swift cannot import.
// Everything here is a plain function with concrete types; the Swift side (MediaKit) keeps these
// types out of its public API.
#ifndef LIVEGATE_GSTREAMER_SHIM_H
#define LIVEGATE_GSTREAMER_SHIM_H

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/rtsp-server/rtsp-server.h>
#include <gst/sdp/sdp.h>
#ifndef GST_USE_UNSTABLE_API
#define GST_USE_UNSTABLE_API 1
#endif
#include <gst/webrtc/webrtc.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Calls gst_init once per process (thread-safe); returns TRUE when GStreamer is usable.
gboolean lg_gst_init_once(void);


// ---- casts ----
GstElement *lg_element(gpointer p);
GstBin *lg_bin(gpointer p);
GstAppSrc *lg_app_src(gpointer p);
GstObject *lg_object(gpointer p);

// ---- buffers ----
/// Wraps `size` bytes at `data` without copying; `notify(user)` runs when GStreamer is done with them.
GstBuffer *lg_buffer_new_wrapped(const void *data, gsize size, gpointer user, GDestroyNotify notify);
/// A new buffer holding a copy of `size` bytes.
GstBuffer *lg_buffer_new_copy(const void *data, gsize size);
void lg_buffer_set_timing(GstBuffer *buf, guint64 pts, guint64 duration);
guint64 lg_buffer_get_pts(GstBuffer *buf);
void lg_buffer_set_delta_unit(GstBuffer *buf, gboolean delta);
/// Attaches a GstVideoRegionOfInterestMeta (e.g. an AF area) to a buffer.
void lg_buffer_add_roi(GstBuffer *buf, const char *roi_type, guint x, guint y, guint w, guint h);
/// Number of region-of-interest metas on a buffer (tests).
guint lg_buffer_roi_count(GstBuffer *buf);

// ---- elements / properties ----
GstElement *lg_parse_launch(const char *description, char **error_message);
GstElement *lg_bin_get_by_name(GstElement *bin, const char *name);
void lg_object_set_bool(gpointer obj, const char *name, gboolean value);
void lg_object_set_int(gpointer obj, const char *name, gint value);
void lg_object_set_uint(gpointer obj, const char *name, guint value);
void lg_object_set_uint64(gpointer obj, const char *name, guint64 value);
void lg_object_set_int64(gpointer obj, const char *name, gint64 value);
void lg_object_set_string(gpointer obj, const char *name, const char *value);
/// Sets caps from a caps string on an appsrc; returns FALSE when the string does not parse.
gboolean lg_app_src_set_caps_string(GstElement *appsrc, const char *caps);
/// Pushes (takes ownership of) a buffer; returns the GstFlowReturn as int.
int lg_app_src_push(GstElement *appsrc, GstBuffer *buffer);
int lg_app_src_end_of_stream(GstElement *appsrc);
guint64 lg_app_src_current_level_buffers(GstElement *appsrc);
/// Sets the state; returns the GstStateChangeReturn as int.
int lg_element_set_state(GstElement *element, GstState state);
/// Waits up to timeout_ns for a pending state change; returns the GstStateChangeReturn as int.
int lg_element_get_state(GstElement *element, GstState *state, guint64 timeout_ns);
void lg_object_unref(gpointer obj);
gpointer lg_object_ref(gpointer obj);
/// An element's name (g_free the result).
char *lg_object_get_name(gpointer obj);

// ---- bus ----
typedef gboolean (*lg_bus_callback)(GstBus *bus, GstMessage *message, gpointer user);
/// Attaches a watch on the pipeline's bus to `context`; returns the GSource (unref with lg_source_remove).
GSource *lg_bus_watch_attach(GstElement *pipeline, GMainContext *context, lg_bus_callback callback,
                             gpointer user, GDestroyNotify notify);
void lg_source_remove(GSource *source);
/// Removes the source with `id` from `context` (e.g. the RTSP server's listening source).
void lg_source_remove_by_id(GMainContext *context, guint id);
GstMessageType lg_message_type(GstMessage *message);
/// Name of the object that posted the message (g_free the result).
char *lg_message_source_name(GstMessage *message);
/// For error/warning messages: the text and debug detail (g_free both).
void lg_message_parse_error(GstMessage *message, char **text, char **debug);
void lg_message_parse_warning(GstMessage *message, char **text, char **debug);
/// TRUE when the message comes from `element` itself (not a child).
gboolean lg_message_is_from(GstMessage *message, GstElement *element);
/// Waits up to timeout_ns on the bus for EOS or ERROR (for pipelines without a watch);
/// returns 1 for EOS, -1 for error, 0 for timeout.
int lg_bus_wait_eos(GstElement *pipeline, guint64 timeout_ns);

// ---- main loop ----
GMainContext *lg_main_context_new(void);
GMainLoop *lg_main_loop_new(GMainContext *context);
/// Pushes `context` as the thread default and runs `loop` until quit (call on the loop's own thread).
void lg_main_loop_run(GMainLoop *loop, GMainContext *context);
void lg_main_loop_quit(GMainLoop *loop);
gboolean lg_main_loop_is_running(GMainLoop *loop);
typedef void (*lg_invoke_callback)(gpointer user);
/// Runs callback(user) once on the context's thread (or at once when called on it).
void lg_main_context_invoke(GMainContext *context, lg_invoke_callback callback, gpointer user);

// ---- RTSP server ----
typedef void (*lg_media_configure_callback)(GstRTSPMediaFactory *factory, GstRTSPMedia *media, gpointer user);
typedef void (*lg_media_callback)(GstRTSPMedia *media, gpointer user);
GstRTSPServer *lg_rtsp_server_new(const char *address, const char *service);
/// Attaches the server to `context`; returns the source id (0 on failure, e.g. port in use).
guint lg_rtsp_server_attach(GstRTSPServer *server, GMainContext *context);
/// Every mount then needs `user` / `password` (Basic or Digest); call before mounting.
void lg_rtsp_server_require_credentials(GstRTSPServer *server, const char *user, const char *password);
int lg_rtsp_server_bound_port(GstRTSPServer *server);
/* A TCP socket's progress: bytes the peer acknowledged so far, bytes still queued to send. 0 or -1.
   C because the acknowledged count is in linux/tcp.h's tcp_info (glibc's lacks it) and SIOCOUTQ
   goes through ioctl (variadic). */
int lg_tcp_progress(int fd, guint64 *acked, guint32 *queued);
/// Creates a factory (shared or one media per client) for a launch string, connects media-configure, mounts it at `path`.
GstRTSPMediaFactory *lg_rtsp_mount(GstRTSPServer *server, const char *path, const char *launch,
                                   gboolean shared, lg_media_configure_callback callback, gpointer user,
                                   GClosureNotify notify);
void lg_rtsp_unmount(GstRTSPServer *server, const char *path);
/// Lets the media's sinks send without waiting on the clock (live sources).
void lg_rtsp_media_send_at_once(GstRTSPMedia *media);
/// Connects the media's "unprepared" signal.
void lg_rtsp_media_on_unprepared(GstRTSPMedia *media, lg_media_callback callback, gpointer user,
                                 GClosureNotify notify);
/// The appsrc called `name` inside the media's element (a new reference), or NULL.
GstElement *lg_rtsp_media_get_by_name(GstRTSPMedia *media, const char *name);
/// Lets the server handle up to `max_threads` clients in parallel threads (the default of one thread
/// lets one slow request hold up every client).
void lg_rtsp_server_set_max_threads(GstRTSPServer *server, gint max_threads);
/// Closes every client session of the server (used on shutdown).
void lg_rtsp_server_close_clients(GstRTSPServer *server);
/// Number of connected RTSP clients.
guint lg_rtsp_server_client_count(GstRTSPServer *server);
// ---- WebRTC (webrtcbin) ----
/// Emits webrtcbin's "set-remote-description" (`remote`) or "set-local-description" with a
/// description and a promise (signal emission: varargs).
void lg_webrtc_set_description(GstElement *webrtc, gboolean remote, GstWebRTCSessionDescription *desc, GstPromise *promise);
/// Emits webrtcbin's "create-answer" with a promise.
void lg_webrtc_create_answer(GstElement *webrtc, GstPromise *promise);
/// The "error" field of a promise's reply as text (g_free it), or NULL when it has none
/// (gst_structure_get: varargs).
char *lg_promise_reply_error(const GstStructure *reply);
/// The "answer" field of a create-answer reply (free it with gst_webrtc_session_description_free), or NULL.
GstWebRTCSessionDescription *lg_promise_reply_answer(const GstStructure *reply);
/// webrtcbin's "ice-gathering-state" (g_object_get: varargs).
gint lg_webrtc_gathering_state(GstElement *webrtc);
/// webrtcbin's "local-description" as SDP text (g_free it), or NULL (g_object_get: varargs).
char *lg_webrtc_local_sdp(GstElement *webrtc);
/// Makes ICE gather candidates on `address` only (libnice skips loopback unless told).
gboolean lg_webrtc_add_local_address(GstElement *webrtc, const char *address);
/// Starts noting when RTCP from the peer arrives (webrtcbin's rtpbin "on-ssrc-active"): a peer that
/// vanished without closing stops sending it long before ICE notices. FALSE when there is no rtpbin.
gboolean lg_webrtc_watch_peer_rtcp(GstElement *webrtc);
/// Monotonic microseconds (g_get_monotonic_time) of the peer's last RTCP, 0 before the first.
gint64 lg_webrtc_last_peer_rtcp(GstElement *webrtc);
/// Starts counting the key frames asked for from downstream of `source` (upstream
/// "GstForceKeyUnit" events on its src pad: what an RTP session sends on RTCP PLI/FIR). FALSE
/// when it has no src pad.
gboolean lg_watch_key_unit_requests(GstElement *source);
/// Key-frame requests counted since the last call (and resets the count).
gint lg_take_key_unit_requests(GstElement *source);
/// webrtcbin's connection-state (a GstWebRTCPeerConnectionState value).
gint lg_webrtc_connection_state(GstElement *webrtc);

typedef void (*lg_play_callback)(GstRTSPMedia *media, gboolean joined, gpointer user);
/// For every client of the server: `callback(media, FALSE)` when its PLAY starts (before its
/// transports join the media) and `callback(media, TRUE)` once they joined and the media plays.
/// `user` must outlive the server's clients.
void lg_rtsp_server_on_play(GstRTSPServer *server, lg_play_callback callback, gpointer user);

// ---- encoded buffers (the shared encoder's fan-out) ----
/// Sets PTS = DTS (streams without B-frames) and the duration.
void lg_buffer_set_pts_dts(GstBuffer *buf, guint64 pts, guint64 duration);
gboolean lg_buffer_is_delta(GstBuffer *buf);
/// A new buffer sharing `buf`'s memory (no byte copy) with its own metadata, so timing can differ.
GstBuffer *lg_buffer_copy_shallow(GstBuffer *buf);
/// Asks a video encoder to make its next frame a key frame (with headers).
void lg_request_key_frame(GstElement *encoder);
typedef void (*lg_sample_callback)(GstBuffer *buffer, gpointer user);
/// Calls `callback(buffer, user)` on the streaming thread for every buffer an appsink receives
/// (the buffer is borrowed for the call); `notify(user)` when the callbacks are replaced or freed.
void lg_app_sink_on_buffer(GstElement *appsink, lg_sample_callback callback, gpointer user, GDestroyNotify notify);

#ifdef __cplusplus
}
#endif
#endif
