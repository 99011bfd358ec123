#include "BenchGst.h"
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

typedef struct {
    uint64_t ns;
    GstSample *sample;
} item;

struct bench_client {
    GstElement *pipeline;
    GAsyncQueue *ts_q;
    GAsyncQueue *dec_q;
    volatile gint arrivals;
};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static GstFlowReturn on_sample(GstAppSink *sink, gpointer user) {
    uint64_t t = now_ns();
    GAsyncQueue *q = user;
    GstSample *s = gst_app_sink_pull_sample(sink);
    if (!s) return GST_FLOW_EOS;
    item *it = g_new(item, 1);
    it->ns = t;
    it->sample = s;
    g_async_queue_push(q, it);
    return GST_FLOW_OK;
}

static GstFlowReturn on_ts_sample(GstAppSink *sink, gpointer user) {
    bench_client *c = user;
    g_atomic_int_inc(&c->arrivals);
    return on_sample(sink, c->ts_q);
}

static void hook(GstElement *pipeline, const char *name, GstFlowReturn (*fn)(GstAppSink *, gpointer), gpointer user) {
    GstElement *s = gst_bin_get_by_name(GST_BIN(pipeline), name);
    if (!s) return;
    GstAppSinkCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.new_sample = fn;
    gst_app_sink_set_callbacks(GST_APP_SINK(s), &cb, user, NULL);
    gst_object_unref(s);
}

bench_client *bench_client_new(const char *url, int h264, char **error) {
    gst_init(NULL, NULL);
    char launch[2048];
    if (h264) {
        snprintf(launch, sizeof launch,
                 "rtspsrc location=%s protocols=tcp latency=0 ! rtph264depay ! h264parse ! "
                 "video/x-h264,alignment=au ! tee name=t "
                 "t. ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0 ! appsink name=ts sync=false "
                 "t. ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0 ! avdec_h264 ! videoconvert ! "
                 "video/x-raw,format=I420 ! appsink name=dec sync=false",
                 url);
    } else {
        snprintf(launch, sizeof launch,
                 "rtspsrc location=%s protocols=tcp latency=0 ! rtpjpegdepay ! appsink name=ts sync=false", url);
    }
    GError *err = NULL;
    GstElement *p = gst_parse_launch(launch, &err);
    if (!p || err) {
        if (error) *error = g_strdup(err ? err->message : "gst_parse_launch failed");
        if (err) g_error_free(err);
        if (p) gst_object_unref(p);
        return NULL;
    }
    bench_client *c = g_new0(bench_client, 1);
    c->pipeline = p;
    c->ts_q = g_async_queue_new();
    c->dec_q = g_async_queue_new();
    hook(p, "ts", on_ts_sample, c);
    if (h264) hook(p, "dec", on_sample, c->dec_q);
    gst_element_set_state(p, GST_STATE_PLAYING);
    return c;
}

int bench_client_pop(bench_client *c, int decoded, int timeout_ms, bench_arrival *out) {
    item *it = g_async_queue_timeout_pop(decoded ? c->dec_q : c->ts_q, (guint64)timeout_ms * 1000);
    if (!it) return 0;
    GstBuffer *b = gst_sample_get_buffer(it->sample);
    GstMapInfo *m = g_new0(GstMapInfo, 1);
    gst_buffer_map(b, m, GST_MAP_READ);
    out->arrival_ns = it->ns;
    out->pts = GST_BUFFER_PTS(b);
    out->data = m->data;
    out->size = m->size;
    out->sample = it->sample;
    out->map = m;
    g_free(it);
    return 1;
}

void bench_arrival_video_info(const bench_arrival *a, int *width, int *height, int *ystride) {
    GstVideoInfo info;
    GstCaps *caps = gst_sample_get_caps(a->sample);
    *width = *height = *ystride = 0;
    if (caps && gst_video_info_from_caps(&info, caps)) {
        *width = GST_VIDEO_INFO_WIDTH(&info);
        *height = GST_VIDEO_INFO_HEIGHT(&info);
        *ystride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
        GstVideoMeta *vm = gst_buffer_get_video_meta(gst_sample_get_buffer(a->sample));
        if (vm) *ystride = vm->stride[0];
    }
}

void bench_arrival_free(bench_arrival *a) {
    if (!a->sample) return;
    gst_buffer_unmap(gst_sample_get_buffer(a->sample), a->map);
    g_free(a->map);
    gst_sample_unref(a->sample);
    a->sample = NULL;
    a->map = NULL;
}

uint64_t bench_client_arrivals(bench_client *c) { return (uint64_t)g_atomic_int_get(&c->arrivals); }

static void drain(GAsyncQueue *q) {
    item *it;
    while ((it = g_async_queue_try_pop(q))) {
        gst_sample_unref(it->sample);
        g_free(it);
    }
    g_async_queue_unref(q);
}

void bench_client_free(bench_client *c) {
    gst_element_set_state(c->pipeline, GST_STATE_NULL);
    gst_object_unref(c->pipeline);
    drain(c->ts_q);
    drain(c->dec_q);
    g_free(c);
}

struct bench_counter {
    volatile gint n;
};

static GstPadProbeReturn count_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user) {
    bench_counter *c = user;
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *l = gst_pad_probe_info_get_buffer_list(info);
        g_atomic_int_add(&c->n, (gint)gst_buffer_list_length(l));
    } else {
        g_atomic_int_inc(&c->n);
    }
    return GST_PAD_PROBE_OK;
}

/* Adds a buffer (and buffer-list) probe on an element's static pad; FALSE when there is no such pad. */
static gboolean add_buffer_probe(void *element, const char *pad_name, GstPadProbeCallback probe, gpointer user) {
    GstPad *pad = gst_element_get_static_pad(GST_ELEMENT(element), pad_name);
    if (!pad) return FALSE;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, probe, user, NULL);
    gst_object_unref(pad);
    return TRUE;
}

bench_counter *bench_count_buffers(void *element, const char *pad_name) {
    bench_counter *c = g_new0(bench_counter, 1);
    if (!add_buffer_probe(element, pad_name, count_probe, c)) { g_free(c); return NULL; }
    return c;
}

uint64_t bench_counter_value(bench_counter *c) { return (uint64_t)g_atomic_int_get(&c->n); }

struct bench_rtp_counter {
    volatile gint frames;
    volatile gint packets;
};

static void count_rtp(bench_rtp_counter *c, GstBuffer *b) {
    guint8 second = 0;
    g_atomic_int_inc(&c->packets);
    // RTP header byte 1: M (1 bit) | PT (7 bits).
    if (gst_buffer_extract(b, 1, &second, 1) == 1 && (second & 0x80)) g_atomic_int_inc(&c->frames);
}

static GstPadProbeReturn rtp_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user) {
    bench_rtp_counter *c = user;
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
        GstBufferList *l = gst_pad_probe_info_get_buffer_list(info);
        guint n = gst_buffer_list_length(l);
        for (guint i = 0; i < n; i++) count_rtp(c, gst_buffer_list_get(l, i));
    } else {
        count_rtp(c, gst_pad_probe_info_get_buffer(info));
    }
    return GST_PAD_PROBE_OK;
}

bench_rtp_counter *bench_count_rtp_frames(void *element, const char *pad_name) {
    bench_rtp_counter *c = g_new0(bench_rtp_counter, 1);
    if (!add_buffer_probe(element, pad_name, rtp_probe, c)) { g_free(c); return NULL; }
    return c;
}

uint64_t bench_rtp_counter_frames(bench_rtp_counter *c) { return (uint64_t)g_atomic_int_get(&c->frames); }
uint64_t bench_rtp_counter_packets(bench_rtp_counter *c) { return (uint64_t)g_atomic_int_get(&c->packets); }
void bench_rtp_counter_free(bench_rtp_counter *c) { g_free(c); }

void bench_object_unref(void *object) { if (object) gst_object_unref(object); }

int bench_push_wrapped(void *appsrc, const void *data, size_t size, void *user, void (*notify)(void *), uint64_t pts) {
    GstBuffer *b = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, (gpointer)data, size, 0, size, user, notify);
    GST_BUFFER_PTS(b) = pts;
    GST_BUFFER_DTS(b) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(b) = GST_CLOCK_TIME_NONE;
    return (int)gst_app_src_push_buffer(GST_APP_SRC(appsrc), b);
}

void bench_rusage_self(uint64_t *user_us, uint64_t *sys_us) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    *user_us = (uint64_t)r.ru_utime.tv_sec * 1000000ull + (uint64_t)r.ru_utime.tv_usec;
    *sys_us = (uint64_t)r.ru_stime.tv_sec * 1000000ull + (uint64_t)r.ru_stime.tv_usec;
}

#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

int bench_run_child(char *const argv[], uint64_t *user_us, uint64_t *sys_us) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) { dup2(fd, 0); dup2(fd, 1); }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    struct rusage r;
    if (wait4(pid, &status, 0, &r) < 0) return -1;
    *user_us = (uint64_t)r.ru_utime.tv_sec * 1000000ull + (uint64_t)r.ru_utime.tv_usec;
    *sys_us = (uint64_t)r.ru_stime.tv_sec * 1000000ull + (uint64_t)r.ru_stime.tv_usec;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void bench_client_stop(bench_client *c) { gst_element_set_state(c->pipeline, GST_STATE_NULL); }
