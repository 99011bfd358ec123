import TestSupport
import JPEGKit
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Logging
import NIOPosix
import Testing

typealias PanasonicFrameCollector = FrameCollector

struct PanasonicSetup {
    let emulator: PanasonicEmulator
    let driver: PanasonicDriver
    let hub: FrameHub
    let collector: PanasonicFrameCollector

    static func make(access: PanasonicEmulatedAccess = .reqAcc, keepAliveTimeout: Double = 10, fps: Double = 30,
                     keepAlive: Duration = .seconds(2), start: Bool = true, port: Int = 0) async throws -> PanasonicSetup {
        let group = MultiThreadedEventLoopGroup.singleton
        var config = PanasonicEmulator.Configuration()
        config.access = access
        config.keepAliveTimeout = keepAliveTimeout
        config.fps = fps
        let emulator = try PanasonicEmulator(port: port, configuration: config, group: group)
        let bound = try await emulator.start()
        var logger = Logger(label: "test.panasonic")
        logger.logLevel = .warning
        let driver = PanasonicDriver(endpoint: PanasonicEndpoint(host: "127.0.0.1", port: bound, liveViewPort: 0),
                                     group: group,
                                     timing: PanasonicTiming(keepAliveInterval: keepAlive,
                                                             reqAccPollInterval: .milliseconds(50),
                                                             reqAccEPollInterval: .milliseconds(50)),
                                     logger: logger)
        let hub = FrameHub()
        let collector = PanasonicFrameCollector()
        hub.attach(collector.pacer)
        if start { driver.start(hub: hub) }
        return PanasonicSetup(emulator: emulator, driver: driver, hub: hub, collector: collector)
    }

    func shutdown() async {
        await driver.stop()
        await emulator.stop()
    }
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct PanasonicDriverTests {
    @Test func streamsAtTheEmulatorsRateWithAFBoxesInTheRightPixels() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 5))
        // 90 frames counted by the driver against what the camera sent meanwhile.
        let w = await FrameCollector.window(frames: 90, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
        let n1 = s.driver.stats.frames
        let published = s.hub.published
        await s.shutdown()
        print("panasonic: measured \(String(format: "%.2f", w.fps)) fps from a 30 fps emulator")
        #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
        #expect(s.driver.stats.drops == 0)
        #expect(published >= n1, "every received frame was published to the hub")
        // A polite goodbye: stopstream when the driver stops.
        #expect(s.emulator.requests(mode: "stopstream").count == 1)
        #expect(!s.emulator.isStreaming)

        // The session ran the LUMIX sequence: recmode before startstream, startstream with our port.
        let modes = s.emulator.requests.map(\.mode)
        let rec = try #require(modes.firstIndex(of: "camcmd"))
        let start = try #require(modes.firstIndex(of: "startstream"))
        #expect(rec < start)
        #expect(s.emulator.requests(mode: "camcmd").first?.value == "recmode")

        // Frames: whole JPEGs at 640x480, sequence numbers consecutive, one AF box where the pattern drew it.
        let frames = s.collector.all
        let pattern = try TestPatternSource(width: 640, height: 480)
        let seqs = frames.compactMap(\.seq)
        #expect(seqs.count == frames.count)
        for (a, b) in zip(seqs, seqs.dropFirst()) { #expect(b > a) }
        let firstSeq = try #require(seqs.first)
        for f in frames.prefix(30) {
            #expect(f.width == 640 && f.height == 480)
            try #require(f.af.count == 1)
            // seqNo starts at 1001 for frame 0 of the pattern.
            let index = Int(f.seq! - firstSeq) + Int(firstSeq - 1001)
            let expected = pattern.frame(index: index)
            let a = f.af[0].pixels
            // 0..1000 grid → 640x480 pixels: rounding of the grid is 0.64/0.48 px, plus pixel rounding.
            #expect(abs(Double(a.x) - expected.afBox.x1 * 640) <= 1.5)
            #expect(abs(Double(a.y) - expected.afBox.y1 * 480) <= 1.5)
            #expect(abs(Double(a.x + a.width) - expected.afBox.x2 * 640) <= 2)
            #expect(abs(Double(a.y + a.height) - expected.afBox.y2 * 480) <= 2)
            #expect(f.af[0].kind == (expected.focused ? .af : .box))
        }
    }

    @Test func keepAliveHoldsTheStreamFarPastTheCamerasTimeout() async throws {
        // The emulator ends the stream 1.5 s after the last request; the driver's keep-alive (0.5 s)
        // holds it for 6 s without a gap and without a second startstream.
        let s = try await PanasonicSetup.make(keepAliveTimeout: 1.5, keepAlive: .milliseconds(500))
        #expect(await s.collector.wait(for: 5))
        // 180 frames take the camera 6 s, four times its timeout: every frame it sent arrived (a stream
        // that timed out would have lost frames and needed a second startstream).
        let w = await FrameCollector.window(frames: 180, timeout: 30, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
        let startstreams = s.emulator.requests(mode: "startstream").count
        let timeouts = s.emulator.keepAliveTimeouts
        let getstates = s.emulator.requests(mode: "getstate").count
        await s.shutdown()
        #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
        #expect(startstreams == 1)
        #expect(timeouts == 0)
        #expect(getstates >= 10)
    }

    @Test func emulatorReallyStopsWithoutKeepAlive() async throws {
        // Talk to the emulator directly: register, recmode, startstream to a UDP socket we own, then
        // stay silent. The datagrams must stop after ~1.5 s.
        let group = MultiThreadedEventLoopGroup.singleton
        var config = PanasonicEmulator.Configuration()
        config.access = .none
        config.keepAliveTimeout = 1.5
        let emulator = try PanasonicEmulator(configuration: config, group: group)
        let port = try await emulator.start()
        let receiver = try PanasonicUDPCounter()
        defer { receiver.close() }
        let http = CameraHTTP()
        for q in ["mode=camcmd&value=recmode", "mode=startstream&value=\(receiver.port)"] {
            let r = try await http.request("GET", HTTPURL(host: "127.0.0.1", port: port, target: "/cam.cgi?\(q)"))
            #expect(PanasonicReply(body: r.body).isOK)
        }
        let t0 = Date()
        #expect(await waitUntil(timeout: 1) { receiver.count >= 10 })
        #expect(await waitUntil(timeout: 4) { !emulator.isStreaming })
        let stoppedAfter = Date().timeIntervalSince(t0)
        #expect(stoppedAfter > 1.2 && stoppedAfter < 2.5, "stopped after \(stoppedAfter) s")
        #expect(emulator.keepAliveTimeouts == 1)
        // Let the last datagrams drain, then nothing more arrives.
        try await Task.sleep(for: .milliseconds(200))
        let c = receiver.count
        try await Task.sleep(for: .seconds(1))
        #expect(receiver.count == c)
        #expect(c >= 30)
        // A later getstate does not revive it; a new startstream does.
        _ = try await http.request("GET", HTTPURL(host: "127.0.0.1", port: port, target: "/cam.cgi?mode=getstate"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(receiver.count == c)
        _ = try await http.request("GET", HTTPURL(host: "127.0.0.1", port: port, target: "/cam.cgi?mode=startstream&value=\(receiver.port)"))
        #expect(await waitUntil(timeout: 2) { receiver.count > c + 5 })
        await emulator.stop()
    }

    @Test(arguments: PanasonicEmulatedAccess.allCases)
    func everyHandshakeGenerationStreams(_ access: PanasonicEmulatedAccess) async throws {
        let s = try await PanasonicSetup.make(access: access)
        #expect(await s.collector.wait(for: 10))
        let gen = s.driver.camcgi.generation
        let reqs = s.emulator.requests
        await s.shutdown()
        switch access {
        case .none:
            #expect(gen == PanasonicAccessGeneration.none)
            #expect(!reqs.contains { $0.mode == "accctrl" })
        case .reqAcc:
            #expect(gen == .reqAcc)
            let acc = reqs.filter { $0.mode == "accctrl" }
            #expect(acc.count == 2, "one ok_under_research poll, then ok")
            #expect(acc.allSatisfy { $0.type == "req_acc" && $0.value2 == "livegate" })
            #expect(acc.last?.result == "ok")
        case .session:
            #expect(gen == .session)
            let acc = reqs.filter { $0.mode == "accctrl" }
            #expect(acc.map { $0.type ?? "" } == ["req_acc", "req_acc_g", "req_acc_e", "req_acc_e"])
            #expect(acc.first?.result == "err_param")
            #expect(acc.last?.value2 == PanasonicCamCGI.hex("livegate"))
            // Every request after the grant carries the session id.
            let sid = try #require(s.driver.camcgi.sessionID)
            let after = reqs.drop { !($0.mode == "accctrl" && $0.type == "req_acc_e" && $0.result == "ok") }.dropFirst()
            #expect(!after.isEmpty)
            #expect(after.allSatisfy { $0.sessionID == sid && $0.result != "err_critical" }, "\(after.filter { $0.sessionID != sid || $0.result == "err_critical" })")
        }
        // Access control came before anything else worked.
        #expect(reqs.contains { $0.mode == "startstream" && $0.result == "ok" })
    }

    @Test func rememberedGenerationIsTriedFirstOnReconnect() async throws {
        let s = try await PanasonicSetup.make(access: .session)
        #expect(await s.collector.wait(for: 5))
        let before = s.emulator.requests.count
        // Lose the session: the camera answers err_critical once; the driver re-registers with req_acc_g directly.
        s.driver.camcgi.invalidate()
        _ = try await s.driver.properties()
        let later = s.emulator.requests.dropFirst(before).filter { $0.mode == "accctrl" }.map { $0.type ?? "" }
        await s.shutdown()
        #expect(later.first == "req_acc_g")
        #expect(!later.contains("req_acc"))
    }
}

/// A loopback UDP socket counting datagrams (for talking to the emulator directly).
final class PanasonicUDPCounter: @unchecked Sendable {
    private let fd: Int32
    let port: Int
    private let counter: Collected<Int>
    private let kept: Collected<[[UInt8]]>
    /// The first few datagrams, as received.
    var datagrams: [[UInt8]] { kept.withLock { $0 } }
    private var thread: Thread?

    init() throws {
        let sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard ok == 0 else { throw CameraControlError.unavailable("bind failed") }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &len) }
        }
        port = Int(UInt16(bigEndian: bound.sin_port))
        fd = sock
        let counter = Collected(0)
        self.counter = counter
        let kept = Collected<[[UInt8]]>([])
        self.kept = kept
        let t = Thread {
            var buf = [UInt8](repeating: 0, count: 65536)
            while !Thread.current.isCancelled {
                let n = recv(sock, &buf, buf.count, 0)
                if n > 0 {
                    let d = Array(buf[0..<n])
                    counter.withLock { $0 += 1 }
                    kept.withLock { if $0.count < 8 { $0.append(d) } }
                }
            }
        }
        thread = t
        t.start()
    }

    var count: Int { counter.withLock { $0 } }

    func close() {
        thread?.cancel()
        Thread.sleep(forTimeInterval: 0.15)
        _ = Glibc.close(fd)
    }
}
