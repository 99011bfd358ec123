import TestSupport
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Logging
import NIOPosix
import Testing

/// Olympus through the whole gateway, checked against what the emulated camera sent: the recording
/// byte for byte, the AF boxes, `livegate set` as exactly one `set_camprop`, and one RTSP client that
/// sees the camera again after it was killed and restarted.
@Suite(.serialized, .tags(.integration)) struct OlympusGatewayTests {
    static let ffmpegPresent = Locations.program("ffmpeg") != nil && Locations.program("ffprobe") != nil

    /// Every camera frame the hub publishes, with its AF boxes.
    final class Tap: @unchecked Sendable {
        let queue = BoundedFrameQueue(capacity: 8192)
        func drain() -> [(sha: String, af: [PixelRect])] {
            var out: [(String, [PixelRect])] = []
            while let f = queue.pop() {
                if !f.isSlate { out.append((SHA256.hex(Array(f.bytes)), f.afAreas.map(\.pixels))) }
                f.release()
            }
            return out
        }
    }

    func emulator(history: Int = 100_000, mood: EmulatorMood = .prompt) async throws -> OlympusEmulator {
        var config = OlympusEmulator.Configuration()
        config.sentFrameHistory = history
        config.mood = mood
        let emu = try OlympusEmulator(configuration: config, group: MultiThreadedEventLoopGroup.singleton)
        try await emu.start()
        return emu
    }

    func gateway(_ emu: OlympusEmulator, record: URL? = nil) async throws -> Gateway {
        try await startGateway(camera: emu.cameraURL, label: "olympus-e2e") { $0.recordDirectory = record?.path }
    }

    @Test(.enabled(if: ffmpegPresent && livegateBinary() != nil, "needs ffmpeg and the livegate binary"))
    func recordingAFAndTheCLIMatchTheCamera() async throws {
        let emu = try await emulator()
        let recDir = try temporaryDirectory("livegate-olympus-rec")
        defer { try? FileManager.default.removeItem(at: recDir) }
        let gateway = try await gateway(emu, record: recDir)
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        let tap = Tap()
        cam.hub.attach(tap.queue)
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > 60 }, "no Olympus frames: \(cam.driver.lastError ?? "-")")
        #expect(cam.frameSize == (640, 480) || (cam.frameSize.width == 640 && cam.frameSize.height == 480))

        let set = try await runProcessAsync(livegateBinary()!, ["set", "cam0", "whiteBalance", "tungsten", "--api", base], timeout: 30)
        #expect(set.status == 0, "\(set.output)")
        let sets = emu.setCamprops
        #expect(sets.count == 1 && sets.first?.propname == "wbvalue" && sets.first?.value == "20", "\(sets)")

        await gateway.stop()
        await emu.stop()
        let published = tap.drain()
        let sent = emu.sentFrames.filter { !$0.damaged }
        let sentBySHA = Dictionary(sent.map { (SHA256.hex($0.jpeg), $0) }, uniquingKeysWith: { a, _ in a })
        #expect(published.count > 60)
        // Every published frame is a frame the camera sent, byte for byte.
        #expect(published.allSatisfy { sentBySHA[$0.sha] != nil })
        // AF boxes land where the camera put them (the JPEG is the live-view size: same pixels).
        var withAF = 0, matched = 0
        for p in published {
            guard let af = sentBySHA[p.sha]?.metadata.afFrame, af.colour != 0 else { continue }
            withAF += 1
            let want = PixelRect(x: Int(af.x), y: Int(af.y), width: Int(af.width), height: Int(af.height))
            if p.af.contains(want) { matched += 1 }
        }
        #expect(withAF > 30)
        #expect(Double(matched) >= 0.9 * Double(withAF), "\(matched) of \(withAF) frames with an AF box matched")
        // The recording holds the published JPEGs, byte for byte.
        let segments = try FileManager.default.contentsOfDirectory(atPath: recDir.path).filter { $0.hasSuffix(".mkv") }.sorted()
        #expect(segments.count == 1)
        let frameDir = try temporaryDirectory("livegate-olympus-frames")
        defer { try? FileManager.default.removeItem(at: frameDir) }
        let extract = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-i", recDir.appendingPathComponent(segments[0]).path,
                                                                   "-c", "copy", "-f", "image2", frameDir.appendingPathComponent("f%05d.jpg").path])
        #expect(extract.status == 0, "\(extract.output)")
        let recorded = try FileManager.default.contentsOfDirectory(atPath: frameDir.path).sorted()
            .map { SHA256.hex(Array(try Data(contentsOf: frameDir.appendingPathComponent($0)))) }
        // The recorder starts with the gateway, the tap just after it: the recording may begin with a
        // frame or two the tap never saw, and from then on holds exactly what was published.
        let before = recorded.count - published.count
        #expect((0...2).contains(before) && Array(recorded.suffix(published.count)) == published.map(\.sha),
                "the recording differs from what the camera sent (\(recorded.count) recorded, \(published.count) published)")
        #expect(recorded.prefix(max(0, before)).allSatisfy { sentBySHA[$0] != nil }, "a recorded frame the camera never sent")
    }

    /// The entropy-coded data of a JPEG (after the SOS header, up to the first EOI, which cannot occur
    /// inside it): what RTP/JPEG carries unchanged, so a frame an RTSP client rebuilt (with its own
    /// headers, and here a second EOI) can be matched to the camera's.
    static func scanData(_ j: [UInt8]) -> ArraySlice<UInt8>? {
        var i = 2
        while i + 4 <= j.count, j[i] == 0xFF {
            let marker = j[i + 1]
            let len = Int(j[i + 2]) << 8 | Int(j[i + 3])
            if marker == 0xDA {
                let start = i + 2 + len
                var k = start
                while k + 1 < j.count, !(j[k] == 0xFF && j[k + 1] == 0xD9) { k += 1 }
                return k + 1 < j.count ? j[start..<k] : nil
            }
            i += 2 + len
        }
        return nil
    }

    @Test(.enabled(if: ffmpegPresent, "needs ffmpeg"))
    func theSameRTSPClientSeesTheCameraAgainWithinFiveSecondsOfARestart() async throws {
        let emu = try await emulator()
        let gateway = try await gateway(emu)
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > 10 })
        let raw = try #require(gateway.urls(for: cam)["rtspRaw"])
        let dir = try temporaryDirectory("livegate-olympus-rtsp")
        defer { try? FileManager.default.removeItem(at: dir) }
        // One ffmpeg client for the whole test, writing every frame it gets.
        let ffmpeg = try startRTSPFrameWriter(raw, into: dir)
        defer { if ffmpeg.isRunning { ffmpeg.terminate() } }
        func received() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() }
        #expect(await waitUntil(timeout: 15) { received().count > 20 }, "the RTSP client got no frames")

        // Sanity: frames before the restart match the camera's on their scan data.
        let sentScans = Set(emu.sentFrames.compactMap { Self.scanData($0.jpeg).map { SHA256.hex($0) } })
        let early = received().prefix(40).compactMap { name -> String? in
            guard let b = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path) else { return nil }
            return Self.scanData(Array(b)).map { SHA256.hex($0) }
        }
        #expect(early.contains { sentScans.contains($0) }, "RTSP frames do not match the camera's scan data (\(early.count) checked)")
        await emu.stop()
        #expect(await waitUntil(timeout: 10) { cam.driver.state != .streaming })
        try await Task.sleep(for: .seconds(1))
        let seenBefore = Set(received())
        let sentBefore = emu.sentFrames.count
        _ = try await emu.start()
        let restarted = Date()
        // A frame the restarted camera sent reaches the same client (matched on its scan data).
        var found: Date?
        while found == nil && Date().timeIntervalSince(restarted) < 8 {
            let newSent = Set(emu.sentFrames.dropFirst(sentBefore).compactMap { Self.scanData($0.jpeg).map { SHA256.hex($0) } })
            for name in received() where !seenBefore.contains(name) {
                guard let bytes = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path),
                      let scan = Self.scanData(Array(bytes)) else { continue }
                if newSent.contains(SHA256.hex(scan)) { found = Date(); break }
            }
            if found == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ffmpeg.isRunning, "the RTSP client gave up")
        let after = try #require(found.map { $0.timeIntervalSince(restarted) }, "no frame of the restarted camera reached the client in 8 s")
        print("olympus restart: first camera frame at the same RTSP client \(String(format: "%.2f", after)) s after the camera came back")
        #expect(after < 5)
        ffmpeg.terminate()
        await gateway.stop()
        await emu.stop()
    }

    /// Against a prompt body and a moody one (503 busy for 2 s after each mode switch, every third
    /// property set refused once): the busy answers are waited out, never passed on.
    @Test(arguments: [EmulatorMood.prompt, .moody])
    func captureDownloadsTheNewFileABodyShotArrivesAndARefusalIsTheCamerasReason(mood: EmulatorMood) async throws {
        let emu = try await emulator(history: 0, mood: mood)
        emu.shootOnBody()  // a picture already on the card is not part of the next shot
        let dir = try temporaryDirectory("livegate-olympus-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gateway = try await startGateway(camera: emu.cameraURL, label: "olympus-capture") { $0.capturesDirectory = dir.path }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.state == .streaming })
        // Property sets, three in a row (a moody body refuses the third once).
        let props = try await cam.driver.properties()
        if let p = props.first(where: { $0.writable && $0.choices.count >= 2 }) {
            for v in [p.choices[0], p.choices[1], p.choices[0]] {
                try await cam.driver.setProperty(p.name, to: v)
            }
        }
        // The card (play mode: the body switches, and is busy a while after).
        let listed = try await (cam.driver as? any CardBrowsing)?.listFiles() ?? []
        #expect(listed.count == 1, "\(mood): \(listed.map(\.path))")
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming }, "\(mood): live view did not come back after the card")
        if mood.isMoody { #expect(emu.requests.contains { $0.status == 503 }, "the moody body never answered busy") }
        let files: [SavedCapture]
        do { files = try await gateway.capture(camera: cam, autofocus: false) } catch {
            Issue.record("\(error); requests: \(emu.requests.suffix(12).map { "\($0.method) \($0.path) \($0.query) \($0.status)" })")
            throw error
        }
        #expect(files.count == 1)
        let f = try #require(files.first)
        #expect(emu.cardNames.count == 2 && f.cameraName == emu.cardNames.last)
        #expect(Array(FileManager.default.contents(atPath: f.path) ?? Data()) == emu.cardFile(f.cameraName))
        #expect(f.sha256 == SHA256.hex(emu.cardFile(f.cameraName) ?? []))
        // A shot on the body is found on the card and fetched by itself; the API's own shot is not
        // fetched a second time.
        let body = emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.cameraName == body } },
                "the body shot \(body) was not fetched")
        let bodySaved = try #require(gateway.captures(camera: "cam0").first { $0.cameraName == body })
        #expect(bodySaved.fromBody && Array(FileManager.default.contents(atPath: bodySaved.path) ?? Data()) == emu.cardFile(body))
        try await Task.sleep(for: .seconds(3))  // more than one look at the card
        #expect(gateway.captures(camera: "cam0").count == 2, "\(gateway.captures(camera: "cam0").map(\.cameraName))")
        emu.refuseShots("CARD_FULL")
        do {
            _ = try await gateway.capture(camera: cam, autofocus: false)
            Issue.record("a refused shot was reported as taken")
        } catch {
            #expect("\(error)".contains("CARD_FULL"), "\(error)")
        }
        #expect(gateway.captures(camera: "cam0").count == 2)
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 5) { cam.driver.stats.frames > before + 3 }, "live view stopped after the shots")
        await gateway.stop()
        await emu.stop()
    }

    /// A camera held on its side (TLV 4 = 6, 90° clockwise): the decoded outputs are turned upright
    /// (H.264 480×640), the camera's JPEGs stay as sent (raw 640×480), the API says so.
    @Test(.enabled(if: ffmpegPresent, "needs ffmpeg/ffprobe"))
    func aCameraHeldOnItsSideIsTurnedUprightInTheDecodedOutputs() async throws {
        var config = OlympusEmulator.Configuration()
        config.orientation = 6
        let emu = try OlympusEmulator(configuration: config, group: MultiThreadedEventLoopGroup.singleton)
        try await emu.start()
        let gateway = try await gateway(emu)
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > 10 })
        let urls = gateway.urls(for: cam)
        func size(_ url: String) async throws -> String {
            try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v:0",
                                                          "-show_entries", "stream=width,height", "-of", "csv=p=0", url], timeout: 60).output
        }
        let h264 = try await size(try #require(urls["rtsp"]))
        #expect(h264.contains("480,640"), "H.264: \(h264)")
        let raw = try await size(try #require(urls["rtspRaw"]))
        #expect(raw.contains("640,480"), "raw: \(raw)")
        let json = try await runProcessAsync(Locations.program("curl")!, ["-s", "\(base)/api/v1/cameras/cam0"], timeout: 30).output
        let obj = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(obj?["rotation"] as? Int == 90, "\(json.prefix(600))")
        await gateway.stop()
        await emu.stop()
    }

    /// The card as the camera reports it (TLV 3 and 5): in the camera JSON and as `storage` events,
    /// a new one when a shot on the body takes a place on the card.
    @Test func theCardStateIsReportedAndAShotIsAStorageEvent() async throws {
        let emu = try await emulator()
        let gateway = try await gateway(emu)
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > 10 })
        let seen = Collected<[String]>([])
        let stream = try #require(gateway.eventStream(lastEventID: nil))
        let reader = Task { for await e in stream where e.contains("event: storage") { seen.withLock { $0.append(e) } } }
        defer { reader.cancel() }
        #expect(await waitUntil(timeout: 5) { seen.withLock { $0.count } >= 1 }, "no storage event")
        let first = seen.withLock { $0.first ?? "" }
        #expect(first.contains(#""mounted":true"#) && first.contains(#""full":false"#) && first.contains(#""remainingShots":999"#), "\(first)")
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 5) { seen.withLock { $0.contains { $0.contains(#""remainingShots":998"#) } } },
                "no storage event after the shot: \(seen.withLock { $0 })")
        let storage = (cam.driver as? any StorageReporting)?.storage
        #expect(storage?.mounted == true && storage?.writeProtected == false && storage?.remainingShots == 998)
        await gateway.stop()
        await emu.stop()
    }
}
