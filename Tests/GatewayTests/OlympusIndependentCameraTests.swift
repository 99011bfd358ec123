import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing
import TestSupport

/// Olympus against a camera livegate did not write: `Tests/Scripts/olympus_cam.py`, written only from
/// the protocol notes (olympus.md) by a session that never saw livegate's Olympus code, with its
/// own choices where the notes are UNCONFIRMED. It logs every HTTP request and every frame it sends
/// (frame number, SHA-256, the AF box it put in TLV 2), which is what these tests check against.
@Suite(.serialized, .tags(.integration)) struct OlympusIndependentCameraTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/olympus_cam.py").path
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil && Locations.program("ffprobe") != nil

    /// The Python camera as a child process.
    final class PyCamera: Sendable {
        let child: PythonCamera

        /// Starts it (port 0: any free port) and waits for its `ready` line.
        init(dir: URL, port: Int = 0) async throws {
            child = try await PythonCamera(script: OlympusIndependentCameraTests.script, dir: dir, port: port,
                                           arguments: ["--save-frames", dir.appendingPathComponent("jpegs").path])
        }
        var port: Int { child.port }
        var dir: URL { child.dir }
        func stop() async { await child.stop() }
        var requests: [[String: Any]] { child.requests }
        var frames: [[String: Any]] { child.frames }
        /// The scan data (RTP/JPEG carries it unchanged) of every JPEG it sends, hashed.
        var scanHashes: Set<String> {
            let jpegs = dir.appendingPathComponent("jpegs")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: jpegs.path)) ?? []
            return Set(names.compactMap { n in
                FileManager.default.contents(atPath: jpegs.appendingPathComponent(n).path)
                    .flatMap { OlympusGatewayTests.scanData(Array($0)) }.map { SHA256.hex($0) }
            })
        }
    }

    /// Every camera frame the hub publishes: its bytes' hash, frame number and AF boxes.
    final class Tap: @unchecked Sendable {
        let queue = BoundedFrameQueue(capacity: 8192)
        func drain() -> [(sha: String, seq: UInt64?, af: [PixelRect], pts: Int64?, camera: Bool)] {
            var out: [(String, UInt64?, [PixelRect], Int64?, Bool)] = []
            while let f = queue.pop() {
                if !f.isSlate { out.append((SHA256.hex(Array(f.bytes)), f.sequence, f.afAreas.map(\.pixels), f.cameraPTS, f.timeBase == .camera)) }
                f.release()
            }
            return out
        }
    }

    @Test(.enabled(if: usable && livegateBinary() != nil, "needs python3, ffmpeg/ffprobe and the livegate binary"))
    func rateSetRecordingAndAFAgainstAnIndependentCamera() async throws {
        let dir = try temporaryDirectory("livegate-olympus-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PyCamera(dir: dir)
        let recDir = dir.appendingPathComponent("rec")
        try FileManager.default.createDirectory(at: recDir, withIntermediateDirectories: true)
        let gateway = try await startGateway(camera: "olympus://127.0.0.1:\(camera.port)", label: "olympus-independent") {
            $0.recordDirectory = recDir.path
        }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        let tap = Tap()
        cam.hub.attach(tap.queue)
        #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > 30 }, "no frames from the camera: \(cam.driver.lastError ?? "-")")
        #expect(cam.frameSize.width == 640 && cam.frameSize.height == 480)

        // ≥ 29 fps on /cam0/raw at 640×480: six seconds of stream time (the gateway's clock).
        let raw = try #require(gateway.urls(for: cam)["rtspRaw"])
        let md5 = dir.appendingPathComponent("raw.framemd5").path
        let r = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-rtsp_transport", "tcp", "-i", raw, "-t", "6",
                                                            "-c", "copy", "-f", "framemd5", md5], timeout: 60)
        #expect(r.status == 0, "\(r.output)")
        let rtspFrames = ((try? String(contentsOfFile: md5, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        print("olympus (independent camera): \(rtspFrames) frames in 6 s on /cam0/raw")
        #expect(rtspFrames >= 174, "\(rtspFrames) frames in 6 s: below 29 fps")
        let probe = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v:0",
                                                                 "-show_entries", "stream=width,height", "-of", "csv=p=0", raw], timeout: 60)
        #expect(probe.output.contains("640,480"), "\(probe.output)")

        // `livegate set cam0 whiteBalance tungsten`: exactly one set_camprop, with the camera's own value (20).
        let set = try await runProcessAsync(livegateBinary()!, ["set", "cam0", "whiteBalance", "tungsten", "--api", base], timeout: 30)
        #expect(set.status == 0, "\(set.output)")
        let sets = camera.requests.filter { ($0["path"] as? String)?.hasSuffix("set_camprop.cgi") == true }
        #expect(sets.count == 1, "\(sets)")
        #expect((sets.first?["query"] as? [String: Any])?["propname"] as? String == "wbvalue")
        #expect((sets.first?["body"] as? String)?.contains("<value>20</value>") == true, "\(sets)")

        await gateway.stop()
        await camera.stop()
        let published = tap.drain()
        let sent = camera.frames
        let sentByNumber = Dictionary(sent.compactMap { f -> (UInt64, [String: Any])? in
            (f["frame"] as? Int).map { (UInt64($0), f) }
        }, uniquingKeysWith: { a, _ in a })
        #expect(published.count > 100)
        // Every published frame is the camera's frame of that number, byte for byte.
        let wrong = published.filter { p in p.seq.flatMap { sentByNumber[$0]?["sha256"] as? String } != p.sha }
        #expect(wrong.isEmpty, "\(wrong.count) of \(published.count) frames are not the camera's frame of their number")
        // PTS: the camera's frame numbers at the live view's rate (30 fps).
        #expect(published.allSatisfy { $0.camera && $0.pts != nil && $0.seq != nil }, "frames without the camera's time")
        if let first = published.first, let firstSeq = first.seq, let firstPTS = first.pts {
            let off = published.filter { p in
                guard let seq = p.seq, let pts = p.pts else { return true }
                return abs((pts - firstPTS) - Int64(seq - firstSeq) * 1_000_000_000 / 30) > 1
            }
            #expect(off.isEmpty, "\(off.count) of \(published.count) frames whose PTS is not their frame number × 1/30 s")
        }
        // AF boxes land where the camera put them.
        var withAF = 0, matched = 0
        for p in published {
            guard let seq = p.seq, let box = sentByNumber[seq]?["af"] as? [Int], box.count == 4 else { continue }
            withAF += 1
            if p.af.contains(PixelRect(x: box[0], y: box[1], width: box[2], height: box[3])) { matched += 1 }
        }
        #expect(withAF > 100)
        #expect(Double(matched) >= 0.9 * Double(withAF), "\(matched) of \(withAF) frames with an AF box matched")
        // The recording holds the published frames, byte for byte.
        let segments = try FileManager.default.contentsOfDirectory(atPath: recDir.path).filter { $0.hasSuffix(".mkv") }.sorted()
        #expect(segments.count == 1, "\(segments)")
        let frameDir = dir.appendingPathComponent("extracted")
        try FileManager.default.createDirectory(at: frameDir, withIntermediateDirectories: true)
        let extract = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-i", recDir.appendingPathComponent(segments[0]).path,
                                                                   "-c", "copy", "-f", "image2", frameDir.appendingPathComponent("f%05d.jpg").path])
        #expect(extract.status == 0, "\(extract.output)")
        let recorded = try FileManager.default.contentsOfDirectory(atPath: frameDir.path).sorted()
            .map { SHA256.hex(Array(try Data(contentsOf: frameDir.appendingPathComponent($0)))) }
        // The tap was attached after the recording began: the published frames are its end.
        #expect(recorded.count >= published.count && Array(recorded.suffix(published.count)) == published.map(\.sha),
                "the recording (\(recorded.count) frames) does not end with the \(published.count) frames the camera sent")
        #expect(Set(recorded).isSubset(of: Set(sent.compactMap { $0["sha256"] as? String })), "the recording holds frames the camera never sent")
    }

    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func theSameRTSPClientSeesTheIndependentCameraAgainAfterARestart() async throws {
        let dir = try temporaryDirectory("livegate-olympus-independent-restart")
        defer { try? FileManager.default.removeItem(at: dir) }
        var camera = try await PyCamera(dir: dir)
        let port = camera.port
        let gateway = try await startGateway(camera: "olympus://127.0.0.1:\(port)", label: "olympus-independent")
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > 10 })
        let raw = try #require(gateway.urls(for: cam)["rtspRaw"])
        let out = dir.appendingPathComponent("rtsp")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let ffmpeg = try startRTSPFrameWriter(raw, into: out)
        defer { if ffmpeg.isRunning { ffmpeg.terminate() } }
        func received() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).sorted() }
        func isCameraFrame(_ name: String, _ scans: Set<String>) -> Bool {
            guard let b = FileManager.default.contents(atPath: out.appendingPathComponent(name).path),
                  let scan = OlympusGatewayTests.scanData(Array(b)) else { return false }
            return scans.contains(SHA256.hex(scan))
        }
        #expect(await waitUntil(timeout: 15) { received().count > 20 }, "the RTSP client got no frames")
        let scans = camera.scanHashes
        #expect(received().prefix(40).contains { isCameraFrame($0, scans) }, "the RTSP frames do not match the camera's JPEGs")

        // Killed: the client gets the slate (no camera frame) while the camera is away.
        await camera.stop()
        #expect(await waitUntil(timeout: 10) { cam.driver.state != .streaming })
        try await Task.sleep(for: .seconds(1))
        let seenBefore = Set(received())
        camera = try await PyCamera(dir: dir, port: port)
        let restarted = Date()
        let away = received().filter { !seenBefore.contains($0) }
        var found: Date?
        while found == nil && Date().timeIntervalSince(restarted) < 8 {
            if received().contains(where: { !seenBefore.contains($0) && isCameraFrame($0, scans) }) { found = Date() }
            if found == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(!away.contains { isCameraFrame($0, scans) }, "camera frames while the camera was away?")
        #expect(ffmpeg.isRunning, "the RTSP client gave up")
        let after = try #require(found.map { $0.timeIntervalSince(restarted) }, "no frame of the restarted camera reached the client in 8 s")
        print("olympus (independent camera) restart: the same RTSP client got camera frames \(String(format: "%.2f", after)) s after the camera came back")
        #expect(after < 5)
        ffmpeg.terminate()
        await gateway.stop()
        await camera.stop()
    }

    /// The first download of a shot cut half-way (`IndependentCameraChecks.brokenTransfer`).
    @Test(.enabled(if: usable && Locations.program("curl") != nil, "needs python3, ffmpeg, ffprobe and curl"))
    func aShotWhoseDownloadBrokeIsSavedWhole() async throws {
        let dir = try temporaryDirectory("livegate-olympus-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Self.script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--break-transfer-once",
        ])
        try await IndependentCameraChecks.with(camera, url: "olympus://127.0.0.1:\(camera.port)", label: "olympus-broken") { checks, cam in
            if await checks.streams(cam) { try await checks.brokenTransfer(cam, captureSucceeds: true) }
        }
    }
}
