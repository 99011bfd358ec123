import NIOCore
import NIOHTTP1
import NIOPosix

/// The HTTP listener the emulators with an HTTP control channel share (Sony JSON-RPC, Panasonic
/// cam.cgi, Bandit REST): `makeHandler` builds each connection's handler, `onConnection` sees the
/// raw channel first (for fault injection that closes connections).
enum EmulatorHTTPServer {
    static func bind(
        group: any EventLoopGroup, host: String, port: Int,
        onConnection: @escaping @Sendable (any Channel) -> Void = { _ in },
        makeHandler: @escaping @Sendable () -> any ChannelHandler
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { ch in
                onConnection(ch)
                return ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try ch.pipeline.syncOperations.addHandler(makeHandler())
                }
            }
            .bind(host: host, port: port).get()
    }
}

extension ChannelHandlerContext {
    /// Runs `body` with this context on its own event loop after `delay` (at once for zero): a moody
    /// body that takes its time over an answer. The handler's loop-bound state stays on its loop.
    func afterMoodyDelay(_ delay: Duration, _ body: @escaping (ChannelHandlerContext) -> Void) {
        guard delay > .zero else { return body(self) }
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(delay.nanoseconds))) { body(bound.value) }
    }
}
