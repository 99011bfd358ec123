/// Counters of one output for one camera, for `/metrics`.
public struct OutputStats: Sendable, Hashable {
    /// "annotate", "rtsp-h264", "rtsp-raw", "hls", "v4l2", "recorder".
    public var output: String
    /// The camera id.
    public var camera: String
    /// Frames (or pictures) handed to this output.
    public var framesIn: Int = 0
    /// Buffers pushed into GStreamer (summed over every live appsrc of the output).
    public var framesOut: Int = 0
    /// Frames replaced in the output's mailbox before it could take them (latest wins) or dropped.
    public var dropped: Int = 0
    /// Frames re-encoded because RTP/JPEG could not carry the camera's JPEG.
    public var reencoded: Int = 0
    /// Frames refused by a full lossless queue (recorder).
    public var overflows: Int = 0
    /// Connected clients / live medias.
    public var clients: Int = 0
    /// Errors (decode failures, GStreamer errors).
    public var errors: Int = 0
    /// Key frames the clients asked for (WebRTC viewers' RTCP PLI/FIR), served rate-limited by the
    /// camera's shared encoder.
    public var keyframeRequests: Int = 0

    /// Zeroed counters.
    public init(output: String, camera: String) {
        self.output = output
        self.camera = camera
    }
}
