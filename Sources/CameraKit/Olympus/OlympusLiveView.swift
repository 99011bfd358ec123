import CameraWire
import LiveViewCore
import NIOCore

/// Receives the camera's RTP live-view packets, reassembles frames with
/// `OlympusLiveViewReassembler` and publishes them into the hub (time base: arrival — the RTP
/// timestamp is a frame number; it becomes the frame's `sequence`). Every frame the reassembler
/// drops is counted in the driver's stats. Runs on the channel's event loop only.
final class OlympusLiveViewHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private var reassembler: OlympusLiveViewReassembler
    private var scratch: [UInt8] = []
    private var dropped = 0
    private let publisher: FramePublisher
    /// Only datagrams from this address count (nil: any sender, when the host is a name).
    private let expectedSource: String?
    private let onDatagram: @Sendable () -> Void
    private let onFrame: @Sendable (OlympusRTP.Metadata) -> Void

    init(publisher: FramePublisher, expectedSource: String?, liveViewSize: OlympusLiveViewSize?,
         onDatagram: @escaping @Sendable () -> Void, onFrame: @escaping @Sendable (OlympusRTP.Metadata) -> Void) {
        self.publisher = publisher
        self.expectedSource = expectedSource
        self.onDatagram = onDatagram
        self.onFrame = onFrame
        reassembler = OlympusLiveViewReassembler(liveViewSize: liveViewSize)
        scratch.reserveCapacity(65536)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        if let expectedSource, let ip = envelope.remoteAddress.ipAddress, ip != expectedSource { return }
        onDatagram()
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        reassembler.ingestWithMetadata(scratch[...]) { event in
            if case .frame(let wf, let metadata) = event {
                publisher.publish(wf, timeBase: .arrival)
                onFrame(metadata)
            }
        }
        let d = reassembler.stats.droppedFrames
        if d > dropped {
            publisher.stats.dropped(d - dropped)
            dropped = d
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram error (e.g. ICMP port unreachable echoed back) does not end the stream.
    }
}
