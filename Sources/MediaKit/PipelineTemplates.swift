import Foundation

/// The GStreamer launch-string templates of every output, with `{placeholders}`. The same text lives
/// in `pipelines/*.pipeline` at the repository root (a test keeps the two identical).
public enum PipelineTemplates {
    /// `pipelines/rtsp-h264.pipeline`.
    public static let rtspH264 = #"( appsrc name=src is-live=true format=time do-timestamp=false max-buffers=60 caps=video/x-h264,stream-format=byte-stream,alignment=au ! rtph264pay name=pay0 pt=96 config-interval=-1 aggregate-mode=zero-latency )"# + "\n"
    /// `pipelines/rtsp-raw.pipeline`.
    public static let rtspRaw = #"( appsrc name=src is-live=true format=time do-timestamp=false max-buffers=3 leaky-type=downstream caps=image/jpeg,framerate={fps}/1 ! rtpjpegpay name=pay0 pt=26 mtu={mtu} )"# + "\n"
    /// `pipelines/encoder.pipeline`: the one H.264 encoder of a camera (full-range I420 from the
    /// picture branch straight into x264, no videoconvert; constant quality `quality` (x264's CRF)
    /// capped at `bitrate` kbit/s; SPS/PPS before every IDR).
    public static let encoder = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=3 leaky-type=downstream ! x264enc name=enc tune=zerolatency speed-preset=ultrafast pass=qual quantizer={quality} key-int-max={keyint} threads={threads} sliced-threads=false bitrate={bitrate} ! video/x-h264,profile=constrained-baseline,stream-format=byte-stream,alignment=au ! h264parse config-interval=-1 ! appsink name=sink sync=false async=false max-buffers=8 drop=false"# + "\n"
    /// `pipelines/hls.pipeline`.
    public static let hls = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=60 caps=video/x-h264,stream-format=byte-stream,alignment=au ! hlssink2 name=sink send-keyframe-requests=false location="{segmentPattern}" playlist-location="{playlist}" target-duration={targetDuration} playlist-length={playlistLength} max-files={maxFiles}"# + "\n"
    /// `pipelines/v4l2.pipeline`.
    public static let v4l2 = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=2 leaky-type=downstream ! videoscale add-borders=true ! videoconvert ! video/x-raw,format={format},width={width},height={height},pixel-aspect-ratio=1/1,framerate={fps}/1{colorimetry} ! {sink}"# + "\n"
    /// `pipelines/v4l2-sink.pipeline`.
    public static let v4l2Sink = #"v4l2sink device="{device}" sync=false"# + "\n"
    /// `pipelines/pipewire-sink.pipeline`.
    public static let pipewireSink = #"identity drop-allocation=true ! pipewiresink name=pwsink mode=provide sync=false stream-properties="props,media.class=Video/Source,media.role=Camera,node.name={node},node.description={node}""# + "\n"
    /// `pipelines/whep.pipeline`: one WebRTC viewer (WHEP) of the camera's shared H.264 encoder;
    /// `pt` is the payload type the browser's offer gave H.264.
    public static let whep = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=60 caps=video/x-h264,stream-format=byte-stream,alignment=au ! rtph264pay name=pay config-interval=-1 aggregate-mode=zero-latency pt={pt} ! application/x-rtp,media=video,encoding-name=H264,payload={pt},clock-rate=90000 ! webrtcbin name=webrtc bundle-policy=max-bundle"# + "\n"
    /// `pipelines/recorder.pipeline`.
    public static let recorder = #"appsrc name=src format=time is-live=false block=true max-bytes=16000000 caps=image/jpeg,width={width},height={height},framerate={fps}/1 ! matroskamux name=mux writing-app=livegate max-cluster-duration=1000000000 ! filesink name=sink location="{location}""# + "\n"

    /// `pipelines/push-rtsp.pipeline`.
    public static let pushRTSP = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=90 leaky-type=downstream caps=video/x-h264,stream-format=byte-stream,alignment=au ! h264parse config-interval=-1 ! rtspclientsink name=sink location="{url}" protocols=tcp latency=0"# + "\n"
    /// `pipelines/push-rtmp.pipeline`.
    public static let pushRTMP = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=90 leaky-type=downstream caps=video/x-h264,stream-format=byte-stream,alignment=au ! h264parse config-interval=-1 ! flvmux name=mux streamable=true ! rtmp2sink name=sink location="{url}" sync=false"# + "\n"
    /// `pipelines/push-srt.pipeline`.
    public static let pushSRT = #"appsrc name=src is-live=true format=time do-timestamp=false max-buffers=90 leaky-type=downstream caps=video/x-h264,stream-format=byte-stream,alignment=au ! h264parse config-interval=-1 ! mpegtsmux name=mux alignment=7 ! srtsink name=sink uri="{url}" wait-for-connection=false sync=false"# + "\n"

    /// File name (in `pipelines/`) → embedded text, for the drift test and diagnostics.
    public static let all: [String: String] = [
        "rtsp-h264.pipeline": rtspH264,
        "rtsp-raw.pipeline": rtspRaw,
        "encoder.pipeline": encoder,
        "hls.pipeline": hls,
        "v4l2.pipeline": v4l2,
        "v4l2-sink.pipeline": v4l2Sink,
        "pipewire-sink.pipeline": pipewireSink,
        "push-rtsp.pipeline": pushRTSP,
        "push-rtmp.pipeline": pushRTMP,
        "push-srt.pipeline": pushSRT,
        "whep.pipeline": whep,
        "recorder.pipeline": recorder,
    ]

    /// Replaces every `{name}` with its value; throws when a placeholder is left unfilled.
    public static func render(_ template: String, _ values: [String: String]) throws -> String {
        var s = template
        for (k, v) in values {
            s = s.replacingOccurrences(of: "{" + k + "}", with: v)
        }
        if let open = s.firstIndex(of: "{"), let close = s[open...].firstIndex(of: "}") {
            throw MediaError("unfilled placeholder \(s[open...close]) in pipeline template")
        }
        return s.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Quotes a value for use inside a `"…"` property value of a launch string.
    public static func escapeQuoted(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
