internal import CGStreamer
internal import CGStreamerShim
public import LiveViewCore
public import Logging
import Synchronization

/// RTSP output (gst-rtsp-server). Per camera id two mounts:
/// * `rtsp://HOST:PORT/<id>` — H.264 (`x264enc tune=zerolatency`, no sliced threads) of the shared
///   annotated stream (one decode per frame, AF overlay when the stream has it on);
/// * `rtsp://HOST:PORT/<id>/raw` — MJPEG passthrough: the camera's own JPEG bytes wrapped zero-copy
///   into GStreamer buffers (`jpegparse ! rtpjpegpay`, no decode). A JPEG that RFC 2435 cannot carry
///   (progressive, 4:4:4, custom Huffman tables, > 2040 px) is re-encoded as baseline 4:2:0 and
///   counted in `reencoded`.
///
/// Factories are shared (N viewers of a mount cost one pipeline); when a viewer sends PLAY the
/// encoder is asked for a key frame, so a late joiner starts at an IDR. Every media's appsrc is kept in a
/// registry from `media-configure` until the media is unprepared; every frame goes to all of them,
/// stamped with the media's running time at the frame's arrival.
public final class RTSPOutput: Sendable {
    /// Server settings.
    public struct Configuration: Sendable {
        /// Address to bind (default loopback; "0.0.0.0" for every interface).
        public var address: String = "127.0.0.1"
        /// TCP port; 0 picks a free one (see `port`).
        public var port: Int = 8554
        /// H.264 bitrate in kbit/s.
        public var bitrateKbps: Int = 4000
        /// x264 threads (1 keeps the lowest latency; frame threads add a frame of delay each).
        public var x264Threads: Int = 1
        /// Seconds between H.264 key frames (the GOP is `fps × keyframeInterval` frames). A viewer that
        /// joins gets a key frame at once anyway (requested on PLAY).
        public var keyframeInterval: Int = 1
        /// JPEG quality of re-encoded `/raw` frames.
        public var reencodeQuality: Int = 85

        /// Defaults, with the given address and port.
        public init(address: String = "127.0.0.1", port: Int = 8554) {
            self.address = address
            self.port = port
        }
    }

    struct ServerHandle: @unchecked Sendable {
        let server: UnsafeMutablePointer<GstRTSPServer>
    }

    let runtime: GStreamerRuntime
    let configuration: Configuration
    private let handle: ServerHandle
    private let sourceID: UInt32
    private let cameras = Mutex<[String: RTSPCamera]>([:])
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger
    /// The bound TCP port.
    public let port: Int

    /// Starts the server on the runtime's main loop. Throws when the port cannot be bound.
    public init(runtime: GStreamerRuntime, configuration: Configuration = .init(),
                logger: Logger = Logger(label: "livegate.rtsp")) throws {
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
        let server = lg_rtsp_server_new(configuration.address, String(configuration.port))!
        lg_rtsp_server_request_key_frames_on_play(server)
        let id = lg_rtsp_server_attach(server, runtime.context)
        guard id != 0 else {
            g_object_unref(UnsafeMutableRawPointer(server))
            throw MediaError("RTSP server cannot listen on \(configuration.address):\(configuration.port)")
        }
        handle = ServerHandle(server: server)
        sourceID = id
        port = Int(lg_rtsp_server_bound_port(server))
        logger.info("RTSP server listening", metadata: ["address": "\(configuration.address)", "port": "\(port)"])
    }

    deinit { stop() }

    /// The URL of a camera's mount (`raw: true` for the MJPEG passthrough).
    public func url(for id: String, raw: Bool = false, host: String? = nil) -> String {
        let h = host ?? (configuration.address == "0.0.0.0" ? "127.0.0.1" : configuration.address)
        return "rtsp://\(h):\(port)/\(id)" + (raw ? "/raw" : "")
    }

    /// Mounts `/<id>` (H.264 from `annotate`) and `/<id>/raw` (passthrough of `hub`'s JPEGs).
    /// `fps` is the nominal rate written into the caps and the H.264 GOP length (one key frame a second).
    public func addCamera(id: String, hub: FrameHub, annotate: AnnotatedStream, fps: Int = 30) throws {
        precondition(!id.isEmpty && !id.contains("/"), "camera id must be one path segment")
        let fps = max(1, fps)
        let h264 = try PipelineTemplates.render(PipelineTemplates.rtspH264, [
            "fps": "\(fps)", "keyint": "\(fps * max(1, configuration.keyframeInterval))",
            "threads": "\(max(1, configuration.x264Threads))", "bitrate": "\(configuration.bitrateKbps)",
        ])
        let raw = try PipelineTemplates.render(PipelineTemplates.rtspRaw, ["fps": "\(fps)"])
        let camera = try RTSPCamera(id: id, fps: fps, hub: hub, annotate: annotate,
                                    reencodeQuality: configuration.reencodeQuality, logger: logger)
        let existing = cameras.withLock { c -> Bool in
            if c[id] != nil { return true }
            c[id] = camera
            return false
        }
        guard !existing else {
            camera.shutdown()
            throw MediaError("camera \(id) is already mounted")
        }
        for (path, launch, kind) in [("/\(id)", h264, RTSPCamera.Kind.h264), ("/\(id)/raw", raw, RTSPCamera.Kind.raw)] {
            let ctx = Unmanaged.passRetained(FactoryContext(camera: camera, kind: kind)).toOpaque()
            _ = lg_rtsp_mount(handle.server, path, launch, { _, media, user in
                guard let media, let user else { return }
                Unmanaged<FactoryContext>.fromOpaque(user).takeUnretainedValue().configure(media)
            }, ctx, { user, _ in
                if let user { Unmanaged<FactoryContext>.fromOpaque(user).release() }
            })
        }
        camera.start()
        logger.info("RTSP camera mounted", metadata: ["camera": "\(id)", "h264": "\(url(for: id))", "raw": "\(url(for: id, raw: true))"])
    }

    /// Unmounts a camera (clients already playing keep their media until they leave).
    public func removeCamera(id: String) {
        guard let camera = cameras.withLock({ $0.removeValue(forKey: id) }) else { return }
        lg_rtsp_unmount(handle.server, "/\(id)")
        lg_rtsp_unmount(handle.server, "/\(id)/raw")
        camera.shutdown()
    }

    /// Closes every client, unmounts every camera and stops listening. Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for id in cameras.withLock({ Array($0.keys) }) { removeCamera(id: id) }
        lg_rtsp_server_close_clients(handle.server)
        lg_source_remove_by_id(runtime.context, sourceID)
        g_object_unref(UnsafeMutableRawPointer(handle.server))
    }

    /// Connected RTSP clients (all mounts).
    public var clientCount: Int { stopped.load(ordering: .relaxed) ? 0 : Int(lg_rtsp_server_client_count(handle.server)) }

    /// Two entries per camera: "rtsp-h264" and "rtsp-raw" (clients = live medias of the mount).
    public func stats() -> [OutputStats] {
        cameras.withLock { Array($0.values) }.flatMap { $0.stats() }.sorted { ($0.camera, $0.output) < ($1.camera, $1.output) }
    }
}

/// The user data of one factory's `media-configure` handler.
final class FactoryContext: @unchecked Sendable {
    let camera: RTSPCamera
    let kind: RTSPCamera.Kind
    init(camera: RTSPCamera, kind: RTSPCamera.Kind) {
        self.camera = camera
        self.kind = kind
    }

    /// Runs on the main loop thread when a media is created for this mount.
    func configure(_ media: UnsafeMutablePointer<GstRTSPMedia>) {
        guard let src = lg_rtsp_media_get_by_name(media, "src") else {
            camera.logger.error("RTSP media without appsrc 'src'", metadata: ["camera": "\(camera.id)"])
            return
        }
        let owner = UInt(bitPattern: media)
        camera.add(AppSource(element: src, owner: owner), kind: kind)
        let ctx = Unmanaged.passRetained(UnpreparedContext(camera: camera, kind: kind, owner: owner)).toOpaque()
        lg_rtsp_media_on_unprepared(media, { _, user in
            guard let user else { return }
            let c = Unmanaged<UnpreparedContext>.fromOpaque(user).takeUnretainedValue()
            c.camera.remove(owner: c.owner, kind: c.kind)
        }, ctx, { user, _ in
            if let user { Unmanaged<UnpreparedContext>.fromOpaque(user).release() }
        })
    }
}

final class UnpreparedContext: @unchecked Sendable {
    let camera: RTSPCamera
    let kind: RTSPCamera.Kind
    let owner: UInt
    init(camera: RTSPCamera, kind: RTSPCamera.Kind, owner: UInt) {
        self.camera = camera
        self.kind = kind
        self.owner = owner
    }
}

/// One camera's two mounts: the registry of live appsrcs and the threads feeding them.
final class RTSPCamera: Sendable {
    enum Kind: Sendable { case h264, raw }

    let id: String
    let fps: Int
    let logger: Logger
    private let hub: FrameHub
    private let annotate: AnnotatedStream
    private let h264Sinks = SinkList()
    private let rawSinks = SinkList()
    private let subscription = Mutex<AnnotatedStream.Subscription?>(nil)
    private let rawPacer: FramePacer
    private let rawWorker: FrameWorker
    let counters = RTSPCounters()

    final class RTSPCounters: Sendable {
        let h264In = Atomic<Int>(0)
        let h264Out = Atomic<Int>(0)
        let rawOut = Atomic<Int>(0)
        let reencoded = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let notReady = Atomic<Int>(0)
    }

    init(id: String, fps: Int, hub: FrameHub, annotate: AnnotatedStream, reencodeQuality: Int, logger: Logger) throws {
        self.id = id
        self.fps = fps
        self.hub = hub
        self.annotate = annotate
        self.logger = logger
        let sinks = rawSinks
        let counters = counters
        let reencoder = try Reencoder(quality: reencodeQuality)
        let log = logger
        rawWorker = FrameWorker(name: "rtsp-raw-\(id)") { frame in
            let targets = sinks.current()
            guard !targets.isEmpty else { return }
            var send = frame
            var scratch: Frame?
            let compat = JPEGInspector.rtpCompatibility(of: frame.bytes)
            if compat != .compatible {
                do {
                    let f = try reencoder.reencode(frame)
                    scratch = f
                    send = f
                    counters.reencoded.wrappingAdd(1, ordering: .relaxed)
                } catch {
                    if counters.errors.wrappingAdd(1, ordering: .relaxed).newValue % 100 == 1 {
                        log.warning("cannot re-encode JPEG for RTP", metadata: ["camera": "\(id)", "reason": "\(compat)", "error": "\(error)"])
                    }
                    return
                }
            }
            for s in targets {
                guard let pts = s.runningTime(arrivalNanos: frame.arrivalNanos) else {
                    counters.notReady.wrappingAdd(1, ordering: .relaxed)
                    continue
                }
                if s.push(frame: send, pts: pts, duration: nil) { counters.rawOut.wrappingAdd(1, ordering: .relaxed) }
            }
            scratch?.release()
        }
        let w = rawWorker
        rawPacer = FramePacer(name: "rtsp-raw-\(id)") { frame, completion in w.deliver(frame, completion) }
    }

    func start() {
        rawWorker.start()
        hub.attach(rawPacer)
    }

    func shutdown() {
        hub.detach(rawPacer)
        rawWorker.stop()
        if let s = subscription.withLock({ v -> AnnotatedStream.Subscription? in let o = v; v = nil; return o }) {
            annotate.unsubscribe(s)
        }
        h264Sinks.removeAll()
        rawSinks.removeAll()
    }

    func add(_ source: AppSource, kind: Kind) {
        switch kind {
        case .raw:
            rawSinks.add(source)
        case .h264:
            h264Sinks.add(source)
            subscribeIfNeeded()
        }
        logger.debug("RTSP media configured", metadata: ["camera": "\(id)", "kind": "\(kind)"])
    }

    func remove(owner: UInt, kind: Kind) {
        switch kind {
        case .raw:
            _ = rawSinks.remove(owner: owner)
        case .h264:
            let empty = h264Sinks.remove(owner: owner)
            if empty, let s = subscription.withLock({ v -> AnnotatedStream.Subscription? in let o = v; v = nil; return o }) {
                annotate.unsubscribe(s)
            }
        }
        logger.debug("RTSP media unprepared", metadata: ["camera": "\(id)", "kind": "\(kind)"])
    }

    /// The H.264 mounts take decoded pictures only while some media is live (no decode otherwise).
    private func subscribeIfNeeded() {
        let sinks = h264Sinks
        let counters = counters
        let fps = fps
        let duration = UInt64(1_000_000_000 / fps)
        subscription.withLock { sub in
            guard sub == nil else { return }
            sub = annotate.subscribe { pic in
                counters.h264In.wrappingAdd(1, ordering: .relaxed)
                for s in sinks.current() {
                    s.ensureRawCaps(width: pic.width, height: pic.height, fps: fps)
                    guard let pts = s.runningTime(arrivalNanos: pic.arrivalNanos) else {
                        counters.notReady.wrappingAdd(1, ordering: .relaxed)
                        continue
                    }
                    if s.push(picture: pic, pts: pts, duration: duration) { counters.h264Out.wrappingAdd(1, ordering: .relaxed) }
                }
            }
        }
    }

    func stats() -> [OutputStats] {
        var h = OutputStats(output: "rtsp-h264", camera: id)
        h.framesIn = counters.h264In.load(ordering: .relaxed)
        h.framesOut = counters.h264Out.load(ordering: .relaxed)
        h.clients = h264Sinks.count
        var r = OutputStats(output: "rtsp-raw", camera: id)
        r.framesIn = rawPacer.delivered
        r.framesOut = counters.rawOut.load(ordering: .relaxed)
        r.dropped = rawPacer.replaced
        r.reencoded = counters.reencoded.load(ordering: .relaxed)
        r.errors = counters.errors.load(ordering: .relaxed)
        r.clients = rawSinks.count
        return [h, r]
    }
}

/// Decode + baseline 4:2:0 re-encode for JPEGs RTP/JPEG cannot carry (used on one thread only).
final class Reencoder: @unchecked Sendable {
    private let decoder: JPEGDecoder
    private let encoder: JPEGEncoder
    private let picture = I420Picture(width: 16, height: 16)
    private let pool = FramePool(capacity: 4, frameBytes: 256 * 1024)

    init(quality: Int) throws {
        decoder = try JPEGDecoder()
        encoder = try JPEGEncoder(quality: quality)
    }

    /// A new frame (one owner for the caller) with the re-encoded JPEG and the source's metadata.
    func reencode(_ frame: Frame) throws -> Frame {
        try decoder.decode(frame.bytes, into: picture)
        let out = pool.take()
        do {
            try encoder.encode(picture, into: out)
        } catch {
            out.release()
            throw error
        }
        out.arrivalNanos = frame.arrivalNanos
        out.sequence = frame.sequence
        out.cameraPTS = frame.cameraPTS
        out.timeBase = frame.timeBase
        return out
    }
}

/// The live appsrcs of one mount.
final class SinkList: Sendable {
    private let list = Mutex<[AppSource]>([])
    func add(_ s: AppSource) { list.withLock { $0.append(s) } }
    /// Removes the sources of `owner`; returns true when the list is now empty.
    func remove(owner: UInt) -> Bool {
        list.withLock { l in
            l.removeAll { $0.owner == owner }
            return l.isEmpty
        }
    }
    func removeAll() { list.withLock { $0.removeAll() } }
    func current() -> [AppSource] { list.withLock { $0 } }
    var count: Int { list.withLock { $0.count } }
}
