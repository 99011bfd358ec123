import Foundation
import Gateway
import Testing

/// `GET /api/v1/events` (Server-Sent Events) read with curl while the CLI changes a property.
@Suite(.serialized) struct EventStreamTests {
    @Test(.enabled(if: which("curl") != nil && livegateBinary() != nil, "needs curl and the livegate binary built by swift build"))
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
        curl.executableURL = URL(fileURLWithPath: which("curl")!)
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
}
