import Foundation
import Testing
import TestSupport

/// Hostile HTTP clients (`Tests/Scripts/hostile_http.py`) against `livegate run` while an RTSP
/// viewer watches: 1000 idle connections, 500 slowloris heads, 100 trickled bodies, a flood of
/// pipelined requests, 100 MB bodies, 16 MB request lines and path traversal. Each time the
/// gateway closes what holds it, its descriptors come back, the API answers every probe and the
/// stream goes on.
@Suite(.serialized, .tags(.integration)) struct HostileHTTPTests {
    struct Report: Decodable {
        struct Range: Decodable { var baseline: Int?; var peak: Int?; var end: Int? }
        struct Probes: Decodable { var count: Int; var failures: Int; var max_ms: Double? }
        struct RTSP: Decodable { var frames: Int?; var max_gap_ms: Double?; var error: String? }
        struct Case: Decodable { var status: Int?; var closed: String?; var answer_ms: Double? }
        var opened: Int?
        var closed_by_server: Int?
        var remaining_open_at_end: Int?
        var all_closed_at_s: Double?
        var requests_per_second: Double?
        var statuses: [String: Int]?
        var errors: [String: Int]?
        var cases: [String: Case]?
        var leaks: [String]?
        var fds: Range?
        var rss_kib: Range?
        var probes: Probes?
        var rtsp: RTSP?
    }

    private func attack(_ gw: GatewayProcess, _ args: [String]) async throws -> Report {
        let r = try await runProcessAsync(Locations.program("python3")!, [
            Locations.repository.appendingPathComponent("Tests/Scripts/hostile_http.py").path, "127.0.0.1:\(gw.http)",
        ] + args + ["--pid", "\(gw.process.processIdentifier)", "--rtsp", "rtsp://127.0.0.1:\(gw.rtsp)/cam0/raw"], timeout: 180)
        #expect(r.status == 0, "hostile_http \(args): \(r.output.suffix(500))")
        let line = r.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? "{}"
        return try JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }

    /// What every attack must leave intact: the API answered every probe, the viewer kept getting
    /// frames, descriptors came back, memory stayed bounded.
    private func expectUnharmed(_ r: Report, _ what: String) {
        #expect(r.probes != nil && r.probes!.count > 0 && r.probes!.failures == 0, "\(what): API probes \(String(describing: r.probes))")
        #expect(r.rtsp?.error == nil && (r.rtsp?.frames ?? 0) > 0 && (r.rtsp?.max_gap_ms ?? .infinity) < 1000,
                "\(what): the RTSP viewer \(String(describing: r.rtsp))")
        if let fds = r.fds, let base = fds.baseline, let end = fds.end {
            #expect(end <= base + 8, "\(what): descriptors \(base) → \(end)")
        }
        if let rss = r.rss_kib, let base = rss.baseline, let peak = rss.peak {
            #expect(peak - base < 96 * 1024, "\(what): RSS \(base) → \(peak) KiB")
        }
    }

    @Test(.enabled(if: Locations.program("python3") != nil, "needs python3"))
    func idleSlowAndFloodingClientsCannotHoldTheGateway() async throws {
        let gw = try GatewayProcess(["--http-request-timeout", "5", "--http-idle-timeout", "4"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var figures: [String] = []

        // Each hold ends once the server has closed every connection (--until-closed); its seconds are
        // the deadline for that.
        // 1000 connections that say nothing: above a quarter of the limit, the waiting ones go after 2 s.
        let idle = try await attack(gw, ["idle", "1000", "12", "--until-closed"])
        #expect(idle.opened == 1000 && idle.closed_by_server == 1000 && idle.remaining_open_at_end == 0, "idle: \(idle)")
        expectUnharmed(idle, "idle")
        figures.append("1000 idle: all closed by \(idle.all_closed_at_s ?? -1) s, descriptors peak \(idle.fds?.peak ?? -1)")

        // Heads that never end (a header line every second): cut at the head deadline (10 s by default,
        // 4 s here: --http-idle-timeout caps it).
        let slowloris = try await attack(gw, ["slowloris", "500", "13", "--interval", "1", "--until-closed"])
        #expect(slowloris.opened == 500 && slowloris.closed_by_server == 500, "slowloris: \(slowloris)")
        expectUnharmed(slowloris, "slowloris")
        figures.append("500 slowloris: all closed by \(slowloris.all_closed_at_s ?? -1) s")

        // Bodies trickled a byte a second: cut at the request timeout (5 s here, 30 s by default).
        let slowbody = try await attack(gw, ["slowbody", "100", "10", "--interval", "1", "--until-closed"])
        #expect(slowbody.opened == 100 && slowbody.closed_by_server == 100, "slowbody: \(slowbody)")
        expectUnharmed(slowbody, "slowbody")
        figures.append("100 slow bodies: all closed by \(slowbody.all_closed_at_s ?? -1) s")

        // As many pipelined requests as the gateway answers: every one answered, nothing refused.
        let flood = try await attack(gw, ["flood", "5"])
        #expect((flood.statuses ?? [:]).keys.allSatisfy { $0 == "200" } && (flood.statuses?["200"] ?? 0) > 1000, "flood: \(flood)")
        #expect((flood.errors ?? [:]).isEmpty, "flood errors: \(String(describing: flood.errors))")
        expectUnharmed(flood, "flood")
        figures.append("flood: \(Int(flood.requests_per_second ?? 0)) requests/s, probes max \(flood.probes?.max_ms ?? -1) ms")

        // 100 MB bodies (sized and chunked) and 16 MB request lines/headers: refused at once, closed.
        let big = try await attack(gw, ["bigbody"])
        for (name, c) in big.cases ?? [:] {
            #expect([413, 431, 400].contains(c.status ?? 0) && c.closed != nil, "\(name): \(c)")
        }
        #expect((big.cases ?? [:]).count >= 4, "bigbody: \(big)")
        expectUnharmed(big, "bigbody")

        let traversal = try await attack(gw, ["traversal"])
        #expect(traversal.leaks != nil && traversal.leaks!.isEmpty, "traversal leaked: \(String(describing: traversal.leaks))")

        let metrics = await httpGet("\(gw.api)/metrics")?.body ?? ""
        let closed = metrics.split(separator: "\n").filter { $0.hasPrefix("livegate_http_connections_closed_total{") }
        #expect(!closed.isEmpty, "no HTTP close metrics")
        print("hostile HTTP: " + figures.joined(separator: "; ") + "; closed by reason: " + closed.joined(separator: ", "))
        await gw.stop()
    }
}
