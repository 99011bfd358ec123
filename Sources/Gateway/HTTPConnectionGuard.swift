import GatewayAPI
import Hummingbird
public import HummingbirdCore
import HTTPTypes
import LiveViewCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// How long and how many: what one HTTP client may hold of the gateway.
public struct HTTPLimits: Sendable {
    /// A new connection must send a complete request head within this.
    public var headSeconds: Double = 10
    /// A kept-alive connection may wait this long for its next request.
    public var idleSeconds: Double = 30
    /// A request (head and body) must be read completely within this after its head.
    public var requestSeconds: Double = 30
    /// A response the client stops reading (its socket stays full) is given up after this.
    public var stallSeconds: Double = 10
    /// Above this many open connections the gateway is busy: a connection waiting for a request
    /// (new or kept alive) is closed after `busyWaitSeconds`, so a crowd of idle or slow
    /// connections cannot starve the clients that send requests.
    public var busyConnections = 256
    public var busyWaitSeconds: Double = 2
    /// A connection beyond this many is answered 503 and closed at once.
    public var maxConnections = 1024

    public init() {}
}

/// Watches every HTTP connection: counts them, closes the ones that wait, trickle or stall
/// beyond `HTTPLimits`, refuses connections beyond the maximum, and answers a request the
/// HTTP parser rejects (a head over 80 KiB, garbage) with a status instead of silence.
public final class HTTPConnectionGuard: Sendable {
    public let limits: HTTPLimits

    /// Why the gateway closed a connection (metrics label values).
    public enum Reason: String, CaseIterable, Sendable {
        case headTimeout = "head-timeout", idle, busy, requestTimeout = "request-timeout", stalled
        case overLimit = "over-limit", badRequest = "bad-request"
    }

    let openCount = Atomic<Int>(0)
    private let closed = Mutex<[Reason: Int]>([:])

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Connections open now.
    public var open: Int { openCount.load(ordering: .relaxed) }

    /// Connections the gateway closed for `reason` so far.
    public func closedCount(_ reason: Reason) -> Int {
        closed.withLock { $0[reason] ?? 0 }
    }

    func count(_ reason: Reason) {
        closed.withLock { $0[reason, default: 0] += 1 }
    }

    /// The HTTP/1.1 server for `Application(server:)`, with this guard on every connection.
    public func http1() -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            HTTP1Channel(responder: responder,
                         configuration: .init(additionalChannelHandlers: [HTTPConnectionWatch(guard: self)]))
        }
    }

    func writeMetrics(into m: inout MetricsSnapshot) {
        m.help("livegate_http_connections", "HTTP connections open now.", type: "gauge")
        m.sample("livegate_http_connections", [:], Double(open))
        m.help("livegate_http_connections_closed_total", "HTTP connections the gateway closed, by reason: head-timeout (no complete request in time), idle (kept alive too long), busy (waiting while too many are open), request-timeout (a request read too slowly), stalled (the client stopped reading), over-limit (refused: too many open), bad-request (the parser refused it).", type: "counter")
        for r in Reason.allCases { m.sample("livegate_http_connections_closed_total", ["reason": r.rawValue], Double(closedCount(r))) }
    }
}

/// One connection's watch, between the HTTP codec and the application. Runs on the connection's
/// event loop only: a one-second tick checks its deadlines.
final class HTTPConnectionWatch: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let guard_: HTTPConnectionGuard
    private var counted = false
    /// Requests whose head arrived and whose response has not ended.
    private var inFlight = 0
    /// True between a request's head and its end.
    private var readingRequest = false
    private var requestStarted = NIODeadline.uptimeNanoseconds(0)
    /// Since when the connection waits for a request (meaningful while `inFlight == 0`).
    private var waitingSince = NIODeadline.uptimeNanoseconds(0)
    private var servedAny = false
    private var unwritableSince: NIODeadline?
    private var tick: Scheduled<Void>?
    private var closing = false
    /// Set when the answer refuses the request's body (413): the connection ends with the answer,
    /// so the client cannot go on sending the body it was refused.
    private var closeAfterResponse = false
    /// When the sending side was shut (by this watch after a refusal, or by the server after a
    /// `Connection: close` answer): the client has read everything; what it still sends is
    /// discarded, and the connection is closed for good `lingerSeconds` later. (Closing at once
    /// with unread input would make the kernel reset the connection, and the client could lose
    /// the answer.)
    private var halfClosedAt: NIODeadline?
    private static let lingerSeconds = 2.0

    init(guard: HTTPConnectionGuard) { guard_ = `guard` }

    private var started = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        counted = true
        let n = guard_.openCount.wrappingAdd(1, ordering: .relaxed).newValue
        waitingSince = context.eventLoop.now
        scheduleTick(context)
        if n > guard_.limits.maxConnections {
            refuse(context, status: .serviceUnavailable, reason: .overLimit,
                   message: "too many connections (\(guard_.limits.maxConnections)); try again later")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) { finish() }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    /// Stops the tick and uncounts the connection, once.
    private func finish() {
        tick?.cancel()
        tick = nil
        if counted {
            counted = false
            guard_.openCount.subtract(1, ordering: .relaxed)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Nothing more will be answered: what the client still sends is dropped here.
        guard !closing, halfClosedAt == nil else { return }
        switch unwrapInboundIn(data) {
        case .head:
            inFlight += 1
            readingRequest = true
            requestStarted = context.eventLoop.now
        case .body:
            break
        case .end:
            readingRequest = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status == .contentTooLarge && readingRequest:
            closeAfterResponse = true
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end:
            inFlight = max(0, inFlight - 1)
            servedAny = true
            if inFlight == 0 { waitingSince = context.eventLoop.now }
            if closeAfterResponse {
                closing = true
                context.writeAndFlush(data, promise: promise)
                shutOutput(context)
                return
            }
        default:
            break
        }
        context.write(data, promise: promise)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        unwritableSince = context.channel.isWritable ? nil : (unwritableSince ?? context.eventLoop.now)
        context.fireChannelWritabilityChanged()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else {
            context.close(mode: mode, promise: promise)
            return
        }
        shutOutput(context, promise: promise)
    }

    /// Shuts the sending side once what was written has gone out, and notes when.
    private func shutOutput(_ context: ChannelHandlerContext, promise: EventLoopPromise<Void>? = nil) {
        let done = context.eventLoop.makePromise(of: Void.self)
        done.futureResult.assumeIsolated().whenComplete { [self] result in
            if case .success = result { halfClosedAt = halfClosedAt ?? context.eventLoop.now }
            promise?.completeWith(result)
        }
        context.close(mode: .output, promise: done)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Ending anyway: the parser's complaints about input after a refusal are nobody's business.
        if closing || halfClosedAt != nil { return }
        if error is HTTPParserError, inFlight == 0 {
            let tooLarge = (error as? HTTPParserError) == .headerOverflow
            refuse(context, status: tooLarge ? .init(code: 431) : .badRequest, reason: .badRequest,
                   message: tooLarge ? "the request line or headers are too large (at most 80 KiB)" : "malformed HTTP request")
            return
        }
        context.fireErrorCaught(error)
    }

    private func scheduleTick(_ context: ChannelHandlerContext) {
        tick = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { [self] in
            tick = nil
            check(context)
        }
    }

    private func check(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let limits = guard_.limits
        // The event loop's clock (a test's EmbeddedEventLoop moves it by hand).
        let now = context.eventLoop.now
        func over(_ since: NIODeadline, _ seconds: Double) -> Bool { now - since > .nanoseconds(Int64(seconds * 1e9)) }
        if let since = halfClosedAt, over(since, Self.lingerSeconds) {
            context.close(promise: nil)
            return
        }
        var reason: HTTPConnectionGuard.Reason?
        if let since = unwritableSince, over(since, limits.stallSeconds) {
            // Answer bytes wait and the client reads nothing (whether or not a request is open).
            reason = .stalled
        } else if closing || halfClosedAt != nil {
            reason = nil  // ending already: the answer is on its way, the linger closes it
        } else if readingRequest, over(requestStarted, limits.requestSeconds) {
            reason = .requestTimeout
        } else if inFlight == 0 {
            if guard_.open > limits.busyConnections, over(waitingSince, limits.busyWaitSeconds) {
                reason = .busy
            } else if over(waitingSince, servedAny ? limits.idleSeconds : limits.headSeconds) {
                reason = servedAny ? .idle : .headTimeout
            }
        }
        if let reason {
            closing = true
            guard_.count(reason)
            context.close(promise: nil)
        } else {
            scheduleTick(context)
        }
    }

    /// Answers once with a short JSON error, then shuts the sending side (the linger closes the rest).
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponse.Status, reason: HTTPConnectionGuard.Reason, message: String) {
        closing = true
        guard_.count(reason)
        let body = ControlAPI.jsonBytes(ErrorBody(error: message))
        var head = HTTPResponse(status: status)
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = "\(body.readableBytes)"
        head.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        shutOutput(context)
    }
}
