import Foundation
@testable import Gateway
import Testing
import TestSupport

/// curl with extra arguments; the status code (0 when curl failed) and the body.
func curl(_ args: [String]) async -> (status: Int, body: String) {
    guard let curl = Locations.program("curl"),
          let r = try? await runProcessAsync(curl, ["-s", "-m", "5", "-w", "\n%{http_code}"] + args, timeout: 10) else { return (0, "") }
    var lines = r.output.split(separator: "\n", omittingEmptySubsequences: false)
    let code = Int(lines.popLast() ?? "") ?? 0
    return (code, lines.joined(separator: "\n"))
}

@Suite("Access policy")
struct AccessPolicyTests {
    @Test func hostsThatNameThisMachineOnly() {
        let p = AccessPolicy(allowedHosts: ["studio.example"])
        for ok in ["127.0.0.1:8080", "localhost:8080", "localhost", "[::1]:8080", "192.168.1.20:8080", "STUDIO.example:8080"] {
            #expect(p.hostAllowed(ok), "\(ok)")
        }
        for bad in ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "1.2.3.999", "", "localhost.evil.example:80"] {
            #expect(!p.hostAllowed(bad), "\(bad)")
        }
        #expect(!p.hostAllowed(nil))
    }

    @Test func tokensCompareWholly() {
        #expect(AccessPolicy.constantTimeEqual("abcdefghijklmnop", "abcdefghijklmnop"))
        #expect(!AccessPolicy.constantTimeEqual("abcdefghijklmnop", "abcdefghijklmnoq"))
        #expect(!AccessPolicy.constantTimeEqual("abcdefghijklmnop", "abcdefghijklmno"))
        #expect(!AccessPolicy.constantTimeEqual("", "a"))
        let t = AccessPolicy.generateToken()
        #expect(t.count == 43 && t.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }, "\(t)")
        #expect(t != AccessPolicy.generateToken())
    }

    @Test func loopbackAddresses() {
        for a in ["127.0.0.1", "127.1.2.3", "::1", "localhost"] { #expect(AccessPolicy.isLoopback(a)) }
        for a in ["0.0.0.0", "::", "192.168.1.2", "10.0.0.1"] { #expect(!AccessPolicy.isLoopback(a)) }
    }
}

@Suite("Access control", .serialized, .tags(.integration))
struct AccessControlTests {
    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary"))
    func theLANNeedsAToken() async throws {
        let r = try await runProcessAsync("/usr/bin/env", ["-u", "LIVEGATE_TOKEN", livegateBinary()!, "run", "--listen", "0.0.0.0",
                                                           "--http-port", "\(try freePort())", "--rtsp-port", "\(try freePort())"], timeout: 20)
        #expect(r.status != 0)
        #expect(r.output.contains("Error: --listen 0.0.0.0 serves every camera to the network, so a token is required"), "\(r.output)")
        let short = try await runProcessAsync(livegateBinary()!, ["run", "--token", "short"], timeout: 20)
        #expect(short.status != 0 && short.output.contains("--token must be at least 16 printable characters"), "\(short.output)")
        let made = try await runProcessAsync(livegateBinary()!, ["token"], timeout: 20)
        #expect(made.status == 0 && made.output.trimmingCharacters(in: .whitespacesAndNewlines).count == 43, "\(made.output)")
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil && Locations.program("ffprobe") != nil, "needs the livegate binary, curl and ffprobe"))
    func everyEndpointNeedsTheTokenAndRTSPItsPassword() async throws {
        let token = AccessPolicy.generateToken()
        let gw = try GatewayProcess(["--hls"], environment: ["LIVEGATE_TOKEN": token])
        #expect(await gw.waitReady(), "\(gw.output)")
        let base = gw.api
        let bearer = ["-H", "Authorization: Bearer \(token)"]
        let gets = ["/", "/api/v1/cameras", "/api/v1/cameras/cam0", "/api/v1/cameras/cam0/properties", "/metrics",
                    "/hls/cam0/index.m3u8", "/snapshot/cam0.jpg", "/api/v1/cameras/cam0/captures"]
        for path in gets {
            let without = await curl([base + path])
            #expect(without.status == 401, "GET \(path) without the token: \(without.status)")
            let wrong = await curl(["-H", "Authorization: Bearer \(token.dropLast())x", base + path])
            #expect(wrong.status == 401, "GET \(path) with a wrong token: \(wrong.status)")
            let with = await curl(bearer + ["-o", "/dev/null", base + path])
            #expect(with.status != 401 && with.status != 0, "GET \(path) with the token: \(with.status)")
        }
        // Streams that keep going: the headers tell.
        for path in ["/mjpeg/cam0", "/api/v1/events"] {
            #expect(await curl(["-m", "2", base + path]).status == 401, "\(path)")
            #expect(await curl(bearer + ["-m", "2", "-o", "/dev/null", base + path]).status == 200, "\(path) with the token")
            #expect(await curl(["-m", "2", "-o", "/dev/null", base + path + "?token=\(token)"]).status == 200, "\(path)?token=")
        }
        let whep = await curl(["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", "v=0", base + "/whep/cam0"])
        #expect(whep.status == 401)
        let reload = await curl(["-X", "POST", "-H", "Content-Type: application/json", base + "/api/v1/reload"])
        #expect(reload.status == 401)
        // The page opened with ?token= keeps it in a same-site cookie for its own requests.
        let jar = FileManager.default.temporaryDirectory.appendingPathComponent("lg-jar-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: jar) }
        let page = await curl(["-c", jar, base + "/?token=\(token)"])
        #expect(page.status == 200 && page.body.contains("<html"), "\(page.status)")
        let jarText = (try? String(contentsOfFile: jar, encoding: .utf8)) ?? ""
        #expect(jarText.contains("livegate_token") && jarText.contains("#HttpOnly"), "\(jarText)")
        #expect(await curl(["-b", jar, base + "/api/v1/cameras"]).status == 200)

        // RTSP: user livegate with the token as password.
        let ffprobe = Locations.program("ffprobe")!
        let noAuth = try await runProcessAsync(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "rtsp://127.0.0.1:\(gw.rtsp)/cam0/raw"], timeout: 20)
        #expect(noAuth.status != 0 && noAuth.output.contains("401"), "\(noAuth.output)")
        let badAuth = try await runProcessAsync(ffprobe, ["-v", "error", "-rtsp_transport", "tcp",
                                                          "rtsp://livegate:nope@127.0.0.1:\(gw.rtsp)/cam0/raw"], timeout: 20)
        #expect(badAuth.status != 0, "\(badAuth.output)")
        for mount in ["cam0/raw", "cam0"] {
            let ok = try await runProcessAsync(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                                         "-of", "csv=p=0", "rtsp://livegate:\(token)@127.0.0.1:\(gw.rtsp)/\(mount)"], timeout: 20)
            #expect(ok.status == 0 && (ok.output.contains("mjpeg") || ok.output.contains("h264")), "\(mount): \(ok.output)")
        }
        #expect(!gw.output.contains(token), "the log must never show the token")
        await gw.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil, "needs the livegate binary and curl"))
    func foreignHostsOriginsAndSimpleRequestsAreRefused() async throws {
        let gw = try GatewayProcess([])
        #expect(await gw.waitReady(), "\(gw.output)")
        let base = gw.api
        let json = ["-H", "Content-Type: application/json"]
        let put = ["-X", "PUT", "--data", #"{"value": "tungsten"}"#, base + "/api/v1/cameras/cam0/properties/whiteBalance"]
        // DNS rebinding: a name that is not this machine.
        let rebinding = await curl(["-H", "Host: evil.example", base + "/api/v1/cameras"])
        #expect(rebinding.status == 421, "\(rebinding)")
        #expect(await curl(["-H", "Host: evil.example:\(gw.http)"] + json + put).status == 421)
        // A page on another site: refused even with a JSON type.
        let foreign = await curl(["-H", "Origin: http://evil.example"] + json + put)
        #expect(foreign.status == 403, "\(foreign)")
        // CORS-simple requests (a form, a no-CORS fetch) cannot change anything.
        let form = await curl(["-X", "POST", "-H", "Content-Type: text/plain", "--data", "{}", base + "/api/v1/cameras/cam0/capture"])
        #expect(form.status == 415, "\(form)")
        let bare = await curl(["-X", "POST", base + "/api/v1/cameras/cam0/capture"])
        #expect(bare.status == 415, "\(bare)")
        // This machine's own names work, and the page's own origin may change things.
        #expect(await curl([base + "/api/v1/cameras"]).status == 200)
        #expect(await curl(["http://localhost:\(gw.http)/api/v1/cameras"]).status == 200)
        let same = await curl(["-H", "Origin: http://127.0.0.1:\(gw.http)"] + json + put)
        #expect(same.status == 200, "\(same)")
        #expect(await curl(["-o", "/dev/null", "-D", "-", base + "/whep/cam0", "-X", "OPTIONS"]).body.contains("Access-Control-Allow-Origin") == false)
        await gw.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil, "needs the livegate binary and curl"))
    func onlyListedOriginsMayReadAcrossSites() async throws {
        let gw = try GatewayProcess(["--hls", "--allow-origin", "https://Studio.example/"])
        #expect(await gw.waitReady(), "\(gw.output)")
        func allowOrigin(_ headers: String) -> String? {
            headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("access-control-allow-origin:") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
        }
        // No wildcard anywhere: a page of any other site reads nothing.
        for path in ["/snapshot/cam0.jpg", "/api/v1/cameras", "/hls/cam0/index.m3u8"] {
            let plain = await curl(["-o", "/dev/null", "-D", "-", "-H", "Origin: http://evil.example", gw.api + path])
            #expect(plain.status != 0 && allowOrigin(plain.body) == nil, "\(path): \(plain.body)")
        }
        let listed = await curl(["-o", "/dev/null", "-D", "-", "-H", "Origin: https://studio.example", gw.api + "/api/v1/cameras"])
        #expect(allowOrigin(listed.body) == "https://studio.example", "\(listed.body)")
        #expect(listed.body.lowercased().contains("vary: origin"))
        // A listed origin may read, not change: state changes stay same-origin.
        let put = await curl(["-X", "PUT", "-H", "Origin: https://studio.example", "-H", "Content-Type: application/json",
                              "--data", #"{"value": "tungsten"}"#, gw.api + "/api/v1/cameras/cam0/properties/whiteBalance"])
        #expect(put.status == 403, "\(put)")
        await gw.stop()
        let bad = try await runProcessAsync(livegateBinary()!, ["run", "--allow-origin", "https://studio.example/page"], timeout: 20)
        #expect(bad.status != 0 && bad.output.contains("is not an origin"), "\(bad.output)")
    }
}

/// Connects to 127.0.0.1:`port`, sends `bytes` (all at once, or one a second when `trickle`), and
/// waits (at most `limit` seconds) for the server to close the connection; returns how long that
/// took, or nil when it stayed open.
func secondsUntilClosed(port: Int, sending bytes: String, limit: Int, trickle: Bool = false) -> Double? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    guard withLoopbackAddress(port: port, { connect(fd, $0, $1) == 0 }) else { return nil }
    var tv = timeval(tv_sec: trickle ? 1 : limit, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    let start = Date()
    var buf = [UInt8](repeating: 0, count: 4096)
    if trickle {
        // One byte, then a second's wait for the server to hang up, and so on.
        for b in Array(bytes.utf8) {
            guard Date().timeIntervalSince(start) < Double(limit) else { return nil }
            var byte = b
            if send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) < 0 { return Date().timeIntervalSince(start) }
            if recv(fd, &buf, buf.count, 0) == 0 { return Date().timeIntervalSince(start) }
        }
        return nil
    }
    if !bytes.isEmpty { _ = bytes.withCString { send(fd, $0, strlen($0), 0) } }
    while true {
        let n = recv(fd, &buf, buf.count, 0)
        if n == 0 { return Date().timeIntervalSince(start) }  // closed by the server
        if n < 0 { return nil }  // still open when the limit passed
    }
}

@Suite("HTTP connection limits", .serialized, .tags(.integration))
struct HTTPConnectionLimitTests {
    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil, "needs the livegate binary and curl"))
    func idleAndTricklingConnectionsCloseButStreamsGoOn() async throws {
        let gw = try GatewayProcess(["--http-idle-timeout", "2"])
        #expect(await gw.waitReady(), "\(gw.output)")
        let port = gw.http
        // A connection that never sends anything, and one whose request head stops half-way.
        let idle = await Task.detached { secondsUntilClosed(port: port, sending: "", limit: 8) }.value
        #expect(idle != nil && idle! < 6, "an idle connection stayed open (\(String(describing: idle)))")
        let slow = await Task.detached { secondsUntilClosed(port: port, sending: "GET /api/v1/cameras HTTP/1.1\r\nHo", limit: 8) }.value
        #expect(slow != nil && slow! < 6, "a half-sent request head kept its connection (\(String(describing: slow)))")
        // Slowloris: a head trickled in a byte a second is cut at the timeout all the same.
        let head = "GET /api/v1/cameras HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 20)
        let trickled = await Task.detached { secondsUntilClosed(port: port, sending: head, limit: 10, trickle: true) }.value
        #expect(trickled != nil && trickled! < 6, "a trickled request head kept its connection (\(String(describing: trickled)))")
        // A stream being answered is not idle: MJPEG runs past the timeout until the client ends it.
        let stream = try await runProcessAsync(Locations.program("curl")!, ["-s", "-m", "5", "-o", "/dev/null", "-w", "%{time_total}",
                                                               "\(gw.api)/mjpeg/cam0"], timeout: 15)
        let lasted = Double(stream.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(lasted >= 4.5, "the MJPEG stream ended after \(lasted) s")
        #expect(await curl(["\(gw.api)/api/v1/cameras"]).status == 200)
        // A request line over 80 KiB and garbage get a status, not silence, and are counted.
        let huge = await curl(["-D", "-", "\(gw.api)/" + String(repeating: "a", count: 100_000)])
        #expect(huge.status == 431, "\(huge.body.prefix(300))")
        let metrics = await curl(["\(gw.api)/metrics"]).body
        let closed = { (reason: String) -> Double in
            metrics.split(separator: "\n").first { $0.hasPrefix("livegate_http_connections_closed_total{reason=\"\(reason)\"}") }
                .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? -1
        }
        #expect(closed("head-timeout") >= 3 && closed("bad-request") == 1, "\(metrics.split(separator: "\n").filter { $0.contains("http_conn") })")
        await gw.stop()
    }
}

@Suite("Crash leftovers")
struct CrashLeftoverTests {
    @Test func hlsWorkFoldersOfGoneGatewaysAreRemovedAtStart() throws {
        let parent = try temporaryDirectory("lg-hls-parent")
        defer { try? FileManager.default.removeItem(at: parent) }
        let fm = FileManager.default
        let gone = parent.appendingPathComponent("2147483000")   // no such process
        let alive = parent.appendingPathComponent("\(getppid())") // the test runner's parent is alive
        let other = parent.appendingPathComponent("notes")
        for d in [gone, alive, other] {
            try fm.createDirectory(at: d, withIntermediateDirectories: true)
            _ = fm.createFile(atPath: d.appendingPathComponent("segment00001.ts").path, contents: Data([1, 2, 3]))
        }
        let mine = OutputSet.hlsWorkFolder(parent: parent.path)
        #expect(mine == "\(parent.path)/\(getpid())")
        #expect(!fm.fileExists(atPath: gone.path), "a dead gateway's HLS folder survived")
        #expect(fm.fileExists(atPath: alive.path), "a live gateway's HLS folder was removed")
        #expect(fm.fileExists(atPath: other.path))
    }
}
