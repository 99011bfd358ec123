import CameraWire
import Foundation
import LiveViewCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// A TomTom Bandit on loopback (bandit.md): the REST API under `/api/2/`, the viewfinder as test-pattern
/// JPEGs split over UDP datagrams (§3.2 layout, `BanditDatagram`) sent at `fps` to the port the client
/// asks for, PTS advancing while recording, and backchannel notifications on a TCP port given in
/// `/status`.
///
/// Faults: `.dropEveryNthDatagram(n)` (every n-th datagram is not sent; its packet number is used up),
/// `.stall(seconds:)` (no datagrams, connections stay), `.disconnect` (the viewfinder stops without a
/// notification and every backchannel and REST connection is closed; the camera keeps listening).
/// A camera that is killed and restarted is `stop()` plus a new emulator on the same port.
public final class BanditEmulator: CameraEmulator, Sendable {
    public let vendor = "bandit"
    public let fps: Double
    public let source: any EmulatorFrameSource
    /// JPEG bytes per data datagram (default 1017 = `BanditDatagram.defaultChunk` → 1024-byte datagrams).
    public let chunk: Int
    let state: BanditEmulatorState
    let logger: Logger
    private let group: any EventLoopGroup
    private let host: String
    private let requestedPort: Int
    private let requestedBackchannelPort: Int
    private let firstPacketNumber: UInt16

    private struct Runtime {
        var http: (any Channel)?
        var backchannelServer: (any Channel)?
        var udp: (any Channel)?
        var backchannels: [ObjectIdentifier: any Channel] = [:]
        var connections: [ObjectIdentifier: any Channel] = [:]
        var running = false
    }

    private struct Stream {
        var packetNumber: UInt16
        var frameIndex = 0
        var datagramIndex = 0
        var dropEvery = 0
        var stallUntil: UInt64 = 0
        var framesSent = 0
        var datagramsSent = 0
        var datagramsDropped = 0
        var log: [SentFrame] = []
    }

    /// One frame as the emulator sent it.
    public struct SentFrame: Sendable {
        /// packet_number of its frame-start datagram.
        public var seq: UInt16
        public var ptsSeconds: Float
        public var jpeg: [UInt8]
        /// Number of datagrams (start + data).
        public var datagrams: Int
        /// Indices (0 = the frame-start datagram) of its datagrams the fault dropped.
        public var droppedDatagrams: [Int]
        /// True when a datagram of it was dropped by the fault.
        public var damaged: Bool { !droppedDatagrams.isEmpty }
    }

    /// Frames kept in `sentFrames` (with their JPEG bytes).
    public let sentFrameHistory: Int

    private let runtime = Mutex(Runtime())
    private let stream: Mutex<Stream>

    /// `port` is the REST port (0 = any free one), `backchannelPort` the notification port (0 = any).
    /// `firstPacketNumber` lets tests start near the 65535 → 0 wrap; `sentFrameHistory` bounds
    /// `sentFrames` (0 keeps none, e.g. for `livegate emulate`).
    public init(host: String = "127.0.0.1", port: Int = 0, backchannelPort: Int = 0, fps: Double = 30,
                source: any EmulatorFrameSource, group: any EventLoopGroup,
                chunk: Int = 1017, firstPacketNumber: UInt16 = 0, sentFrameHistory: Int = 150,
                mood: EmulatorMood = .prompt, logger: Logger = Logger(label: "livegate.emulator.bandit")) {
        state = BanditEmulatorState(mood: mood)
        precondition(chunk > 0 && chunk <= 65_000, "chunk must be 1…65000")
        self.host = host
        self.requestedPort = port
        self.requestedBackchannelPort = backchannelPort
        self.fps = fps
        self.source = source
        self.group = group
        self.chunk = chunk
        self.firstPacketNumber = firstPacketNumber
        self.sentFrameHistory = max(0, sentFrameHistory)
        self.logger = logger
        self.stream = Mutex(Stream(packetNumber: firstPacketNumber))
    }

    /// Starts the REST server, the backchannel server and the viewfinder sender; returns the REST port.
    @discardableResult
    public func start() async throws -> Int {
        let emulator = self
        let back = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { ch in
                emulator.addBackchannel(ch)
                return ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.addHandler(BanditBackchannelSink(emulator: emulator))
                }
            }
            .bind(host: host, port: requestedBackchannelPort).get()
        state.backchannelPort.store(back.localAddress?.port ?? 0, ordering: .relaxed)
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .bind(host: host, port: 0).get()
        let http: any Channel
        do {
            http = try await EmulatorHTTPServer.bind(
                group: group, host: host, port: requestedPort, onConnection: { emulator.addConnection($0) }
            ) { BanditEmulatorHTTPHandler(emulator: emulator) }
        } catch {
            back.close(promise: nil)
            udp.close(promise: nil)
            throw error
        }
        runtime.withLock {
            $0.http = http
            $0.backchannelServer = back
            $0.udp = udp
            $0.running = true
        }
        startTimer(on: udp.eventLoop)
        return http.localAddress?.port ?? requestedPort
    }

    /// The bound REST port (0 before `start`).
    public var port: Int { runtime.withLock { $0.http?.localAddress?.port } ?? 0 }

    /// The bound backchannel port (0 before `start`).
    public var backchannelPort: Int { state.backchannelPort.load(ordering: .relaxed) }

    /// For `livegate run --camera`: REST on the emulator's port, any free local UDP port.
    public var cameraURL: String { "bandit://\(host):\(port)?udp=0" }

    public func stop() async {
        let r = runtime.withLock { r -> Runtime in
            let o = r
            r = Runtime()
            return o
        }
        state.stopViewfinder()
        for ch in r.backchannels.values { ch.close(promise: nil) }
        for ch in r.connections.values { ch.close(promise: nil) }
        try? await r.http?.close()
        try? await r.backchannelServer?.close()
        try? await r.udp?.close()
    }

    public func inject(_ fault: EmulatorFault) {
        switch fault {
        case .dropEveryNthDatagram(let n):
            stream.withLock { $0.dropEvery = max(0, n) }
        case .stall(let seconds):
            stream.withLock { $0.stallUntil = MonotonicClock.nanos() + UInt64(max(0, seconds) * 1e9) }
        case .disconnect:
            state.stopViewfinder()
            let r = runtime.withLock { r -> [any Channel] in
                let all = Array(r.backchannels.values) + Array(r.connections.values)
                r.backchannels.removeAll()
                r.connections.removeAll()
                return all
            }
            for ch in r { ch.close(promise: nil) }
        case .none:
            stream.withLock {
                $0.dropEvery = 0
                $0.stallUntil = 0
            }
        }
    }

    /// Frames sent so far (a frame whose datagrams were partly dropped counts as sent).
    public var framesSent: Int { stream.withLock { $0.framesSent } }
    /// Datagrams sent / dropped by the fault so far.
    public var datagramsSent: Int { stream.withLock { $0.datagramsSent } }
    public var datagramsDropped: Int { stream.withLock { $0.datagramsDropped } }
    /// The last `sentFrameHistory` frames sent.
    public var sentFrames: [SentFrame] { stream.withLock { $0.log } }

    /// Every REST request received: method, path (without query) and body text.
    public var requests: [(method: String, path: String, body: String)] { state.requests }

    /// Current `white_balance_mode`.
    public var whiteBalance: String { state.values.withLock { $0.camera.whiteBalance } }
    public var isRecording: Bool { state.values.withLock { $0.recording } }
    public var viewfinderActive: Bool { state.values.withLock { $0.viewfinderActive } }
    /// Number of backchannel connections open now.
    public var backchannelClients: Int { runtime.withLock { $0.backchannels.count } }

    /// The camera stops its viewfinder by itself (e.g. a button) and says so on the backchannel.
    public func cameraStopsViewfinder() {
        if state.stopViewfinder() {
            notify("viewfinder_stopped", ["viewfinder_active": false])
        }
    }

    /// Sends a notification `{"<name>": payload}` + `\n` to every backchannel client.
    public func notify(_ name: String, _ payload: Any) {
        if let line = Self.notificationLine(name, payload) { send(line: line) }
    }

    /// `{"<name>": payload}` + `\n`.
    static func notificationLine(_ name: String, _ payload: Any) -> [UInt8]? {
        guard let data = try? JSONSerialization.data(withJSONObject: [name: payload], options: [.sortedKeys, .fragmentsAllowed])
        else { return nil }
        return Array(data) + [UInt8(ascii: "\n")]
    }

    /// Writes one notification line to every backchannel client.
    private func send(line: [UInt8]) {
        let clients = runtime.withLock { Array($0.backchannels.values) }
        for ch in clients {
            ch.writeAndFlush(ch.allocator.buffer(bytes: line), promise: nil)
        }
    }

    /// A photo taken with the button on the camera: stored (`images/<id>`, `…/contents`) and
    /// announced with `photo_captured`. Returns its id.
    @discardableResult
    public func shootOnBody() -> String {
        let image = storePhoto()
        notify("photo_captured", [image])
        return image["id"] as? String ?? ""
    }

    /// Makes a new photo (a distinct test-pattern frame) and stores it; returns its image object.
    private func storePhoto() -> [String: Any] {
        let source = self.source
        return state.addImage { n in source.frame(index: 1_000_000 + n).jpeg }
    }

    /// In an image mode, whether `POST record {"recording_active": true}` takes photos (the
    /// default) or starts a recording (the other reading of bandit.md, which names no shutter).
    public var recordIsShutter: Bool {
        get { state.recordIsShutter.load(ordering: .relaxed) }
        set { state.recordIsShutter.store(newValue, ordering: .relaxed) }
    }

    /// A burst's photos announced in one `photo_captured` (the default) or one notification each
    /// (bandit.md does not say which).
    public var burstInOneNotification: Bool {
        get { state.burstInOneNotification.load(ordering: .relaxed) }
        set { state.burstInOneNotification.store(newValue, ordering: .relaxed) }
    }

    /// The bytes of a stored photo.
    public func imageContents(_ id: String) -> [UInt8]? { state.images.withLock { $0.first { $0.id == id }?.jpeg } }

    /// `memory_low` with `available_bytes`.
    public func notifyMemoryLow(availableBytes: Int64) { notify("memory_low", ["available_bytes": availableBytes]) }

    func carryOut(_ effects: [BanditEmulatorState.Effect]) {
        for e in effects {
            switch e {
            case .notify(let name, let payload):
                if name == "viewfinder_started", state.mood.firstFrameDelay > .zero {
                    // A moody body's first viewfinder frame comes a while after it was asked for.
                    let until = MonotonicClock.nanos() + state.mood.firstFrameDelay.nanoseconds
                    stream.withLock { $0.stallUntil = max($0.stallUntil, until) }
                }
                notify(name, payload)
            case .shoot(let count):
                let photos = (0..<count).map { _ in storePhoto() }
                if state.burstInOneNotification.load(ordering: .relaxed) {
                    notify("photo_captured", photos)
                } else {
                    // One by one, as a burst at about 7 photos a second would come.
                    let lines = photos.compactMap { Self.notificationLine("photo_captured", [$0]) }
                    Task { [self] in
                        for line in lines {
                            send(line: line)
                            try? await Task.sleep(for: .milliseconds(150))
                        }
                    }
                }
            }
        }
    }

    // MARK: Connections

    fileprivate func addBackchannel(_ ch: any Channel) {
        runtime.withLock { $0.backchannels[ObjectIdentifier(ch)] = ch }
        ch.closeFuture.whenComplete { [weak self] _ in
            _ = self?.runtime.withLock { $0.backchannels.removeValue(forKey: ObjectIdentifier(ch)) }
        }
    }

    fileprivate func addConnection(_ ch: any Channel) {
        runtime.withLock { $0.connections[ObjectIdentifier(ch)] = ch }
        ch.closeFuture.whenComplete { [weak self] _ in
            _ = self?.runtime.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(ch)) }
        }
    }

    // MARK: Viewfinder sender

    /// Fixed-rate ticks (frame k at start + k/fps; a late loop skips ahead instead of bursting).
    private func startTimer(on loop: any EventLoop) {
        let interval = Int64(1e9 / max(fps, 0.1))
        scheduleTick(on: loop, base: NIODeadline.now(), interval: interval, tick: 1)
    }

    private func scheduleTick(on loop: any EventLoop, base: NIODeadline, interval: Int64, tick k: Int64) {
        let now = NIODeadline.now()
        let late = base + .nanoseconds(interval * k) < now - .nanoseconds(interval * 3)
        let k = late ? (now - base).nanoseconds / interval + 1 : k
        loop.scheduleTask(deadline: base + .nanoseconds(interval * k)) { [weak self] in
            guard let self, self.runtime.withLock({ $0.running }) else { return }
            self.tick()
            self.scheduleTick(on: loop, base: base, interval: interval, tick: k + 1)
        }
    }

    private func tick() {
        guard let udp = runtime.withLock({ $0.udp }) else { return }
        let (dest, pts): (SocketAddress?, Float) = state.values.withLock { v in
            guard v.viewfinderActive, let d = v.viewfinderDestination else { return (nil, 0) }
            var pts: Float = 0
            if v.recording {
                // Video PTS of the frame being written now (the file runs at the camera's frame rate,
                // whether or not the viewfinder sends); the first recorded frame is 1/fps, never 0.0,
                // as in the conformance capture. Each viewfinder frame is a sensor frame of its own:
                // ticks that run late back to back (a loaded machine) never repeat a PTS.
                let k = max(Int(Double(MonotonicClock.elapsed(from: v.recordingStartNanos, to: MonotonicClock.nanos())) * fps / 1e9) + 1,
                            v.recordedFrames + 1)
                v.recordedFrames = k
                pts = Float(Double(k) / fps)
            }
            return (d, pts)
        }
        guard let dest else { return }
        let now = MonotonicClock.nanos()
        let plan = stream.withLock { s -> (index: Int, first: UInt16)? in
            guard now >= s.stallUntil else { return nil }
            let i = s.frameIndex
            s.frameIndex += 1
            return (i, s.packetNumber)
        }
        guard let plan else { return }
        let frame = source.frame(index: plan.index)
        guard !frame.jpeg.isEmpty else { return }
        let datagrams = BanditDatagram.frame(jpeg: frame.jpeg, firstPacketNumber: plan.first, ptsSeconds: pts, chunk: chunk)
        var send: [Bool] = []
        send.reserveCapacity(datagrams.count)
        stream.withLock { s in
            s.packetNumber = plan.first &+ UInt16(truncatingIfNeeded: datagrams.count)
            var dropped: [Int] = []
            for i in datagrams.indices {
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
            s.log.append(SentFrame(seq: plan.first, ptsSeconds: pts, jpeg: frame.jpeg, datagrams: datagrams.count, droppedDatagrams: dropped))
            if s.log.count > self.sentFrameHistory { s.log.removeFirst(s.log.count - self.sentFrameHistory) }
        }
        for (d, ok) in zip(datagrams, send) where ok {
            udp.write(AddressedEnvelope(remoteAddress: dest, data: udp.allocator.buffer(bytes: d)), promise: nil)
        }
        udp.flush()
    }
}

/// The backchannel is push-only: whatever a client sends is discarded.
private final class BanditBackchannelSink: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let emulator: BanditEmulator
    init(emulator: BanditEmulator) { self.emulator = emulator }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// REST side of the emulator.
final class BanditEmulatorHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let emulator: BanditEmulator
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    private static let maxBody = 64 * 1024

    init(emulator: BanditEmulator) { self.emulator = emulator }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body.removeAll()
            tooLarge = false
        case .body(let buf):
            if body.count + buf.readableBytes <= Self.maxBody {
                body.append(contentsOf: buf.readableBytesView)
            } else {
                tooLarge = true
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if tooLarge {
                respond(context: context, status: .payloadTooLarge, body: [], keepAlive: false)
                return
            }
            let (reply, effects) = emulator.state.handle(
                method: head.method.rawValue, uri: head.uri, body: body, peer: context.channel.remoteAddress)
            // A moody body takes its time over a listing.
            let listing = head.method == .GET && (head.uri.hasPrefix("/api/2/images") || head.uri.hasPrefix("/api/2/videos"))
            context.afterMoodyDelay(listing ? emulator.state.mood.listingPageDelay : .zero) { [self] context in
                respond(context: context, status: reply.status, body: reply.body, keepAlive: head.isKeepAlive)
                emulator.carryOut(effects)
            }
        }
    }

    private func respond(context: ChannelHandlerContext, status: HTTPResponseStatus, body: [UInt8], keepAlive: Bool) {
        var h = HTTPHeaders()
        if !body.isEmpty { h.add(name: "Content-Type", value: "application/json") }
        h.add(name: "Content-Length", value: String(body.count))
        if !keepAlive { h.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
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

