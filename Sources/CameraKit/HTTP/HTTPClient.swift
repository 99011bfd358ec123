public import NIOCore
import NIOHTTP1
import NIOPosix

/// Errors of the small HTTP client.
public enum HTTPClientError: Error, Sendable, CustomStringConvertible {
    case connectFailed(String)
    case timedOut(String)
    case badResponse(String)
    case closed

    public var description: String {
        switch self {
        case .connectFailed(let s): return "connect failed: \(s)"
        case .timedOut(let s): return "timed out: \(s)"
        case .badResponse(let s): return "bad HTTP response: \(s)"
        case .closed: return "connection closed"
        }
    }
}

/// A whole HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
}

/// A minimal HTTP/1.1 client on SwiftNIO for the cameras' control channels: one request per
/// connection, bounded response size, a deadline for the whole exchange.
public struct HTTPClient: Sendable {
    public let group: any EventLoopGroup
    /// Largest response body accepted.
    public var maxBodyBytes = 8 * 1024 * 1024

    public init(group: any EventLoopGroup) {
        self.group = group
    }

    /// Sends one request and returns the whole response.
    public func request(
        _ method: String, _ url: HTTPURL, headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeout: TimeAmount = .seconds(5)
    ) async throws -> HTTPResponse {
        let promise = group.next().makePromise(of: HTTPResponse.self)
        let limit = maxBodyBytes
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(timeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHTTPClientHandlers()
                        try ch.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise, limit: limit))
                    }
                }
                .connect(host: url.host, port: url.port).get()
        } catch {
            promise.fail(HTTPClientError.connectFailed("\(url.host):\(url.port): \(error)"))
            throw HTTPClientError.connectFailed("\(url.host):\(url.port): \(error)")
        }
        let timer = channel.eventLoop.scheduleTask(in: timeout) {
            promise.fail(HTTPClientError.timedOut("\(method) \(url)"))
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: url.target)
        head.headers.add(name: "Host", value: "\(url.host):\(url.port)")
        head.headers.add(name: "Connection", value: "close")
        for (k, v) in headers { head.headers.add(name: k, value: v) }
        if let body { head.headers.add(name: "Content-Length", value: String(body.count)) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if let body {
            channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
        }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        return try await promise.futureResult.get()
    }
}

private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let promise: EventLoopPromise<HTTPResponse>
    let limit: Int
    var head: HTTPResponseHead?
    var body: [UInt8] = []
    var done = false

    init(promise: EventLoopPromise<HTTPResponse>, limit: Int) {
        self.promise = promise
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
        case .body(var buf):
            if body.count + buf.readableBytes > limit {
                done = true
                promise.fail(HTTPClientError.badResponse("body larger than \(limit) bytes"))
                context.close(promise: nil)
                return
            }
            body.append(contentsOf: buf.readBytes(length: buf.readableBytes) ?? [])
        case .end:
            done = true
            guard let head else {
                promise.fail(HTTPClientError.badResponse("no head"))
                return
            }
            promise.succeed(HTTPResponse(
                status: Int(head.status.code), headers: head.headers.map { ($0.name, $0.value) }, body: body))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(HTTPClientError.closed)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            promise.fail(HTTPClientError.badResponse("\(error)"))
        }
        context.close(promise: nil)
    }
}
