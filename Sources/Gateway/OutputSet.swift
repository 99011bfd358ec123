import Foundation
import LiveViewCore
import Logging
import MediaKit

/// The GStreamer outputs of every camera: RTSP (H.264 + raw MJPEG), HLS, the virtual webcam and
/// the recorder, all fed from the camera's hub; one shared decode per camera for the raw-video ones.
final class OutputSet: @unchecked Sendable {
    let options: GatewayOptions
    let logger: Logger
    private struct State {
        var runtime: GStreamerRuntime?
        var rtsp: RTSPOutput?
        var hls: HLSOutput?
        var hlsRoot: String?
        var hlsIsTemporary = false
        var webcam: VirtualWebcamOutput?
        var annotated: [String: AnnotatedStream] = [:]
        var recorders: [String: Recorder] = [:]
    }
    private let state = Locked(State())

    init(options: GatewayOptions, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    var hlsRoot: String? { state.withLock { $0.hlsRoot } }

    /// The bound RTSP port (differs from the option when it was 0).
    var rtspPort: Int? { state.withLock { $0.rtsp?.port } }

    /// Starts GStreamer, the RTSP server and (when asked) the webcam; throws with a clear reason.
    func startServers() throws {
        let runtime = try GStreamerRuntime(logger: logger)
        for element in ["appsrc", "jpegparse", "rtpjpegpay", "x264enc", "rtph264pay", "matroskamux", "hlssink2"]
        where !GStreamerRuntime.hasElement(element) {
            throw MediaError("GStreamer element '\(element)' is missing; run deploy/install-deps.sh")
        }
        let rtsp: RTSPOutput
        do {
            rtsp = try RTSPOutput(runtime: runtime, configuration: .init(address: options.listen, port: options.rtspPort), logger: logger)
        } catch {
            throw MediaError("cannot start the RTSP server on \(options.listen):\(options.rtspPort) (\(error)); is another program using the port? Pick one with --rtsp-port")
        }
        var hls: HLSOutput?
        var root: String?
        var temporary = false
        if options.hls {
            if let dir = options.hlsDirectory {
                root = dir
            } else {
                root = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-hls-\(getpid())").path
                temporary = true
            }
            try FileManager.default.createDirectory(atPath: root!, withIntermediateDirectories: true)
            hls = HLSOutput(runtime: runtime, configuration: .init(root: root!), logger: logger)
        }
        var webcam: VirtualWebcamOutput?
        if let device = options.v4l2Device {
            if options.v4l2Sink == nil, !FileManager.default.fileExists(atPath: device) {
                throw MediaError("""
                    the virtual webcam \(device) does not exist. Load v4l2loopback first: \
                    sudo modprobe v4l2loopback video_nr=10 card_label=livegate exclusive_caps=1 (see README)
                    """)
            }
            var config = VirtualWebcamOutput.Configuration(device: device)
            config.sink = options.v4l2Sink
            let cam = try VirtualWebcamOutput(runtime: runtime, configuration: config, logger: logger)
            do {
                try cam.start()
            } catch {
                throw MediaError("""
                    cannot open the virtual webcam \(device) (\(error)). Load v4l2loopback first: \
                    sudo modprobe v4l2loopback video_nr=10 card_label=livegate exclusive_caps=1 (see README)
                    """)
            }
            webcam = cam
        }
        state.withLock { s in
            s.runtime = runtime
            s.rtsp = rtsp
            s.hls = hls
            s.hlsRoot = root
            s.hlsIsTemporary = temporary
            s.webcam = webcam
        }
    }

    /// Wires one camera's hub to every output.
    func attach(_ cam: CameraRuntime) throws {
        let (runtime, rtsp, hls, webcam) = state.withLock { ($0.runtime, $0.rtsp, $0.hls, $0.webcam) }
        guard let runtime, let rtsp else { return }
        let annotate = try AnnotatedStream(name: cam.id, hub: cam.hub, overlay: options.overlay, logger: logger)
        try rtsp.addCamera(id: cam.id, hub: cam.hub, annotate: annotate, fps: options.fps)
        try hls?.addCamera(id: cam.id, annotate: annotate, fps: options.fps)
        if cam.index == 0 { webcam?.show(annotate) }
        var recorder: Recorder?
        if let dir = options.recordDirectory {
            let r = Recorder(configuration: .init(cameraID: cam.id, directory: dir,
                                                  segmentDuration: .seconds(options.segmentSeconds)),
                             runtime: runtime, logger: logger)
            try r.start(hub: cam.hub)
            recorder = r
        }
        state.withLock { s in
            s.annotated[cam.id] = annotate
            if let recorder { s.recorders[cam.id] = recorder }
        }
    }

    /// Stops everything; recordings are finished (EOS) first.
    func stop() {
        let s = state.withLock { s -> State in
            let old = s
            s = State()
            return old
        }
        for r in s.recorders.values { r.stop() }
        s.webcam?.stop()
        s.hls?.stop()
        s.rtsp?.stop()
        for a in s.annotated.values { a.stop() }
        s.runtime?.shutdown()
        if s.hlsIsTemporary, let root = s.hlsRoot { try? FileManager.default.removeItem(atPath: root) }
    }

    /// Recording segment files so far, per camera.
    func recordingPaths(camera: String) -> [String] {
        state.withLock { $0.recorders[camera]?.segmentPaths } ?? []
    }

    func writeMetrics(into m: inout MetricsWriter, cameras: [CameraRuntime]) {
        let s = state.withLock { $0 }
        var stats: [OutputStats] = []
        stats += s.rtsp?.stats() ?? []
        stats += s.hls?.stats() ?? []
        for (id, a) in s.annotated { stats.append(a.stats(camera: id)) }
        for r in s.recorders.values { stats.append(r.stats()) }
        if let w = s.webcam { stats.append(w.stats(camera: cameras.first?.id ?? "")) }
        let series: [(String, String, KeyPath<OutputStats, Int>, String)] = [
            ("livegate_output_frames_in_total", "Frames an output received.", \.framesIn, "counter"),
            ("livegate_output_frames_out_total", "Frames an output pushed into GStreamer.", \.framesOut, "counter"),
            ("livegate_output_dropped_frames_total", "Frames an output replaced or dropped (latest wins).", \.dropped, "counter"),
            ("livegate_output_reencoded_frames_total", "JPEGs re-encoded because RTP/JPEG cannot carry them.", \.reencoded, "counter"),
            ("livegate_output_overflows_total", "Frames refused by a full lossless queue (recorder).", \.overflows, "counter"),
            ("livegate_output_clients", "Connected clients of an output.", \.clients, "gauge"),
            ("livegate_output_errors_total", "Errors reported by an output's pipeline.", \.errors, "counter"),
        ]
        for (name, help, key, type) in series {
            m.help(name, help, type: type)
            for st in stats {
                m.sample(name, ["camera": st.camera, "output": st.output], Double(st[keyPath: key]))
            }
        }
    }
}
