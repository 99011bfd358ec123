import CameraWire
import LiveViewCore
import NIOCore

/// Tracks the emulator's open connections so faults can close them.
final class PTPConnectionSet: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let commandConnections = Mutex<[UInt32: ObjectIdentifier]>([:])
    private let nextConnection = Mutex<UInt32>(1)

    func add(_ ch: any Channel) { channels.withLock { $0[ObjectIdentifier(ch)] = ch } }
    func remove(_ ch: any Channel) { _ = channels.withLock { $0.removeValue(forKey: ObjectIdentifier(ch)) } }

    func newCommandConnection(_ ch: any Channel) -> UInt32 {
        let n = nextConnection.withLock { v -> UInt32 in
            let o = v
            v += 1
            return o
        }
        commandConnections.withLock { $0[n] = ObjectIdentifier(ch) }
        return n
    }

    func isCommandConnection(_ n: UInt32) -> Bool { commandConnections.withLock { $0[n] != nil } }

    private let eventChannels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func addEventChannel(_ ch: any Channel) { eventChannels.withLock { $0[ObjectIdentifier(ch)] = ch } }
    func removeEventChannel(_ ch: any Channel) { _ = eventChannels.withLock { $0.removeValue(forKey: ObjectIdentifier(ch)) } }

    /// Sends a PTP/IP Event packet on every event connection.
    func sendEvent(_ p: PTPIPPacket) {
        let bytes = p.bytes
        for ch in eventChannels.withLock({ Array($0.values) }) {
            ch.writeAndFlush(ch.allocator.buffer(bytes: bytes), promise: nil)
        }
    }

    func closeAll() {
        let all = channels.withLock { s -> [any Channel] in
            let v = Array(s.values)
            s.removeAll()
            return v
        }
        for ch in all { ch.close(promise: nil) }
    }

    var count: Int { channels.withLock { $0.count } }
}

/// PTP/IP responder side of one TCP connection (ptp.md §6): the first packet decides whether it is
/// the command connection (Init_Command_Request) or the event connection (Init_Event_Request).
final class PTPIPResponderHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let model: PTPEmulatorModel
    private let connections: PTPConnectionSet
    private let cameraGUID: [UInt8]
    private let name: String
    private var decoder = PTPIPPacketDecoder()
    private var scratch: [UInt8] = []
    private var role: Role = .unknown
    private var pending: (code: UInt16, tid: UInt32, params: [UInt32])?
    private var phase = PTPIPDataPhase()

    enum Role { case unknown, command, event }

    init(model: PTPEmulatorModel, connections: PTPConnectionSet, guid: [UInt8], name: String) {
        self.model = model
        self.connections = connections
        self.cameraGUID = guid
        self.name = name
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.add(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connections.remove(context.channel)
        if role == .command { model.connectionLost() }
        if role == .event { connections.removeEventChannel(context.channel) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func send(_ context: ChannelHandlerContext, _ packets: [PTPIPPacket]) {
        var out: [UInt8] = []
        for p in packets { p.serialize(into: &out) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: out)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buf = unwrapInboundIn(data)
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: buf.readableBytesView)
        var packets: [PTPIPPacket] = []
        decoder.feed(scratch[...]) { packets.append($0) }
        for p in packets { handle(context, p) }
        if decoder.failed != nil { context.close(promise: nil) }
    }

    private func handle(_ context: ChannelHandlerContext, _ p: PTPIPPacket) {
        switch (role, p) {
        case (.unknown, .initCommandRequest):
            role = .command
            let n = connections.newCommandConnection(context.channel)
            send(context, [.initCommandAck(connectionNumber: n, guid: cameraGUID, friendlyName: name,
                                           protocolVersion: PTPIPPacket.protocolVersion1)])
        case (.unknown, .initEventRequest(let n)):
            if connections.isCommandConnection(n) {
                role = .event
                send(context, [.initEventAck])
                connections.addEventChannel(context.channel)
            } else {
                send(context, [.initFail(reason: 1)])
                context.close(promise: nil)
            }
        case (_, .probeRequest):
            send(context, [.probeResponse])
        case (.command, .operationRequest(let dataPhase, let code, let tid, let params)):
            if dataPhase == PTPIPPacket.dataPhaseOut {
                pending = (code, tid, params)
            } else {
                reply(context, code: code, tid: tid, params: params, data: [])
            }
        case (.command, .startData), (.command, .data), (.command, .endData):
            switch phase.ingest(p) {
            case .incomplete: break
            case .complete:
                if let op = pending {
                    pending = nil
                    reply(context, code: op.code, tid: op.tid, params: op.params, data: phase.payload)
                }
            case .error:
                context.close(promise: nil)
            }
        case (.unknown, _):
            context.close(promise: nil)
        default:
            break
        }
    }

    private func reply(_ context: ChannelHandlerContext, code: UInt16, tid: UInt32, params: [UInt32], data: [UInt8]) {
        let r = model.handle(code: code, params: params, data: data)
        var packets: [PTPIPPacket] = []
        if let d = r.data { packets += PTPIPDataPhase.packets(transactionID: tid, data: d, chunk: 16384) }
        packets.append(.operationResponse(code: r.code, transactionID: tid, params: r.params))
        send(context, packets)
        // A property change is announced on the event socket (DevicePropChanged 0x4006).
        if r.code == PTPResponse.ok, code == 0x1016 || code == 0x9205, let prop = params.first {
            connections.sendEvent(.event(code: PTPEvent.devicePropChanged, transactionID: 0, params: [prop]))
        }
        for e in model.takePushEvents() {
            connections.sendEvent(.event(code: e.code, transactionID: 0, params: e.params))
        }
    }
}

/// Fujifilm command port: an 82-byte init packet, then USB containers (ptp.md §2.4).
final class FujiCommandHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let model: PTPEmulatorModel
    private let connections: PTPConnectionSet
    private let cameraGUID: [UInt8]
    private var buffer: [UInt8] = []
    private var initialised = false
    private var pending: (code: UInt16, tid: UInt32, params: [UInt32])?
    /// Operations with a data-out phase (the container after the command).
    static let dataOutOps: Set<UInt16> = [0x1016]

    init(model: PTPEmulatorModel, connections: PTPConnectionSet, guid: [UInt8]) {
        self.model = model
        self.connections = connections
        self.cameraGUID = guid
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.add(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connections.remove(context.channel)
        if initialised { model.connectionLost() }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

    private func send(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    static func container(type: UInt16, code: UInt16, tid: UInt32, params: [UInt32] = [], payload: [UInt8] = []) -> [UInt8] {
        var b: [UInt8] = []
        b.ptpU32(UInt32(12 + 4 * params.count + payload.count))
        b.ptpU16(type); b.ptpU16(code); b.ptpU32(tid)
        for p in params { b.ptpU32(p) }
        b += payload
        return b
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        buffer.append(contentsOf: unwrapInboundIn(data).readableBytesView)
        while buffer.count >= 8 {
            let len = Int(ptpReadLE32(buffer, 0))
            guard len >= 8, len <= 1 << 24 else {
                context.close(promise: nil)
                return
            }
            guard buffer.count >= len else { return }
            let m = Array(buffer[0..<len])
            buffer.removeFirst(len)
            handle(context, m)
        }
    }

    private func handle(_ context: ChannelHandlerContext, _ m: [UInt8]) {
        if !initialised {
            // u32 0x52, u32 1, u32 0x8F53E4F2, GUID, name: exactly 82 bytes.
            guard m.count == 82, ptpReadLE32(m, 4) == 1, ptpReadLE32(m, 8) == 0x8F53_E4F2 else {
                var fail: [UInt8] = []
                fail.ptpU32(12); fail.ptpU32(5); fail.ptpU32(1)
                send(context, fail)
                context.close(promise: nil)
                return
            }
            initialised = true
            var ack: [UInt8] = []
            ack.ptpU32(0); ack.ptpU32(2); ack.ptpU32(1)
            ack += cameraGUID
            for u in "X-H1".utf16 { ack.ptpU16(u) }
            ack.ptpU16(0)
            let n = UInt32(ack.count)
            ack[0] = UInt8(truncatingIfNeeded: n); ack[1] = UInt8(truncatingIfNeeded: n >> 8)
            send(context, ack)
            return
        }
        guard m.count >= 12 else { return }
        let type = UInt16(m[4]) | UInt16(m[5]) << 8
        let code = UInt16(m[6]) | UInt16(m[7]) << 8
        let tid = ptpReadLE32(m, 8)
        switch type {
        case 1:
            var params: [UInt32] = []
            var i = 12
            while i + 4 <= m.count {
                params.append(ptpReadLE32(m, i))
                i += 4
            }
            if Self.dataOutOps.contains(code) {
                pending = (code, tid, params)
            } else {
                reply(context, code: code, tid: tid, params: params, data: [])
            }
        case 2:
            if let op = pending, op.tid == tid {
                pending = nil
                reply(context, code: op.code, tid: tid, params: op.params, data: Array(m[12...]))
            }
        default:
            break
        }
    }

    private func reply(_ context: ChannelHandlerContext, code: UInt16, tid: UInt32, params: [UInt32], data: [UInt8]) {
        let r = model.handle(code: code, params: params, data: data)
        var out: [UInt8] = []
        if let d = r.data { out += Self.container(type: 2, code: code, tid: tid, payload: d) }
        out += Self.container(type: 3, code: r.code, tid: tid, params: r.params)
        send(context, out)
    }
}

/// Fujifilm event port: accepted and kept open (events are not emulated).
final class FujiEventHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let connections: PTPConnectionSet

    init(connections: PTPConnectionSet) { self.connections = connections }

    func channelActive(context: ChannelHandlerContext) {
        connections.add(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connections.remove(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// Fujifilm live-view port: pushes `u32 len + 14-byte header + JPEG` frames at the emulator's rate
/// while capture is open; a client that does not keep up loses frames.
final class FujiLiveViewHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let model: PTPEmulatorModel
    private let connections: PTPConnectionSet
    private var task: Scheduled<Void>?

    init(model: PTPEmulatorModel, connections: PTPConnectionSet) {
        self.model = model
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.add(context.channel)
        let channel = context.channel
        schedule(channel: channel, loop: context.eventLoop, start: MonotonicClock.nanos(), tick: 0)
        context.fireChannelActive()
    }

    /// Fixed-rate push: frame n leaves at start + n × interval whatever a send took; a late tick
    /// skips the missed frames, as a camera would.
    private func schedule(channel: any Channel, loop: any EventLoop, start: UInt64, tick: UInt64) {
        let interval = model.intervalNanos
        let model = self.model
        task = loop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(start + tick * interval)) { [weak self] in
            guard let self, channel.isActive else { return }
            if channel.isWritable, let frame = model.nextFujiFrame() {
                channel.writeAndFlush(channel.allocator.buffer(bytes: frame), promise: nil)
            }
            let now = MonotonicClock.nanos()
            var next = tick + 1
            if now > start + (next + 1) * interval { next = (now - start) / interval + 1 }
            self.schedule(channel: channel, loop: loop, start: start, tick: next)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        task?.cancel()
        task = nil
        connections.remove(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
