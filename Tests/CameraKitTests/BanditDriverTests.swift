import TestSupport
import JPEGKit
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Logging
import NIOCore
import NIOPosix
import Testing

typealias BanditFrameCollector = FrameCollector

struct BanditSetup {
    let emulator: BanditEmulator
    let driver: BanditDriver
    let hub: FrameHub
    let collector: BanditFrameCollector

    static func make(width: Int = 320, height: Int = 240, fps: Double = 30, start: Bool = true,
                     firstPacketNumber: UInt16 = 0, mood: EmulatorMood = .prompt) async throws -> BanditSetup {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = BanditEmulator(port: 0, fps: fps, source: try TestPatternSource(width: width, height: height),
                                      group: group, firstPacketNumber: firstPacketNumber, mood: mood)
        let port = try await emulator.start()
        let driver = BanditDriver(endpoint: BanditEndpoint(host: "127.0.0.1", port: port, viewfinderPort: 0),
                                  group: group, logger: banditLogger())
        let hub = FrameHub()
        let collector = BanditFrameCollector()
        hub.attach(collector.pacer)
        if start { driver.start(hub: hub) }
        return BanditSetup(emulator: emulator, driver: driver, hub: hub, collector: collector)
    }

    func shutdown() async {
        await driver.stop()
        await emulator.stop()
    }

    /// The JPEG the emulator sent as the frame whose start datagram had packet number `seq`.
    func sent(_ seq: UInt64?) -> BanditEmulator.SentFrame? {
        guard let seq else { return nil }
        return emulator.sentFrames.last { UInt64($0.seq) == seq }
    }
}

func banditLogger() -> Logger {
    var logger = Logger(label: "test.bandit")
    logger.logLevel = .critical
    return logger
}

/// True when `bytes` is one whole JPEG: SOI, segments and scan walked to an EOI that ends the bytes.
func banditIsWholeJPEG(_ bytes: [UInt8]) -> Bool {
    guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes.suffix(2) == [0xFF, 0xD9] else { return false }
    guard let info = try? JPEGScanner.scan(bytes) else { return false }
    return info.length == bytes.count
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct BanditDriverTests {
    @Test func urlParsing() {
        #expect(BanditEndpoint.parse(url: "bandit://192.168.1.101") == BanditEndpoint(host: "192.168.1.101", port: 80, viewfinderPort: 4001))
        #expect(BanditEndpoint.parse(url: "bandit://127.0.0.1:8080?udp=0") == BanditEndpoint(host: "127.0.0.1", port: 8080, viewfinderPort: 0))
        #expect(BanditEndpoint.parse(url: "bandit://cam.local:81/?udp=4002")?.viewfinderPort == 4002)
        #expect(BanditEndpoint.parse(url: "sony://127.0.0.1") == nil)
        #expect(BanditEndpoint.parse(url: "bandit://127.0.0.1:0") == nil)
        #expect(BanditEndpoint.parse(url: "bandit://127.0.0.1?udp=70000") == nil)
        #expect(BanditEndpoint.parse(url: "bandit://127.0.0.1?foo=1") == nil)
    }

    @Test func streamsWholeFramesAtTheCameraRate() async throws {
        let s = try await BanditSetup.make(width: 768, height: 432)
        #expect(await s.collector.wait(for: 10))
        // 60 frames counted by the driver (the collector's pacer may merge frames) against what the
        // camera sent meanwhile: every whole frame arrived, once.
        let w = await FrameCollector.window(frames: 60, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
        print("bandit driver: \(String(format: "%.2f", w.fps)) fps from a 30 fps emulator (768×432)")
        #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
        #expect(s.driver.state == .streaming)
        await s.shutdown()

        let frames = s.collector.all
        #expect(frames.count >= 10)
        for f in frames {
            #expect(f.width == 768 && f.height == 432)
            #expect(banditIsWholeJPEG(f.bytes))
            #expect(f.timeBase == .arrival && f.pts == nil, "not recording: PTS 0.0 → arrival time")
            let sent = s.sent(f.seq)
            #expect(sent?.jpeg == f.bytes, "frame \(f.seq ?? 0) is byte-identical to what the camera sent")
            #expect((sent?.datagrams ?? 0) >= 4, "a frame really spans several datagrams")
        }
        #expect(s.driver.stats.drops == 0)
        // The session ran the REST sequence and asked for the driver's own UDP port.
        let reqs = s.emulator.requests
        #expect(reqs.first.map { "\($0.method) \($0.path)" } == "GET /api/version")
        #expect(reqs.contains { $0.method == "GET" && $0.path == "/api/2/status" })
        let start = reqs.first { $0.path == "/api/2/viewfinder" }
        #expect(start?.method == "POST")
        #expect(start?.body.contains("\"viewfinder_active\":true") == true)
        #expect(start?.body.contains("\"viewfinder_streaming_port\":") == true)
        // stop() tells the camera to stop streaming.
        #expect(reqs.last.map { "\($0.path) \($0.body)" } == #"/api/2/viewfinder {"viewfinder_active":false}"#)
        #expect(!s.emulator.viewfinderActive)
    }

    @Test func aFrameWithALostDatagramIsDroppedCountedAndNeverEmitted() async throws {
        // Near the packet-number wrap, so the wrap happens during the test.
        let s = try await BanditSetup.make(firstPacketNumber: 65_450)
        #expect(await s.collector.wait(for: 5))
        s.emulator.inject(.dropEveryNthDatagram(13))
        #expect(await waitUntil(timeout: 6) { s.emulator.sentFrames.filter(\.damaged).count >= 12 })
        s.emulator.inject(.none)
        let n = s.collector.count
        #expect(await s.collector.wait(for: n + 10, seconds: 5))
        await s.shutdown()
        try await Task.sleep(for: .milliseconds(100))  // let in-flight datagrams land before counting

        let sentFrames = s.emulator.sentFrames
        let damaged = Set(sentFrames.filter(\.damaged).map { UInt64($0.seq) })
        let frames = s.collector.all
        #expect(damaged.count >= 12)
        // Losses hit frame-start datagrams too (silently ignored by the reassembler) and data datagrams.
        #expect(sentFrames.contains { $0.droppedDatagrams.contains(0) })
        #expect(sentFrames.contains { $0.damaged && !$0.droppedDatagrams.contains(0) })
        // Every emitted frame is whole, byte-identical to the camera's, and not a damaged one.
        for f in frames {
            #expect(banditIsWholeJPEG(f.bytes))
            #expect(!damaged.contains(f.seq ?? 0), "damaged frame \(f.seq ?? 0) was emitted")
            #expect(s.sent(f.seq)?.jpeg == f.bytes)
        }
        // Each damaged frame was counted once (also those whose frame-start datagram was lost), and
        // every frame sent was either published or counted.
        let published = s.hub.published
        print("bandit loss: datagrams/frame \(Set(sentFrames.map(\.datagrams)).sorted()), start lost in \(sentFrames.filter { $0.droppedDatagrams.contains(0) }.count) frames, sent \(s.emulator.framesSent), damaged \(damaged.count), published \(published), dropped \(s.driver.stats.drops)")
        #expect(s.driver.stats.drops == damaged.count)
        #expect(abs(s.emulator.framesSent - (published + s.driver.stats.drops)) <= 1)
        // Sequence numbers went through the wrap.
        #expect(frames.contains { ($0.seq ?? 0) < 1000 } && frames.contains { ($0.seq ?? 0) > 65_000 })
    }

    @Test func ptsIsTheCameraVideoPTSOnlyWhileRecording() async throws {
        let s = try await BanditSetup.make()
        let seen = Collected<[BanditEvent]>([])
        s.driver.onEvent = { e in seen.withLock { $0.append(e) } }
        #expect(await s.collector.wait(for: 5))
        try await s.driver.startRecording()
        #expect(await waitUntil(timeout: 3) { s.collector.all.filter { $0.timeBase == .camera }.count >= 15 })
        #expect(await waitUntil(timeout: 2) { s.driver.events.contains(.recordingStarted) })
        #expect(s.driver.isRecording && s.emulator.isRecording)
        try await s.driver.stopRecording()
        let n = s.collector.count
        #expect(await s.collector.wait(for: n + 5))
        #expect(await waitUntil(timeout: 2) { s.driver.events.contains { if case .recordingStopped = $0 { return true }; return false } })
        await s.shutdown()

        let frames = s.collector.all
        let recorded = frames.filter { $0.timeBase == .camera }
        // Before recording: PTS 0.0 → no camera PTS.
        #expect(frames.prefix(5).allSatisfy { $0.timeBase == .arrival && $0.pts == nil })
        // While recording: the camera's PTS on the 1/30 s grid, increasing, and equal to what was sent.
        for f in recorded {
            let pts = try #require(f.pts)
            let k = (Double(pts) * 30 / 1e9).rounded()
            #expect(k >= 1)
            #expect(abs(Double(pts) - k * 1e9 / 30) < 20_000, "pts \(pts) ns is on the frame grid")
            let sent = try #require(s.sent(f.seq))
            #expect(pts == Int64((Double(sent.ptsSeconds) * 1e9).rounded()))
        }
        let pts = recorded.compactMap(\.pts)
        for (a, b) in zip(pts, pts.dropFirst()) { #expect(b > a) }
        // After stopRecording: back to the arrival clock.
        #expect(frames.suffix(3).allSatisfy { $0.timeBase == .arrival && $0.pts == nil })
        #expect(!s.driver.isRecording)
        #expect(seen.withLock { $0 }.contains(.recordingStarted))
        let posts = s.emulator.requests.filter { $0.path == "/api/2/record" }.map(\.body)
        #expect(posts == [#"{"recording_active":true}"#, #"{"recording_active":false}"#])
    }

    /// A moody body (EmulatorMood.moody): its first viewfinder frame 1.5 s late, 503 "busy" for
    /// 2 s after a recording stops (the file is finalised), every third settings write 503 once.
    /// livegate waits each out: a setting and a new recording right after a stop, and three
    /// settings in a row, all succeed; the busy answers were asked again, not passed on.
    @Test func aMoodyBodyIsWaitedOutNotPassedOn() async throws {
        let s = try await BanditSetup.make(mood: .moody)
        #expect(await s.collector.wait(for: 5, seconds: 15), "no frame from a body whose first one comes 1.5 s late")
        try await s.driver.startRecording()
        #expect(await waitUntil(timeout: 5) { s.emulator.isRecording })
        try await s.driver.stopRecording()
        // Finalising the file: the next recording waits for it, and after that one the next setting.
        try await s.driver.startRecording()
        #expect(await waitUntil(timeout: 5) { s.emulator.isRecording }, "the second recording did not start")
        try await s.driver.stopRecording()
        try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
        for wb in ["daylight", "cloudy", "auto"] { try await s.driver.setProperty(.whiteBalance, to: .text(wb)) }
        let n = s.collector.count
        #expect(await s.collector.wait(for: n + 5), "the viewfinder stopped")
        await s.shutdown()
        let writes = s.emulator.requests.filter { $0.method == "PUT" && $0.path == "/api/2/settings/camera" }
        let records = s.emulator.requests.filter { $0.path == "/api/2/record" }
        // Each busy answer was followed by the same request again: more requests than actions.
        #expect(writes.count > 4, "\(writes.count) settings writes for 4 settings: no 503 was waited out")
        #expect(records.count > 4, "\(records.count) record requests for 4 starts and stops: the second start did not wait")
        #expect(s.emulator.requests.last { $0.method == "PUT" }?.body == #"{"white_balance_mode":"auto"}"#)
    }

    @Test func whiteBalanceTungstenIsOneRequestFor3000K() async throws {
        let s = try await BanditSetup.make(start: false)
        try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
        let sets = s.emulator.requests.filter { $0.method != "GET" }
        #expect(sets.count == 1)
        #expect(sets.first.map { "\($0.method) \($0.path) \($0.body)" } == #"PUT /api/2/settings/camera {"white_balance_mode":"3000K"}"#)
        #expect(s.emulator.whiteBalance == "3000K")
        let p = try await s.driver.properties()
        #expect(p.count == 1)
        #expect(p.first?.name == .whiteBalance)
        #expect(p.first?.value == .text("tungsten"))
        #expect(p.first?.displayText == "3000K")
        #expect(p.first?.choices.contains(.text("daylight")) == true)
        await s.shutdown()
    }

    @Test func whiteBalanceMapsToTheNearestKelvinPresetAndRefusesOthers() async throws {
        let s = try await BanditSetup.make(start: false)
        for (common, bandit) in [("daylight", "5000K"), ("cloudy", "7500K"), ("shade", "7500K"), ("fluorescent", "4000K"),
                                 ("flash", "5000K"), ("2000K", "2000K"), ("auto", "auto"), ("3000k", "3000K")] {
            let before = s.emulator.requests.count
            try await s.driver.setProperty(.whiteBalance, to: .text(common))
            let new = s.emulator.requests.dropFirst(before).filter { $0.method != "GET" }
            #expect(new.map(\.body) == ["{\"white_balance_mode\":\"\(bandit)\"}"], "\(common)")
            #expect(s.emulator.whiteBalance == bandit)
        }
        let before = s.emulator.requests.count
        for bad in ["purple", "5500K", "custom"] {
            do {
                try await s.driver.setProperty(.whiteBalance, to: .text(bad))
                Issue.record("\(bad) should be refused")
            } catch CameraControlError.invalidValue(let p, let v, let valid) {
                #expect(p == .whiteBalance && v == bad)
                #expect(valid.contains("tungsten") && valid.contains("3000K"))
            }
        }
        #expect(s.emulator.requests.count == before, "refused values send nothing")
        await s.shutdown()
    }

    @Test func unsupportedPropertiesAreNotSupportedWithoutARequest() async throws {
        let s = try await BanditSetup.make(start: false)
        let cases: [(PropertyName, PropertyValue)] = [
            (.iso, .number(400)), (.shutterSpeed, .text("1/250")), (.aperture, .text("5.6")),
            (.exposureCompensation, .number(-0.7)), (.focusMode, .text("af-s")),
        ]
        for (name, value) in cases {
            do {
                try await s.driver.setProperty(name, to: value)
                Issue.record("\(name) should be notSupported")
            } catch CameraControlError.notSupported {
            }
        }
        do {
            try await s.driver.touchFocus(x: 10, y: 10, imageWidth: 768, imageHeight: 432)
            Issue.record("touch-AF should be notSupported")
        } catch CameraControlError.notSupported {
        }
        #expect(s.emulator.requests.isEmpty)
        await s.shutdown()
    }

    @Test func videoModeIsCheckedAgainstTheCamerasCapabilities() async throws {
        let s = try await BanditSetup.make(start: false)
        let m = BanditVideoMode(mode: "normal", resolution: "720p", framerateFPS: 120, fov: "wide")
        try await s.driver.setVideoMode(m)
        #expect(try await s.driver.videoMode() == BanditVideoMode(mode: "normal", resolution: "720p", framerateFPS: 120,
                                                                   fov: "wide", slowMotionRate: 1, intervalSeconds: 0))
        await #expect(throws: BanditControlError.self) {
            try await s.driver.setVideoMode(BanditVideoMode(mode: "normal", resolution: "4k", framerateFPS: 60, fov: "wide"))
        }
        let flat = try await s.driver.vendorSettings()
        #expect(flat["video.framerate_fps"] == "120" && flat["video.resolution"] == "720p")
        #expect(flat["camera.white_balance_mode"] == "auto" && flat["camera.sound_enabled"] == "true")
        let posts = s.emulator.requests.filter { $0.path == "/api/2/settings/video" }
        #expect(posts.count == 1)
        #expect(posts.first?.method == "POST")
        await s.shutdown()
    }

    @Test func viewfinderStoppedByTheCameraIsRestarted() async throws {
        let s = try await BanditSetup.make()
        #expect(await s.collector.wait(for: 5))
        #expect(await waitUntil(timeout: 2) { s.emulator.backchannelClients == 1 })
        s.emulator.cameraStopsViewfinder()
        let n = s.driver.stats.frames
        let t0 = Date()
        #expect(await waitUntil(timeout: 2) { s.driver.events.contains(.viewfinderStopped) })
        #expect(await waitUntil(timeout: 5) { s.driver.stats.frames >= n + 10 })
        // Restarted on the notification, well before the 2 s stall watchdog would have.
        #expect(Date().timeIntervalSince(t0) < 1.8)
        #expect(s.driver.viewfinderRestarts >= 1)
        #expect(s.driver.stats.reconnects == 0)
        let starts = s.emulator.requests.filter { $0.path == "/api/2/viewfinder" && $0.body.contains("true") }
        #expect(starts.count == 2)
        await s.shutdown()
    }

    @Test func memoryLowNotificationIsSurfaced() async throws {
        let s = try await BanditSetup.make()
        let seen = Collected<[BanditEvent]>([])
        s.driver.onEvent = { e in seen.withLock { $0.append(e) } }
        #expect(await s.collector.wait(for: 3))
        #expect(await waitUntil(timeout: 2) { s.emulator.backchannelClients == 1 })
        s.emulator.notifyMemoryLow(availableBytes: 123_456_789)
        #expect(await waitUntil(timeout: 2) { seen.withLock { $0 }.contains(.memoryLow(availableBytes: 123_456_789)) })
        #expect(s.driver.events.contains(.viewfinderStarted))
        await s.shutdown()
    }

    @Test func backchannelLinesAreParsedLeniently() {
        #expect(BanditEvent.parse(line: Array(#"{"memory_low":{"available_bytes":42}}"#.utf8)) == [.memoryLow(availableBytes: 42)])
        #expect(BanditEvent.parse(line: Array(#"{"viewfinder_stopped":{"viewfinder_active":false}}"#.utf8)) == [.viewfinderStopped])
        #expect(BanditEvent.parse(line: Array(#"{"recording_stopped":[{"id":"0001"}]}"#.utf8)) == [.recordingStopped(videoIDs: ["0001"])])
        #expect(BanditEvent.parse(line: Array(#"{"shutting_down":{},"battery_critical":true}"#.utf8))
                == [.shuttingDown(batteryCritical: true, userInitiated: false, overTemperature: false)])
        #expect(BanditEvent.parse(line: Array("not json".utf8)).isEmpty)
    }

    @Test func stallRestartsTheViewfinder() async throws {
        let s = try await BanditSetup.make()
        #expect(await s.collector.wait(for: 5))
        s.emulator.inject(.stall(seconds: 2.6))
        let n = s.driver.stats.frames
        #expect(await waitUntil(timeout: 6) { s.driver.viewfinderRestarts >= 1 && s.driver.stats.frames >= n + 10 })
        let starts = s.emulator.requests.filter { $0.path == "/api/2/viewfinder" && $0.body.contains("true") }
        #expect(starts.count >= 2)
        #expect(s.driver.state == .streaming)
        await s.shutdown()
    }

    @Test func disconnectedCameraIsReconnected() async throws {
        let s = try await BanditSetup.make()
        #expect(await s.collector.wait(for: 5))
        #expect(await waitUntil(timeout: 2) { s.emulator.backchannelClients == 1 })
        s.emulator.inject(.disconnect)
        let n = s.driver.stats.frames
        let t0 = Date()
        #expect(await waitUntil(timeout: 5) { s.driver.stats.frames >= n + 10 })
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(s.driver.stats.reconnects >= 1)
        #expect(s.emulator.requests.filter { $0.path == "/api/version" }.count >= 2)
        await s.shutdown()
    }

    @Test func cameraKilledAndRestartedStreamsAgainWithinFiveSeconds() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = BanditEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        let port = try await first.start()
        let driver = BanditDriver(endpoint: BanditEndpoint(host: "127.0.0.1", port: port, viewfinderPort: 0),
                                  group: group, logger: banditLogger())
        let hub = FrameHub()
        let collector = BanditFrameCollector()
        hub.attach(collector.pacer)
        driver.start(hub: hub)
        #expect(await collector.wait(for: 10))
        await first.stop()
        #expect(await waitUntil(timeout: 3) { driver.state != .streaming })
        let second = BanditEmulator(port: port, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        _ = try await second.start()
        let n = driver.stats.frames
        let t0 = Date()
        #expect(await waitUntil(timeout: 5) { driver.stats.frames >= n + 10 })
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(driver.state == .streaming)
        #expect(second.requests.contains { $0.path == "/api/2/viewfinder" })
        await driver.stop()
        await second.stop()
    }

    // MARK: Conformance capture vs emulator

    static let capture = Locations.shared("conformance/captures/bandit-loss.pcap")
    static let expected = Locations.shared("conformance/expected/bandit-loss.bandit-udp.jsonl")

    /// The UDP payloads of a pcap.
    static func datagrams(pcap path: String) throws -> [[UInt8]] {
        var reader = try PcapReader(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        var out: [[UInt8]] = []
        while let rec = try reader.next() {
            if let udp = PacketDecoder.udp(linkType: reader.linkType, frame: rec.data) { out.append(Array(udp.payload)) }
        }
        return out
    }

    struct Shape: Equatable {
        /// Every frame-start datagram is 15 bytes with payload_length 8.
        var startsAre15Bytes = true
        /// Data datagrams carry exactly `chunk` JPEG bytes except a frame's last, which carries the rest.
        var dataChunks: Set<Int> = []
        /// Data bytes per complete frame equal jpg_size exactly.
        var exactSizes = true
        /// Packet numbers never skip inside a complete frame.
        var consecutive = true
        var completeFrames = 0
    }

    /// Walks datagrams the way bandit.md §3.2 lays them out and describes their shape.
    static func shape(_ datagrams: [[UInt8]]) -> Shape {
        var s = Shape()
        var i = 0
        func number(_ d: [UInt8]) -> UInt16 { UInt16(d[3]) << 8 | UInt16(d[4]) }
        while i < datagrams.count {
            let d = datagrams[i]
            guard d.count >= 7, d[0] == 0x55, d[1] == 0xAA, d[2] == 0 else { i += 1; continue }
            if d.count != 15 || d[5] != 0 || d[6] != 8 { s.startsAre15Bytes = false }
            let size = Int(d[7]) << 24 | Int(d[8]) << 16 | Int(d[9]) << 8 | Int(d[10])
            var got = 0, j = i + 1, prev = number(d), ok = true, chunks: [Int] = []
            while j < datagrams.count, datagrams[j].count >= 7, datagrams[j][2] == 1, got < size {
                let e = datagrams[j]
                if number(e) != prev &+ 1 { ok = false }
                prev = number(e)
                chunks.append(e.count - 7)
                got += e.count - 7
                j += 1
            }
            if ok && got >= size {
                s.completeFrames += 1
                if got != size { s.exactSizes = false }
                s.dataChunks.formUnion(chunks.dropLast())
            }
            i = j
        }
        return s
    }

    /// Frames the driver's ingest makes of datagrams: (seq, pts, timeBase, bytes), and the drops.
    static func ingest(_ datagrams: [[UInt8]], finish: Bool) -> (frames: [(UInt64?, Int64?, Frame.TimeBase, [UInt8])], drops: Int) {
        let got = Collected<[(UInt64?, Int64?, Frame.TimeBase, [UInt8])]>([])
        let stats = DriverStats()
        let ingest = BanditViewfinderIngest(hub: FrameHub(), pool: FramePool(capacity: 4), stats: stats) { f in
            got.withLock { $0.append((f.sequence, f.cameraPTS, f.timeBase, Array(f.bytes))) }
        }
        for d in datagrams { ingest.ingest(d[...]) }
        if finish { ingest.finish() }
        return (got.withLock { $0 }, stats.drops)
    }

    @Test(.enabled(if: Locations.sharedHas("conformance/captures/bandit-loss.pcap") && Locations.sharedHas("conformance/expected/bandit-loss.bandit-udp.jsonl"),
                   "needs ../shared/conformance (the Bandit loss capture and its expected frames)"))
    func conformanceCaptureParsesLikeTheEmulatorsDatagrams() async throws {
        // 1. The capture through the driver's own ingest: the expected frames, the lost one counted.
        let captured = try Self.datagrams(pcap: Self.capture)
        let lines = try String(contentsOfFile: Self.expected, encoding: .utf8).split(separator: "\n")
        let expected = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let (frames, drops) = Self.ingest(captured, finish: true)
        #expect(frames.count == expected.count)
        for (f, e) in zip(frames, expected) {
            #expect(f.0 == (e["seq"] as? NSNumber)?.uint64Value)
            #expect(f.3.count == (e["jpegSize"] as? NSNumber)?.intValue)
            #expect(SHA256.hex(f.3) == e["jpegSHA256"] as? String)
            #expect(banditIsWholeJPEG(f.3))
            let pts = (e["pts"] as? NSNumber)?.int64Value ?? -1
            if pts == 0 {
                #expect(f.1 == nil && f.2 == .arrival)
            } else {
                #expect(f.1 == pts && f.2 == .camera)
            }
        }
        #expect(drops == 2, "frame 5 lost a datagram, frame 11 was cut by the end of the capture")

        // 2. The emulator's datagrams, received on a plain UDP socket.
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = BanditEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 768, height: 432), group: group,
                                      firstPacketNumber: 65_490)
        let port = try await emulator.start()
        let received = Collected<[[UInt8]]>([])
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.addHandler(BanditDatagramSink(received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let client = CameraHTTP()
        let body = Array(#"{"viewfinder_active": true, "viewfinder_streaming_port": \#(udp.localAddress!.port!)}"#.utf8)
        let r = try await client.request("POST", HTTPURL(host: "127.0.0.1", port: port, target: "/api/2/viewfinder"),
                                         headers: [("Content-Type", "application/json")], body: body)
        #expect(r.status == 200)
        #expect(await waitUntil(timeout: 5) { emulator.framesSent >= 12 })
        _ = try await client.request("POST", HTTPURL(host: "127.0.0.1", port: port, target: "/api/2/viewfinder"),
                                     body: Array(#"{"viewfinder_active": false, "viewfinder_streaming_port": -1}"#.utf8))
        try await Task.sleep(for: .milliseconds(100))
        try await udp.close()
        await emulator.stop()
        let emitted = received.withLock { $0 }

        let a = Self.shape(captured), b = Self.shape(emitted)
        #expect(a.completeFrames >= 10 && b.completeFrames >= 10)
        #expect(a.startsAre15Bytes && b.startsAre15Bytes)
        #expect(a.exactSizes && b.exactSizes)
        #expect(b.consecutive)
        #expect(a.dataChunks == [1017] && b.dataChunks == [1017], "1024-byte datagrams in both")
        // Both parse into whole frames the same way; the emulator's are the ones it sent.
        let (ef, edrops) = Self.ingest(emitted, finish: false)
        #expect(ef.count >= 10)
        #expect(edrops == 0)
        let sent = emulator.sentFrames
        for f in ef {
            #expect(banditIsWholeJPEG(f.3))
            #expect(sent.first { UInt64($0.seq) == f.0 }?.jpeg == f.3)
        }
        #expect(ef.contains { ($0.0 ?? 0) < 100 }, "packet numbers wrapped past 65535 as in the capture")
    }
}

private final class BanditDatagramSink: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let out: Collected<[[UInt8]]>
    init(_ out: Collected<[[UInt8]]>) { self.out = out }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let d = Array(unwrapInboundIn(data).data.readableBytesView)
        out.withLock { $0.append(d) }
    }
}
