import CameraWire
import LiveViewCore
import NIOCore
import NIOHTTP1

/// Reads the endless liveview HTTP body, parses the packets and publishes frames into the hub.
/// Runs on the channel's event loop; one copy from the socket into a reused scratch array (the
/// parser's input), one copy into the pooled frame.
final class SonyLiveviewHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    private var parser = SonyRemoteParser()
    private var scratch: [UInt8] = []
    private let hub: FrameHub
    private let pool: FramePool
    private let stats: DriverStats
    private let onStatus: @Sendable (Int) -> Void
    private let onFrame: @Sendable () -> Void
    private let cameraIndex: Int

    init(hub: FrameHub, pool: FramePool, stats: DriverStats, cameraIndex: Int,
         onStatus: @escaping @Sendable (Int) -> Void, onFrame: @escaping @Sendable () -> Void) {
        self.hub = hub
        self.pool = pool
        self.stats = stats
        self.cameraIndex = cameraIndex
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
        case .end:
            context.close(promise: nil)
        }
    }

    private func handle(_ event: WireEvent) {
        switch event {
        case .frame(let wf):
            let now = MonotonicClock.nanos()
            let frame = pool.take()
            wf.jpeg.withUnsafeBytes { frame.setJPEG($0) }
            frame.width = wf.width
            frame.height = wf.height
            frame.sequence = wf.seq.map { UInt64(truncatingIfNeeded: $0) }
            frame.cameraPTS = wf.pts
            frame.timeBase = wf.pts == nil ? .arrival : .camera
            frame.arrivalNanos = now
            frame.cameraIndex = cameraIndex
            frame.afAreas.append(contentsOf: wf.af)
            stats.frame(bytes: frame.count, at: now)
            hub.publish(frame)
            onFrame()
        case .issue:
            stats.dropped()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
