import NIOCore
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport

@Suite(.serialized, .tags(.integration, .sanitized)) struct PanasonicFaultTests {
    @Test func cameraKilledAndRestartedStreamsAgainWithinFiveSeconds() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 10))
        let port = s.emulator.port
        await s.emulator.stop()
        #expect(await waitUntil(timeout: 6) { s.driver.state != .streaming })
        // A new body on the same address (it has forgotten the registration and the stream).
        var config = PanasonicEmulator.Configuration()
        config.access = .reqAcc
        let second = try PanasonicEmulator(port: port, configuration: config, group: MultiThreadedEventLoopGroup.singleton)
        _ = try await second.start()
        let n = s.collector.count
        let t0 = Date()
        #expect(await s.collector.wait(for: n + 10, seconds: 5))
        let took = Date().timeIntervalSince(t0)
        #expect(took < 5, "frames again after \(took) s")
        #expect(s.driver.state == .streaming)
        #expect(s.driver.stats.reconnects >= 1)
        #expect(second.requests(mode: "accctrl").last?.result == "ok", "registered again with the new body")
        await s.driver.stop()
        await second.stop()
    }

    @Test func stalledCameraIsNoticedAndTheStreamComesBack() async throws {
        let s = try await PanasonicSetup.make(keepAlive: .milliseconds(500))
        #expect(await s.collector.wait(for: 10))
        s.emulator.inject(.stall(seconds: 3))
        let stalledAt = MonotonicClock.nanos()
        try await Task.sleep(for: .milliseconds(500))
        let n = s.collector.count
        #expect(await s.collector.wait(for: n + 15, seconds: 6))
        let gap = s.collector.largestGap(after: stalledAt - 100_000_000)
        #expect(gap >= 2.5, "the stall was real: \(gap) s")
        // The watchdog re-issued startstream (or reconnected) while the camera was silent.
        #expect(s.emulator.requests(mode: "startstream").count >= 2)
        await s.shutdown()
    }

    @Test func disconnectedStreamIsRestarted() async throws {
        let s = try await PanasonicSetup.make(keepAlive: .milliseconds(500))
        #expect(await s.collector.wait(for: 10))
        s.emulator.inject(.disconnect)
        #expect(await waitUntil(timeout: 1) { !s.emulator.isStreaming })
        let n = s.collector.count
        let t0 = Date()
        #expect(await s.collector.wait(for: n + 10, seconds: 5))
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(s.emulator.requests(mode: "startstream").count >= 2)
        await s.shutdown()
    }

    @Test func droppedDatagramsCostFramesButNotTheSession() async throws {
        let s = try await PanasonicSetup.make(keepAlive: .milliseconds(500))
        #expect(await s.collector.wait(for: 5))
        s.emulator.inject(.dropEveryNthDatagram(3))
        // Once a hole shows in the sequence numbers, 30 more frames: every datagram the camera did send
        // arrived (the lost ones cost their frame, nothing more).
        let seq0 = s.collector.all.last?.seq ?? 0
        #expect(await waitUntil(timeout: 10) { s.collector.all.contains { ($0.seq ?? 0) > seq0 + 3 } })
        let w = await FrameCollector.window(frames: 30, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
        let got = s.collector.all.filter { ($0.seq ?? 0) > seq0 }
        await s.shutdown()
        #expect(w.complete && w.oneForOne, "the driver got \(w.delivered) of the \(w.sent) datagrams the camera sent")
        // The sequence numbers show the holes (every third one missing).
        let seqs = got.compactMap(\.seq)
        let holes = zip(seqs, seqs.dropFirst()).filter { $1 - $0 == 2 }.count
        #expect(holes >= 10, "\(holes) holes in \(seqs.count) frames")
        #expect(s.driver.stats.reconnects == 0)
        #expect(s.emulator.requests(mode: "startstream").count == 1)
    }
}

/// The emulator's datagrams against the conformance capture (a synthetic pcap built from the notes,
/// frame 0 carrying the real GX7 JPEG).
@Suite(.enabled(if: FileManager.default.fileExists(atPath: PanasonicFixtures.capture),
                "needs ../shared/conformance/captures/lumix-af.pcap"))
struct PanasonicConformanceTests {
    struct Shape: Equatable {
        var version: UInt16
        var exType: UInt16
        var orientation: UInt8
        var entryFlag: UInt8
        var totalSizeMatches: Bool
        var jpegAtHeaderOffset: Bool
        var endsWithEOI: Bool
    }

    static func shape(_ d: [UInt8]) -> Shape {
        func be16(_ i: Int) -> UInt16 { UInt16(d[i]) << 8 | UInt16(d[i + 1]) }
        let n = Int(be16(30))
        return Shape(version: be16(2), exType: be16(32) == 5 ? 1 : be16(32), orientation: d[42], entryFlag: d[46],
                     totalSizeMatches: Int(be16(0)) == d.count,
                     jpegAtHeaderOffset: d[32 + n] == 0xFF && d[33 + n] == 0xD8,
                     endsWithEOI: d.suffix(2) == [0xFF, 0xD9])
    }

    @Test func emulatorDatagramsParseLikeTheCapture() async throws {
        // The capture.
        let bytes = try #require(FileManager.default.contents(atPath: PanasonicFixtures.capture))
        var reader = try PcapReader(Array(bytes))
        var captured: [[UInt8]] = []
        while let rec = try reader.next() {
            if let u = PacketDecoder.udp(linkType: reader.linkType, frame: rec.data), u.destinationPort == 49152 {
                captured.append(Array(u.payload))
            }
        }
        #expect(captured.count == 10)
        var parser = PanasonicLiveViewParser()
        var capturedFrames: [WireFrame] = []
        for d in captured {
            parser.ingest(d[...], offset: nil) { if case .frame(let f) = $0 { capturedFrames.append(f) } }
        }
        #expect(capturedFrames.count == 10)
        #expect(capturedFrames.first?.af.first?.kind == .af)

        // The emulator, streaming to a socket of ours.
        let group = MultiThreadedEventLoopGroup.singleton
        var config = PanasonicEmulator.Configuration()
        config.access = .none
        let emulator = try PanasonicEmulator(configuration: config, group: group)
        let port = try await emulator.start()
        let receiver = try PanasonicUDPCounter()
        defer { receiver.close() }
        let http = CameraHTTP()
        for q in ["mode=camcmd&value=recmode", "mode=startstream&value=\(receiver.port)"] {
            _ = try await http.request("GET", HTTPURL(host: "127.0.0.1", port: port, target: "/cam.cgi?\(q)"))
        }
        #expect(await waitUntil(timeout: 3) { receiver.datagrams.count >= 8 })
        await emulator.stop()
        let emitted = receiver.datagrams
        try #require(emitted.count >= 8)

        // Same header layout as the capture …
        let reference = Self.shape(captured[0])
        for d in emitted { #expect(Self.shape(d) == reference) }
        for d in captured { #expect(Self.shape(d) == reference) }
        #expect(Set(emitted.map { Int($0[30]) << 8 | Int($0[31]) }).isSubset(of: Set(captured.map { Int($0[30]) << 8 | Int($0[31]) })),
                "N as in the capture (98)")
        // … increasing seqNo, and the same parse: 640x480 baseline frames with AF boxes.
        var seqs: [Int64] = []
        var frames = 0
        for d in emitted {
            parser.ingest(d[...], offset: nil) {
                guard case .frame(let f) = $0 else { Issue.record("emulator datagram rejected"); return }
                frames += 1
                seqs.append(f.seq ?? -1)
                #expect(f.width == capturedFrames[0].width && f.height == capturedFrames[0].height)
                #expect(f.info.isBaseline == capturedFrames[0].info.isBaseline)
                #expect(f.af.count == 1)
                #expect(f.af.allSatisfy { $0.pixels.width > 0 && $0.pixels.height > 0 })
            }
        }
        #expect(frames == emitted.count)
        for (a, b) in zip(seqs, seqs.dropFirst()) { #expect(b == a + 1) }
    }
}

/// Sends `datagrams` to 127.0.0.1:`port` from a UDP socket of its own (another source port than the camera's).
func sendForged(_ datagrams: [[UInt8]], to port: Int, everyMicroseconds pause: UInt32 = 2_000) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    for d in datagrams {
        _ = d.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        usleep(pause)
    }
}

/// Resident memory of this process in KiB.
func residentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

/// The source lock on its own, on an injected clock.
@Suite struct UDPSourceLockTests {
    @Test func aPortLearntFromTheFirstDatagramHoldsWhileTheCameraTalks() throws {
        var lock = UDPSourceLock(address: "127.0.0.1", takeover: .seconds(2))
        let camera = try SocketAddress(ipAddress: "127.0.0.1", port: 40000)
        let forger = try SocketAddress(ipAddress: "127.0.0.1", port: 40001)
        let elsewhere = try SocketAddress(ipAddress: "127.0.0.2", port: 40000)
        var seen: [Bool] = []
        for (from, at) in [(camera, 1.0), (forger, 1.1), (elsewhere, 1.2), (camera, 2.0), (forger, 4.1), (camera, 4.2)] {
            seen.append(lock.accepts(from, now: UInt64(at * 1e9)))
        }
        // The camera, not a forger on another port, not another address; after 2 s of silence the
        // camera may come back from a new port (then the old one is the stranger).
        #expect(seen == [true, false, false, true, true, false])
    }
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct UDPSourceTests {
    @Test func framesForgedFromAnotherPortNeverReachTheHub() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 10))
        let port = try #require(s.driver.liveViewPort)
        let forgedJPEG = try TestPatternSource(width: 640, height: 480).frame(index: 4321).jpeg
        var forged: [[UInt8]] = []
        for i in 0..<20 {
            var d: [UInt8] = []
            PanasonicDatagram.append(jpeg: forgedJPEG, seq: Int32(100_000 + i), to: &d)
            forged.append(d)
        }
        let before = s.collector.count
        sendForged(forged, to: port)
        #expect(await s.collector.wait(for: before + 15), "the camera's frames keep coming")
        await s.shutdown()
        #expect(!s.collector.all.contains { $0.bytes == forgedJPEG }, "a forged frame was published")
        #expect(s.driver.stats.foreignDatagrams == 20, "forged datagrams counted: \(s.driver.stats.foreignDatagrams)")
    }
}

/// The flood is a load test: integration tier only. Under ThreadSanitizer it took 40 s of the tier's
/// 200 for nothing the suite above does not already run there (the same receive path, lock and
/// counters, with forged datagrams from another port).
@Suite(.serialized, .tags(.integration)) struct UDPFloodTests {
    /// Ten times the camera's datagram rate from another port, half forged frames and half garbage
    /// (some of it larger than any frame): the camera's frames keep coming, every flood datagram
    /// is counted as a dropped datagram and none as a dropped frame, memory stays bounded.
    @Test func aFloodAtTenTimesTheRateCostsNothingButCountedDatagrams() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 10))
        let port = try #require(s.driver.liveViewPort)
        let forgedJPEG = try TestPatternSource(width: 640, height: 480).frame(index: 4321).jpeg
        var rng = SystemRandomNumberGenerator()
        var flood: [[UInt8]] = []
        for i in 0..<1_500 {
            if i % 2 == 0 {
                var d: [UInt8] = []
                PanasonicDatagram.append(jpeg: forgedJPEG, seq: Int32(200_000 + i), to: &d)
                flood.append(d)
            } else {
                flood.append((0..<Int.random(in: 1...60_000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
        }
        let rssBefore = residentKiB()
        let framesBefore = s.collector.count
        let dropsBefore = s.driver.stats.drops
        let sender = Task.detached { sendForged(flood, to: port, everyMicroseconds: 3_333) }  // ~300 per second
        // While the flood lasts (~5 s), the camera's frames keep arriving.
        #expect(await s.collector.wait(for: framesBefore + 90), "the camera's frames stopped during the flood")
        await sender.value
        let rssAfter = residentKiB()
        await s.shutdown()
        #expect(!s.collector.all.contains { $0.bytes == forgedJPEG }, "a forged frame was published")
        #expect(s.driver.stats.foreignDatagrams >= 1_400, "flood datagrams counted: \(s.driver.stats.foreignDatagrams) of 1500")
        #expect(s.driver.stats.drops == dropsBefore, "flood datagrams counted as frame drops")
        #expect(rssAfter - rssBefore < 64 * 1024, "RSS grew by \((rssAfter - rssBefore) / 1024) MiB during the flood")
        print("UDP flood ×10 (1500 datagrams in ~5 s): \(s.driver.stats.foreignDatagrams) counted, RSS \(rssBefore / 1024) → \(rssAfter / 1024) MiB")
    }
}
