#pragma once
#include <stddef.h>
#include <stdint.h>

/// An in-process GStreamer RTSP client: rtspsrc (TCP, latency 0) → depayloader → appsink "ts",
/// whose new-sample callback takes CLOCK_MONOTONIC first thing and queues (time, sample). For H.264 a
/// tee also feeds avdec_h264 → I420 → appsink "dec" (order-preserving, no B-frames).
typedef struct bench_client bench_client;

bench_client *bench_client_new(const char *url, int h264, char **error);
/// Pops the next arrival: 1 when one came within timeout_ms, 0 otherwise. The bytes stay valid
/// until bench_arrival_free.
typedef struct {
    uint64_t arrival_ns;
    /// The buffer's PTS (the same on both branches of the H.264 client).
    uint64_t pts;
    const uint8_t *data;
    size_t size;
    void *sample;
    void *map;
} bench_arrival;
int bench_client_pop(bench_client *c, int decoded, int timeout_ms, bench_arrival *out);
/// For decoded (I420) pictures: width, height and the luma stride of the last popped picture.
void bench_arrival_video_info(const bench_arrival *a, int *width, int *height, int *ystride);
void bench_arrival_free(bench_arrival *a);
/// Samples that arrived so far on the "ts" appsink.
uint64_t bench_client_arrivals(bench_client *c);
/// Stops receiving (the queues keep what arrived).
void bench_client_stop(bench_client *c);
void bench_client_free(bench_client *c);

/// Counts buffers reaching `pad_name` of `element` (a GstElement *); returns a counter handle.
typedef struct bench_counter bench_counter;
bench_counter *bench_count_buffers(void *element, const char *pad_name);
uint64_t bench_counter_value(bench_counter *c);

/// Counts RTP packets reaching `pad_name` of `element` (a GstElement *), and among them the packets
/// with the RTP marker bit (the last packet of a JPEG frame / an H.264 access unit), i.e. frames.
/// The counter is freed with bench_rtp_counter_free once its pipeline is gone.
typedef struct bench_rtp_counter bench_rtp_counter;
bench_rtp_counter *bench_count_rtp_frames(void *element, const char *pad_name);
uint64_t bench_rtp_counter_frames(bench_rtp_counter *c);
uint64_t bench_rtp_counter_packets(bench_rtp_counter *c);
void bench_rtp_counter_free(bench_rtp_counter *c);

/// gst_object_unref for a GstElement * returned with a new reference.
void bench_object_unref(void *object);

/// The GStreamer-only part of the raw mount: wraps `size` bytes at `data` zero-copy into a GstBuffer
/// (gst_buffer_new_wrapped_full with a destroy notify, as MediaKit's AppSource does), stamps it and
/// pushes it into `appsrc` (a GstElement *). Returns the GstFlowReturn.
int bench_push_wrapped(void *appsrc, const void *data, size_t size, void *user, void (*notify)(void *), uint64_t pts);

/// Process-wide CPU time (user, system) in microseconds (getrusage RUSAGE_SELF).
void bench_rusage_self(uint64_t *user_us, uint64_t *sys_us);

/// Runs argv[0] (PATH lookup) with stdin/stdout from /dev/null, waits with wait4 and returns its exit
/// status (-1 when it could not start); the child's CPU user/system time in microseconds.
int bench_run_child(char *const argv[], uint64_t *user_us, uint64_t *sys_us);
