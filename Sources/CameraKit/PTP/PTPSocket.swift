import CameraWire
import LiveViewCore
import NIOCore
import NIOPosix

/// Errors of the PTP transport layer.
public enum PTPTransportError: Error, Sendable, CustomStringConvertible {
    case timeout(String)
    case closed(String)
    case protocolError(String)
    case refused(String)

    public var description: String {
        switch self {
        case .timeout(let s): return "timeout: \(s)"
        case .closed(let s): return "connection closed: \(s)"
        case .protocolError(let s): return "protocol error: \(s)"
        case .refused(let s): return "refused: \(s)"
        }
    }
}

/// What one socket delivers: PTP/IP packets (decoded with `PTPIPPacketDecoder`) or whole
/// length-prefixed messages (`u32 LE length` counting itself: Fuji's USB containers and LV frames).
enum PTPIncoming: Sendable {
    case packet(PTPIPPacket)
    case message([UInt8])
}

/// The receive side of one socket: a queue the channel handler fills and one async reader empties.
final class PTPInbox: Sendable {
    private struct State {
        var queue: [PTPIncoming] = []
        var head = 0
        var waiter: (id: Int, cont: CheckedContinuation<PTPIncoming, any Error>)?
        var closed: (any Error)?
        var nextID = 0
    }
    private let state = Mutex(State())

    func deliver(_ item: PTPIncoming) {
        let w = state.withLock { s -> CheckedContinuation<PTPIncoming, any Error>? in
            if let w = s.waiter {
                s.waiter = nil
                return w.cont
            }
            s.queue.append(item)
            return nil
        }
        w?.resume(returning: item)
    }

    func fail(_ error: any Error) {
        let w = state.withLock { s -> CheckedContinuation<PTPIncoming, any Error>? in
            if s.closed == nil { s.closed = error }
            let w = s.waiter
            s.waiter = nil
            return w?.cont
        }
        w?.resume(throwing: error)
    }

    /// The next queued item without waiting (nil when none).
    func poll() throws -> PTPIncoming? {
        try state.withLock { s -> PTPIncoming? in
            if s.head < s.queue.count {
                let v = s.queue[s.head]
                s.head += 1
                if s.head > 64 && s.head * 2 > s.queue.count {
                    s.queue.removeFirst(s.head)
                    s.head = 0
                }
                return v
            }
            if let e = s.closed { throw e }
            return nil
        }
    }

    /// Waits for the next item; throws on close, timeout or cancellation.
    func next(timeout: Duration, on loop: any EventLoop, what: String) async throws -> PTPIncoming {
        if let v = try poll() { return v }
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        let nanos = Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let timer = loop.scheduleTask(in: .nanoseconds(nanos)) { [self] in
            self.expire(id, PTPTransportError.timeout(what))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<PTPIncoming, any Error>) in
                let immediate: Result<PTPIncoming, any Error>? = state.withLock { s in
                    if s.head < s.queue.count {
                        let v = s.queue[s.head]
                        s.head += 1
                        return .success(v)
                    }
                    if let e = s.closed { return .failure(e) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.waiter = (id, c)
                    return nil
                }
                if let r = immediate { c.resume(with: r) }
            }
        } onCancel: {
            self.expire(id, CancellationError())
        }
    }

    private func expire(_ id: Int, _ error: any Error) {
        let w = state.withLock { s -> CheckedContinuation<PTPIncoming, any Error>? in
            guard let w = s.waiter, w.id == id else { return nil }
            s.waiter = nil
            return w.cont
        }
        w?.resume(throwing: error)
    }
}

/// Splits a TCP byte stream into packets/messages and hands them to the inbox.
final class PTPSocketHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    enum Mode { case ptpip, lengthPrefixed }

    private let inbox: PTPInbox
    private let mode: Mode
    private var decoder = PTPIPPacketDecoder()
    private var buffer: [UInt8] = []
    private var scratch: [UInt8] = []
    static let maxMessage = 32 << 20

    init(inbox: PTPInbox, mode: Mode) {
        self.inbox = inbox
        self.mode = mode
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buf = unwrapInboundIn(data)
        switch mode {
        case .ptpip:
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: buf.readableBytesView)
            decoder.feed(scratch[...]) { inbox.deliver(.packet($0)) }
            if let f = decoder.failed {
                inbox.fail(PTPTransportError.protocolError("\(f)"))
                context.close(promise: nil)
            }
        case .lengthPrefixed:
            buffer.append(contentsOf: buf.readableBytesView)
            var i = 0
            while buffer.count - i >= 4 {
                let len = Int(UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8 | UInt32(buffer[i + 2]) << 16
                              | UInt32(buffer[i + 3]) << 24)
                guard len >= 8, len <= Self.maxMessage else {
                    inbox.fail(PTPTransportError.protocolError("message length \(len)"))
                    context.close(promise: nil)
                    buffer.removeAll()
                    return
                }
                guard buffer.count - i >= len else { break }
                inbox.deliver(.message(Array(buffer[i..<(i + len)])))
                i += len
            }
            if i > 0 { buffer.removeFirst(i) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.fail(PTPTransportError.closed("peer closed the connection"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        inbox.fail(PTPTransportError.closed("\(error)"))
        context.close(promise: nil)
    }
}

/// One TCP connection to the camera with an async receive.
final class PTPSocket: Sendable {
    let channel: any Channel
    let inbox: PTPInbox
    let name: String

    private init(channel: any Channel, inbox: PTPInbox, name: String) {
        self.channel = channel
        self.inbox = inbox
        self.name = name
    }

    static func connect(host: String, port: Int, group: any EventLoopGroup, mode: PTPSocketHandler.Mode,
                        name: String, timeout: Duration = .seconds(3)) async throws -> PTPSocket {
        let inbox = PTPInbox()
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(timeout.components.seconds * 1000
                                                  + timeout.components.attoseconds / 1_000_000_000_000_000)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.addHandler(PTPSocketHandler(inbox: inbox, mode: mode))
                }
            }
            .connect(host: host, port: port).get()
        return PTPSocket(channel: channel, inbox: inbox, name: name)
    }

    func send(_ bytes: [UInt8]) async throws {
        guard channel.isActive else { throw PTPTransportError.closed("\(name) socket") }
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    func send(_ packet: PTPIPPacket) async throws { try await send(packet.bytes) }

    func receive(timeout: Duration) async throws -> PTPIncoming {
        try await inbox.next(timeout: timeout, on: channel.eventLoop, what: "\(name) socket read")
    }

    func close() {
        channel.close(promise: nil)
    }
}
