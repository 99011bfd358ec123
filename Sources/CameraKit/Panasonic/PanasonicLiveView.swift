import CameraWire
import LiveViewCore
import NIOCore

/// Receives the camera's live-view datagrams (one whole JPEG each), parses them with
/// `PanasonicLiveViewParser` and publishes frames into the hub. Runs on the channel's event loop.
final class PanasonicLiveViewHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private var parser = PanasonicLiveViewParser()
    private var scratch: [UInt8] = []
    private var lastSeq: Int64?
    private let publisher: FramePublisher
    /// Only the camera's datagrams count: its address (when known) and its stream's source port.
    private var source: UDPSourceLock
    private let onFrame: @Sendable () -> Void

    init(publisher: FramePublisher, expectedSource: String?, onFrame: @escaping @Sendable () -> Void) {
        self.publisher = publisher
        source = UDPSourceLock(address: expectedSource)
        self.onFrame = onFrame
        scratch.reserveCapacity(65536)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard source.accepts(envelope.remoteAddress) else {
            publisher.stats.foreignDatagram()
            return
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        parser.ingest(scratch[...], offset: nil) { event in self.handle(event) }
    }

    private func handle(_ event: WireEvent) {
        switch event {
        case .frame(let wf):
            if let seq = wf.seq {
                // Datagrams lost on the way (IP fragments, Wi-Fi) show up as holes in seqNo.
                if let last = lastSeq, seq > last + 1, seq - last < 1000 { publisher.stats.dropped(Int(seq - last - 1), reason: "sequence-gap") }
                lastSeq = seq
            }
            // The header's time field has unconfirmed units: the arrival clock is the time base.
            publisher.publish(wf, timeBase: .arrival)
            onFrame()
        case .issue(let issue):
            publisher.stats.dropped(issue)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram error (e.g. ICMP port unreachable echoed back) does not end the stream.
    }
}
