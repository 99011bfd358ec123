import Foundation
import Gateway
import Testing
import TestSupport

/// `GET /api/v1/events` (Server-Sent Events) read with curl while the CLI changes a property.
@Suite(.serialized, .tags(.integration, .sanitized)) struct EventStreamTests {
    @Test(.enabled(if: Locations.program("curl") != nil && livegateBinary() != nil, "needs curl and the livegate binary built by swift build"))
    func aPropertyChangeFromTheCLIIsAnEventWithinTwoSeconds() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 10, label: "events")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let streaming = await waitUntil(timeout: 10) { gateway.cameras.first?.driver.state == .streaming }
        try #require(streaming)
        let dir = try temporaryDirectory("livegate-events")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("events.txt").path
        // curl listens for 5 s (started without blocking one of the test's two threads); the CLI sets
        // the white balance 1 s in and returns well before curl stops: the event must be in the file.
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: Locations.program("curl")!)
        curl.arguments = ["-s", "-N", "--max-time", "5", "-o", out, "\(base)/api/v1/events"]
        try curl.run()
        try await Task.sleep(for: .seconds(1))
        let set = try await runProcessAsync(livegateBinary()!, ["set", "cam0", "whiteBalance", "tungsten", "--api", base], timeout: 30)
        #expect(set.status == 0, "\(set.output)")
        let setDone = Date()
        while curl.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(setDone.timeIntervalSinceNow < -2, "curl stopped less than 2 s after the CLI returned; the window is too short")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let events = text.components(separatedBy: "\n\n").filter { $0.contains("event: ") }
        #expect(events.contains { $0.contains("event: state") && $0.contains(#""state":"streaming""#) }, "\(text.prefix(1500))")
        #expect(events.contains { $0.contains("event: property") && $0.contains(#""name":"whiteBalance""#) && $0.contains(#""value":"tungsten""#) },
                "no whiteBalance=tungsten event: \(text.prefix(2000))")
        #expect(events.contains { $0.contains("event: af") })
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }

    /// One SSE event: its id (nil when it has none), kind and data line.
    static func parse(_ text: String) -> [(id: Int?, event: String, data: String)] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var id: Int?, event = "", data = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = Int(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            return event.isEmpty ? nil : (id, event, data)
        }
    }

    func listen(_ url: String, seconds: Int, lastEventID: Int? = nil, into out: String) async throws {
        var args = ["-s", "-N", "--max-time", "\(seconds)", "-o", out]
        if let lastEventID { args += ["-H", "Last-Event-ID: \(lastEventID)"] }
        _ = try await runProcessAsync(Locations.program("curl")!, args + [url], timeout: Double(seconds + 20))
    }

    /// Recording segments are events (started, finished with their frame count), and a client
    /// that comes back with Last-Event-ID first gets exactly the events it missed, in order.
    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"))
    func recordingSegmentsAreEventsAndAReconnectGetsWhatItMissed() async throws {
        let rec = try temporaryDirectory("livegate-events-rec")
        defer { try? FileManager.default.removeItem(at: rec) }
        let (emulator, gateway) = try await startSonyGateway(fps: 10, label: "events-rec") {
            $0.recordDirectory = rec.path
            $0.segmentSeconds = 1
        }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        #expect(await waitUntil(timeout: 10) { gateway.cameras.first?.driver.state == .streaming })
        let dir = try temporaryDirectory("livegate-events-ids")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("first.txt").path
        try await listen("\(base)/api/v1/events", seconds: 4, into: first)
        let seen = Self.parse(try String(contentsOfFile: first, encoding: .utf8))
        let recording = seen.filter { $0.event == "recording" }
        #expect(recording.contains { $0.data.contains(#""change":"started""#) && $0.data.contains(".mkv") }, "\(recording)")
        #expect(recording.contains { $0.data.contains(#""change":"finished""#) && !$0.data.contains(#""frames":0"#) && $0.data.contains(#""clean":true"#) },
                "\(recording)")
        let ids = seen.compactMap(\.id)
        #expect(ids.count >= 4 && ids == ids.sorted() && Set(ids).count == ids.count, "ids: \(ids)")

        // Back after a gap, from the middle of what it saw.
        let from = ids[ids.count / 2]
        let again = dir.appendingPathComponent("again.txt").path
        try await listen("\(base)/api/v1/events", seconds: 1, lastEventID: from, into: again)
        let replay = Self.parse(try String(contentsOfFile: again, encoding: .utf8)).filter { $0.id != nil }
        let missed = seen.filter { ($0.id ?? 0) > from }
        #expect(replay.first?.id == from + 1, "the reconnect began at \(replay.first?.id ?? -1), not \(from + 1)")
        #expect(zip(missed, replay).allSatisfy { $0.id == $1.id && $0.data == $1.data }, "the replay differs from what was sent")
        // An id the gateway never gave (another run's) replays nothing.
        let stranger = dir.appendingPathComponent("stranger.txt").path
        try await listen("\(base)/api/v1/events", seconds: 1, lastEventID: 1_000_000, into: stranger)
        #expect(Self.parse(try String(contentsOfFile: stranger, encoding: .utf8)).first.map { $0.id == nil || $0.id! > ids.last! } ?? true)
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}
