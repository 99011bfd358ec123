import Foundation
import Testing
import TestSupport

/// RTSP connections that hold resources without using them are closed: clients that stopped
/// reading after PLAY (stalled) and connections that never set up a session (idle), while the
/// viewers that do read keep getting every frame.
@Suite(.serialized, .tags(.integration)) struct RTSPTimeoutTests {
    @Test func stalledAndIdleClientsAreClosedWhileReadersKeepStreaming() async throws {
        let gw = try GatewayProcess(["--rtsp-stall-timeout", "3", "--rtsp-idle-timeout", "3"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        let raw = "rtsp://127.0.0.1:\(gw.rtsp)/cam0/raw"

        // A reader for the whole time, on the same mount as the stalled clients.
        async let reader = runProcessAsync(Locations.program("ffmpeg")!, ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", raw,
                                                              "-t", "12", "-f", "framecrc", "-"], timeout: 60)
        let bad = try await runProcessAsync(Locations.program("python3")!, [
            Locations.repository.appendingPathComponent("Tests/Scripts/rtsp_bad_clients.py").path, raw, "3", "2", "8",
        ], timeout: 90)
        #expect(bad.status == 0, "\(bad.output)")
        let line = bad.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? "{}"
        let result = try JSONDecoder().decode([String: Int].self, from: Data(line.utf8))
        #expect(result["stalledClosed"] == 3, "\(bad.output)")
        #expect(result["idleClosed"] == 2, "\(bad.output)")

        let r = try await reader
        let frames = r.output.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.count
        // 12 s of stream time at 30 fps: every frame but a few at the edges.
        #expect(r.status == 0 && frames >= 12 * 28, "reader got \(frames) frames: \(r.output.suffix(300))")

        let metrics = await httpGet("\(gw.api)/metrics")?.body ?? ""
        func closed(_ reason: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix("livegate_rtsp_connections_closed_total") && $0.contains("reason=\"\(reason)\"") }
                .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        }
        #expect(closed("stalled") == 3, "\(metrics.split(separator: "\n").filter { $0.contains("rtsp") })")
        #expect(closed("idle") == 2)
        await gw.stop()
    }
}
