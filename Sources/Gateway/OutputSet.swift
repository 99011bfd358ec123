import CameraKit
import Foundation
import LiveViewCore
import Logging
import MediaKit
import NIOCore
import NIOPosix

/// The GStreamer outputs of every camera, all fed by the camera's media graph (`CameraGraph`:
/// branches that run only while consumed, one shared decode and one shared encoder per camera, the
/// offline slate): RTSP (H.264 + raw MJPEG), HLS on demand, the virtual webcam and the recorder.
final class OutputSet: Sendable {
    let options: GatewayOptions
    let logger: Logger
    private struct State {
        var runtime: GStreamerRuntime?
        var rtsp: RTSPOutput?
        var hls: HLSOutput?
        var hlsRoot: String?
        var hlsIsTemporary = false
        /// The v4l2loopback device and the PipeWire camera (each shows the first camera).
        var webcams: [VirtualWebcamOutput] = []
        var whep: WHEPOutput?
        var graphs: [String: CameraGraph] = [:]
        var recorders: [String: Recorder] = [:]
        var pushes: [String: [PushOutput]] = [:]
    }
    private let state = Mutex(State())
    /// Told of every recording segment that starts or ends (the event stream).
    let recordingObserver = Mutex<(@Sendable (RecordingSegment) -> Void)?>(nil)
    /// Told when a push to a media server changes state (the event stream).
    let pushObserver = Mutex<(@Sendable (String, PushOutput.Status) -> Void)?>(nil)

    /// The event loop whose timer runs every graph's watch: a thread of its own, because a tick
    /// that finds its camera away may draw and encode the slate (milliseconds, once per change),
    /// which must not hold up a loop that carries cameras and viewers. One per process.
    static let graphTicks: any EventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()

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
        for element in ["appsrc", "rtpjpegpay", "x264enc", "rtph264pay", "matroskamux", "hlssink2"]
        where !GStreamerRuntime.hasElement(element) {
            throw MediaError("GStreamer element '\(element)' is missing; run deploy/install-deps.sh")
        }
        let rtsp: RTSPOutput
        do {
            var config = RTSPOutput.Configuration(address: options.listen, port: options.rtspPort)
            if let token = options.token { config.credentials = ("livegate", token) }
            config.idleTimeout = .seconds(options.rtspIdleTimeoutSeconds)
            config.stallTimeout = .seconds(options.rtspStallTimeoutSeconds)
            config.rawPacketSize = options.rawPacketSize
            rtsp = try RTSPOutput(runtime: runtime, configuration: config, logger: logger)
        } catch {
            throw MediaError("cannot listen on \(options.listen):\(options.rtspPort) for RTSP: the address is in use (or not this machine's); pick another with --rtsp-port")
        }
        var hls: HLSOutput?
        var root: String?
        var temporary = false
        if options.hls {
            if let dir = options.hlsDirectory {
                root = dir
            } else {
                root = Self.hlsWorkFolder()
                temporary = true
            }
            try FileManager.default.createDirectory(atPath: root!, withIntermediateDirectories: true)
            var config = HLSOutput.Configuration(root: root!)
            config.linger = .seconds(options.lingerSeconds)
            hls = HLSOutput(runtime: runtime, configuration: config, logger: logger)
        }
        var webcams: [VirtualWebcamOutput] = []
        if let device = options.v4l2Device {
            if options.v4l2Sink == nil, !FileManager.default.fileExists(atPath: device) {
                throw MediaError("""
                    the virtual webcam \(device) does not exist. Load v4l2loopback first: \
                    sudo modprobe v4l2loopback video_nr=10 card_label=livegate exclusive_caps=1 (see README)
                    """)
            }
            var config = VirtualWebcamOutput.Configuration(device: device)
            config.sink = options.v4l2Sink
            config.width = options.webcamWidth
            config.height = options.webcamHeight
            config.format = options.webcamFormat
            let cam = try VirtualWebcamOutput(runtime: runtime, configuration: config, logger: logger)
            do {
                try cam.start()
            } catch let e as VirtualWebcamOutput.Refused {
                throw MediaError("\(e)")
            } catch {
                throw MediaError("""
                    cannot open the virtual webcam \(device) (\(error)). Load v4l2loopback first: \
                    sudo modprobe v4l2loopback video_nr=10 card_label=livegate exclusive_caps=1 (see README)
                    """)
            }
            webcams.append(cam)
        }
        if let node = options.pipewireNode {
            guard GStreamerRuntime.hasElement("pipewiresink") else {
                for w in webcams { w.stop() }
                throw MediaError("the PipeWire camera needs GStreamer's pipewiresink: apt-get install gstreamer1.0-pipewire (deploy/install-deps.sh)")
            }
            var config = try VirtualWebcamOutput.Configuration.pipewire(node: node)
            config.width = options.webcamWidth
            config.height = options.webcamHeight
            config.format = options.webcamFormat
            let cam = try VirtualWebcamOutput(runtime: runtime, configuration: config, logger: logger)
            do {
                try cam.start()
            } catch {
                for w in webcams { w.stop() }
                throw MediaError("cannot publish the PipeWire camera '\(node)': \(error)")
            }
            webcams.append(cam)
        }
        // WebRTC (WHEP) when webrtcbin and libnice are installed; without them POST /whep answers 503.
        var whep: WHEPOutput?
        if GStreamerRuntime.hasElement("webrtcbin") && GStreamerRuntime.hasElement("nicesrc") {
            whep = WHEPOutput(runtime: runtime, configuration: .init(address: options.listen), logger: logger)
        } else {
            logger.warning("WebRTC (WHEP) is off: webrtcbin or libnice missing; run deploy/install-deps.sh")
        }
        state.withLock { s in
            s.runtime = runtime
            s.whep = whep
            s.rtsp = rtsp
            s.hls = hls
            s.hlsRoot = root
            s.hlsIsTemporary = temporary
            s.webcams = webcams
        }
    }

    /// `$TMPDIR/livegate-hls/<pid>`: every gateway's HLS work folder lives under one livegate-owned
    /// directory, and a gateway starting up removes the folders of gateways that are gone (killed
    /// before they could clean up), so no segment folder survives a crash unnoticed.
    static func hlsWorkFolder(parent: String = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-hls").path) -> String {
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: parent)) ?? [] {
            guard let pid = Int32(name), pid != getpid() else { continue }
            // kill(pid, 0) fails with ESRCH when no such process exists.
            if kill(pid, 0) != 0 && errno == ESRCH { try? fm.removeItem(atPath: "\(parent)/\(name)") }
        }
        return "\(parent)/\(getpid())"
    }

    /// Builds one camera's media graph and wires it to every output (nothing runs until consumed).
    func attach(_ cam: CameraRuntime, spec: CameraSpec, nominalSize: (width: Int, height: Int)?,
                encodeLatency: (@Sendable (UInt64) -> Void)? = nil) throws {
        let (runtime, rtsp, hls, webcams, whep) = state.withLock { ($0.runtime, $0.rtsp, $0.hls, $0.webcams, $0.whep) }
        guard let runtime, let rtsp else { return }
        var config = CameraGraph.Configuration(id: cam.id)
        config.fps = options.fps
        config.overlay = spec.overlay ?? options.overlay
        config.linger = .seconds(options.lingerSeconds)
        config.encoder.latencyObserver = encodeLatency
        if let nominalSize {
            config.nominalWidth = nominalSize.width
            config.nominalHeight = nominalSize.height
        }
        let driver = cam.driver
        let graph = try CameraGraph(configuration: config, hub: cam.hub, runtime: runtime, presence: {
            CameraPresence(state: driver.state.rawValue, reason: OutputSet.reason(driver))
        }, scheduler: EventLoopTickScheduler(loop: OutputSet.graphTicks), logger: logger)
        try rtsp.addCamera(graph)
        try hls?.addCamera(graph)
        whep?.addCamera(graph)
        if cam.index == 0 { for w in webcams { w.show(graph.pictures) } }
        var recorder: Recorder?
        if let dir = options.recordDirectory, spec.record ?? true {
            var rc = Recorder.Configuration(cameraID: cam.id, directory: dir, segmentDuration: .seconds(options.segmentSeconds))
            rc.fps = options.fps
            rc.onSegment = recordingObserver.withLock { $0 }
            let r = Recorder(configuration: rc, runtime: runtime, logger: logger)
            try r.start(hub: cam.hub)
            recorder = r
        }
        var pushes: [PushOutput] = []
        let observer = pushObserver.withLock { $0 }
        let id = cam.id
        for url in spec.push {
            do {
                pushes.append(try PushOutput(camera: graph, url: url, runtime: runtime, logger: logger,
                                             onChange: { status in observer?(id, status) }))
            } catch {
                recorder?.stop()
                graph.stop()
                throw error
            }
        }
        state.withLock { s in
            s.graphs[cam.id] = graph
            if let recorder { s.recorders[cam.id] = recorder }
            if !pushes.isEmpty { s.pushes[cam.id] = pushes }
        }
        for p in pushes { p.start() }
    }

    /// Takes a camera off every output (it was removed from the configuration): its mounts, HLS,
    /// WebRTC sessions and webcams, its graph, and its recording (finished cleanly).
    func detach(_ id: String, index: Int) {
        let (graph, recorder, rtsp, hls, whep, webcams, pushes) = state.withLock { s in
            (s.graphs.removeValue(forKey: id), s.recorders.removeValue(forKey: id), s.rtsp, s.hls, s.whep, s.webcams,
             s.pushes.removeValue(forKey: id) ?? [])
        }
        for p in pushes { p.stop() }
        recorder?.stop()
        rtsp?.removeCamera(id: id)
        hls?.removeCamera(id: id)
        whep?.removeCamera(id: id)
        if index == 0 { for w in webcams { w.show(nil) } }
        graph?.stop()
    }

    /// A short, readable reason for the slate and the API from the driver's last error.
    static func reason(_ driver: any CameraDriver) -> String? {
        if let busy = driver.activity { return busy }
        let state = driver.state
        if state == .streaming { return nil }
        guard let raw = driver.lastError else {
            return state == .connecting ? "waiting for the camera to answer" : nil
        }
        switch NetworkFailure(raw) {
        case .refused: return "connection refused"
        case .timeout: return "the camera does not answer (timeout)"
        case .closed: return "the camera closed the connection"
        case .unreachable: return "camera unreachable"
        case nil: return raw.count > 80 ? String(raw.prefix(77)) + "..." : raw
        }
    }

    /// The graph of a camera.
    func graph(_ id: String) -> CameraGraph? { state.withLock { $0.graphs[id] } }

    /// A player asked for HLS of a camera.
    func hlsRequest(camera: String, playlist: Bool) async -> HLSOutput.Readiness {
        guard let hls = state.withLock({ $0.hls }) else { return .unknownCamera }
        return await hls.request(camera: camera, playlist: playlist)
    }

    /// What runs for a camera right now (the API's camera JSON).
    func branches(camera: String) -> [String: Bool] {
        let (g, hls) = state.withLock { ($0.graphs[camera], $0.hls) }
        guard let g else { return [:] }
        return ["jpeg": g.jpeg.isRunning, "picture": g.pictures.isRunning, "encoder": g.encoded.isRunning,
                "hls": hls?.isRunning(camera: camera) ?? false, "slate": g.showingSlate]
    }

    /// Ends the HLS and WHEP reapers and waits for them (before `stop`, so that none of them stops
    /// a pipeline while or after the outputs and the runtime go down).
    func endReapers() async {
        let (hls, whep) = state.withLock { ($0.hls, $0.whep) }
        await hls?.endReaper()
        await whep?.endReaper()
    }

    /// Stops the RTSP server (its clients are told; the mounts go) and lets go of it: a camera
    /// attached later gets no mounts. Idempotent.
    func stopRTSPServer() {
        state.withLock { s -> RTSPOutput? in
            defer { s.rtsp = nil }
            return s.rtsp
        }?.stop()
    }

    /// Stops HLS and WebRTC: their reapers first, then every session. Idempotent.
    func stopHTTPMedia() async {
        await endReapers()
        let (hls, whep) = state.withLock { ($0.hls, $0.whep) }
        await blocking("http-media-stop") {
            hls?.stop()
            whep?.stop()
        }
    }

    /// Stops everything; recordings are finished (EOS) first.
    func stop() {
        let s = state.withLock { s -> State in
            let old = s
            s = State()
            return old
        }
        for p in s.pushes.values.joined() { p.stop() }
        for r in s.recorders.values { r.stop() }
        for w in s.webcams { w.stop() }
        s.whep?.stop()
        s.hls?.stop()
        s.rtsp?.stop()
        for g in s.graphs.values { g.stop() }
        s.runtime?.shutdown()
        if s.hlsIsTemporary, let root = s.hlsRoot { try? FileManager.default.removeItem(atPath: root) }
    }

    /// A camera's pushes to media servers, as the API shows them.
    func pushes(camera: String) -> [PushOutput.Status] {
        state.withLock { $0.pushes[camera] ?? [] }.map(\.current)
    }

    /// The WHEP output (nil while servers are down or WebRTC is not installed).
    var whep: WHEPOutput? { state.withLock { $0.whep } }

    /// Recording segment files so far, per camera.
    func recordingPaths(camera: String) -> [String] {
        state.withLock { $0.recorders[camera]?.segmentPaths } ?? []
    }

    func writeMetrics(into m: inout MetricsSnapshot, cameras: [CameraRuntime]) {
        let s = state.withLock { $0 }
        var stats: [OutputStats] = []
        stats += s.hls?.stats() ?? []
        stats += s.whep?.stats() ?? []
        for g in s.graphs.values { stats += g.stats() }
        for r in s.recorders.values { stats.append(r.stats()) }
        for p in s.pushes.values.joined() { stats.append(p.stats()) }
        for w in s.webcams { stats.append(w.stats(camera: cameras.first { $0.index == 0 }?.id ?? "")) }
        let series: [(String, String, KeyPath<OutputStats, Int>, String)] = [
            ("livegate_output_frames_in_total", "Frames an output received.", \.framesIn, "counter"),
            ("livegate_output_frames_out_total", "Frames an output pushed into GStreamer.", \.framesOut, "counter"),
            ("livegate_output_reencoded_frames_total", "JPEGs re-encoded because RTP/JPEG cannot carry them.", \.reencoded, "counter"),
            ("livegate_output_clients", "Connected clients of an output.", \.clients, "gauge"),
            ("livegate_output_errors_total", "Errors reported by an output's pipeline.", \.errors, "counter"),
            ("livegate_output_keyframe_requests_total", "Key frames clients asked for (RTCP PLI/FIR).", \.keyframeRequests, "counter"),
        ]
        for (name, help, key, type) in series {
            m.help(name, help, type: type)
            for st in stats {
                m.sample(name, ["camera": st.camera, "output": st.output], Double(st[keyPath: key]))
            }
        }
        // Every frame dropped anywhere, by where and why: a damaged or incomplete frame at ingest, a
        // viewer that was behind (latest wins), a full lossless queue (the recorder).
        m.help("livegate_frames_dropped_total", "Frames dropped, by output (ingest for the camera's side) and reason.", type: "counter")
        for c in cameras {
            // Ingest drops by reason (jpeg-truncated, jpeg-no-scan, jpeg-bad-sof, datagram-lost, …);
            // a camera without any still shows its zero.
            let reasons = c.driver.stats.dropsByReason
            if reasons.isEmpty {
                m.sample("livegate_frames_dropped_total", ["camera": c.id, "output": "ingest", "reason": "damaged"], 0)
            }
            for (reason, n) in reasons.sorted(by: { $0.key < $1.key }) {
                m.sample("livegate_frames_dropped_total", ["camera": c.id, "output": "ingest", "reason": reason], Double(n))
            }
        }
        for st in stats {
            m.sample("livegate_frames_dropped_total", ["camera": st.camera, "output": st.output, "reason": "viewer-behind"], Double(st.dropped))
            if st.overflows > 0 || st.output == "recorder" {
                m.sample("livegate_frames_dropped_total", ["camera": st.camera, "output": st.output, "reason": "queue-full"], Double(st.overflows))
            }
        }
        let graphs = s.graphs.sorted { $0.key < $1.key }
        m.help("livegate_encoders_running", "H.264 encoders running for a camera (0 while nobody watches an encoded output).", type: "gauge")
        for (id, g) in graphs { m.sample("livegate_encoders_running", ["camera": id], Double(g.runningEncoders)) }
        m.help("livegate_branch_running", "1 while a media-graph branch of a camera runs (jpeg, picture, encoder, hls).", type: "gauge")
        for (id, _) in graphs {
            for (branch, on) in branches(camera: id).sorted(by: { $0.key < $1.key }) where branch != "slate" {
                m.sample("livegate_branch_running", ["camera": id, "branch": branch], on ? 1 : 0)
            }
        }
        m.help("livegate_slate_showing", "1 while a camera's outputs show the offline slate.", type: "gauge")
        for (id, g) in graphs { m.sample("livegate_slate_showing", ["camera": id], g.showingSlate ? 1 : 0) }
        m.help("livegate_slate_frames_total", "Offline slate frames published.", type: "counter")
        for (id, g) in graphs { m.sample("livegate_slate_frames_total", ["camera": id], Double(g.slateFrames)) }
        m.help("livegate_output_sessions_starved_total", "Output sessions that got no media for 5 s (each episode once).", type: "counter")
        for (id, g) in graphs { m.sample("livegate_output_sessions_starved_total", ["camera": id], Double(g.starvedSessions)) }
        if let rtsp = s.rtsp {
            let closed = rtsp.closedClients
            m.help("livegate_rtsp_connections_closed_total", "RTSP connections the gateway closed: idle (no session set up in time) or stalled (the client stopped reading).", type: "counter")
            m.sample("livegate_rtsp_connections_closed_total", ["reason": "idle"], Double(closed.idle))
            m.sample("livegate_rtsp_connections_closed_total", ["reason": "stalled"], Double(closed.stalled))
        }
    }
}

/// The network failure a driver's error text describes (NIO's and the drivers' own wordings), so
/// that the slate, the camera JSON and the API's errors can say it in words.
enum NetworkFailure {
    case refused, timeout, closed, unreachable

    init?(_ text: String) {
        let lower = text.lowercased()
        if lower.contains("refused") {
            self = .refused
        } else if lower.contains("timed out") || lower.contains("timeout") {
            self = .timeout
        } else if lower.contains("reset by peer") || lower.contains("eof") || lower.contains("closed") {
            self = .closed
        } else if lower.contains("no route") || lower.contains("unreachable") {
            self = .unreachable
        } else {
            return nil
        }
    }
}
