import CameraWire
import LiveViewCore
import NIOCore
import NIOHTTP1

/// HTTP side of the Sony emulator: JSON-RPC POSTs and the endless liveview GET.
final class SonyEmulatorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let emulator: SonyEmulator
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var streamTask: Scheduled<Void>?
    // Stream state, touched only on the channel's event loop.
    private var frameIndex = 0
    private var seq: UInt16 = 0
    private var packet: [UInt8] = []
    private static let maxBody = 64 * 1024

    init(emulator: SonyEmulator) {
        self.emulator = emulator
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body.removeAll()
        case .body(let buf):
            if body.count + buf.readableBytes <= Self.maxBody { body.append(contentsOf: buf.readableBytesView) }
        case .end:
            guard let head else { return }
            route(context: context, head: head)
            self.head = nil
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
        switch (head.method, path) {
        case (.POST, "/sony/camera"), (.POST, "/sony/system"), (.POST, "/sony/avContent"):
            let port = context.channel.localAddress?.port ?? emulator.port
            let url = "http://127.0.0.1:\(port)/liveview/liveviewstream"
            let reply = emulator.state.handle(body: body, liveviewURL: url, source: emulator.source)
            // A moody body lists its card slowly: each page after a while.
            let listing = path == "/sony/avContent" && emulator.state.lastMethod == "getContentList"
            let keepAlive = head.isKeepAlive
            context.afterMoodyDelay(listing ? emulator.state.mood.listingPageDelay : .zero) { [weak self] context in
                self?.respond(context: context, status: .ok, contentType: "application/json", body: reply, keepAlive: keepAlive)
            }
        case (.GET, _) where path.hasPrefix("/postview/"):
            guard let bytes = emulator.state.cardFile(String(path.dropFirst("/postview/".count))) else {
                respond(context: context, status: .notFound, contentType: "text/plain", body: Array("no such picture\n".utf8), keepAlive: head.isKeepAlive)
                return
            }
            emulator.state.countPostviewServed()
            if emulator.state.takeCut() {
                // The transfer dies half-way: the whole length announced, half the bytes, then gone.
                var h = HTTPHeaders()
                h.add(name: "Content-Type", value: "image/jpeg")
                h.add(name: "Content-Length", value: String(bytes.count))
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: h))), promise: nil)
                let half = context.channel.allocator.buffer(bytes: bytes.prefix(bytes.count / 2))
                let ch = context.channel
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(half)))).whenComplete { _ in ch.close(promise: nil) }
                return
            }
            respond(context: context, status: .ok, contentType: "image/jpeg", body: bytes, keepAlive: head.isKeepAlive)
        case (let method, _) where (method == .GET || method == .HEAD) && path.hasPrefix("/contentstransfer/"):
            // The card, in Contents Transfer only: originals and 160×120 thumbnails by content id.
            let parts = path.split(separator: "/")
            guard emulator.state.inContentsTransfer, parts.count == 3,
                  let name = emulator.state.cardName(contentID: String(parts[2])),
                  let bytes = parts[1] == "orgjpeg" ? emulator.state.cardFile(name)
                      : parts[1] == "thumb" ? SonyEmulatorHandler.thumbnail(name) : nil else {
                respond(context: context, status: .notFound, contentType: "text/plain", body: Array("not found\n".utf8), keepAlive: head.isKeepAlive)
                return
            }
            respond(context: context, status: .ok, contentType: "image/jpeg", body: head.method == .HEAD ? [] : bytes,
                    keepAlive: head.isKeepAlive, length: bytes.count)
        case (.GET, "/liveview/liveviewstream"):
            guard emulator.state.settings.liveview else {
                respond(context: context, status: .notFound, contentType: "text/plain", body: Array("liveview not started\n".utf8), keepAlive: false)
                return
            }
            startStream(context: context)
        default:
            respond(context: context, status: .notFound, contentType: "text/plain", body: Array("not found\n".utf8), keepAlive: head.isKeepAlive)
        }
    }

    /// The card's thumbnail of a picture: the test pattern at 160×120 showing its number.
    static func thumbnail(_ name: String) -> [UInt8]? {
        Int(name.dropFirst(3).prefix(5)).flatMap(EmulatedThumbnail.jpeg(showing:))
    }

    private func respond(context: ChannelHandlerContext, status: HTTPResponseStatus, contentType: String, body: [UInt8], keepAlive: Bool,
                         length: Int? = nil) {
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: contentType)
        h.add(name: "Content-Length", value: String(length ?? body.count))
        if !keepAlive { h.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let ch = context.channel
            done.whenComplete { _ in ch.close(promise: nil) }
        }
    }

    private func startStream(context: ChannelHandlerContext) {
        var h = HTTPHeaders()
        h.add(name: "Content-Type", value: "image/jpeg")
        h.add(name: "Connection", value: "close")
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: h))), promise: nil)
        let channel = context.channel
        emulator.state.addStream(channel)
        let interval = UInt64(1e9 / max(emulator.fps, 0.1))
        // A moody body sends its first frame a while after the stream starts.
        scheduleTick(context: context, channel: channel, start: MonotonicClock.nanos() + emulator.state.mood.firstFrameDelay.nanoseconds,
                     tick: 0, interval: interval)
    }

    /// Fixed-rate pacing: tick n fires at start + n × interval (a late tick skips the missed ones,
    /// as a camera drops frames), so rendering time does not lower the frame rate.
    private func scheduleTick(context: ChannelHandlerContext, channel: any Channel, start: UInt64, tick: UInt64, interval: UInt64) {
        let ctx = NIOLoopBound(context, eventLoop: context.eventLoop)
        let deadline = NIODeadline.uptimeNanoseconds(start + tick * interval)
        streamTask = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            guard let self, channel.isActive else { return }
            self.sendFrame(context: ctx.value, start: start, tickTime: start + tick * interval)
            let now = MonotonicClock.nanos()
            var next = tick + 1
            if now > start + next * interval + interval { next = (now - start) / interval + 1 }
            self.scheduleTick(context: ctx.value, channel: channel, start: start, tick: next, interval: interval)
        }
    }

    private func sendFrame(context c: ChannelHandlerContext, start: UInt64, tickTime: UInt64) {
        // A client that does not read fast enough loses frames, as on a real camera.
        guard c.channel.isWritable, !emulator.state.isStalled else { return }
        let frame = emulator.source.frame(index: frameIndex)
        frameIndex += 1
        let ts = UInt32(truncatingIfNeeded: (tickTime - start) / 1_000_000 + 1_000)
        packet.removeAll(keepingCapacity: true)
        var after = false
        var info = emulator.state.settings.frameInfo
        switch emulator.frameInfoOrder {
        case .before: break
        case .after: after = true
        case .alternate: after = frameIndex % 2 == 0
        case .missingEvery(let n): if n > 0 && frameIndex % n == 0 { info = false }
        }
        if info && !after { appendInfo(frame, ts: ts) }
        SonyRemotePacket.appendJPEG(frame.jpeg, seq: seq, timestampMs: ts, to: &packet)
        if info && after {
            // The JPEG leaves first, its information in a write of its own.
            c.write(wrapOutboundOut(.body(.byteBuffer(c.channel.allocator.buffer(bytes: packet)))), promise: nil)
            packet.removeAll(keepingCapacity: true)
            appendInfo(frame, ts: ts)
        }
        seq &+= 1
        emulator.state.countFrame()
        c.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(c.channel.allocator.buffer(bytes: packet)))), promise: nil)
    }

    private func appendInfo(_ frame: EmulatedFrame, ts: UInt32) {
        let b = frame.afBox
        func grid(_ v: Double) -> UInt16 { UInt16(max(0, min(10000, (v * 10000).rounded()))) }
        let rec = SonyRemoteFrameRecord(
            x1: grid(b.x1), y1: grid(b.y1), x2: grid(b.x2), y2: grid(b.y2),
            category: 1, status: frame.focused ? 4 : 1, additionalStatus: 1)
        SonyRemotePacket.appendFrameInfo([rec], seq: seq, timestamp: ts, to: &packet)
    }

    func channelInactive(context: ChannelHandlerContext) {
        streamTask?.cancel()
        streamTask = nil
        emulator.state.removeStream(context.channel)
        context.fireChannelInactive()
    }
}
