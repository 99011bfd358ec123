#include <gst/gst.h>
#include <gst/app/gstappsink.h>
