import Foundation
import Testing
import TestSupport

/// A camera (its own process) killed with SIGKILL and started again, round after round, while an
/// RTSP viewer, an HLS viewer and the recorder run: each time the camera is back, livegate streams
/// its frames again within 2 s; the viewers never lose their connection (they keep getting frames,
/// the slate while the camera is away); the timestamps of the
/// recording only go forward.
@Suite(.serialized, .tags(.integration)) struct CameraRestartTests {
    /// `livegate emulate sony` on `port`, a process of its own.
    private func startCamera(port: Int) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: livegateBinary()!)
        p.arguments = ["emulate", "sony", "--port", "\(port)", "--size", "320x240"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// The camera's state and frame count as the API tells them.
    private func cameraStatus(_ api: String) async -> (state: String, frames: Int)? {
        guard let r = await httpGet("\(api)/api/v1/cameras"),
              let list = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [[String: Any]],
              let cam = list.first, let state = cam["state"] as? String, let frames = cam["frames"] as? Int else { return nil }
        return (state, frames)
    }

    /// Frames in ffmpeg's framecrc output: how many, the widest gap between two and the last one's
    /// time (seconds, from the first).
    static func frames(_ framecrc: String) -> (count: Int, maxGap: Double, last: Double) {
        var timeBase = 1.0 / 90_000
        var times: [Double] = []
        for line in framecrc.split(separator: "\n") {
            if line.hasPrefix("#tb 0:") {
                let r = line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/").compactMap { Double($0) }
                if r.count == 2, r[1] > 0 { timeBase = r[0] / r[1] }
            } else if line.hasPrefix("0,") {
                let cols = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                if cols.count > 2, let pts = Double(cols[2]) { times.append(pts * timeBase) }
            }
        }
        times.sort()
        let gap = zip(times, times.dropFirst()).map { $0.1 - $0.0 }.max() ?? .infinity
        return (times.count, gap, (times.last ?? 0) - (times.first ?? 0))
    }

    @Test func cameraKilledAndRestartedWhileViewersAndTheRecorderRun() async throws {
        let rounds = max(3, reliabilityRounds)
        let cameraPort = try freePort()
        var camera = try startCamera(port: cameraPort)
        defer { if camera.isRunning { kill(camera.processIdentifier, SIGKILL) } }
        let dir = try temporaryDirectory("lg-restart")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try GatewayProcess(["--camera", "sony://127.0.0.1:\(cameraPort)", "--record", dir.path, "--hls"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var streaming = false
        for _ in 0..<100 where !streaming {
            streaming = await cameraStatus(gw.api)?.state == "streaming"
            if !streaming { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(streaming, "the camera never streamed: \(gw.output.suffix(500))")

        // The viewers: one on the H.264 mount, one on HLS (once its playlist is written), for the
        // whole run. Each round takes about 3 s; they read a little longer than all rounds.
        let seconds = rounds * 3 + 12
        let playlist = "\(gw.api)/hls/cam0/index.m3u8"
        async let rtspViewer = runProcessAsync(Locations.program("ffmpeg")!, ["-nostdin", "-v", "error", "-rtsp_transport", "tcp",
                                                                  "-i", "rtsp://127.0.0.1:\(gw.rtsp)/cam0", "-t", "\(seconds)",
                                                                  "-f", "framecrc", "-"], timeout: Double(seconds) + 60)
        var hlsReady = false
        for _ in 0..<150 where !hlsReady {
            hlsReady = await httpGet(playlist)?.status == 200
            if !hlsReady { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(hlsReady, "HLS never started")
        async let hlsViewer = runProcessAsync(Locations.program("ffmpeg")!, ["-nostdin", "-v", "error", "-i", playlist, "-t", "\(seconds - 8)",
                                                                 "-c", "copy", "-f", "framecrc", "-"], timeout: Double(seconds) + 60)
        try await Task.sleep(for: .seconds(2))

        var backAfter: [Double] = []
        for round in 0..<rounds {
            kill(camera.processIdentifier, SIGKILL)
            camera.waitUntilExit()
            // Away long enough for livegate to notice (the stream ends) and show the slate.
            try await Task.sleep(for: .seconds(1))
            let before = await cameraStatus(gw.api)
            camera = try startCamera(port: cameraPort)
            let restarted = ContinuousClock.now
            var live = false
            // Live again: streaming, with frames newer than the ones counted before the restart.
            while !live, ContinuousClock.now - restarted < .seconds(10) {
                if let s = await cameraStatus(gw.api), s.state == "streaming", s.frames > (before?.frames ?? 0) {
                    live = true
                } else {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let took = ContinuousClock.now - restarted
            let secondsTaken = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
            backAfter.append(secondsTaken)
            #expect(live && secondsTaken <= 2, "round \(round): live again after \(secondsTaken) s (before: \(String(describing: before)))")
            try await Task.sleep(for: .seconds(1))
        }

        // The viewers kept their connection to the end of their time, and never went long
        // without a picture: live frames, then the slate (at its low rate) while the camera was away.
        let rtsp = try await rtspViewer
        let rtspSeen = Self.frames(rtsp.output)
        #expect(rtsp.status == 0 && rtspSeen.last >= Double(seconds) - 1 && rtspSeen.maxGap <= 1,
                "RTSP viewer: \(rtspSeen) in \(seconds) s, \(rtsp.output.suffix(300))")
        let hls = try await hlsViewer
        let hlsSeen = Self.frames(hls.output)
        #expect(hls.status == 0 && hlsSeen.last >= Double(seconds - 8) - 1 && hlsSeen.maxGap <= 1,
                "HLS viewer: \(hlsSeen) in \(seconds - 8) s, \(hls.output.suffix(300))")
        await gw.stop()

        // The recording: every segment's timestamps only go forward.
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".mkv") }.sorted()
        #expect(!segments.isEmpty)
        var packets = 0
        for name in segments {
            let probe = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                                     "packet=pts_time", "-of", "csv=p=0", dir.appendingPathComponent(name).path], timeout: 60)
            let times = probe.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            #expect(probe.status == 0 && !times.isEmpty, "\(name): \(probe.output.prefix(300))")
            let backwards = zip(times, times.dropFirst()).filter { $0.1 <= $0.0 }.count
            #expect(backwards == 0, "\(name): \(backwards) timestamps go back")
            packets += times.count
        }
        // The camera sent about 30 frames a second for most of the run; the recording holds them.
        #expect(packets >= rounds * 30, "recording: \(packets) frames in \(segments.count) segments")
        print("camera restart ×\(rounds): live again after \(backAfter.map { String(format: "%.2f", $0) }) s; RTSP \(rtspSeen.count) frames / \(seconds) s (widest gap \(String(format: "%.2f", rtspSeen.maxGap)) s), HLS \(hlsSeen.count) / \(seconds - 8) s (widest gap \(String(format: "%.2f", hlsSeen.maxGap)) s); recording \(packets) frames in \(segments.count) segments")
    }
}
