import CameraEmulators
import CameraWire
import Foundation
import NIOPosix
import Testing
import TestSupport

/// The reliability suite's rounds: `LIVEGATE_RELIABILITY_ROUNDS` (3 in `make test`; `make soak`
/// runs 50).
let reliabilityRounds: Int = {
    if let s = ProcessInfo.processInfo.environment["LIVEGATE_RELIABILITY_ROUNDS"], let n = Int(s), n > 0 { return n }
    return 3
}()

/// `livegate run --record` killed with SIGKILL at random moments, then started again on the same
/// folder: every frame in every segment is byte for byte one the camera sent, each file plays up to
/// the kill, once livegate has started again the AF sidecar
/// has no line for a frame the file lacks, each run starts a new segment and no earlier recording
/// is touched (its sidecar only trimmed).
@Suite(.serialized, .tags(.integration)) struct RecordingKillTests {
    @Test func sigkillDuringRecordingLosesOnlyTheTail() async throws {
        let source = try TestPatternSource(width: 320, height: 240)
        let emulator = SonyEmulator(port: 0, fps: 30, source: source, group: MultiThreadedEventLoopGroup.singleton)
        _ = try await emulator.start()
        let dir = try temporaryDirectory("lg-kill")
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = SystemRandomNumberGenerator()
        var finished: [String: String] = [:]  // segment → sha256 of the file once its run was over
        let sha = { (path: String) -> String in
            SHA256.hex(Array((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()))
        }
        let segments = { () -> [String] in
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".mkv") }.sorted()
        }
        var killDelays: [Double] = []
        // A run starts one segment per camera session: a reconnect inside a run (seen once in 50
        // rounds on a loaded machine) starts another.
        var runsWithMoreSegments: [String] = []
        for round in 0..<reliabilityRounds {
            let before = Set(segments())
            let gw = try GatewayProcess(["--camera", emulator.cameraURL, "--record", dir.path])
            defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
            #expect(await gw.waitReady(), "round \(round): livegate did not start: \(gw.output)")
            let recording = await waitUntil(timeout: 30) {
                segments().contains { !before.contains($0) && ((try? FileManager.default.attributesOfItem(
                    atPath: dir.appendingPathComponent($0).path)[.size] as? Int) ?? 0) > 20_000 }
            }
            #expect(recording, "round \(round): no new segment grew")
            let delay = Double.random(in: 0.2...2.5, using: &rng)
            killDelays.append(delay)
            try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            kill(gw.process.processIdentifier, SIGKILL)
            _ = await waitUntil(timeout: 10) { !gw.process.isRunning }
            // Earlier recordings are untouched by this run.
            for (name, digest) in finished {
                #expect(sha(dir.appendingPathComponent(name).path) == digest, "round \(round) changed \(name)")
            }
            let started = segments().filter { !before.contains($0) }.count
            if started > 1 { runsWithMoreSegments.append("round \(round): \(started)") }
            for name in segments() where finished[name] == nil { finished[name] = sha(dir.appendingPathComponent(name).path) }
            await gw.stop()
        }
        // The next start repairs what the last kill left (and records a segment of its own, ended cleanly).
        let beforeLast = Set(segments())
        let last = try GatewayProcess(["--camera", emulator.cameraURL, "--record", dir.path])
        defer { if last.process.isRunning { kill(last.process.processIdentifier, SIGKILL) } }
        #expect(await last.waitReady(), "livegate did not start after the kills: \(last.output)")
        let lastRecorded = await waitUntil(timeout: 20) {
            segments().contains { !beforeLast.contains($0) && ((try? FileManager.default.attributesOfItem(
                atPath: dir.appendingPathComponent($0).path)[.size] as? Int) ?? 0) > 20_000 }
        }
        #expect(lastRecorded, "the run after the kills recorded nothing")
        try await Task.sleep(for: .seconds(1))
        await last.stop()
        await emulator.stop()
        #expect(segments().count >= reliabilityRounds + 1, "at least one segment per run: \(segments())")

        // The camera's JPEGs: every connection starts at frame 0 of the test pattern.
        let sent = Set((0..<1800).map { SHA256.hex(source.frame(index: $0).jpeg) })
        var framesPerSegment: [Int] = []
        for name in segments() {
            let mkv = dir.appendingPathComponent(name).path
            let frames = try temporaryDirectory("lg-kill-frames")
            defer { try? FileManager.default.removeItem(at: frames) }
            _ = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-i", mkv, "-c", "copy", "-f", "image2",
                                                             frames.appendingPathComponent("f%05d.jpg").path], timeout: 60)
            let files = try FileManager.default.contentsOfDirectory(atPath: frames.path).sorted()
            let foreign = try files.filter { !sent.contains(SHA256.hex(Array(try Data(contentsOf: frames.appendingPathComponent($0))))) }
            #expect(!files.isEmpty && foreign.isEmpty, "\(name): \(files.count) frames, \(foreign.count) not the camera's")
            let sidecar = mkv.replacingOccurrences(of: ".mkv", with: ".af.jsonl")
            let lines = ((try? String(contentsOfFile: sidecar, encoding: .utf8)) ?? "").split(separator: "\n").count
            #expect(lines <= files.count, "\(name): the AF sidecar has \(lines) lines for \(files.count) frames")
            // …and still one for (nearly) every frame: the repair trims only what the file lacks.
            #expect(lines >= files.count - 2, "\(name): \(lines) sidecar lines for \(files.count) frames")
            framesPerSegment.append(files.count)
        }
        print("SIGKILL ×\(reliabilityRounds) (delays \(killDelays.map { String(format: "%.2f", $0) }) s): \(segments().count) segments, "
            + "frames per segment \(framesPerSegment), all the camera's bytes; runs with more than one segment: \(runsWithMoreSegments)")
    }
}
