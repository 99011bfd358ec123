import JPEGKit
import CameraWire
import LiveViewCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// A LUMIX camera on loopback: `cam.cgi` over HTTP with the configured access-control generation,
/// record/play mode, getstate/getinfo/getsetting/setsetting with Panasonic's values, and the UDP live
/// view — one datagram per frame (32-byte header, type-1 extended header with the AF box on the
/// 0..1000 grid, the JPEG) sent to the `startstream` requester. Like the real bodies it stops
/// streaming when no `cam.cgi` request has arrived for `keepAliveTimeout` seconds.
public final class PanasonicEmulator: CameraEmulator, Sendable {
    public let vendor = "panasonic"

    public struct Configuration: Sendable {
        public var access: PanasonicEmulatedAccess = .reqAcc
        /// The stream ends this long after the most recent `cam.cgi` request (real bodies: ~10–12 s).
        public var keepAliveTimeout: Double = 10
        public var fps: Double = 30
        /// `ok_under_research…` answers before a new client is granted.
        public var pairingPolls: Int = 1
        /// Idle timeout of a `req_acc_g` session (S5II: ~12 s).
        public var sessionIdleTimeout: Double = 12
        public var modelName = "DC-G9"
        /// Extended-header size N (real bodies use ~100–230; the conformance capture 98 and 232).
        public var exHeaderSize = 98
        /// The card lists file names and sizes (newer bodies); older ones list neither.
        public var cardListsNamesAndSizes = true
        /// Each shot writes a RAW beside its JPEG.
        public var rawPlusJPEG = false
        /// How long writing a shot to the card takes.
        public var cardWriteSeconds = 0.4
        /// The card's root lists one container per shooting day, the items inside (G9II-style);
        /// `cardListsChildCount` says whether each container carries `childCount`.
        public var cardGroupsByDay = false
        public var cardListsChildCount = true
        /// Prompt, or slow and moody like a real body (EmulatorMood.moody): mode switches that
        /// answer `err_busy` meanwhile (getstate still says the old mode), the first datagram late
        /// after startstream, every n-th setsetting answered err_busy once, slow listing pages.
        public var mood: EmulatorMood = .prompt
        public init() {}
    }

    public let configuration: Configuration
    public let source: any EmulatorFrameSource
    let state: PanasonicEmulatorState
    private let group: any EventLoopGroup
    private let host: String
    private let requestedPort: Int
    private let logger: Logger
    private let serverBox = Mutex<(any Channel)?>(nil)
    private let udpBox = Mutex<(any Channel)?>(nil)

    private struct Stream {
        var target: (ip: String, port: Int)?
        var lastRequestNanos: UInt64 = 0
        var frameIndex = 0
        var seq: Int32 = 1000
        var sent = 0
        var datagramCounter = 0
        var dropEvery = 0
        var stallUntil: UInt64 = 0
        var timeouts = 0
        var running = false
        var nextDeadline: NIODeadline = .now()
        var startNanos: UInt64 = 0
    }
    private let stream = Mutex(Stream())
    private let timer = Mutex<Scheduled<Void>?>(nil)

    public init(host: String = "127.0.0.1", port: Int = 0, configuration: Configuration = Configuration(),
                source: any EmulatorFrameSource, group: any EventLoopGroup,
                logger: Logger = Logger(label: "livegate.emulator.panasonic")) {
        self.host = host
        self.requestedPort = port
        self.configuration = configuration
        self.source = source
        self.group = group
        self.logger = logger
        state = PanasonicEmulatorState(generation: configuration.access, pairingPolls: configuration.pairingPolls,
                                       modelName: configuration.modelName,
                                       sessionIdleSeconds: configuration.sessionIdleTimeout, mood: configuration.mood)
        let now = MonotonicClock.nanos
        state.hooks.withLock { [source] hooks in
            hooks.onRequest = { [weak self] in self?.stream.withLock { $0.lastRequestNanos = now() } }
            hooks.onStream = { [weak self] target in self?.setTarget(target) }
            hooks.onTouch = { x, y in source.focus(atX: x, y: y) }
            hooks.onCapture = { [weak self] in self?.shoot() }
        }
        var options = PanasonicEmulatedCard.Options()
        options.listsNamesAndSizes = configuration.cardListsNamesAndSizes
        options.rawPlusJPEG = configuration.rawPlusJPEG
        options.writeSeconds = configuration.cardWriteSeconds
        options.groupsByDay = configuration.cardGroupsByDay
        options.listsChildCount = configuration.cardListsChildCount
        state.card.options = options
    }

    /// Convenience: the test pattern at the live view's VGA size.
    public convenience init(host: String = "127.0.0.1", port: Int = 0, configuration: Configuration = Configuration(),
                            group: any EventLoopGroup) throws {
        self.init(host: host, port: port, configuration: configuration,
                  source: try TestPatternSource(width: 640, height: 480), group: group)
    }

    // MARK: Lifecycle

    @discardableResult
    public func start() async throws -> Int {
        let emulator = self
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_sndbuf), value: 1 << 20)
            .bind(host: host, port: 0).get()
        udpBox.withLock { $0 = udp }
        let server = try await EmulatorHTTPServer.bind(group: group, host: host, port: requestedPort) {
            PanasonicEmulatorHTTPHandler(emulator: emulator)
        }
        serverBox.withLock { $0 = server }
        return server.localAddress?.port ?? requestedPort
    }

    public func stop() async {
        let server = serverBox.withLock { v -> (any Channel)? in
            let o = v
            v = nil
            return o
        }
        try? await server?.close()
        setTarget(nil)
        let udp = udpBox.withLock { v -> (any Channel)? in
            let o = v
            v = nil
            return o
        }
        try? await udp?.close()
    }

    /// The bound `cam.cgi` port (0 before `start`).
    public var port: Int { serverBox.withLock { $0?.localAddress?.port } ?? 0 }
    /// The card is listed on the same port as `cam.cgi` (a real body: 60606 and 50001).
    public var cameraURL: String { "panasonic://\(host):\(port)?dlnaport=\(port)" }

    // MARK: Card

    /// Renders a still (the test pattern at frame 1 000 000 + shot number) and writes it to the card.
    @discardableResult
    func shoot() -> String {
        let jpeg = source.frame(index: 1_000_000 + state.card.count + 1).jpeg
        return state.card.add(jpeg: jpeg)
    }

    /// A picture taken with the shutter button on the body; returns its JPEG's name.
    @discardableResult
    public func shootOnBody() -> String { shoot() }
    /// The bytes of a file on the card (`P1000001.JPG`, `P1000001.RW2`).
    public func cardFile(_ name: String) -> [UInt8]? { state.card.file(named: name) }
    /// The card's file names, oldest first (a RAW after its JPEG).
    public var cardNames: [String] { state.card.fileNames }
    /// The thumbnail served for the n-th shot (1-based).
    public func thumbnail(shot n: Int) -> [UInt8]? { state.card.download(String(format: "DT100%04d.JPG", n)) }
    /// The shooting day the next shots are written on (1 at start; a card grouped by day puts each
    /// day in its own container).
    public func setShootingDay(_ day: Int) { state.card.day = day }
    /// A movie recorded with the body's button: `getstate` says `rec` on and the card is written.
    public func recordMovieOnBody(_ on: Bool) { state.card.recording = on }
    /// Refuses shots with this `cam.cgi` result (`err_reject`; nil: accept them again).
    public func refuseShots(_ result: String?) { state.card.refuseShots = result }

    // MARK: Observation

    /// Every `cam.cgi` request so far, in order.
    public var requests: [PanasonicEmulatorRequest] { state.requests }
    /// Requests of one mode (and type).
    public func requests(mode: String, type: String? = nil) -> [PanasonicEmulatorRequest] {
        state.requests.filter { $0.mode == mode && (type == nil || $0.type == type) }
    }
    public var framesSent: Int { stream.withLock { $0.sent } }
    /// True while datagrams are being sent.
    public var isStreaming: Bool { stream.withLock { $0.running } }
    /// How often the stream ended because no request arrived for `keepAliveTimeout`.
    public var keepAliveTimeouts: Int { stream.withLock { $0.timeouts } }
    /// The camera's current setting values (`whitebalance`, `iso`, …).
    public var currentSettings: [String: String] {
        let s = state.settings
        return ["whitebalance": s.whitebalance, "iso": s.iso, "shtrspeed": s.shtrspeed, "focal": s.focal,
                "exposure": s.exposure, "focusmode": s.focusmode, "cammode": s.cammode]
    }

    /// The UPnP device description (panasonic.md §5), served at `/Server0/ddd` on the `cam.cgi` port.
    public var deviceDescription: String {
        let mac = "0123456789AB"
        return """
        <?xml version="1.0"?>
        <root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:pana="urn:schemas-panasonic-com:pana">
        <specVersion><major>1</major><minor>0</minor></specVersion>
        <device>
        <pana:X_FirmVersion>E1.0</pana:X_FirmVersion>
        <pana:X_CamCategory>LUMIX</pana:X_CamCategory>
        <deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType>
        <friendlyName>\(configuration.modelName)-EMU</friendlyName>
        <manufacturer>Panasonic</manufacturer>
        <modelName>LUMIX</modelName>
        <modelNumber>\(configuration.modelName)</modelNumber>
        <serialNumber>\(mac)</serialNumber>
        <UDN>uuid:4D454930-0100-1000-8000-\(mac)</UDN>
        </device>
        </root>
        """
    }

    /// Makes the next request of `mode` (and `type`) answer `result` (e.g. "err_busy").
    public func failNext(mode: String, type: String? = nil, result: String) {
        state.failNext(mode: mode, type: type, result: result)
    }

    public func inject(_ fault: EmulatorFault) {
        switch fault {
        case .dropEveryNthDatagram(let n):
            stream.withLock { $0.dropEvery = max(0, n) }
        case .stall(let seconds):
            stream.withLock { $0.stallUntil = MonotonicClock.nanos() + UInt64(max(0, seconds) * 1e9) }
        case .disconnect:
            setTarget(nil)
        case .none:
            stream.withLock {
                $0.dropEvery = 0
                $0.stallUntil = 0
            }
        }
    }

    // MARK: Streaming

    private func setTarget(_ target: (String, Int)?) {
        let startTimer = stream.withLock { s -> Bool in
            if let t = target {
                s.target = (t.0, t.1)
                s.lastRequestNanos = MonotonicClock.nanos()
                let wasRunning = s.running
                s.running = true
                if !wasRunning {
                    // A moody body's first frame comes a while after startstream.
                    s.nextDeadline = .now() + .nanoseconds(Int64(configuration.mood.firstFrameDelay.nanoseconds))
                    s.startNanos = MonotonicClock.nanos()
                }
                return !wasRunning
            }
            s.target = nil
            s.running = false
            return false
        }
        if target == nil {
            timer.withLock { $0?.cancel(); $0 = nil }
        } else if startTimer {
            scheduleTick()
        }
    }

    private func scheduleTick() {
        guard let udp = udpBox.withLock({ $0 }) else { return }
        let deadline = stream.withLock { $0.nextDeadline }
        let task = udp.eventLoop.scheduleTask(deadline: deadline) { [weak self] () -> Void in
            guard let self else { return }
            self.tick(udp)
        }
        timer.withLock { $0 = task }
    }

    private func tick(_ udp: any Channel) {
        let interval = Int64(1e9 / max(configuration.fps, 0.1))
        let timeoutNanos = UInt64(max(0.05, configuration.keepAliveTimeout) * 1e9)
        let now = MonotonicClock.nanos()
        enum Step { case stop, skip, send(index: Int, seq: Int32, ip: String, port: Int) }
        let step = stream.withLock { s -> Step in
            guard s.running, let t = s.target else { return .stop }
            s.nextDeadline = s.nextDeadline + .nanoseconds(interval)
            // Catch up without bursting when the loop was late.
            if s.nextDeadline < .now() - .milliseconds(100) { s.nextDeadline = .now() }
            if now &- s.lastRequestNanos > timeoutNanos || !state.isRecMode {
                s.running = false
                s.target = nil
                s.timeouts += 1
                return .stop
            }
            if now < s.stallUntil { return .skip }
            s.datagramCounter += 1
            let index = s.frameIndex
            s.frameIndex += 1
            s.seq &+= 1
            if s.dropEvery > 0 && s.datagramCounter % s.dropEvery == 0 { return .skip }
            return .send(index: index, seq: s.seq, ip: t.ip, port: t.port)
        }
        switch step {
        case .stop:
            logger.debug("panasonic emulator: stream ended")
            return
        case .skip:
            break
        case .send(let index, let seq, let ip, let port):
            let frame = source.frame(index: index)
            func grid(_ v: Double) -> UInt16 { UInt16(max(0, min(1000, (v * 1000).rounded()))) }
            let b = frame.afBox
            let box = PanasonicDatagram.Box(x1: grid(b.x1), y1: grid(b.y1), x2: grid(b.x2), y2: grid(b.y2),
                                            type: frame.focused ? 0x0001 : 0xFF02)
            var out: [UInt8] = []
            out.reserveCapacity(frame.jpeg.count + 32 + configuration.exHeaderSize)
            let pts = Int32(truncatingIfNeeded: (now &- stream.withLock { $0.startNanos }) / 11_111) // 90 kHz ticks
            PanasonicDatagram.append(jpeg: frame.jpeg, seq: seq, pts: pts, exType: 1, boxes: [box],
                                     exHeaderSize: configuration.exHeaderSize, to: &out)
            if out.count <= 65507, let addr = try? SocketAddress(ipAddress: ip, port: port) {
                let buf = udp.allocator.buffer(bytes: out)
                udp.writeAndFlush(AddressedEnvelope(remoteAddress: addr, data: buf), promise: nil)
                stream.withLock { $0.sent += 1 }
            } else {
                logger.warning("panasonic emulator: datagram of \(out.count) bytes not sent")
            }
        }
        scheduleTick()
    }
}

/// HTTP side: `GET /cam.cgi?…` and the UPnP device description at `/Server0/ddd`.
final class PanasonicEmulatorHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let emulator: PanasonicEmulator
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(emulator: PanasonicEmulator) {
        self.emulator = emulator
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
        case .body(let b):
            if body.count < 1 << 20 { body += b.readableBytesView }
        case .end:
            guard let head else { return }
            self.head = nil
            route(context: context, head: head)
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = parts.first.map(String.init) ?? head.uri
        if head.method == .GET, path == "/Server0/ddd" {
            respond(context, status: .ok, type: "text/xml", body: emulator.deviceDescription, keepAlive: head.isKeepAlive)
            return
        }
        // The card is served in play mode only, once a switch to it is over.
        let playMode = !emulator.state.isRecMode && !emulator.state.isSwitching
        if head.method == .POST, path == "/Server0/CDS_control" {
            let base = "http://\(head.headers.first(name: "Host") ?? "127.0.0.1:\(emulator.port)")"
            let answer = emulator.state.card.soapAnswer(request: String(decoding: body, as: UTF8.self), playMode: playMode, base: base)
            // A moody body takes its time over each page of the listing.
            context.afterMoodyDelay(emulator.configuration.mood.listingPageDelay) { [self] context in
                respond(context, status: HTTPResponseStatus(statusCode: answer.status), type: "text/xml; charset=\"utf-8\"",
                        body: answer.body, keepAlive: head.isKeepAlive)
            }
            return
        }
        if head.method == .GET || head.method == .HEAD, path.hasPrefix("/D"), !path.dropFirst().contains("/") {
            // Downloads: play mode only (the card is not served while recording).
            guard playMode, let bytes = emulator.state.card.download(String(path.dropFirst())) else {
                respond(context, status: playMode ? .notFound : .serviceUnavailable, type: "text/plain", body: "", keepAlive: head.isKeepAlive)
                return
            }
            sendFile(context, bytes, head: head)
            return
        }
        guard head.method == .GET, path == "/cam.cgi" else {
            respond(context, status: .notFound, type: "text/plain", body: "not found\n", keepAlive: head.isKeepAlive)
            return
        }
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                let k = Self.decode(String(kv[0]))
                query[k] = kv.count == 2 ? Self.decode(String(kv[1])) : ""
            }
        }
        let ip = context.channel.remoteAddress?.ipAddress ?? "127.0.0.1"
        let reply = emulator.state.handle(query: query, sessionHeader: head.headers.first(name: "X-SESSION_ID"), clientIP: ip)
        respond(context, status: .ok, type: reply.xml ? "text/xml" : "text/plain", body: reply.body, keepAlive: head.isKeepAlive)
    }

    private func respond(_ context: ChannelHandlerContext, status: HTTPResponseStatus, type: String, body: String, keepAlive: Bool) {
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: type)
        h.add(name: "Content-Length", value: String(body.utf8.count))
        h.add(name: "Server", value: "Panasonic")
        if !keepAlive { h.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let ch = context.channel
            done.whenComplete { _ in ch.close(promise: nil) }
        }
    }

    /// A card file as the bodies send it: chunked, its length in `X-FILE_SIZE`.
    private func sendFile(_ context: ChannelHandlerContext, _ bytes: [UInt8], head: HTTPRequestHead) {
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: head.uri.hasSuffix(".JPG") ? "image/jpeg" : "application/octet-stream")
        h.add(name: "Server", value: "Panasonic")
        h.add(name: "X-FILE_SIZE", value: String(bytes.count))
        h.add(name: "X-REC_DATE_TIME", value: "2026-11-27T10:00:00")
        h.add(name: "X-ROTATE_INFO", value: "1")
        if head.method == .HEAD {
            h.add(name: "Content-Length", value: "0")
        } else {
            h.add(name: "Transfer-Encoding", value: "chunked")
        }
        if !head.isKeepAlive { h.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: h))), promise: nil)
        if head.method != .HEAD {
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, at + 16_384)
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes[at..<end])))), promise: nil)
                at = end
            }
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !head.isKeepAlive {
            let ch = context.channel
            done.whenComplete { _ in ch.close(promise: nil) }
        }
    }

    static func decode(_ s: String) -> String {
        var bytes: [UInt8] = []
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count, let v = UInt8(String(decoding: u[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                bytes.append(v)
                i += 3
            } else {
                bytes.append(u[i] == UInt8(ascii: "+") ? 0x20 : u[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
