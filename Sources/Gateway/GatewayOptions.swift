/// Everything `livegate run` can be told.
public struct GatewayOptions: Sendable {
    public var cameras: [CameraSpec] = []
    /// Address every server binds to (RTSP, HTTP, emulators). Loopback unless told otherwise.
    public var listen = "127.0.0.1"
    public var rtspPort = 8554
    public var httpPort = 8080
    /// Serve HLS at /hls/<camera>/index.m3u8.
    public var hls = true
    /// Where HLS segments are written (a temporary folder when nil).
    public var hlsDirectory: String?
    /// Record Matroska segments and AF sidecars here.
    public var recordDirectory: String?
    /// Images the cameras send (shots from the API or the body) are saved in `<captures>/<camera>/`.
    public var capturesDirectory = "captures"
    /// Segment length of the recorder, seconds.
    public var segmentSeconds = 300
    /// A v4l2loopback device for the first camera.
    public var v4l2Device: String?
    /// Replaces the webcam's `v4l2sink` (GStreamer launch syntax), for machines without the module.
    public var v4l2Sink: String?
    /// The virtual webcams' (v4l2 and PipeWire) fixed picture: size and raw format.
    public var webcamWidth = 1280
    public var webcamHeight = 720
    public var webcamFormat = "YUY2"
    /// The access token (HTTP Bearer / ?token=, RTSP user `livegate` with it as password); nil: none,
    /// which is only allowed while `listen` is a loopback address.
    public var token: String?
    /// Host names the HTTP server answers for besides IP literals, localhost and this machine's name.
    public var allowedHosts: [String] = []
    /// Web origins whose pages may read (GET) streams, snapshots, files and events; none besides
    /// livegate's own page by default (no wildcard).
    public var allowedOrigins: [String] = []
    /// What one HTTP client may hold: time to send a request, keep-alive wait, stalled responses,
    /// connection counts (`HTTPConnectionGuard`). A response still being streamed (MJPEG, events)
    /// is not idle.
    public var httpLimits = HTTPLimits()
    /// An RTSP connection that sets up no session for this long is closed (0: never).
    public var rtspIdleTimeoutSeconds = 30
    /// An RTSP client that reads nothing for this long (its socket stays full) is closed (0: never).
    public var rtspStallTimeoutSeconds = 10
    /// Largest RTP packet of the raw RTSP mounts; nil: 60 000 while listening on loopback (Linux),
    /// else 1 400 (`RTSPOutput.Configuration.packetSize(listeningOn:)`).
    public var rawPacketSize: Int?
    /// Publish the first camera as a PipeWire camera node of this name.
    public var pipewireNode: String?
    /// The YAML file the cameras came from (reloaded on SIGHUP or POST /api/v1/reload).
    public var configPath: String?
    /// Draw AF areas on the H.264/HLS/webcam outputs.
    public var overlay = true
    /// Nominal frame rate for encoders (cameras send what they send).
    public var fps = 30
    /// Seconds a media-graph branch (decode, encoder, HLS) keeps running after its last consumer.
    public var lingerSeconds = 10
    /// Emulator settings for `emulator:` cameras.
    public var emulatorFPS = 30.0
    public var emulatorWidth = 768
    public var emulatorHeight = 432

    public init() {}
}
