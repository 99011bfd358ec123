import Foundation
import Testing

/// The long run of `make soak`: `livegate run` on its emulated camera with an RTSP viewer of each
/// mount and a recording, for `LIVEGATE_SOAK_SECONDS`. After the warm-up (the first tenth) its
/// resident memory may grow by at most 5 %, and the camera's frame rate at the end is that of the
/// start. Skipped (and said so) in `make test`.
@Suite(.serialized) struct SoakTests {
    static let seconds = Int(ProcessInfo.processInfo.environment["LIVEGATE_SOAK_SECONDS"] ?? "") ?? 0

    static func rssKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    @Test(.enabled(if: seconds > 0, "a soak runs only in `make soak` (LIVEGATE_SOAK_SECONDS)"))
    func memoryStaysFlatAndTheFrameRateHolds() async throws {
        let dir = try temporaryDirectory("lg-soak")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try GatewayProcess(["--record", dir.path, "--segment-seconds", "300"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var viewers: [Process] = []
        for mount in ["cam0", "cam0/raw"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: which("ffmpeg")!)
            p.arguments = ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(gw.rtsp)/\(mount)", "-f", "null", "-"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            viewers.append(p)
        }
        defer { for v in viewers where v.isRunning { v.terminate() } }
        struct Camera: Decodable { let frames: Int }
        func frames() async -> Int {
            guard let r = await httpGet("\(gw.api)/api/v1/cameras/cam0") else { return 0 }
            return (try? JSONDecoder().decode(Camera.self, from: Data(r.body.utf8)))?.frames ?? 0
        }
        let warmup = max(10, Self.seconds / 10)
        try await Task.sleep(for: .seconds(warmup))
        let rssStart = Self.rssKiB(gw.process.processIdentifier) ?? 0
        let framesStart = await frames()
        let start = Date()
        var peak = rssStart
        while Date().timeIntervalSince(start) < Double(Self.seconds - warmup) {
            try await Task.sleep(for: .seconds(10))
            peak = max(peak, Self.rssKiB(gw.process.processIdentifier) ?? 0)
            #expect(gw.process.isRunning, "livegate exited: \(gw.output.suffix(2000))")
        }
        let elapsed = Date().timeIntervalSince(start)
        let rssEnd = Self.rssKiB(gw.process.processIdentifier) ?? 0
        let fps = Double(await frames() - framesStart) / elapsed
        print("soak \(Self.seconds) s: RSS \(rssStart) → \(rssEnd) KiB (peak \(peak)), \(String(format: "%.2f", fps)) fps")
        #expect(rssStart > 0 && Double(rssEnd) <= Double(rssStart) * 1.05, "RSS \(rssStart) → \(rssEnd) KiB")
        #expect(fps >= 29, "camera frame rate over the soak: \(fps)")
        for v in viewers { #expect(v.isRunning, "a viewer dropped out") }
        await gw.stop()
    }
}
