@testable import CameraKit
import Foundation
import LiveViewCore
import NIOCore
import Testing
import TestSupport

/// The cameras' HTTP client against a loopback server that answers as told: the deadline covers
/// the whole exchange, a caller's cancellation does not abandon a request the camera has acted on,
/// and bodies are capped.
@Suite struct CameraHTTPTests {
    /// Accepts one connection, reads the request head, waits `delay`, writes `reply`, and holds the
    /// connection open for `hold` seconds. `requests` holds what it read.
    final class Server: Sendable {
        let port: Int
        let requests = Collected<[String]>([])
        private let fd: Int32

        init(reply: [UInt8], delay: Double = 0, hold: Double = 10) throws {
            let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(s, 4) == 0 else {
                close(s)
                throw CameraHTTPError.connectFailed("test server")
            }
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
            fd = s
            port = Int(UInt16(bigEndian: a.sin_port))
            let listener = fd, requests = self.requests
            Thread.detachNewThread {
                let c = accept(listener, nil, nil)
                guard c >= 0 else { return }
                defer { close(c) }
                var head = [UInt8]()
                var buf = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                    let n = recv(c, &buf, buf.count, 0)
                    if n <= 0 { return }
                    head += buf[0..<n]
                }
                requests.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
                Thread.sleep(forTimeInterval: delay)
                _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Thread.sleep(forTimeInterval: hold)
            }
        }

        deinit { close(fd) }
        var url: HTTPURL { HTTPURL(host: "127.0.0.1", port: port, target: "/cmd?x=1") }
    }

    @Test func aCameraThatSendsItsHeadAndThenNothingIsCutAtTheDeadline() async throws {
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".utf8))
        let start = ContinuousClock.now
        await #expect(throws: CameraHTTPError.self) {
            _ = try await CameraHTTP().request("GET", server.url, timeout: .milliseconds(500))
        }
        let took = ContinuousClock.now - start
        #expect(took < .seconds(3), "gave up after \(took)")
    }

    @Test func aRequestRunsToItsAnswerWhenItsCallerIsCancelled() async throws {
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), delay: 0.3, hold: 0)
        let caller = Task { try await CameraHTTP().request("GET", server.url, timeout: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        caller.cancel()
        let answer = try await caller.value
        #expect(answer.status == 200 && answer.body == Array("ok".utf8))
        #expect(server.requests.withLock { $0.first?.hasPrefix("GET /cmd?x=1 HTTP/1.1\r\n") } == true)
    }

    @Test func aDownloadFromACameraThatFallsSilentEndsAfterItsIdleTimeout() async throws {
        let part = String(repeating: "y", count: 1000)
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n\(part)".utf8))
        let received = Collected(0)
        let start = ContinuousClock.now
        await #expect(throws: CameraHTTPError.self) {
            try await CameraHTTP().stream(server.url, idleTimeout: .seconds(1), head: { status, _ in
                #expect(status == 200)
            }, body: { piece in received.withLock { $0 += piece.readableBytes } })
        }
        let took = ContinuousClock.now - start
        #expect(received.withLock { $0 } == 1000)
        #expect(took < .seconds(5), "gave up after \(took)")
    }

    @Test func aBodyOverTheCapIsRefused() async throws {
        let body = String(repeating: "x", count: 5000)
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n\(body)".utf8), hold: 0)
        await #expect(throws: CameraHTTPError.self) {
            _ = try await CameraHTTP(maxBodyBytes: 4096).request("GET", server.url)
        }
    }
}
