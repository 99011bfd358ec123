import Foundation
import Testing
import TestSupport

/// nginx with the RTMP module, on a loopback port of its own (Debian: nginx-light, libnginx-mod-rtmp).
final class NginxRTMP: @unchecked Sendable {  // the Process is only touched by the test's task
    static let binary = Locations.program("nginx") ?? "nginx"
    static let module = Locations.nginxModule("ngx_rtmp_module.so") ?? "ngx_rtmp_module.so"
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: binary) && FileManager.default.fileExists(atPath: module)
    }

    let dir: URL
    let port: Int
    private var process: Process?

    init(port: Int) throws {
        self.port = port
        dir = try temporaryDirectory("lg-nginx")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("logs"), withIntermediateDirectories: true)
        try """
            load_module \(Self.module);
            daemon off;
            master_process off;
            pid \(dir.path)/nginx.pid;
            error_log \(dir.path)/error.log info;
            events { worker_connections 64; }
            rtmp { server { listen 127.0.0.1:\(port); application live { live on; record off; } } }

            """.write(to: dir.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
    }

    func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["-c", dir.appendingPathComponent("nginx.conf").path, "-p", dir.path, "-e", dir.appendingPathComponent("error.log").path]
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
    }

    /// SIGKILL: the server vanishes as in a crash.
    func kill() {
        guard let p = process, p.isRunning else { return }
        Foundation.kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        process = nil
    }

    func cleanUp() {
        kill()
        try? FileManager.default.removeItem(at: dir)
    }
}

/// Frames an ffmpeg reader decoded from `input` in `seconds` of the stream's own time (its -progress count).
func framesRead(_ input: [String], seconds: Int, timeout: Double = 30) async throws -> (frames: Int, output: String) {
    let r = try await runProcessAsync(Locations.program("ffmpeg")!, ["-nostdin", "-nostats", "-v", "warning", "-progress", "pipe:1"] + input
                                      + ["-t", "\(seconds)", "-f", "null", "-"], timeout: timeout)
    let frames = r.output.split(separator: "\n").last { $0.hasPrefix("frame=") }.flatMap { Int($0.dropFirst(6)) } ?? 0
    return (frames, r.output)
}

/// The API's view of a camera's pushes.
func pushStates(_ api: String, camera: String = "cam0") async -> [[String: Any]] {
    guard let r = await httpGet("\(api)/api/v1/cameras/\(camera)"),
          let o = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any] else { return [] }
    return o["push"] as? [[String: Any]] ?? []
}

/// Polls until the push to `url` is in `state` (or the deadline).
func waitForPush(_ api: String, url: String, state: String, timeout: Double) async -> [String: Any]? {
    var found: [String: Any]?
    await waitUntilAsync(timeout: timeout, poll: .milliseconds(200)) {
        found = await pushStates(api).first { $0["url"] as? String == url && $0["state"] as? String == state }
        return found != nil
    }
    return found
}

@Suite("Push to media servers", .serialized, .tags(.integration))
struct PushTests {
    static let pythonWithGI = Locations.python(importing: "gi")
    @Test(.enabled(if: livegateBinary() != nil && NginxRTMP.available && Locations.program("ffmpeg") != nil,
                   "needs the livegate binary, ffmpeg, and nginx with libnginx-mod-rtmp (deploy/install-deps.sh)"))
    func rtmpToNginxSurvivesTheServerRestarting() async throws {
        let nginx = try NginxRTMP(port: try freePort())
        defer { nginx.cleanUp() }
        try nginx.start()
        let url = "rtmp://127.0.0.1:\(nginx.port)/live/cam0"
        let gw = try GatewayProcess(["--push", url])
        #expect(await gw.waitReady(), "\(gw.output)")
        let pushing = await waitForPush(gw.api, url: url, state: "pushing", timeout: 15)
        let states = await pushStates(gw.api)
        #expect(pushing != nil, "\(states) \(gw.output)")
        let first = try await framesRead(["-i", url], seconds: 4)
        #expect(first.frames >= 112, "an RTMP reader decoded \(first.frames) frames in 4 s (≥ 28 fps wanted): \(first.output.suffix(400))")

        // nginx dies: the push says why and retries; nginx comes back: readable again without touching livegate.
        nginx.kill()
        let retrying = await waitForPush(gw.api, url: url, state: "retrying", timeout: 15)
        let statesAfterKill = await pushStates(gw.api)
        #expect(retrying?["reason"] as? String != nil, "\(statesAfterKill)")
        try nginx.start()
        let back = ContinuousClock.now
        var again = 0
        while again < 20 && ContinuousClock.now - back < .seconds(20) {
            again = try await framesRead(["-rw_timeout", "3000000", "-i", url], seconds: 1, timeout: 8).frames
        }
        let took = ContinuousClock.now - back
        print("push: an RTMP reader decoded \(first.frames) frames in 4 s; readable again \(took) after nginx restarted")
        #expect(again >= 20, "no picture from nginx after its restart")
        #expect(took <= .seconds(15), "readable again after \(took)")
        #expect(gw.output.contains("push failed; retrying"))
        #expect(!gw.output.contains("rtmp://127.0.0.1:\(nginx.port)/live/cam0?"), "no query (stream key) in the log")
        await gw.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("ffmpeg") != nil && Self.pythonWithGI != nil,
                   "needs the livegate binary, ffmpeg and a python3 with gi (python3-gi)"))
    func rtspRecordAndSRTReceiversAndAStalledServerDoNotSlowAnything() async throws {
        // An RTSP RECORD receiver (gst-rtsp-server), an SRT listener (ffmpeg) and a server that
        // accepts TCP and never reads or answers.
        let rtspPort = try freePort(), srtPort = try freePort()
        let receiver = Process()
        let receiverLog = FileManager.default.temporaryDirectory.appendingPathComponent("lg-rec-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: receiverLog.path, contents: nil)
        receiver.executableURL = URL(fileURLWithPath: Self.pythonWithGI!)
        receiver.arguments = [Locations.repository.appendingPathComponent("Tests/Scripts/rtsp_record_server.py").path, "--port", "\(rtspPort)"]
        receiver.standardOutput = try FileHandle(forWritingTo: receiverLog)
        receiver.standardError = receiver.standardOutput
        receiver.standardInput = FileHandle.nullDevice
        try receiver.run()
        defer {
            if receiver.isRunning { receiver.terminate() }
            try? FileManager.default.removeItem(at: receiverLog)
        }
        func receiverReports() -> [[String: Int]] {
            ((try? String(contentsOf: receiverLog, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Int]
            }
        }
        #expect(await waitUntil(timeout: 15) { receiverReports().contains { $0["listening"] != nil } },
                "the RTSP receiver did not start: \((try? String(contentsOf: receiverLog, encoding: .utf8)) ?? "")")
        let hole = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(hole) }
        let holePort = try freePort()
        let bound = withLoopbackAddress(port: holePort) { bind(hole, $0, $1) == 0 }
        #expect(bound && listen(hole, 8) == 0)
        let srtReader = Task { try await framesRead(["-i", "srt://127.0.0.1:\(srtPort)?mode=listener"], seconds: 4, timeout: 40) }
        try await Task.sleep(for: .milliseconds(500))

        let rtspURL = "rtsp://127.0.0.1:\(rtspPort)/live/cam0", srtURL = "srt://127.0.0.1:\(srtPort)"
        let holeURL = "rtmp://127.0.0.1:\(holePort)/live/cam0"
        let gw = try GatewayProcess(["--push", rtspURL, "--push", srtURL, "--push", holeURL])
        #expect(await gw.waitReady(), "\(gw.output)")

        // The stalled server never holds up the encoder: an RTSP H.264 viewer of livegate runs at full rate.
        let viewer = try await framesRead(["-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(gw.rtsp)/cam0"], seconds: 4)
        #expect(viewer.frames >= 112, "the H.264 viewer got \(viewer.frames) frames in 4 s beside a stalled push")
        let srt = try await srtReader.value
        #expect(srt.frames >= 112, "the SRT listener decoded \(srt.frames) frames in 4 s: \(srt.output.suffix(300))")
        // The RTSP receiver's rate in the stream's own time.
        let rtspPushing = await waitForPush(gw.api, url: rtspURL, state: "pushing", timeout: 15)
        let states = await pushStates(gw.api)
        #expect(rtspPushing != nil, "\(states)")
        #expect(await waitUntil(timeout: 20) { (receiverReports().last?["span_ms"] ?? 0) >= 4000 }, "\(receiverReports().last ?? [:])")
        let last = receiverReports().last ?? [:]
        let fps = Double((last["frames"] ?? 1) - 1) / (Double(max(1, last["span_ms"] ?? 1)) / 1000)
        #expect(fps >= 28, "the RTSP RECORD receiver decoded \(last) (\(fps) fps)")
        #expect(receiverReports().last?["width"] == 768)
        let stalled = await pushStates(gw.api).first { $0["url"] as? String == holeURL }
        #expect(stalled != nil && stalled?["state"] as? String != "pushing", "a server that never answers is not 'pushing': \(String(describing: stalled))")
        await gw.stop()
    }
}

@Suite("AF in recordings", .tags(.integration))
struct AFRecordingTests {
    /// Sony PTP's focal-frame boxes and Fujifilm's focus point reach the recording's sidecar like
    /// every vendor's.
    @Test(arguments: ["sony-ptp", "fuji"])
    func ptpBoxesAreInTheSidecar(vendor: String) async throws {
        let rec = try temporaryDirectory("lg-rec-\(vendor)")
        defer { try? FileManager.default.removeItem(at: rec) }
        let gateway = try await startGateway(camera: "emulator:\(vendor)", label: "\(vendor)-rec") { $0.recordDirectory = rec.path }
        func sidecarLines() -> [String] {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: rec.path)) ?? []
            guard let f = files.first(where: { $0.hasSuffix(".af.jsonl") }),
                  let text = try? String(contentsOf: rec.appendingPathComponent(f), encoding: .utf8) else { return [] }
            return text.split(separator: "\n").map(String.init)
        }
        let enough = await waitUntil(timeout: 20) { sidecarLines().count >= 30 }
        await gateway.stop()
        #expect(enough, "sidecar lines: \(sidecarLines().count)")
        let lines = sidecarLines()
        let withBox = lines.filter { line in
            let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (o?["af"] as? [[String: Any]])?.count == 1
        }
        #expect(Double(withBox.count) >= Double(lines.count) * 0.9, "\(withBox.count) of \(lines.count) lines carry the box")
    }
}
