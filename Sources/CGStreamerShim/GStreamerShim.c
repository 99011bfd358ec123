#include "GStreamerShim.h"
#include <gst/app/gstappsink.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

static gsize lg_init_done = 0;
static gboolean lg_init_ok = FALSE;

/* lg_init_ok is published with its own release/acquire pair: the one inside GLib's once is not
   visible to ThreadSanitizer (libglib is not instrumented). */
gboolean lg_gst_init_once(void) {
    if (g_once_init_enter(&lg_init_done)) {
        GError *err = NULL;
        gboolean ok = gst_init_check(NULL, NULL, &err);
        if (err) g_error_free(err);
        __atomic_store_n(&lg_init_ok, ok, __ATOMIC_RELEASE);
        g_once_init_leave(&lg_init_done, 1);
    }
    return __atomic_load_n(&lg_init_ok, __ATOMIC_ACQUIRE);
}

GstElement *lg_element(gpointer p) { return GST_ELEMENT(p); }
GstBin *lg_bin(gpointer p) { return GST_BIN(p); }
GstAppSrc *lg_app_src(gpointer p) { return GST_APP_SRC(p); }
GstObject *lg_object(gpointer p) { return GST_OBJECT(p); }

GstBuffer *lg_buffer_new_wrapped(const void *data, gsize size, gpointer user, GDestroyNotify notify) {
    return gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, (gpointer)data, size, 0, size, user, notify);
}

GstBuffer *lg_buffer_new_copy(const void *data, gsize size) {
    return gst_buffer_new_memdup(data, size);
}

void lg_buffer_set_timing(GstBuffer *buf, guint64 pts, guint64 duration) {
    GST_BUFFER_PTS(buf) = pts;
    GST_BUFFER_DTS(buf) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(buf) = duration;
}

guint64 lg_buffer_get_pts(GstBuffer *buf) { return GST_BUFFER_PTS(buf); }

void lg_buffer_set_delta_unit(GstBuffer *buf, gboolean delta) {
    if (delta) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
    else GST_BUFFER_FLAG_UNSET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
}

void lg_buffer_add_roi(GstBuffer *buf, const char *roi_type, guint x, guint y, guint w, guint h) {
    gst_buffer_add_video_region_of_interest_meta(buf, roi_type, x, y, w, h);
}

guint lg_buffer_roi_count(GstBuffer *buf) {
    guint n = 0;
    gpointer state = NULL;
    while (gst_buffer_iterate_meta_filtered(buf, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) n++;
    return n;
}

GstElement *lg_parse_launch(const char *description, char **error_message) {
    GError *err = NULL;
    GstElement *el = gst_parse_launch_full(description, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
    if (err) {
        if (error_message) *error_message = g_strdup(err->message);
        g_error_free(err);
        if (el) gst_object_unref(el);
        return NULL;
    }
    if (error_message) *error_message = NULL;
    return el;
}

GstElement *lg_bin_get_by_name(GstElement *bin, const char *name) {
    if (!GST_IS_BIN(bin)) return NULL;
    return gst_bin_get_by_name(GST_BIN(bin), name);
}

void lg_object_set_bool(gpointer obj, const char *name, gboolean value) { g_object_set(obj, name, value, NULL); }
void lg_object_set_int(gpointer obj, const char *name, gint value) { g_object_set(obj, name, value, NULL); }
void lg_object_set_uint(gpointer obj, const char *name, guint value) { g_object_set(obj, name, value, NULL); }
void lg_object_set_uint64(gpointer obj, const char *name, guint64 value) { g_object_set(obj, name, value, NULL); }
void lg_object_set_int64(gpointer obj, const char *name, gint64 value) { g_object_set(obj, name, value, NULL); }
void lg_object_set_string(gpointer obj, const char *name, const char *value) { g_object_set(obj, name, value, NULL); }

gboolean lg_app_src_set_caps_string(GstElement *appsrc, const char *caps_string) {
    GstCaps *caps = gst_caps_from_string(caps_string);
    if (!caps) return FALSE;
    gst_app_src_set_caps(GST_APP_SRC(appsrc), caps);
    gst_caps_unref(caps);
    return TRUE;
}

int lg_app_src_push(GstElement *appsrc, GstBuffer *buffer) {
    return (int)gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);
}

int lg_app_src_end_of_stream(GstElement *appsrc) {
    return (int)gst_app_src_end_of_stream(GST_APP_SRC(appsrc));
}

guint64 lg_app_src_current_level_buffers(GstElement *appsrc) {
    return gst_app_src_get_current_level_buffers(GST_APP_SRC(appsrc));
}

int lg_element_set_state(GstElement *element, GstState state) {
    return (int)gst_element_set_state(element, state);
}

int lg_element_get_state(GstElement *element, GstState *state, guint64 timeout_ns) {
    return (int)gst_element_get_state(element, state, NULL, timeout_ns);
}

void lg_object_unref(gpointer obj) { if (obj) gst_object_unref(obj); }
gpointer lg_object_ref(gpointer obj) { return obj ? gst_object_ref(obj) : NULL; }
char *lg_object_get_name(gpointer obj) { return gst_object_get_name(GST_OBJECT(obj)); }

GSource *lg_bus_watch_attach(GstElement *pipeline, GMainContext *context, lg_bus_callback callback,
                             gpointer user, GDestroyNotify notify) {
    GstBus *bus = gst_element_get_bus(pipeline);
    GSource *source = gst_bus_create_watch(bus);
    g_source_set_callback(source, (GSourceFunc)(void (*)(void))callback, user, notify);
    g_source_attach(source, context);
    gst_object_unref(bus);
    return source;
}

void lg_source_remove(GSource *source) {
    if (!source) return;
    g_source_destroy(source);
    g_source_unref(source);
}

void lg_source_remove_by_id(GMainContext *context, guint id) {
    GSource *source = g_main_context_find_source_by_id(context, id);
    if (source) g_source_destroy(source);
}

GstMessageType lg_message_type(GstMessage *message) { return GST_MESSAGE_TYPE(message); }

char *lg_message_source_name(GstMessage *message) {
    return GST_MESSAGE_SRC(message) ? gst_object_get_name(GST_MESSAGE_SRC(message)) : g_strdup("?");
}

void lg_message_parse_error(GstMessage *message, char **text, char **debug) {
    GError *err = NULL;
    gst_message_parse_error(message, &err, debug);
    *text = g_strdup(err ? err->message : "unknown error");
    if (err) g_error_free(err);
}

void lg_message_parse_warning(GstMessage *message, char **text, char **debug) {
    GError *err = NULL;
    gst_message_parse_warning(message, &err, debug);
    *text = g_strdup(err ? err->message : "unknown warning");
    if (err) g_error_free(err);
}

gboolean lg_message_is_from(GstMessage *message, GstElement *element) {
    return GST_MESSAGE_SRC(message) == GST_OBJECT(element);
}

int lg_bus_wait_eos(GstElement *pipeline, guint64 timeout_ns) {
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *msg = gst_bus_timed_pop_filtered(bus, timeout_ns, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    gst_object_unref(bus);
    if (!msg) return 0;
    int result = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS ? 1 : -1;
    gst_message_unref(msg);
    return result;
}

GMainContext *lg_main_context_new(void) { return g_main_context_new(); }
GMainLoop *lg_main_loop_new(GMainContext *context) { return g_main_loop_new(context, FALSE); }

void lg_main_loop_run(GMainLoop *loop, GMainContext *context) {
    g_main_context_push_thread_default(context);
    g_main_loop_run(loop);
    g_main_context_pop_thread_default(context);
}

void lg_main_loop_quit(GMainLoop *loop) { g_main_loop_quit(loop); }
gboolean lg_main_loop_is_running(GMainLoop *loop) { return g_main_loop_is_running(loop); }

typedef struct {
    lg_invoke_callback callback;
    gpointer user;
} LgInvoke;

static gboolean lg_invoke_trampoline(gpointer data) {
    LgInvoke *inv = data;
    inv->callback(inv->user);
    return G_SOURCE_REMOVE;
}

void lg_main_context_invoke(GMainContext *context, lg_invoke_callback callback, gpointer user) {
    LgInvoke *inv = g_new(LgInvoke, 1);
    inv->callback = callback;
    inv->user = user;
    g_main_context_invoke_full(context, G_PRIORITY_DEFAULT, lg_invoke_trampoline, inv, g_free);
}

GstRTSPServer *lg_rtsp_server_new(const char *address, const char *service) {
    GstRTSPServer *server = gst_rtsp_server_new();
    gst_rtsp_server_set_address(server, address);
    gst_rtsp_server_set_service(server, service);
    /* The default queue of 5 makes a crowd of viewers connecting at once wait for SYN retries. */
    gst_rtsp_server_set_backlog(server, 256);
    return server;
}

int lg_tcp_progress(int fd, guint64 *acked, guint32 *queued) {
    struct tcp_info info;
    socklen_t len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
    /* Kernels before 4.1 (and some sandboxes) fill in less: no acknowledged count to go by. */
    if (len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(info.tcpi_bytes_acked)) return -1;
    int outq = 0;
    if (ioctl(fd, SIOCOUTQ, &outq) != 0) return -1;
    *acked = info.tcpi_bytes_acked;
    *queued = (guint32)(outq < 0 ? 0 : outq);
    return 0;
}

void lg_rtsp_server_require_credentials(GstRTSPServer *server, const char *user, const char *password) {
    GstRTSPAuth *auth = gst_rtsp_auth_new();
    GstRTSPToken *token = gst_rtsp_token_new(GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE, G_TYPE_STRING, "livegate", NULL);
    gchar *basic = gst_rtsp_auth_make_basic(user, password);
    gst_rtsp_auth_add_basic(auth, basic, token);
    g_free(basic);
    gst_rtsp_auth_add_digest(auth, user, password, token);
    gst_rtsp_auth_set_supported_methods(auth, GST_RTSP_AUTH_BASIC | GST_RTSP_AUTH_DIGEST);
    gst_rtsp_token_unref(token);
    gst_rtsp_server_set_auth(server, auth);
    g_object_unref(auth);
}

guint lg_rtsp_server_attach(GstRTSPServer *server, GMainContext *context) {
    return gst_rtsp_server_attach(server, context);
}

int lg_rtsp_server_bound_port(GstRTSPServer *server) { return gst_rtsp_server_get_bound_port(server); }

GstRTSPMediaFactory *lg_rtsp_mount(GstRTSPServer *server, const char *path, const char *launch,
                                   gboolean shared, lg_media_configure_callback callback, gpointer user,
                                   GClosureNotify notify) {
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(server);
    GstRTSPMediaFactory *factory = gst_rtsp_media_factory_new();
    gst_rtsp_media_factory_set_launch(factory, launch);
    gst_rtsp_media_factory_set_shared(factory, shared);
    GstRTSPAuth *auth = gst_rtsp_server_get_auth(server);
    if (auth) {
        /* The one role the credentials carry may open and build every mount (varargs: C only). */
        gst_rtsp_media_factory_add_role(factory, "livegate",
                                        GST_RTSP_PERM_MEDIA_FACTORY_ACCESS, G_TYPE_BOOLEAN, TRUE,
                                        GST_RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, G_TYPE_BOOLEAN, TRUE, NULL);
        g_object_unref(auth);
    }
    g_signal_connect_data(factory, "media-configure", G_CALLBACK(callback), user, notify, 0);
    gst_rtsp_mount_points_add_factory(mounts, path, factory); /* takes the factory's reference */
    g_object_unref(mounts);
    return factory;
}

void lg_rtsp_unmount(GstRTSPServer *server, const char *path) {
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(server);
    gst_rtsp_mount_points_remove_factory(mounts, path);
    g_object_unref(mounts);
}

void lg_rtsp_media_send_at_once(GstRTSPMedia *media) {
    /* The media's sinks send each packet when it is made instead of waiting on the clock for its
     * timestamp: the sources are live and stamp their buffers "now", so the wait only costs. */
    gst_rtsp_media_set_rate_control(media, FALSE);
}

void lg_rtsp_media_on_unprepared(GstRTSPMedia *media, lg_media_callback callback, gpointer user,
                                 GClosureNotify notify) {
    g_signal_connect_data(media, "unprepared", G_CALLBACK(callback), user, notify, 0);
}

GstElement *lg_rtsp_media_get_by_name(GstRTSPMedia *media, const char *name) {
    GstElement *element = gst_rtsp_media_get_element(media);
    if (!element) return NULL;
    GstElement *found = GST_IS_BIN(element) ? gst_bin_get_by_name(GST_BIN(element), name) : NULL;
    gst_object_unref(element);
    return found;
}

void lg_rtsp_server_set_max_threads(GstRTSPServer *server, gint max_threads) {
    GstRTSPThreadPool *pool = gst_rtsp_server_get_thread_pool(server);
    gst_rtsp_thread_pool_set_max_threads(pool, max_threads);
    g_object_unref(pool);
}

static GstRTSPFilterResult lg_remove_client(GstRTSPServer *server, GstRTSPClient *client, gpointer user) {
    (void)server; (void)user;
    gst_rtsp_client_close(client);
    return GST_RTSP_FILTER_REMOVE;
}

void lg_rtsp_server_close_clients(GstRTSPServer *server) {
    GList *left = gst_rtsp_server_client_filter(server, lg_remove_client, NULL);
    g_list_free_full(left, g_object_unref);
}

guint lg_rtsp_server_client_count(GstRTSPServer *server) {
    GList *clients = gst_rtsp_server_client_filter(server, NULL, NULL);
    guint n = g_list_length(clients);
    g_list_free_full(clients, g_object_unref);
    return n;
}

void lg_webrtc_set_description(GstElement *webrtc, gboolean remote, GstWebRTCSessionDescription *desc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, remote ? "set-remote-description" : "set-local-description", desc, promise);
}

void lg_webrtc_create_answer(GstElement *webrtc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "create-answer", NULL, promise);
}

char *lg_promise_reply_error(const GstStructure *reply) {
    if (!reply || !gst_structure_has_field(reply, "error")) return NULL;
    GError *e = NULL;
    gst_structure_get(reply, "error", G_TYPE_ERROR, &e, NULL);
    char *text = g_strdup(e ? e->message : "webrtcbin refused the description");
    if (e) g_error_free(e);
    return text;
}

GstWebRTCSessionDescription *lg_promise_reply_answer(const GstStructure *reply) {
    GstWebRTCSessionDescription *answer = NULL;
    if (reply) gst_structure_get(reply, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &answer, NULL);
    return answer;
}

gint lg_webrtc_gathering_state(GstElement *webrtc) {
    GstWebRTCICEGatheringState state = GST_WEBRTC_ICE_GATHERING_STATE_NEW;
    g_object_get(webrtc, "ice-gathering-state", &state, NULL);
    return (gint)state;
}

char *lg_webrtc_local_sdp(GstElement *webrtc) {
    GstWebRTCSessionDescription *local = NULL;
    g_object_get(webrtc, "local-description", &local, NULL);
    if (!local) return NULL;
    char *text = gst_sdp_message_as_text(local->sdp);
    gst_webrtc_session_description_free(local);
    return text;
}

gboolean lg_webrtc_add_local_address(GstElement *webrtc, const char *address) {
    GObject *ice = NULL;
    g_object_get(webrtc, "ice-agent", &ice, NULL);
    if (!ice) return FALSE;
    gboolean ok = FALSE;
    if (g_signal_lookup("add-local-ip-address", G_OBJECT_TYPE(ice)) != 0)
        g_signal_emit_by_name(ice, "add-local-ip-address", address, &ok);
    g_object_unref(ice);
    return ok;
}

static void lg_on_ssrc_active(GstElement *rtpbin, guint session, guint ssrc, gpointer data) {
    (void)rtpbin; (void)session; (void)ssrc;
    __atomic_store_n((gint64 *)data, g_get_monotonic_time(), __ATOMIC_RELAXED);
}

static GstElement *lg_find_rtpbin(GstElement *webrtc) {
    GstElement *found = gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin");
    if (found) return found;
    GstIterator *it = gst_bin_iterate_elements(GST_BIN(webrtc));
    GValue item = G_VALUE_INIT;
    while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *e = g_value_get_object(&item);
        GstElementFactory *f = gst_element_get_factory(e);
        if (f && g_strcmp0(GST_OBJECT_NAME(f), "rtpbin") == 0) found = gst_object_ref(e);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    return found;
}

gboolean lg_webrtc_watch_peer_rtcp(GstElement *webrtc) {
    GstElement *rtpbin = lg_find_rtpbin(webrtc);
    if (!rtpbin) return FALSE;
    gint64 *last = g_new0(gint64, 1);
    /* Freed with webrtcbin, after its children (rtpbin and this handler) are gone. */
    g_object_set_data_full(G_OBJECT(webrtc), "livegate-peer-rtcp", last, g_free);
    g_signal_connect(rtpbin, "on-ssrc-active", G_CALLBACK(lg_on_ssrc_active), last);
    gst_object_unref(rtpbin);
    return TRUE;
}

gint64 lg_webrtc_last_peer_rtcp(GstElement *webrtc) {
    gint64 *last = g_object_get_data(G_OBJECT(webrtc), "livegate-peer-rtcp");
    return last ? __atomic_load_n(last, __ATOMIC_RELAXED) : 0;
}

static GstPadProbeReturn lg_on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    if (event && gst_event_has_name(event, "GstForceKeyUnit")) __atomic_add_fetch((gint *)data, 1, __ATOMIC_RELAXED);
    return GST_PAD_PROBE_OK;
}

gboolean lg_watch_key_unit_requests(GstElement *source) {
    GstPad *pad = gst_element_get_static_pad(source, "src");
    if (!pad) return FALSE;
    gint *count = g_new0(gint, 1);
    /* Freed with the element, after its pads (and this probe) are gone. */
    g_object_set_data_full(G_OBJECT(source), "livegate-key-unit-requests", count, g_free);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, lg_on_upstream_event, count, NULL);
    gst_object_unref(pad);
    return TRUE;
}

gint lg_take_key_unit_requests(GstElement *source) {
    gint *count = g_object_get_data(G_OBJECT(source), "livegate-key-unit-requests");
    return count ? __atomic_exchange_n(count, 0, __ATOMIC_RELAXED) : 0;
}

gint lg_webrtc_connection_state(GstElement *webrtc) {
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(webrtc, "connection-state", &state, NULL);
    return (gint)state;
}

typedef struct {
    lg_play_callback callback;
    gpointer user;
} LgPlayHook;

static GstRTSPStatusCode lg_pre_play(GstRTSPClient *client, GstRTSPContext *ctx, gpointer data) {
    (void)client;
    LgPlayHook *hook = data;
    if (ctx && ctx->media) hook->callback(ctx->media, FALSE, hook->user);
    return GST_RTSP_STS_OK;
}

static void lg_post_play(GstRTSPClient *client, GstRTSPContext *ctx, gpointer data) {
    (void)client;
    LgPlayHook *hook = data;
    if (ctx && ctx->media) hook->callback(ctx->media, TRUE, hook->user);
}

static void lg_client_connected(GstRTSPServer *server, GstRTSPClient *client, gpointer data) {
    (void)server;
    g_signal_connect(client, "pre-play-request", G_CALLBACK(lg_pre_play), data);
    g_signal_connect(client, "play-request", G_CALLBACK(lg_post_play), data);
}

void lg_rtsp_server_on_play(GstRTSPServer *server, lg_play_callback callback, gpointer user) {
    LgPlayHook *hook = g_new(LgPlayHook, 1);
    hook->callback = callback;
    hook->user = user;
    g_object_set_data_full(G_OBJECT(server), "livegate-play-hook", hook, g_free);
    g_signal_connect(server, "client-connected", G_CALLBACK(lg_client_connected), hook);
}

void lg_buffer_set_pts_dts(GstBuffer *buf, guint64 pts, guint64 duration) {
    GST_BUFFER_PTS(buf) = pts;
    GST_BUFFER_DTS(buf) = pts;
    GST_BUFFER_DURATION(buf) = duration;
}

gboolean lg_buffer_is_delta(GstBuffer *buf) { return GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT); }

GstBuffer *lg_buffer_copy_shallow(GstBuffer *buf) {
    return gst_buffer_copy(buf); /* metadata copied, memory shared (no byte copy) */
}

void lg_request_key_frame(GstElement *encoder) {
    /* An upstream event sent to an element enters its source pad: the encoder makes the next frame an IDR. */
    gst_element_send_event(encoder, gst_video_event_new_upstream_force_key_unit(GST_CLOCK_TIME_NONE, TRUE, 0));
}

typedef struct {
    lg_sample_callback callback;
    gpointer user;
    GDestroyNotify notify;
} LgSinkCallbacks;

static GstFlowReturn lg_on_new_sample(GstAppSink *sink, gpointer data) {
    LgSinkCallbacks *cbs = data;
    GstSample *sample = gst_app_sink_pull_sample(sink);
    if (!sample) return GST_FLOW_EOS;
    GstBuffer *buf = gst_sample_get_buffer(sample);
    if (buf) cbs->callback(buf, cbs->user);
    gst_sample_unref(sample);
    return GST_FLOW_OK;
}

static void lg_sink_callbacks_free(gpointer data) {
    LgSinkCallbacks *cbs = data;
    if (cbs->notify) cbs->notify(cbs->user);
    g_free(cbs);
}

void lg_app_sink_on_buffer(GstElement *appsink, lg_sample_callback callback, gpointer user, GDestroyNotify notify) {
    LgSinkCallbacks *cbs = g_new0(LgSinkCallbacks, 1);
    cbs->callback = callback;
    cbs->user = user;
    cbs->notify = notify;
    GstAppSinkCallbacks callbacks = {0};
    callbacks.new_sample = lg_on_new_sample;
    gst_app_sink_set_callbacks(GST_APP_SINK(appsink), &callbacks, cbs, lg_sink_callbacks_free);
}
