import JPEGKit
import Foundation
internal import CGStreamer
internal import CGStreamerShim
import LiveViewCore
public import Logging

/// RTSP output (gst-rtsp-server). Per camera two mounts, both fed by the camera's media graph:
/// * `rtsp://HOST:PORT/<id>` — H.264 from the camera's one shared encoder (`CameraGraph.encoded`);
/// * `rtsp://HOST:PORT/<id>/raw` — the camera's own JPEG bytes (`CameraGraph.jpeg`), RTP/JPEG.
///
/// Each mount has ONE media shared by all its clients (`appsrc ! payloader`): a frame is payloaded
/// once, and a further client costs only its packets' sending. A media registers its appsrc with
/// the graph on `media-configure` and leaves on `unprepared` (after its last client); the graph's
/// branches start with their first consumer and stop a linger after the last. A client joining the
/// H.264 media still starts at a key frame with SPS/PPS and a PTS: while its PLAY adds it to the
/// media the stream is held, then resumes at a key frame forced for it (rate-limited; the others see
/// a pause of a frame or two). RTP/JPEG frames are all key frames, so a raw client starts at the
/// next frame. Nothing here waits for a camera: an absent camera's graph shows its slate, and the
/// server serves clients on several threads, so one slow request never holds up another.
public final class RTSPOutput: Sendable {
    /// Server settings.
    public struct Configuration: Sendable {
        /// Address to bind (default loopback; "0.0.0.0" for every interface).
        public var address: String = "127.0.0.1"
        /// TCP port; 0 picks a free one (see `port`).
        public var port: Int = 8554
        /// Clients served in parallel threads.
        public var maxThreads: Int = 16
        /// When set, every mount needs this user and password (RTSP Basic or Digest).
        public var credentials: (user: String, password: String)?
        /// A connection that has set up no session for this long is closed (zero: never).
        public var idleTimeout: Duration = .seconds(30)
        /// A client that has acknowledged no byte for this long while data waits for it (it stopped
        /// reading) is closed (zero: never).
        public var stallTimeout: Duration = .seconds(10)
        /// Largest RTP packet of the raw mounts (`rtpjpegpay`'s `mtu`), 400…65 000 bytes. Nil: by
        /// the address, see `packetSize(listeningOn:)`. The H.264 mounts keep GStreamer's 1 400:
        /// larger packets made them dearer (1.65 → 1.84 ms/frame with one client, same-window A/B).
        public var rawPacketSize: Int?

        /// Defaults, with the given address and port.
        public init(address: String = "127.0.0.1", port: Int = 8554) {
            self.address = address
            self.port = port
        }

        /// The raw mounts' packet size in force: the one set, else `packetSize(listeningOn: address)`.
        public var effectiveRawPacketSize: Int { rawPacketSize ?? Self.packetSize(listeningOn: address) }

        /// While the server listens on loopback only, every client is on this machine, whose
        /// loopback carries 64 KiB packets: a camera frame then leaves as one RTP packet (60 000
        /// bytes) instead of ~30, which saves most of the per-packet work of the payloader, the
        /// RTP session and the send (0.467 → 0.394 ms/frame with one raw client, same-window A/B).
        /// Elsewhere packets stay at 1 400 bytes, inside an Ethernet or Wi-Fi MTU: UDP clients then
        /// get no IP fragments, which routers and firewalls may drop.
        /// (Linux only: other systems cap UDP datagrams lower, e.g. 9 216 bytes by default on macOS.)
        public static func packetSize(listeningOn address: String) -> Int {
            #if os(Linux)
            let a = address.lowercased()
            let loopback = a == "localhost" || a == "::1" || a.hasPrefix("127.")
            return loopback ? 60_000 : 1_400
            #else
            return 1_400
            #endif
        }
    }

    /// Unchecked because it holds a C pointer; gst-rtsp-server's objects are thread-safe.
    struct ServerHandle: @unchecked Sendable {
        let server: UnsafeMutablePointer<GstRTSPServer>
    }

    let runtime: GStreamerRuntime
    let configuration: Configuration
    private let handle: ServerHandle
    private let sourceID: UInt32
    private let cameras = Mutex<[String: CameraGraph]>([:])
    private let joins = SharedMediaJoins()
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger
    private let watchdog: RTSPClientWatchdog
    /// The bound TCP port.
    public let port: Int

    /// Starts the server on the runtime's main loop. Throws when the port cannot be bound.
    public init(runtime: GStreamerRuntime, configuration: Configuration = .init(),
                logger: Logger = Logger(label: "livegate.rtsp")) throws {
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
        let server = lg_rtsp_server_new(configuration.address, String(configuration.port))!
        if let c = configuration.credentials { lg_rtsp_server_require_credentials(server, c.user, c.password) }
        lg_rtsp_server_set_max_threads(server, gint(max(1, configuration.maxThreads)))
        let id = lg_rtsp_server_attach(server, runtime.context)
        guard id != 0 else {
            g_object_unref(UnsafeMutableRawPointer(server))
            throw MediaError("RTSP server cannot listen on \(configuration.address):\(configuration.port)")
        }
        handle = ServerHandle(server: server)
        // Every client's PLAY: hold the shared H.264 stream while the client joins, then resume it
        // at a key frame forced for the newcomer.
        let joinsHook = Unmanaged.passRetained(joins).toOpaque()  // released in stop()
        lg_rtsp_server_on_play(server, { media, joined, user in
            guard let media, let user else { return }
            Unmanaged<SharedMediaJoins>.fromOpaque(user).takeUnretainedValue().play(media: media, joined: joined != 0)
        }, joinsHook)
        sourceID = id
        watchdog = RTSPClientWatchdog(server: handle, limits: .init(idleTimeout: configuration.idleTimeout,
                                                                     stallTimeout: configuration.stallTimeout),
                                      logger: logger)
        watchdog.start(on: runtime.context)
        port = Int(lg_rtsp_server_bound_port(server))
        logger.info("RTSP server listening", metadata: ["address": "\(configuration.address)", "port": "\(port)"])
    }

    deinit { stop() }

    /// The URL of a camera's mount (`raw: true` for the MJPEG passthrough).
    public func url(for id: String, raw: Bool = false, host: String? = nil) -> String {
        let h = host ?? (configuration.address == "0.0.0.0" ? "127.0.0.1" : configuration.address)
        return "rtsp://\(h):\(port)/\(id)" + (raw ? "/raw" : "")
    }

    /// Mounts `/<id>` (H.264) and `/<id>/raw` (JPEG passthrough) for a camera's graph.
    public func addCamera(_ graph: CameraGraph) throws {
        guard !stopped.load(ordering: .acquiring) else { throw MediaError("the RTSP server is stopped") }
        let id = graph.configuration.id
        precondition(!id.isEmpty && !id.contains("/"), "camera id must be one path segment")
        let h264 = try PipelineTemplates.render(PipelineTemplates.rtspH264, [:])
        let raw = try PipelineTemplates.render(PipelineTemplates.rtspRaw, ["fps": "\(max(1, graph.configuration.fps))",
                                                                          "mtu": "\(configuration.effectiveRawPacketSize)"])
        let existing = cameras.withLock { c -> Bool in
            if c[id] != nil { return true }
            c[id] = graph
            return false
        }
        guard !existing else { throw MediaError("camera \(id) is already mounted") }
        for (path, launch, kind) in [("/\(id)", h264, MountKind.h264), ("/\(id)/raw", raw, MountKind.raw)] {
            let ctx = Unmanaged.passRetained(FactoryContext(graph: graph, kind: kind, joins: joins, logger: logger)).toOpaque()
            _ = lg_rtsp_mount(handle.server, path, launch, 1, { _, media, user in
                guard let media, let user else { return }
                Unmanaged<FactoryContext>.fromOpaque(user).takeUnretainedValue().configure(media)
            }, ctx, { user, _ in
                if let user { Unmanaged<FactoryContext>.fromOpaque(user).release() }
            })
        }
        logger.info("RTSP camera mounted", metadata: ["camera": "\(id)", "h264": "\(url(for: id))", "raw": "\(url(for: id, raw: true))"])
    }

    /// Unmounts a camera (clients already playing keep their media until they leave).
    public func removeCamera(id: String) {
        guard cameras.withLock({ $0.removeValue(forKey: id) }) != nil else { return }
        lg_rtsp_unmount(handle.server, "/\(id)")
        lg_rtsp_unmount(handle.server, "/\(id)/raw")
    }

    /// Closes every client, unmounts every camera and stops listening. Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        watchdog.stop(on: runtime.context)
        for id in cameras.withLock({ Array($0.keys) }) { removeCamera(id: id) }
        lg_rtsp_server_close_clients(handle.server)
        lg_source_remove_by_id(runtime.context, sourceID)
        g_object_unref(UnsafeMutableRawPointer(handle.server))
        Unmanaged.passUnretained(joins).release()  // the play hook's reference
    }

    /// Connections closed because they set up nothing (`idle`) or stopped reading (`stalled`).
    public var closedClients: (idle: Int, stalled: Int) {
        (watchdog.closedIdle.load(ordering: .relaxed), watchdog.closedStalled.load(ordering: .relaxed))
    }

    /// Connected RTSP clients (all mounts).
    public var clientCount: Int { stopped.load(ordering: .relaxed) ? 0 : Int(lg_rtsp_server_client_count(handle.server)) }
}

enum MountKind: Sendable { case h264, raw }

/// The user data of one factory's `media-configure` handler.
final class FactoryContext: Sendable {
    let graph: CameraGraph
    let kind: MountKind
    let joins: SharedMediaJoins
    let logger: Logger
    init(graph: CameraGraph, kind: MountKind, joins: SharedMediaJoins, logger: Logger) {
        self.graph = graph
        self.kind = kind
        self.joins = joins
        self.logger = logger
    }

    /// Runs on a server thread when the mount's shared media is created (by its first client).
    func configure(_ media: UnsafeMutablePointer<GstRTSPMedia>) {
        let id = graph.configuration.id
        guard let src = lg_rtsp_media_get_by_name(media, "src") else {
            logger.error("RTSP media without appsrc 'src'", metadata: ["camera": "\(id)"])
            return
        }
        lg_rtsp_media_send_at_once(media)
        let owner = UInt(bitPattern: media)
        let source = AppSource(element: src, owner: owner)
        let leave: @Sendable () -> Void
        switch kind {
        case .raw:
            graph.jpeg.add(source)
            let jpeg = graph.jpeg
            leave = { jpeg.remove(owner: owner) }
        case .h264:
            let consumer = graph.encoded.addConsumer(kind: .stream, source: source)
            let encoded = graph.encoded
            joins.register(owner, branch: encoded, consumer: consumer)
            let joins = self.joins
            leave = {
                joins.unregister(owner)
                encoded.removeConsumer(consumer)
            }
        }
        logger.debug("RTSP media configured", metadata: ["camera": "\(id)", "kind": "\(kind)"])
        let ctx = Unmanaged.passRetained(UnpreparedContext(leave)).toOpaque()
        lg_rtsp_media_on_unprepared(media, { _, user in
            guard let user else { return }
            Unmanaged<UnpreparedContext>.fromOpaque(user).takeUnretainedValue().run()
        }, ctx, { user, _ in
            if let user { Unmanaged<UnpreparedContext>.fromOpaque(user).release() }
        })
    }
}

/// The shared H.264 medias and their consumers of the encoded branch, for the PLAY hooks.
final class SharedMediaJoins: Sendable {
    /// How long a joining client's PLAY waits, with the stream held, before it joins the media.
    static let drainSeconds = 0.05

    private struct Entry {
        let branch: EncodedBranch
        let consumer: EncodedBranch.Consumer
        /// False until the media's first PLAY is done: the first client starts at the key frame
        /// the media was prepared with, nothing to hold or force.
        var played = false
    }
    private let medias = Mutex<[UInt: Entry]>([:])

    func register(_ media: UInt, branch: EncodedBranch, consumer: EncodedBranch.Consumer) {
        medias.withLock { $0[media] = Entry(branch: branch, consumer: consumer) }
    }

    func unregister(_ media: UInt) { _ = medias.withLock { $0.removeValue(forKey: media) } }

    /// A client's PLAY on `media` starts (`joined` false) or is done (true); other medias are ignored.
    func play(media: UnsafeMutablePointer<GstRTSPMedia>, joined: Bool) {
        let key = UInt(bitPattern: media)
        let found = medias.withLock { m -> (Entry, Bool)? in
            guard var e = m[key] else { return nil }
            let first = !e.played
            if joined && first {
                e.played = true
                m[key] = e
            }
            return (e, first)
        }
        guard let (entry, first) = found, !first else { return }
        if joined {
            entry.branch.joined(entry.consumer)
        } else {
            // Hold, and let what is already on its way through the media go out before the newcomer
            // is added (measured: without this wait a newcomer sometimes got a P-frame first).
            entry.branch.holdForJoin(entry.consumer)
            Thread.sleep(forTimeInterval: Self.drainSeconds)
        }
    }
}

/// What to do once when a media is unprepared (its last session ended).
final class UnpreparedContext: Sendable {
    private let action: Mutex<(@Sendable () -> Void)?>
    init(_ action: @escaping @Sendable () -> Void) { self.action = Mutex(action) }
    func run() { action.withLock { a in let o = a; a = nil; return o }?() }
}

/// Decode + baseline 4:2:0 re-encode for JPEGs RTP/JPEG cannot carry (used on one thread only).
final class Reencoder: Sendable {
    private struct Codec {
        let decoder: JPEGDecoder
        let encoder: JPEGEncoder
    }
    private let codec: Mutex<Codec>
    private let picture = I420Picture(width: 16, height: 16)
    private let pool = FramePool(capacity: 4, frameBytes: 256 * 1024)

    init(quality: Int) throws {
        codec = Mutex(Codec(decoder: try JPEGDecoder(), encoder: try JPEGEncoder(quality: quality)))
    }

    /// A new frame (one owner for the caller) with the re-encoded JPEG and the source's metadata.
    func reencode(_ frame: Frame) throws -> Frame {
        let out = pool.take()
        do {
            try codec.withLock { c in
                try c.decoder.decode(frame.bytes, into: picture)
                try c.encoder.encode(picture, into: out)
            }
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
    /// Removes the sources of `owner`; returns how many there were.
    func remove(owner: UInt) -> Int {
        list.withLock { l in
            let before = l.count
            l.removeAll { $0.owner == owner }
            return before - l.count
        }
    }
    func removeAll() { list.withLock { $0.removeAll() } }
    func current() -> [AppSource] { list.withLock { $0 } }
    var count: Int { list.withLock { $0.count } }
}
