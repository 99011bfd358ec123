#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/rtsp-server/rtsp-server.h>
#include <gst/sdp/sdp.h>
#define GST_USE_UNSTABLE_API 1
#include <gst/webrtc/webrtc.h>
#include <malloc.h>
