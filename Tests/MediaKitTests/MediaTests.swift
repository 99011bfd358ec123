import Testing
import TestSupport

/// The tests that run real GStreamer pipelines and external clients: serialized, so that x264,
/// ffmpeg and the muxers do not fight over the two CPU cores.
@Suite("MediaKit with GStreamer", .serialized, .tags(.integration))
struct MediaTests {}
