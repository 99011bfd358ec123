@testable import CameraKit
import Foundation
import LiveViewCore
import NIOCore
import Testing
import TestSupport

/// The cameras' HTTP client against a loopback server that answers as told: the deadline covers
/// the whole exchange, a caller's cancellation does not abandon a request the camera has acted on,
/// and bodies are capped.
@Suite(.tags(.integration, .sanitized)) struct CameraHTTPTests {
    /// Accepts one connection, reads the request head, waits `delay` (and for `release()` when
    /// `gated`), writes `reply`, and holds the connection open for `hold` seconds. `requests` holds
    /// what it read.
    final class Server: Sendable {
        let port: Int
        let requests = Collected<[String]>([])
        private let fd: Int32
        private let gate = DispatchSemaphore(value: 0)

        func release() { gate.signal() }

        init(reply: [UInt8], delay: Double = 0, hold: Double = 10, gated: Bool = false) throws {
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
            let listener = fd, requests = self.requests, gate = self.gate
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
                if gated { gate.wait() }
                Thread.sleep(forTimeInterval: delay)
                _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Thread.sleep(forTimeInterval: hold)
            }
        }

        deinit {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        var url: HTTPURL { HTTPURL(host: "127.0.0.1", port: port, target: "/cmd?x=1") }
    }

    /// The error `work` throws (nil when it throws none or another kind).
    func failure(_ work: () async throws -> Void) async -> CameraHTTPError? {
        do { try await work() } catch let e as CameraHTTPError { return e } catch { return nil }
        return nil
    }

    @Test func aCameraThatSendsItsHeadAndThenNothingIsCutAtTheDeadline() async throws {
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".utf8))
        let start = ContinuousClock.now
        let e = await failure { _ = try await CameraHTTP().request("GET", server.url, timeout: .milliseconds(500)) }
        let took = ContinuousClock.now - start
        guard case .timedOut = e else { Issue.record("expected a time-out, got \(String(describing: e))"); return }
        #expect(took >= .milliseconds(450) && took < .seconds(3), "gave up after \(took)")
    }

    @Test func aRequestRunsToItsAnswerWhenItsCallerIsCancelled() async throws {
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), hold: 0, gated: true)
        let caller = Task { try await CameraHTTP().request("GET", server.url, timeout: .seconds(10)) }
        // Cancelled once the camera has the request and before it answers.
        let deadline = ContinuousClock.now + .seconds(10)
        while server.requests.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        caller.cancel()
        try await Task.sleep(for: .milliseconds(100))
        server.release()
        let answer = try await caller.value
        #expect(answer.status == 200 && answer.body == Array("ok".utf8))
        #expect(server.requests.withLock { $0.first?.hasPrefix("GET /cmd?x=1 HTTP/1.1\r\n") } == true)
    }

    @Test func aDownloadFromACameraThatFallsSilentEndsAfterItsIdleTimeout() async throws {
        let part = String(repeating: "y", count: 1000)
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n\(part)".utf8))
        let received = Collected(0)
        let start = ContinuousClock.now
        let e = await failure {
            try await CameraHTTP().stream(server.url, idleTimeout: .seconds(1), head: { status, _ in
                #expect(status == 200)
            }, body: { piece in received.withLock { $0 += piece.readableBytes } })
        }
        let took = ContinuousClock.now - start
        guard case .timedOut = e else { Issue.record("expected a time-out, got \(String(describing: e))"); return }
        #expect(received.withLock { $0 } == 1000)
        #expect(took >= .milliseconds(900) && took < .seconds(5), "gave up after \(took)")
    }

    @Test(arguments: [true, false])
    func aBodyOverTheCapIsRefused(sized: Bool) async throws {
        // Sized: refused from its Content-Length; unsized (ends when the camera closes): counted as it comes.
        let body = String(repeating: "x", count: 5000)
        let head = sized ? "Content-Length: 5000" : "Connection: close"
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\n\(head)\r\n\r\n\(body)".utf8), hold: 0)
        let e = await failure { _ = try await CameraHTTP(maxBodyBytes: 4096).request("GET", server.url) }
        guard case .badResponse(let why) = e else { Issue.record("expected a refusal, got \(String(describing: e))"); return }
        #expect(why.contains("larger than 4096"), "\(why)")
        // The same answer within the cap is taken whole.
        let fits = try Server(reply: Array("HTTP/1.1 200 OK\r\n\(head)\r\n\r\n\(body)".utf8), hold: 0)
        #expect(try await CameraHTTP(maxBodyBytes: 5000).request("GET", fits.url).body.count == 5000)
    }

    /// A card file whose name has characters a URL may not carry is asked for by its encoded name,
    /// whole (not cut at a `#`), while queries and existing escapes go out unchanged.
    @Test func aTargetIsSentPercentEncodedWhereItMustBe() async throws {
        let server = try Server(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), hold: 0)
        let url = HTTPURL(host: "127.0.0.1", port: server.port, target: "/DCIM/100/A B#1%20ü%zz.JPG?x=1&y=%41")
        let r = try await CameraHTTP().request("GET", url, timeout: .seconds(5))
        #expect(r.status == 200)
        let line = server.requests.withLock { $0.first?.split(separator: "\r\n").first.map(String.init) }
        #expect(line == "GET /DCIM/100/A%20B%231%20%C3%BC%25zz.JPG?x=1&y=%41 HTTP/1.1", "request line: \(line ?? "none")")
        #expect(HTTPURL.encodeTarget("/get_imglist.cgi?DIR=/DCIM/100OLYMP") == "/get_imglist.cgi?DIR=/DCIM/100OLYMP")
    }

    /// A card's raw file path becomes a URL path that names that file and nothing else: `%`, `?`,
    /// `#` and spaces are encoded; a camera's URL loses its fragment.
    @Test func cardPathsAreEncodedWholeAndFragmentsAreDropped() {
        #expect(HTTPURL.encodePath("/DCIM/100OLYMP/A%41 #?.JPG") == "/DCIM/100OLYMP/A%2541%20%23%3F.JPG")
        #expect(HTTPURL.encodePath("/DCIM/100OLYMP/P1010001.JPG") == "/DCIM/100OLYMP/P1010001.JPG")
        #expect(HTTPURL.encodeTarget(HTTPURL.encodePath("/D/A%41.JPG")) == "/D/A%2541.JPG")
        #expect(HTTPURL("http://127.0.0.1:8080/postview/1.jpg?size=2M#top")?.target == "/postview/1.jpg?size=2M")
    }
}
