public import CameraWire
import Foundation
import LiveViewCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// An Olympus / OM System body (OI.Share dialect, olympus.md §7) on loopback: the `*.cgi` control
/// channel over HTTP (User-Agent and Host checks, play/rec/shutter mode, properties with their
/// enums, touch-AF) and the RTP live view — test-pattern JPEGs cut into 1400-byte packets with
/// the metadata extension on each frame's first packet (TLVs 1 2 3 4 5 8 9 10 12 16 17 18 and
/// faces), sent at `fps` to the HTTP client's address at the port `startliveview` names. The RTP
/// timestamp is the frame number (from 0 per live-view session).
///
/// Faults: `.dropEveryNthDatagram(n)` (every n-th RTP packet is not sent, its sequence number is
/// used up), `.stall(seconds:)` (no packets, control channel unaffected), `.disconnect` (live view
/// ends and every HTTP connection closes; the camera keeps listening). `stop()` then `start()`
/// (or a new emulator on the same port) is a camera switched off and on: it comes back in play
/// mode without live view.
public final class OlympusEmulator: CameraEmulator, Sendable {
    public let vendor = "olympus"

    public struct Configuration: Sendable {
        public var fps: Double = 30
        public var model = "E-M10 Mark IV"
        /// What `get_connectmode.cgi` answers (`private` for OI.Share bodies — UNCONFIRMED; `OPC` for the Air).
        public var connectMode = "private"
        /// Refuse (403) agents other than `OI.Share*` / `OlympusCameraKit*`.
        public var checkUserAgent = true
        /// JPEG bytes per RTP packet.
        public var chunk = OlympusRTPPacketizer.defaultChunk
        /// Sequence number of the first packet of each live-view session (tests start near the wrap).
        public var firstSequence: UInt16 = 0
        /// Frames kept in `sentFrames` (0 keeps none).
        public var sentFrameHistory = 150
        /// EXIF orientation sent in TLV 4.
        public var orientation: UInt32 = 1
        /// TLV 17 focus system (0 S-AF, 1 C-AF, 2 MF).
        public var focusSystem: UInt16 = 0
        /// Faces sent in TLVs 108… (live-view pixels).
        public var faces: [OlympusRTP.Face] = []
        /// Prompt, or moody like a real body (503 busy while a mode switch settles, a busy set now
        /// and then).
        public var mood: EmulatorMood = .prompt
        public init() {}
    }

    /// One frame as the emulator sent it.
    public struct SentFrame: Sendable {
        /// RTP timestamp (the frame number).
        public var frameNumber: UInt32
        public var firstSequence: UInt16
        public var jpeg: [UInt8]
        public var metadata: OlympusRTP.Metadata
        public var packets: Int
        /// Indices of its packets the fault dropped.
        public var droppedPackets: [Int]
        public var damaged: Bool { !droppedPackets.isEmpty }
    }

    public let configuration: Configuration
    public let source: any EmulatorFrameSource
    /// Live-view picture size (the coordinate space of AF and touch).
    public let width: Int
    public let height: Int
    private let group: any EventLoopGroup
    private let host: String
    private let requestedPort: Int
    private let logger: Logger

    private struct Runtime {
        var http: (any Channel)?
        var udp: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var generation = 0
        var boundPort = 0
    }

    private struct Stream {
        var target: SocketAddress?
        var packetizer = OlympusRTPPacketizer(ssrc: 0)
        var frameNumber: UInt32 = 0
        var sourceIndex = 0
        var dropEvery = 0
        var stallUntil: UInt64 = 0
        var datagramIndex = 0
        var framesSent = 0
        var datagramsSent = 0
        var datagramsDropped = 0
        var sessions = 0
        var log: [SentFrame] = []
    }

    private let state: Mutex<OlympusEmulatorState>
    private let runtime = Mutex(Runtime())
    private let stream = Mutex(Stream())

    /// `port` is the HTTP port (0 = any free one; a restart keeps the port it got first).
    public init(host: String = "127.0.0.1", port: Int = 0, configuration: Configuration = Configuration(),
                source: any EmulatorFrameSource, width: Int = 640, height: Int = 480, group: any EventLoopGroup,
                logger: Logger = Logger(label: "livegate.emulator.olympus")) {
        let size = (source as? TestPatternSource).map { ($0.width, $0.height) } ?? (width, height)
        self.host = host
        self.requestedPort = port
        self.configuration = configuration
        self.source = source
        self.width = size.0
        self.height = size.1
        self.group = group
        self.logger = logger
        var state = OlympusEmulatorState(model: configuration.model, connectMode: configuration.connectMode,
                                         width: size.0, height: size.1)
        state.mood = configuration.mood
        self.state = Mutex(state)
    }

    /// Convenience: the test pattern at VGA (the OI.Share default live-view size).
    public convenience init(host: String = "127.0.0.1", port: Int = 0, configuration: Configuration = Configuration(),
                            group: any EventLoopGroup) throws {
        self.init(host: host, port: port, configuration: configuration,
                  source: try TestPatternSource(width: 640, height: 480), group: group)
    }

    // MARK: Lifecycle

    @discardableResult
    public func start() async throws -> Int {
        let emulator = self
        let port = runtime.withLock { $0.boundPort != 0 ? $0.boundPort : requestedPort }
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .bind(host: host, port: 0).get()
        let http: any Channel
        do {
            http = try await EmulatorHTTPServer.bind(
                group: group, host: host, port: port, onConnection: { emulator.addConnection($0) }
            ) { OlympusEmulatorHTTPHandler(emulator: emulator) }
        } catch {
            try? await udp.close()
            throw error
        }
        let bound = http.localAddress?.port ?? port
        let generation = runtime.withLock { r -> Int in
            r.http = http
            r.udp = udp
            r.boundPort = bound
            r.generation += 1
            return r.generation
        }
        startTimer(on: udp.eventLoop, generation: generation)
        return bound
    }

    public func stop() async {
        let r = runtime.withLock { r -> Runtime in
            let old = r
            r.http = nil
            r.udp = nil
            r.connections = [:]
            r.generation += 1
            return old
        }
        stream.withLock { $0.target = nil }
        state.withLock {
            // Switched off: it comes back in play mode without live view or touch point.
            $0.mode = "play"
            $0.liveView = false
            $0.touchFrame = nil
        }
        for ch in r.connections.values { ch.close(promise: nil) }
        try? await r.http?.close()
        try? await r.udp?.close()
    }

    /// The bound HTTP port (0 before `start`).
    public var port: Int { runtime.withLock { $0.boundPort } }
    /// For `livegate run --camera`: the emulator's HTTP port, any free local UDP port.
    public var cameraURL: String { "olympus://\(host):\(port)?lvport=0" }

    public func inject(_ fault: EmulatorFault) {
        switch fault {
        case .dropEveryNthDatagram(let n):
            stream.withLock { $0.dropEvery = max(0, n) }
        case .stall(let seconds):
            stream.withLock { $0.stallUntil = MonotonicClock.nanos() + UInt64(max(0, seconds) * 1e9) }
        case .disconnect:
            stream.withLock { $0.target = nil }
            state.withLock { $0.liveView = false }
            let all = runtime.withLock { r -> [any Channel] in
                let a = Array(r.connections.values)
                r.connections.removeAll()
                return a
            }
            for ch in all { ch.close(promise: nil) }
        case .none:
            stream.withLock {
                $0.dropEvery = 0
                $0.stallUntil = 0
            }
        }
    }

    // MARK: Observation

    public var framesSent: Int { stream.withLock { $0.framesSent } }
    public var datagramsSent: Int { stream.withLock { $0.datagramsSent } }
    public var datagramsDropped: Int { stream.withLock { $0.datagramsDropped } }
    /// Live-view sessions started (`startliveview` accepted).
    public var liveViewSessions: Int { stream.withLock { $0.sessions } }
    /// The last `sentFrameHistory` frames sent.
    public var sentFrames: [SentFrame] { stream.withLock { $0.log } }
    /// True while RTP packets are being sent.
    public var isStreaming: Bool { stream.withLock { $0.target != nil } }
    /// Every HTTP request so far (kept across restarts).
    public var requests: [OlympusEmulatorRequest] { state.withLock { $0.requests } }
    /// Requests to one CGI (`"get_caminfo"` or `"/get_caminfo.cgi"`).
    public func requests(_ cgi: String) -> [OlympusEmulatorRequest] {
        let path = cgi.hasPrefix("/") ? cgi : "/\(cgi).cgi"
        return requests.filter { $0.path == path }
    }
    /// Every `set_camprop.cgi` POST received, accepted or not.
    public var setCamprops: [OlympusSetCampropRecord] { state.withLock { $0.setCamprops } }
    /// Points of every `assignafframe` (live-view pixels).
    public var touchPoints: [(x: Int, y: Int)] { state.withLock { $0.touchPoints } }
    /// The current touch-AF frame (top-left, side), nil after `releaseafframe`.
    public var touchFrame: (x: Int, y: Int, size: Int)? { state.withLock { $0.touchFrame } }
    /// `play`, `rec` or `shutter`.
    public var cameraMode: String { state.withLock { $0.mode } }
    /// The last `lvqty` received.
    public var liveViewQuality: String { state.withLock { $0.lvqty } }
    /// A property's current value as the camera spells it.
    public func propertyValue(_ name: String) -> String? { state.withLock { $0.value(of: name) } }

    // MARK: Requests

    /// Renders a still (the test pattern at frame 1 000 000 + shot number) and writes it to the card.
    @discardableResult
    func shoot() -> String {
        let n = state.withLock { $0.card.count } + 1
        let jpeg = source.frame(index: 1_000_000 + n).jpeg
        return state.withLock { $0.addShot(jpeg, at: Date()) }
    }

    /// A picture taken with the shutter button on the body; returns its name.
    @discardableResult
    public func shootOnBody() -> String { shoot() }
    /// The bytes of a file on the card (`/DCIM/100OLYMP/NAME`).
    public func cardFile(_ name: String) -> [UInt8]? { state.withLock { s in s.card.first { $0.name == name }?.bytes } }
    /// The card's file names, oldest first.
    public var cardNames: [String] { state.withLock { $0.card.map(\.name) } }
    /// The preview `get_thumbnail.cgi` gives for a card file.
    public func thumbnail(_ name: String) -> [UInt8]? { state.withLock { $0.thumbnail(name) } }
    /// Refuses shots with HTTP 520 and `reason` (nil: accept them again).
    public func refuseShots(_ reason: String?) { state.withLock { $0.refuseShots = reason } }

    /// Answers one request and carries out its effects.
    func handle(method: String, uri: String, headers: HTTPHeaders, body: String, clientIP: String) -> OlympusEmulatorState.Reply {
        let check = configuration.checkUserAgent
        let reply = state.withLock {
            $0.handle(method: method, uri: uri, userAgent: headers.first(name: "User-Agent"), host: headers.first(name: "Host"),
                      contentLength: headers.first(name: "Content-Length"), body: body, clientIP: clientIP,
                      checkUserAgent: check)
        }
        for e in reply.effects {
            switch e {
            case .startLiveView(let ip, let port):
                guard let addr = try? SocketAddress(ipAddress: ip, port: port) else { continue }
                let ssrc = UInt32.random(in: 1...UInt32.max)
                stream.withLock { s in
                    s.target = addr
                    s.frameNumber = 0
                    s.sessions += 1
                    s.packetizer = OlympusRTPPacketizer(ssrc: ssrc, firstSequence: configuration.firstSequence,
                                                        chunk: configuration.chunk)
                }
                logger.debug("olympus emulator: live view to \(ip):\(port)")
            case .stopLiveView:
                stream.withLock { $0.target = nil }
            case .shoot:
                shoot()
            }
        }
        return reply
    }

    private func addConnection(_ ch: any Channel) {
        runtime.withLock { $0.connections[ObjectIdentifier(ch)] = ch }
        ch.closeFuture.whenComplete { [weak self] _ in
            _ = self?.runtime.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(ch)) }
        }
    }

    // MARK: Live view

    /// Fixed-rate ticks (frame k at start + k/fps; a late loop skips ahead instead of bursting).
    private func startTimer(on loop: any EventLoop, generation: Int) {
        let interval = Int64(1e9 / max(configuration.fps, 0.1))
        scheduleTick(on: loop, base: .now(), interval: interval, tick: 1, generation: generation)
    }

    private func scheduleTick(on loop: any EventLoop, base: NIODeadline, interval: Int64, tick k: Int64, generation: Int) {
        let now = NIODeadline.now()
        let late = base + .nanoseconds(interval * k) < now - .nanoseconds(interval * 3)
        let k = late ? (now - base).nanoseconds / interval + 1 : k
        loop.scheduleTask(deadline: base + .nanoseconds(interval * k)) { [weak self] in
            guard let self, self.runtime.withLock({ $0.generation == generation && $0.udp != nil }) else { return }
            self.tick()
            self.scheduleTick(on: loop, base: base, interval: interval, tick: k + 1, generation: generation)
        }
    }

    private func tick() {
        guard let udp = runtime.withLock({ $0.udp }) else { return }
        let now = MonotonicClock.nanos()
        let plan = stream.withLock { s -> (index: Int, frameNumber: UInt32, target: SocketAddress)? in
            guard let t = s.target, now >= s.stallUntil else { return nil }
            let p = (s.sourceIndex, s.frameNumber, t)
            s.sourceIndex += 1
            s.frameNumber &+= 1
            return p
        }
        guard let plan else { return }
        let frame = source.frame(index: plan.index)
        guard !frame.jpeg.isEmpty else { return }
        let (values, touch, onCard) = state.withLock { ($0.values, $0.touchFrame, $0.card.count) }
        var m = Self.metadata(values: values, touch: touch, frame: frame, configuration: configuration)
        m.maxTakeNumber = UInt32(max(0, 999 - onCard))
        m.frameSize = UInt32(frame.jpeg.count)
        var send: [Bool] = []
        let packets = stream.withLock { s -> [[UInt8]] in
            guard s.target == plan.target else { return [] }  // stopped meanwhile
            let first = s.packetizer.sequence
            let packets = s.packetizer.packets(jpeg: frame.jpeg, frameNumber: plan.frameNumber, metadata: m)
            var dropped: [Int] = []
            for i in packets.indices {
                s.datagramIndex += 1
                let drop = s.dropEvery > 0 && s.datagramIndex % s.dropEvery == 0
                send.append(!drop)
                if drop {
                    dropped.append(i)
                    s.datagramsDropped += 1
                } else {
                    s.datagramsSent += 1
                }
            }
            s.framesSent += 1
            if configuration.sentFrameHistory > 0 {
                s.log.append(SentFrame(frameNumber: plan.frameNumber, firstSequence: first, jpeg: frame.jpeg, metadata: m,
                                       packets: packets.count, droppedPackets: dropped))
                if s.log.count > configuration.sentFrameHistory { s.log.removeFirst(s.log.count - configuration.sentFrameHistory) }
            }
            return packets
        }
        for (d, ok) in zip(packets, send) where ok {
            udp.write(AddressedEnvelope(remoteAddress: plan.target, data: udp.allocator.buffer(bytes: d)), promise: nil)
        }
        udp.flush()
    }

    /// The extension contents for one frame from the camera's current settings.
    static func metadata(values: [String: String], touch: (x: Int, y: Int, size: Int)?, frame: EmulatedFrame,
                         configuration: Configuration) -> OlympusRTP.Metadata {
        var m = OlympusRTP.Metadata()
        if let t = touch {
            m.afFrame = .init(colour: 1, x: UInt32(max(0, t.x)), y: UInt32(max(0, t.y)), width: UInt32(t.size), height: UInt32(t.size))
        } else {
            let W = Double(frame.width), H = Double(frame.height)
            let b = frame.afBox
            let x = Int((b.x1 * W).rounded()), y = Int((b.y1 * H).rounded())
            let w = Int((b.x2 * W).rounded()) - x, h = Int((b.y2 * H).rounded()) - y
            if w > 0 && h > 0 {
                m.afFrame = .init(colour: frame.focused ? 1 : 2, x: UInt32(max(0, x)), y: UInt32(max(0, y)),
                                  width: UInt32(w), height: UInt32(h))
            } else {
                m.afFrame = .init(colour: 0, x: 0, y: 0, width: 0, height: 0)
            }
        }
        m.mediaInfo = 0b101  // card mounted, not full
        m.rotation = configuration.orientation
        m.maxTakeNumber = 999
        m.shutter = .init(slowest: .init(60, 1), fastest: .init(1, 4000), current: shutterFraction(values["shutspeedvalue"] ?? ""))
        let f = Double(values["focalvalue"] ?? "") ?? 0
        m.aperture = .init(maximum: 220, minimum: 18, current: UInt32(max(0, (f * 10).rounded())))
        let ev = Double(values["expcomp"] ?? "") ?? 0
        m.exposureCompensation = .init(maximum: 50, minimum: -50, current: Int32((ev * 10).rounded()))
        let iso = values["isospeedvalue"] ?? "Auto"
        switch iso {
        case "Auto": m.iso = .init(current: 200, auto: true, extendedWarning: false)
        case "Low": m.iso = .init(current: OlympusRTP.ISOInfo.low, auto: false, extendedWarning: true)
        default: m.iso = .init(current: UInt32(iso) ?? 0, auto: false, extendedWarning: false)
        }
        m.exposureWarning = 0
        m.focusSystemRaw = configuration.focusSystem
        m.zoom = .init(wide: 14, current: 25, tele: 42)
        m.faces = configuration.faces
        return m
    }

    /// `60"` → 60/1, `1.3"` → 13/10, `250` → 1/250, `2.5` → 10/25; bulb/live modes → 0/0.
    static func shutterFraction(_ v: String) -> OlympusRTP.Fraction {
        func tenths(_ s: Substring) -> UInt16? {
            guard let d = Double(s), d > 0, d < 6000 else { return nil }
            return UInt16((d * 10).rounded())
        }
        if v.hasSuffix("\"") {
            guard let t = tenths(v.dropLast()) else { return .init(0, 0) }
            return t % 10 == 0 ? .init(t / 10, 1) : .init(t, 10)
        }
        guard let t = tenths(v[...]) else { return .init(0, 0) }
        return t % 10 == 0 ? .init(1, t / 10) : .init(10, t)
    }
}

/// HTTP side of the emulator: collects a request (head, bounded body) and answers it.
final class OlympusEmulatorHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let emulator: OlympusEmulator
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private static let maxBody = 16 * 1024

    init(emulator: OlympusEmulator) { self.emulator = emulator }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body.removeAll()
        case .body(let buf):
            if body.count + buf.readableBytes <= Self.maxBody { body.append(contentsOf: buf.readableBytesView) }
        case .end:
            guard let head else { return }
            self.head = nil
            let ip = context.channel.remoteAddress?.ipAddress ?? "127.0.0.1"
            let reply = emulator.handle(method: head.method.rawValue, uri: head.uri, headers: head.headers,
                                        body: String(decoding: body, as: UTF8.self), clientIP: ip)
            respond(context, reply, keepAlive: head.isKeepAlive)
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ reply: OlympusEmulatorState.Reply, keepAlive: Bool) {
        var h = HTTPHeaders()
        let payload = reply.bytes ?? Array(reply.body.utf8)
        if !payload.isEmpty { h.add(name: "Content-Type", value: reply.contentType) }
        h.add(name: "Content-Length", value: String(payload.count))
        h.add(name: "Connection", value: keepAlive ? "Keep-Alive" : "close")
        let status = HTTPResponseStatus(statusCode: reply.status)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
        if !payload.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: payload)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let ch = context.channel
            done.whenComplete { _ in ch.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
