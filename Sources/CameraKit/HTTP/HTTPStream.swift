public import NIOCore
import NIOHTTP1
import NIOPosix

extension HTTPClient {
    /// A GET whose body is handed to `body` piece by piece as it arrives: memory stays bounded
    /// whatever the size (NIO reads the socket again only when `body` has returned). `head` gets
    /// the status and headers first and may throw to refuse the answer.
    public func stream(_ url: HTTPURL, headers: [(String, String)] = [], connectTimeout: TimeAmount = .seconds(5),
                       head: (_ status: Int, _ headers: [(String, String)]) async throws -> Void,
                       body: (ByteBuffer) async throws -> Void) async throws {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: url.host, port: url.port) { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: ch)
                    }
                }
        } catch {
            throw HTTPClientError.connectFailed("\(url.host):\(url.port): \(error)")
        }
        try await channel.executeThenClose { inbound, outbound in
            var h = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.target)
            h.headers.add(name: "Host", value: "\(url.host):\(url.port)")
            h.headers.add(name: "Connection", value: "close")
            for (k, v) in headers { h.headers.add(name: k, value: v) }
            try await outbound.write(.head(h))
            try await outbound.write(.end(nil))
            var sawHead = false
            for try await part in inbound {
                switch part {
                case .head(let r):
                    sawHead = true
                    try await head(Int(r.status.code), r.headers.map { ($0.name, $0.value) })
                case .body(let buf):
                    guard sawHead else { throw HTTPClientError.badResponse("body before head") }
                    try await body(buf)
                case .end:
                    return
                }
            }
            throw HTTPClientError.closed
        }
    }
}
