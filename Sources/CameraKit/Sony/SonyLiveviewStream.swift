import CameraWire
import LiveViewCore
import NIOCore
import NIOHTTP1

/// Reads the endless liveview HTTP body, parses the packets and publishes frames into the hub.
/// Runs on the channel's event loop; one copy from the socket into a reused scratch array (the
/// parser's input), one copy into the pooled frame.
final class SonyLiveviewHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private var parser = SonyRemoteParser()
    private var scratch: [UInt8] = []
    private var reportedUnmatched = 0
    private let publisher: FramePublisher
    private let onStatus: @Sendable (Int) -> Void
    private let onFrame: @Sendable () -> Void

    init(publisher: FramePublisher, onStatus: @escaping @Sendable (Int) -> Void, onFrame: @escaping @Sendable () -> Void) {
        self.publisher = publisher
        self.onStatus = onStatus
        self.onFrame = onFrame
        scratch.reserveCapacity(256 * 1024)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            onStatus(Int(head.status.code))
            if head.status != .ok { context.close(promise: nil) }
        case .body(let buf):
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: buf.readableBytesView)
            parser.feed(scratch[...]) { event in self.handle(event) }
            let unmatched = parser.stats.afUnmatched
            if unmatched > reportedUnmatched {
                publisher.stats.afUnmatched(unmatched - reportedUnmatched)
                reportedUnmatched = unmatched
            }
        case .end:
            context.close(promise: nil)
        }
    }

    private func handle(_ event: WireEvent) {
        switch event {
        case .frame(let wf):
            publisher.publish(wf)
            onFrame()
        case .issue(let issue):
            publisher.stats.dropped(issue)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
