/* lgframesrc: the live source of the raw RTSP mounts. A GstBaseSrc whose streaming thread takes
 * buffers that another thread hands over with lg_frame_src_push().
 *
 * Why not appsrc: appsrc wakes its streaming thread while it still holds the queue's lock, so on
 * every frame the woken thread (often scheduled at once on the pushing thread's core) blocks on
 * that lock again and is woken a second time; on a two-core VM that second round of context
 * switches was a measurable part of a raw client's cost. Here the pusher releases the lock first
 * and signals after, and the streaming thread only waits while the queue is empty.
 *
 * The queue holds at most LG_FRAME_SRC_SLOTS buffers; a push into a full queue drops the oldest
 * (a live source: the newest picture matters). Caps given with lg_frame_src_set_caps() travel with
 * the next pushed buffer and are set by the streaming thread just before it, so a size change
 * reaches the payloader in order. pthread locks rather than GLib's: ThreadSanitizer sees them. */
#include "GStreamerShim.h"
#include <gst/base/gstbasesrc.h>
#include <pthread.h>

#define LG_FRAME_SRC_SLOTS 3

typedef struct {
    GstBuffer *buffer;
    GstCaps *caps; /* set before this buffer, or NULL */
} LgFrameSlot;

typedef struct {
    GstBaseSrc parent;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    LgFrameSlot slots[LG_FRAME_SRC_SLOTS];
    guint head;
    guint count;
    GstCaps *next_caps;
    gboolean started;
    gboolean flushing;
    gboolean eos; /* asked for: sent once the queued buffers are out */
    gboolean waiting;
    guint64 dropped;
} LgFrameSrc;

typedef struct {
    GstBaseSrcClass parent_class;
} LgFrameSrcClass;

G_DEFINE_TYPE(LgFrameSrc, lg_frame_src, GST_TYPE_BASE_SRC)

static GstStaticPadTemplate lg_frame_src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void lg_frame_slot_clear(LgFrameSlot *slot) {
    if (slot->buffer) gst_buffer_unref(slot->buffer);
    if (slot->caps) gst_caps_unref(slot->caps);
    slot->buffer = NULL;
    slot->caps = NULL;
}

/* Under the lock. */
static void lg_frame_src_drain(LgFrameSrc *self) {
    while (self->count > 0) {
        lg_frame_slot_clear(&self->slots[self->head]);
        self->head = (self->head + 1) % LG_FRAME_SRC_SLOTS;
        self->count--;
    }
    self->head = 0;
}

static GstFlowReturn lg_frame_src_create(GstBaseSrc *base, guint64 offset, guint size, GstBuffer **out) {
    (void)offset; (void)size;
    LgFrameSrc *self = (LgFrameSrc *)base;
    pthread_mutex_lock(&self->lock);
    while (self->count == 0 && !self->flushing && !self->eos) {
        self->waiting = TRUE;
        pthread_cond_wait(&self->cond, &self->lock);
    }
    self->waiting = FALSE;
    if (self->flushing) {
        pthread_mutex_unlock(&self->lock);
        return GST_FLOW_FLUSHING;
    }
    if (self->count == 0) {
        pthread_mutex_unlock(&self->lock);
        return GST_FLOW_EOS;
    }
    LgFrameSlot slot = self->slots[self->head];
    self->slots[self->head].buffer = NULL;
    self->slots[self->head].caps = NULL;
    self->head = (self->head + 1) % LG_FRAME_SRC_SLOTS;
    self->count--;
    pthread_mutex_unlock(&self->lock);
    if (slot.caps) {
        gboolean ok = gst_base_src_set_caps(base, slot.caps);
        gst_caps_unref(slot.caps);
        if (!ok) {
            if (slot.buffer) gst_buffer_unref(slot.buffer);
            return GST_FLOW_NOT_NEGOTIATED;
        }
    }
    *out = slot.buffer;
    return GST_FLOW_OK;
}

static gboolean lg_frame_src_unlock(GstBaseSrc *base) {
    LgFrameSrc *self = (LgFrameSrc *)base;
    pthread_mutex_lock(&self->lock);
    self->flushing = TRUE;
    pthread_mutex_unlock(&self->lock);
    pthread_cond_broadcast(&self->cond);
    return TRUE;
}

static gboolean lg_frame_src_unlock_stop(GstBaseSrc *base) {
    LgFrameSrc *self = (LgFrameSrc *)base;
    pthread_mutex_lock(&self->lock);
    self->flushing = FALSE;
    pthread_mutex_unlock(&self->lock);
    return TRUE;
}

static gboolean lg_frame_src_start(GstBaseSrc *base) {
    LgFrameSrc *self = (LgFrameSrc *)base;
    pthread_mutex_lock(&self->lock);
    self->started = TRUE;
    self->flushing = FALSE;
    self->eos = FALSE;
    pthread_mutex_unlock(&self->lock);
    return TRUE;
}

static gboolean lg_frame_src_stop(GstBaseSrc *base) {
    LgFrameSrc *self = (LgFrameSrc *)base;
    pthread_mutex_lock(&self->lock);
    self->started = FALSE;
    self->eos = FALSE;
    lg_frame_src_drain(self);
    pthread_mutex_unlock(&self->lock);
    return TRUE;
}

static void lg_frame_src_finalize(GObject *object) {
    LgFrameSrc *self = (LgFrameSrc *)object;
    lg_frame_src_drain(self);
    if (self->next_caps) gst_caps_unref(self->next_caps);
    pthread_mutex_destroy(&self->lock);
    pthread_cond_destroy(&self->cond);
    G_OBJECT_CLASS(lg_frame_src_parent_class)->finalize(object);
}

static void lg_frame_src_class_init(LgFrameSrcClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS(klass);
    object_class->finalize = lg_frame_src_finalize;
    gst_element_class_add_static_pad_template(element_class, &lg_frame_src_template);
    gst_element_class_set_static_metadata(element_class, "livegate frame source", "Source/Generic",
                                          "Live buffers handed over by livegate's frame pipeline",
                                          "livegate");
    base_class->create = lg_frame_src_create;
    base_class->unlock = lg_frame_src_unlock;
    base_class->unlock_stop = lg_frame_src_unlock_stop;
    base_class->start = lg_frame_src_start;
    base_class->stop = lg_frame_src_stop;
}

static void lg_frame_src_init(LgFrameSrc *self) {
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->cond, NULL);
    gst_base_src_set_live(GST_BASE_SRC(self), TRUE);
    gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_TIME);
    gst_base_src_set_do_timestamp(GST_BASE_SRC(self), FALSE);
}

gboolean lg_frame_src_register(void) {
    return gst_element_register(NULL, "lgframesrc", GST_RANK_NONE, lg_frame_src_get_type());
}

gboolean lg_is_frame_src(gpointer element) {
    return element != NULL && G_TYPE_CHECK_INSTANCE_TYPE(element, lg_frame_src_get_type());
}

/* Queues a buffer (taken over); drops the oldest when full. */
int lg_frame_src_push(GstElement *element, GstBuffer *buffer) {
    LgFrameSrc *self = (LgFrameSrc *)element;
    pthread_mutex_lock(&self->lock);
    if (!self->started || self->flushing || self->eos) {
        GstFlowReturn r = self->eos && self->started ? GST_FLOW_EOS : GST_FLOW_FLUSHING;
        pthread_mutex_unlock(&self->lock);
        gst_buffer_unref(buffer);
        return (int)r;
    }
    LgFrameSlot dropped = {NULL, NULL};
    if (self->count == LG_FRAME_SRC_SLOTS) {
        dropped = self->slots[self->head];
        self->slots[self->head].buffer = NULL;
        self->slots[self->head].caps = NULL;
        self->head = (self->head + 1) % LG_FRAME_SRC_SLOTS;
        self->count--;
        self->dropped++;
        /* Caps that came with the dropped buffer apply to the next one (unless it brings its own). */
        if (dropped.caps && self->count > 0 && !self->slots[self->head].caps) {
            self->slots[self->head].caps = dropped.caps;
            dropped.caps = NULL;
        } else if (dropped.caps && self->count == 0 && !self->next_caps) {
            self->next_caps = dropped.caps;
            dropped.caps = NULL;
        }
    }
    LgFrameSlot *slot = &self->slots[(self->head + self->count) % LG_FRAME_SRC_SLOTS];
    slot->buffer = buffer;
    slot->caps = self->next_caps;
    self->next_caps = NULL;
    self->count++;
    gboolean wake = self->waiting;
    pthread_mutex_unlock(&self->lock);
    if (wake) pthread_cond_signal(&self->cond);
    lg_frame_slot_clear(&dropped);
    return GST_FLOW_OK;
}

/* Ends the stream after the buffers already queued (none is dropped for it). */
int lg_frame_src_end_of_stream(GstElement *element) {
    LgFrameSrc *self = (LgFrameSrc *)element;
    pthread_mutex_lock(&self->lock);
    if (!self->started || self->flushing) {
        pthread_mutex_unlock(&self->lock);
        return (int)GST_FLOW_FLUSHING;
    }
    self->eos = TRUE;
    gboolean wake = self->waiting;
    pthread_mutex_unlock(&self->lock);
    if (wake) pthread_cond_signal(&self->cond);
    return (int)GST_FLOW_OK;
}

void lg_frame_src_set_caps(GstElement *element, GstCaps *caps) {
    LgFrameSrc *self = (LgFrameSrc *)element;
    pthread_mutex_lock(&self->lock);
    if (self->next_caps) gst_caps_unref(self->next_caps);
    self->next_caps = gst_caps_ref(caps);
    pthread_mutex_unlock(&self->lock);
}

guint64 lg_frame_src_queued(GstElement *element) {
    LgFrameSrc *self = (LgFrameSrc *)element;
    pthread_mutex_lock(&self->lock);
    guint64 n = self->count;
    pthread_mutex_unlock(&self->lock);
    return n;
}

guint64 lg_frame_src_dropped(GstElement *element) {
    LgFrameSrc *self = (LgFrameSrc *)element;
    pthread_mutex_lock(&self->lock);
    guint64 n = self->dropped;
    pthread_mutex_unlock(&self->lock);
    return n;
}
