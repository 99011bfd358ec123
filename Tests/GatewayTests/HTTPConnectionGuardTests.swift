@testable import Gateway
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import Testing
import TestSupport

/// The HTTP connection watch on an `EmbeddedChannel`, whose event loop's clock the test moves:
/// every deadline and count, without sockets or waiting.
@Suite("HTTP connection guard", .tags(.sanitized))
struct HTTPConnectionGuardTests {
    private func connection(_ guard: HTTPConnectionGuard) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: HTTPConnectionWatch(guard: `guard`))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    private func limits(_ change: (inout HTTPLimits) -> Void = { _ in }) -> HTTPLimits {
        var l = HTTPLimits()
        change(&l)
        return l
    }

    private let get = HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: "/api/v1/cameras"))
    private let put = HTTPRequestPart.head(HTTPRequest(method: .put, scheme: "http", authority: "127.0.0.1", path: "/api/v1/cameras/cam0/properties/iso"))

    @Test func aNewConnectionHasTenSecondsForItsFirstRequest() throws {
        let g = HTTPConnectionGuard()
        let ch = try connection(g)
        #expect(g.open == 1)
        ch.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(ch.isActive, "closed before its head deadline")
        ch.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!ch.isActive)
        #expect(g.closedCount(.headTimeout) == 1 && g.open == 0)
    }

    @Test func aRequestBeingAnsweredIsNeverIdleButTheWaitAfterItIs() throws {
        let g = HTTPConnectionGuard()
        let ch = try connection(g)
        try ch.writeInbound(get)
        try ch.writeInbound(HTTPRequestPart.end(nil))
        // A long answer (a long exposure being captured, an event stream): no deadline applies.
        ch.embeddedEventLoop.advanceTime(by: .seconds(120))
        #expect(ch.isActive)
        try ch.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try ch.writeOutbound(HTTPResponsePart.end(nil))
        // Kept alive: 30 s for the next request, counted as idle.
        ch.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(ch.isActive)
        ch.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!ch.isActive && g.closedCount(.idle) == 1)
    }

    @Test func aBodyTrickledPastTheRequestTimeoutIsCut() throws {
        let g = HTTPConnectionGuard(limits: limits { $0.requestSeconds = 5 })
        let ch = try connection(g)
        try ch.writeInbound(put)
        for _ in 0..<4 {
            try ch.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "1")))
            ch.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(ch.isActive)
        ch.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!ch.isActive && g.closedCount(.requestTimeout) == 1)
    }

    @Test func aStreamWhoseClientStopsReadingIsClosed() throws {
        let g = HTTPConnectionGuard()
        let ch = try connection(g)
        try ch.writeInbound(get)
        try ch.writeInbound(HTTPRequestPart.end(nil))
        try ch.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        ch.isWritable = false
        ch.pipeline.fireChannelWritabilityChanged()
        ch.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(ch.isActive)
        // It reads again in time: the stall is forgotten.
        ch.isWritable = true
        ch.pipeline.fireChannelWritabilityChanged()
        ch.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(ch.isActive)
        ch.isWritable = false
        ch.pipeline.fireChannelWritabilityChanged()
        ch.embeddedEventLoop.advanceTime(by: .seconds(11))
        #expect(!ch.isActive && g.closedCount(.stalled) == 1)
    }

    @Test func whenBusyWaitingConnectionsGoAfterTwoSeconds() throws {
        let g = HTTPConnectionGuard(limits: limits { $0.busyConnections = 1 })
        let first = try connection(g)
        let second = try connection(g)
        #expect(g.open == 2)
        first.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(!first.isActive && g.closedCount(.busy) == 1)
        // One left: not busy any more, so the ordinary head deadline applies.
        second.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(second.isActive)
        second.embeddedEventLoop.advanceTime(by: .seconds(8))
        #expect(!second.isActive && g.closedCount(.headTimeout) == 1 && g.open == 0)
    }

    @Test func beyondTheMaximumAConnectionGets503() throws {
        let g = HTTPConnectionGuard(limits: limits { $0.maxConnections = 1 })
        let first = try connection(g)
        let second = try connection(g)
        guard case .head(let head) = try second.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("no answer on the connection beyond the maximum")
            return
        }
        #expect(head.status == .serviceUnavailable && head.headerFields[.connection] == "close")
        #expect(!second.isActive && first.isActive && g.closedCount(.overLimit) == 1 && g.open == 1)
    }

    @Test func aRefusedBodyEndsTheConnectionWithItsAnswer() throws {
        let g = HTTPConnectionGuard()
        let ch = try connection(g)
        try ch.writeInbound(put)
        try ch.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .contentTooLarge)))
        guard case .head(let head) = try ch.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("the 413 head did not pass")
            return
        }
        #expect(head.headerFields[.connection] == "close")
        #expect(ch.isActive)
        try ch.writeOutbound(HTTPResponsePart.end(nil))
        #expect(!ch.isActive)
    }

    @Test func whatTheParserRefusesGetsAStatus() throws {
        let g = HTTPConnectionGuard()
        for (error, status) in [(HTTPParserError.headerOverflow, 431), (HTTPParserError.invalidMethod, 400)] {
            let ch = try connection(g)
            ch.pipeline.fireErrorCaught(error)
            guard case .head(let head) = try ch.readOutbound(as: HTTPResponsePart.self) else {
                Issue.record("no answer to \(error)")
                continue
            }
            #expect(head.status.code == status && !ch.isActive)
        }
        #expect(g.closedCount(.badRequest) == 2 && g.open == 0)
    }
}
