public import CameraWire
public import LiveViewCore
import NIOCore

/// Turns Bandit viewfinder datagrams into published frames (no sockets: the UDP handler and the tests
/// feed it). Reassembly is CameraWire's `BanditViewfinderReassembler` (bandit.md §3.3); on top of it
/// this counts every frame that was lost:
///
/// * frames the reassembler abandons (a datagram of it missing, a new start before it completed, a
///   broken JPEG) — its own `droppedFrames`;
/// * frames whose **frame-start** datagram was lost: their data datagrams arrive while the
///   reassembler waits and it ignores them silently. A data datagram after a gap in the packet
///   numbers that lies outside the range of the last started frame (start + ⌈jpg_size / chunk⌉, chunk
///   = the largest data payload seen) is such a frame, counted once.
///
/// Not thread-safe: call from one thread (the UDP channel's event loop).
///
/// PTS (bandit.md §3.2): float32 seconds, 0.0 while the camera is not recording; while recording it is
/// the PTS of the frame in the file being written. A frame with PTS ≠ 0 gets `cameraPTS` and
/// `timeBase = .camera` (so a recording lines up with the camera's own file); a frame with PTS 0 gets
/// `cameraPTS = nil` and `.arrival`.
public final class BanditViewfinderIngest {
    private var reassembler: BanditViewfinderReassembler
    private let publisher: FramePublisher
    private var stats: DriverStats { publisher.stats }
    private let onFrame: (@Sendable (Frame) -> Void)?

    // Loss accounting.
    private var inFrame = false
    private var lastNumber: UInt16?
    private var chunk = 0
    private var startNumber: UInt16 = 0
    private var startSize = 0
    private var haveStart = false
    private var orphanCounted = false

    /// Frames published.
    public private(set) var framesPublished = 0
    /// Frames lost (also counted in `stats.dropped`).
    public private(set) var framesDropped = 0
    /// Datagrams ingested.
    public private(set) var datagrams = 0
    /// The reassembler's counters.
    public var wireStats: WireStats { reassembler.stats }

    public init(hub: FrameHub, pool: FramePool, stats: DriverStats, cameraIndex: Int = 0,
                limits: WireLimits = .default, onFrame: (@Sendable (Frame) -> Void)? = nil) {
        self.reassembler = BanditViewfinderReassembler(limits: limits)
        self.publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex)
        self.onFrame = onFrame
    }

    private func countDrop(_ n: Int = 1, reason: String) {
        guard n > 0 else { return }
        framesDropped += n
        stats.dropped(n, reason: reason)
    }

    /// Is `n` one of the data datagrams of the frame started last (needs a known chunk size)?
    private func inLastFrame(_ n: UInt16) -> Bool {
        guard haveStart, chunk > 0 else { return false }
        let span = (startSize + chunk - 1) / chunk
        let off = Int(n &- startNumber)
        return off >= 1 && off <= span
    }

    /// A datagram from someone other than the camera's stream, dropped unread.
    public func foreignDatagram() { stats.foreignDatagram() }

    /// Feeds one datagram (the UDP payload).
    public func ingest(_ d: ArraySlice<UInt8>) {
        datagrams += 1
        let b = d.startIndex
        let valid = d.count >= 7 && d[b] == 0x55 && d[b + 1] == 0xAA
            && d.count == 7 + (Int(d[b + 5]) << 8 | Int(d[b + 6]))
        guard valid else {
            // Malformed: the reassembler reports and ignores it; no frame is lost by it.
            reassembler.ingest(d) { _ in }
            return
        }
        let type = d[b + 2]
        let number = UInt16(d[b + 3]) << 8 | UInt16(d[b + 4])
        let gap = lastNumber.map { number != $0 &+ 1 } ?? false
        lastNumber = number
        let wasInFrame = inFrame
        let droppedBefore = reassembler.stats.droppedFrames
        var emitted = false
        var terminal = false
        var lostDatagram = false
        var reason = "incomplete"
        reassembler.ingest(d) { event in
            switch event {
            case .frame(let wf):
                emitted = true
                self.publish(wf)
            case .issue(let issue):
                reason = issue.error.dropReason
                switch issue.error {
                case .sizeOverLimit, .noJPEGAtOffset, .badJPEG: terminal = true
                case .datagramLost: lostDatagram = true
                default: break
                }
            }
        }
        countDrop(reassembler.stats.droppedFrames - droppedBefore, reason: reason)
        switch type {
        case 0 where d.count >= 15:
            startNumber = number
            startSize = Int(d[b + 7]) << 24 | Int(d[b + 8]) << 16 | Int(d[b + 9]) << 8 | Int(d[b + 10])
            haveStart = true
            orphanCounted = false
            inFrame = !(emitted || terminal)
        case 1:
            let payload = d.count - 7
            if wasInFrame {
                if payload > chunk { chunk = payload }
                if emitted || terminal || lostDatagram { inFrame = false }
                // The gap also swallowed the next frame's start: that frame is lost too.
                if lostDatagram && chunk > 0 && !inLastFrame(number) {
                    countDrop(reason: "datagram-lost")
                    orphanCounted = true
                }
            } else if gap && !inLastFrame(number) && !orphanCounted {
                countDrop(reason: "datagram-lost")
                orphanCounted = true
            }
        default:
            break
        }
    }

    /// End of input (a capture file): a frame still being assembled is counted as lost.
    public func finish() {
        let before = reassembler.stats.droppedFrames
        reassembler.finish { _ in }
        countDrop(reassembler.stats.droppedFrames - before, reason: "incomplete")
        inFrame = false
    }

    private func publish(_ wf: WireFrame) {
        framesPublished += 1
        // PTS 0 means "not recording": only a running recording has the camera's time base.
        let recording = (wf.pts ?? 0) != 0
        publisher.publish(wf, timeBase: recording ? .camera : .arrival) { frame in onFrame?(frame) }
    }
}

/// The viewfinder's UDP socket handler: one copy from the datagram into a reused scratch array, then
/// the ingest. Datagrams from another address than `acceptFrom` (when set), or from another port
/// than the stream's while it streams, are dropped unread and counted.
final class BanditViewfinderHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let ingest: BanditViewfinderIngest
    /// Only the camera's datagrams count: its address (when known) and its stream's source port.
    private var source: UDPSourceLock
    private let onDatagram: @Sendable () -> Void
    private var scratch: [UInt8] = []

    init(ingest: BanditViewfinderIngest, acceptFrom: String?, onDatagram: @escaping @Sendable () -> Void) {
        self.ingest = ingest
        source = UDPSourceLock(address: acceptFrom)
        self.onDatagram = onDatagram
        scratch.reserveCapacity(65_536)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard source.accepts(envelope.remoteAddress) else {
            ingest.foreignDatagram()
            return
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        onDatagram()
        ingest.ingest(scratch[...])
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP read error (e.g. ICMP port unreachable echoes) is not fatal for the stream.
    }
}
