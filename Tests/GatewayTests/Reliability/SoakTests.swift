import Foundation
import Testing
import TestSupport

/// The long run of `make soak`: `livegate run` on its emulated camera with a viewer of every kind
/// (RTSP H.264, RTSP raw, HLS, MJPEG) and a recording, for `LIVEGATE_SOAK_SECONDS`. After the
/// warm-up (the first tenth) its resident memory may grow by at most 5 %, and the camera's frame
/// rate over the last tenth is that of the first (no decay). Skipped (and said so) in `make test`.
@Suite(.serialized, .tags(.integration)) struct SoakTests {
    static let seconds = Int(ProcessInfo.processInfo.environment["LIVEGATE_SOAK_SECONDS"] ?? "") ?? 0

    static func rssKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    static func viewer(_ tool: String, _ arguments: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Locations.program(tool)!)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    @Test(.enabled(if: seconds > 0, "a soak runs only in `make soak` (LIVEGATE_SOAK_SECONDS)"))
    func memoryStaysFlatAndTheFrameRateHolds() async throws {
        let dir = try temporaryDirectory("lg-soak")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try GatewayProcess(["--hls", "--record", dir.path, "--segment-seconds", "300"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var viewers: [(String, Process)] = []
        defer { for (_, v) in viewers where v.isRunning { v.terminate() } }
        for mount in ["cam0", "cam0/raw"] {
            viewers.append(("rtsp \(mount)", try Self.viewer("ffmpeg", ["-nostdin", "-v", "error", "-rtsp_transport", "tcp",
                                                                        "-i", "rtsp://127.0.0.1:\(gw.rtsp)/\(mount)", "-f", "null", "-"])))
        }
        // HLS starts on its first request; its player comes once the playlist is written.
        let playlist = "\(gw.api)/hls/cam0/index.m3u8"
        var hlsReady = false
        for _ in 0..<150 where !hlsReady {
            hlsReady = await httpGet(playlist)?.status == 200
            if !hlsReady { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(hlsReady, "HLS never started")
        viewers.append(("hls", try Self.viewer("ffmpeg", ["-nostdin", "-v", "error", "-i", playlist,
                                                          "-c", "copy", "-f", "null", "-"])))
        viewers.append(("mjpeg", try Self.viewer("curl", ["-s", "-o", "/dev/null", "\(gw.api)/mjpeg/cam0"])))
        struct Camera: Decodable { let frames: Int }
        func frames() async -> Int? {
            guard let r = await httpGet("\(gw.api)/api/v1/cameras/cam0") else { return nil }
            return (try? JSONDecoder().decode(Camera.self, from: Data(r.body.utf8)))?.frames
        }
        let warmup = max(10, Self.seconds / 10)
        try await Task.sleep(for: .seconds(warmup))
        let pid = gw.process.processIdentifier
        let rssStart = Self.rssKiB(pid) ?? 0
        // (seconds since the warm-up, camera frames, RSS KiB) every 10 s.
        var samples: [(t: Double, frames: Int, rss: Int)] = []
        let start = Date()
        if let f = await frames() { samples.append((0, f, rssStart)) }
        while Date().timeIntervalSince(start) < Double(Self.seconds - warmup) {
            try await Task.sleep(for: .seconds(10))
            if let f = await frames() {
                samples.append((Date().timeIntervalSince(start), f, Self.rssKiB(pid) ?? 0))
                if samples.count % 30 == 1, let s = samples.last {  // every 5 minutes, to watch it go
                    print(String(format: "soak +%.0f s: %d frames, RSS %d KiB", s.t, s.frames, s.rss))
                }
            }
            #expect(gw.process.isRunning, "livegate exited: \(gw.output.suffix(2000))")
            if !gw.process.isRunning { break }
        }
        try #require(samples.count >= 3, "too few samples: \(samples.count)")
        let rssEnd = Self.rssKiB(pid) ?? 0
        let peak = samples.map(\.rss).max() ?? 0
        // The frame rate over the first and the last tenth of the measured time (at least 30 s each).
        let span = max(30, samples.last!.t / 10)
        func fps(from a: Double, to b: Double) -> Double {
            let w = samples.filter { $0.t >= a - 0.5 && $0.t <= b + 0.5 }
            guard let first = w.first, let last = w.last, last.t > first.t else { return 0 }
            return Double(last.frames - first.frames) / (last.t - first.t)
        }
        let fpsFirst = fps(from: 0, to: span), fpsLast = fps(from: samples.last!.t - span, to: samples.last!.t)
        let fpsAll = fps(from: 0, to: samples.last!.t)
        let everyTenth = stride(from: 0, to: samples.count, by: max(1, samples.count / 10)).map { samples[$0].rss }
        print("soak \(Self.seconds) s: RSS \(rssStart) → \(rssEnd) KiB (peak \(peak); every tenth \(everyTenth)), "
            + String(format: "%.2f fps overall, %.2f over the first %.0f s, %.2f over the last", fpsAll, fpsFirst, span, fpsLast))
        #expect(rssStart > 0 && Double(rssEnd) <= Double(rssStart) * 1.05, "RSS \(rssStart) → \(rssEnd) KiB")
        #expect(fpsAll >= 29, "camera frame rate over the soak: \(fpsAll)")
        #expect(fpsLast >= fpsFirst * 0.98, "the frame rate decayed: \(fpsFirst) → \(fpsLast)")
        for (name, v) in viewers { #expect(v.isRunning, "the \(name) viewer dropped out") }
        let segments = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".mkv") }
        print("soak: \(segments.count) recording segments")
        #expect(segments.count >= Self.seconds / 300, "recording segments: \(segments.sorted())")
        await gw.stop()
    }
}
