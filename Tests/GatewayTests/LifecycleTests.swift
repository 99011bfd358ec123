import Foundation
import Testing
import TestSupport

/// The processes stop like services: SIGTERM (or SIGINT) shuts everything down gracefully and the
/// process exits 0 soon after, with what it was writing finished.
@Suite(.serialized, .tags(.integration)) struct LifecycleTests {
    /// Waits for `process` to exit; the seconds it took (nil when it did not within `timeout`).
    static func secondsToExit(_ process: Process, timeout: Double) async -> Double? {
        let start = Date()
        let exited = await waitUntil(timeout: timeout) { !process.isRunning }
        return exited ? Date().timeIntervalSince(start) : nil
    }

    @Test func sigtermWhileStreamingAndRecordingExitsZeroWithAFinishedRecording() async throws {
        let dir = try temporaryDirectory("lg-sigterm")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try GatewayProcess(["--record", dir.path])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        // A viewer on the raw mount while the recording runs.
        let viewer = Process()
        viewer.executableURL = URL(fileURLWithPath: Locations.program("ffmpeg")!)
        viewer.arguments = ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(gw.rtsp)/cam0/raw",
                            "-f", "null", "-"]
        viewer.standardOutput = FileHandle.nullDevice
        viewer.standardError = FileHandle.nullDevice
        try viewer.run()
        defer { if viewer.isRunning { viewer.terminate() } }
        // At least a second of recording.
        let recorded = await waitUntil(timeout: 30) {
            let mkv = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.first { $0.hasSuffix(".mkv") }
            guard let mkv else { return false }
            let size = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(mkv).path)[.size] as? Int) ?? 0
            return size > 50_000
        }
        #expect(recorded, "no recording grew in \(dir.path): \(gw.output)")
        try await Task.sleep(for: .seconds(1))

        kill(gw.process.processIdentifier, SIGTERM)
        let took = await Self.secondsToExit(gw.process, timeout: 10)
        #expect(took != nil && took! <= 5, "exit took \(took.map { "\($0) s" } ?? "more than 10 s")")
        #expect(!gw.process.isRunning && gw.process.terminationStatus == 0,
                "status \(gw.process.isRunning ? -1 : gw.process.terminationStatus): \(gw.output)")

        // The segment is finished: ffprobe reads a duration from its index and every frame decodes.
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".mkv") }
        #expect(segments.count == 1, "segments: \(segments)")
        let mkv = dir.appendingPathComponent(segments.first ?? "none").path
        let probe = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-show_entries", "format=duration",
                                                                  "-of", "csv=p=0", mkv], timeout: 30)
        let duration = Double(probe.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(duration >= 1, "duration \(probe.output)")
        let decode = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-i", mkv, "-f", "null", "-"], timeout: 60)
        #expect(decode.status == 0 && decode.output.isEmpty, "decode: \(decode.output)")
        await gw.stop()
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func emulatorStopsOnSignal(signal: Int32) async throws {
        let emu = Process()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("lg-emulate-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        emu.executableURL = URL(fileURLWithPath: livegateBinary()!)
        emu.arguments = ["emulate", "sony", "--port", "0"]
        let out = try FileHandle(forWritingTo: log)
        emu.standardOutput = out
        emu.standardError = out
        try emu.run()
        defer { if emu.isRunning { kill(emu.processIdentifier, SIGKILL) } }
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(await waitUntil(timeout: 20) { output().contains("emulator listening on") }, "no banner: \(output())")
        kill(emu.processIdentifier, signal)
        let took = await Self.secondsToExit(emu, timeout: 10)
        #expect(took != nil && took! <= 5, "exit took \(took.map { "\($0) s" } ?? "more than 10 s")")
        #expect(!emu.isRunning && emu.terminationStatus == 0, "status: \(output())")
    }
}
