import Foundation
import Gateway
import Testing
import TestSupport

/// `livegate events --camera cam0` prints the event stream as JSON Lines; a capture is one of them.
@Suite(.serialized, .tags(.integration)) struct EventsCLITests {
    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil, "needs the livegate binary and curl"))
    func theCLIPrintsACaptureEventForItsCamera() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 10, label: "events-cli")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        #expect(await waitUntil(timeout: 10) { gateway.cameras.first?.driver.state == .streaming })
        let dir = try temporaryDirectory("livegate-events-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let outFile = dir.appendingPathComponent("events.jsonl")
        _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
        let out = try FileHandle(forWritingTo: outFile)
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: livegateBinary()!)
        cli.arguments = ["events", "--camera", "cam0", "--api", base]
        cli.standardOutput = out
        cli.standardError = out
        try cli.run()
        defer { if cli.isRunning { cli.terminate() } }
        func lines() -> [[String: Any]] {
            ((try? String(contentsOf: outFile, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        #expect(await waitUntil(timeout: 10) { lines().contains { $0["event"] as? String == "state" } })
        let files = try await gateway.capture(camera: gateway.cameras[0], autofocus: false)
        let name = try #require(files.first?.name)
        let got = await waitUntil(timeout: 5) {
            lines().contains { $0["event"] as? String == "capture" && $0["name"] as? String == name && $0["camera"] as? String == "cam0" }
        }
        #expect(got, "no capture event for \(name): \(lines().suffix(5))")
        #expect(lines().allSatisfy { ($0["camera"] as? String ?? "cam0") == "cam0" })
        cli.terminate()
        try? out.close()
        let unknown = try await runProcessAsync(Locations.program("curl")!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/api/v1/events?camera=nope"])
        #expect(unknown.output == "404")
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}
