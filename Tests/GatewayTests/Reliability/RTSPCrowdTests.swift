import Foundation
import Testing
import TestSupport

/// 50 RTSP viewers on the H.264 mount plus 5 that stop reading after PLAY
/// (`Tests/Scripts/rtsp_crowd.py`): the viewers keep the camera's rate in stream time and lose no
/// packet, the stalled ones are closed within the stall timeout, and once a crowd has gone the
/// gateway's memory is back where it was before that crowd came (within 5 %; the first crowd pays
/// for the encoder's and the allocator's first use, so the second one is measured).
@Suite(.serialized, .tags(.integration)) struct RTSPCrowdTests {
    struct Report: Decodable {
        struct Memory: Decodable { var baseline: Int; var peak: Int; var after: Int }
        var min_fps_stream: Double
        var max_gap_ms: Double
        var readers_closed: Int
        var lost_packets: Int
        var stalled_closed: Int
        var stalled: Int
        var setup_s: Double
        var rss_kib: Memory?
        var pid_cpu_s: Double?
    }

    private func crowd(_ gw: GatewayProcess, seconds: Int) async throws -> Report {
        let r = try await runProcessAsync(Locations.program("python3")!, [
            Locations.repository.appendingPathComponent("Tests/Scripts/rtsp_crowd.py").path, "rtsp://127.0.0.1:\(gw.rtsp)/cam0",
            "50", "5", "\(seconds)", "--pid", "\(gw.process.processIdentifier)", "--settle", "4",
        ], timeout: 180)
        #expect(r.status == 0, "rtsp_crowd: \(r.output.suffix(500))")
        let line = r.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? "{}"
        return try JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }

    @Test(.enabled(if: Locations.program("python3") != nil, "needs python3"))
    func fiftyViewersKeepTheirRateWhileStalledOnesAreDropped() async throws {
        // Linger 1 s: the encoder of the first crowd is gone before the second one measures its baseline.
        let gw = try GatewayProcess(["--rtsp-stall-timeout", "5", "--linger", "1"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var figures: [String] = []
        for round in 0..<2 {
            let c = try await crowd(gw, seconds: round == 0 ? 8 : 15)
            #expect(c.min_fps_stream >= 29 && c.max_gap_ms < 200, "round \(round): the slowest viewer \(c.min_fps_stream) fps, widest gap \(c.max_gap_ms) ms")
            #expect(c.readers_closed == 0 && c.lost_packets == 0, "round \(round): \(c.readers_closed) viewers closed, \(c.lost_packets) packets lost")
            #expect(c.stalled_closed == c.stalled, "round \(round): \(c.stalled_closed) of \(c.stalled) stalled clients closed")
            if round == 1, let m = c.rss_kib {
                #expect(Double(m.after) <= Double(m.baseline) * 1.05, "memory \(m.baseline) → \(m.peak) → \(m.after) KiB")
            }
            figures.append(String(format: "round %d: slowest %.2f fps, widest gap %.0f ms, all playing after %.1f s, stalled closed %d/%d, RSS %d → %d → %d KiB, gateway CPU %.1f s",
                                  round, c.min_fps_stream, c.max_gap_ms, c.setup_s, c.stalled_closed, c.stalled,
                                  c.rss_kib?.baseline ?? -1, c.rss_kib?.peak ?? -1, c.rss_kib?.after ?? -1, c.pid_cpu_s ?? -1))
        }
        print("RTSP 50 + 5 stalled: " + figures.joined(separator: "; "))
        await gw.stop()
    }
}
