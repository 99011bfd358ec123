import CameraWire
import LiveViewCore
import NIOCore

/// Receives the camera's RTP live-view packets, reassembles frames with
/// `OlympusLiveViewReassembler` and publishes them into the hub with the camera's time (the RTP
/// timestamp, a frame number, is the frame's `sequence`; its PTS comes from `OlympusFrameClock`).
/// Every frame the reassembler drops is counted in the driver's stats. Runs on the channel's event
/// loop only.
final class OlympusLiveViewHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private var reassembler: OlympusLiveViewReassembler
    private var scratch: [UInt8] = []
    private var dropped = 0
    private let publisher: FramePublisher
    /// Only the camera's datagrams count: its address (when known) and its stream's source port.
    private var source: UDPSourceLock
    private let onDatagram: @Sendable () -> Void
    private let onFrame: @Sendable (OlympusRTP.Metadata) -> Void
    private var clock: OlympusFrameClock

    init(publisher: FramePublisher, expectedSource: String?, liveViewSize: OlympusLiveViewSize?, fps: Double,
         onDatagram: @escaping @Sendable () -> Void, onFrame: @escaping @Sendable (OlympusRTP.Metadata) -> Void) {
        self.publisher = publisher
        clock = OlympusFrameClock(fps: fps)
        source = UDPSourceLock(address: expectedSource)
        self.onDatagram = onDatagram
        self.onFrame = onFrame
        reassembler = OlympusLiveViewReassembler(liveViewSize: liveViewSize)
        scratch.reserveCapacity(65536)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard source.accepts(envelope.remoteAddress) else {
            publisher.stats.foreignDatagram()
            return
        }
        onDatagram()
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        reassembler.ingestWithMetadata(scratch[...]) { event in
            if case .frame(var wf, let metadata) = event {
                wf.pts = clock.pts(frameNumber: wf.seq ?? 0)
                let turn = Self.clockwiseDegrees(exifOrientation: metadata.rotation)
                publisher.publish(wf, timeBase: .camera) { $0.rotation = turn }
                onFrame(metadata)
            }
        }
        let d = reassembler.stats.droppedFrames
        if d > dropped {
            publisher.stats.dropped(d - dropped, reason: "incomplete")
            dropped = d
        }
    }

    /// The turn that makes the picture upright, from TLV 4's EXIF orientation (olympus.md §5:
    /// 1 = 0°, 3 = 180°, 6 = 90° CW, 8 = 270° CW); anything else (mirrored, absent) is 0.
    static func clockwiseDegrees(exifOrientation o: UInt32?) -> Int {
        switch o {
        case 3: return 180
        case 6: return 90
        case 8: return 270
        default: return 0
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram error (e.g. ICMP port unreachable echoed back) does not end the stream.
    }
}

/// A frame's PTS from its RTP timestamp, which olympus.md §6.2 reads as a frame number (+1 per
/// frame, 0 for the first): (number − the session's first) at the live view's rate, `fps` (the
/// camera does not say; 30 unless the camera URL sets `fps`). The other reading — a 90 kHz clock,
/// as in standard RTP/JPEG — is recognised by the step between a session's first two frames
/// (thousands of ticks at a video rate, never one) and converted as a clock. A number smaller than
/// the last one starts a new session (the camera restarted its live view): PTS start at 0 again,
/// which the recorder turns into a new segment.
struct OlympusFrameClock {
    private let fps: Double
    private let wholeFPS: Int64?
    private var first: Int64?
    private var last: Int64 = 0
    private var ninetyKHz: Bool?

    init(fps: Double) {
        self.fps = fps
        wholeFPS = fps == fps.rounded() ? Int64(fps) : nil
    }

    /// True once the timestamps were recognised as a 90 kHz clock.
    var readsAsClock: Bool { ninetyKHz == true }

    mutating func pts(frameNumber n: Int64) -> Int64 {
        if let f = first, n >= last {
            if ninetyKHz == nil, n > f { ninetyKHz = n - last >= 300 }
        } else {
            first = n
            ninetyKHz = nil
        }
        last = n
        let d = n - first!
        if ninetyKHz == true { return d * 1_000_000_000 / 90_000 }
        if let w = wholeFPS { return d * 1_000_000_000 / w }
        return Int64((Double(d) * 1e9 / fps).rounded(.down))
    }
}
