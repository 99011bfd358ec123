import Foundation
import Testing
import TestSupport

/// SIGTERM ends livegate within 3 s whatever is connected, with the recording finished and the
/// clients told: one case per long-lived client type (run as the real client: curl, ffmpeg,
/// aiortc), and the cases where the other side stalls (a push server that never answers, a camera
/// that stopped answering mid-request). The time each took is printed (`shutdown: … s`).
@Suite(.serialized, .tags(.integration)) struct ShutdownTests {
    enum Client: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case events, mjpeg, rtspH264, rtspRaw, hls, whep, download, stalledPush, silentCamera, goneClientsCanon
        var testDescription: String { rawValue }
    }

    /// A TCP listener that accepts and never answers (a push server or camera that stalls).
    final class SilentServer: @unchecked Sendable {  // the Process is only touched by the test's task
        let process = Process()
        let port: Int
        init() async throws {
            let out = Pipe()
            process.executableURL = URL(fileURLWithPath: Locations.program("python3")!)
            process.arguments = ["-c", """
                import socket, sys
                s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", 0)); s.listen(16)
                print(s.getsockname()[1], flush=True)
                held = []
                while True:
                    c, _ = s.accept(); held.append(c)
                """]
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = out.fileHandleForReading.availableData
            port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        func stop() { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    /// A client as a child process, its output in a file.
    final class ClientProcess: @unchecked Sendable {  // the Process is only touched by the test's task
        let process = Process()
        let log: URL
        init(_ tool: String, _ args: [String]) throws {
            log = FileManager.default.temporaryDirectory.appendingPathComponent("lg-client-\(UUID().uuidString).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = args
            let h = try FileHandle(forWritingTo: log)
            process.standardOutput = h
            process.standardError = h
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }
        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        var bytes: Int { ((try? FileManager.default.attributesOfItem(atPath: log.path)[.size]) as? Int) ?? 0 }
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: log)
        }
    }

    static func hasAiortc() -> Bool {
        guard let py = Locations.program("python3") else { return false }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: py)
        p.arguments = ["-c", "import aiortc"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    static func branch(_ gw: GatewayProcess, _ name: String) async -> Bool {
        guard let r = await httpGet("\(gw.api)/api/v1/cameras/cam0"),
              let o = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any],
              let b = o["branches"] as? [String: Bool] else { return false }
        return b[name] == true
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("curl") != nil && Locations.program("ffmpeg") != nil, "needs the livegate binary, curl and ffmpeg"),
          arguments: Client.allCases)
    func sigtermEndsLivegateWithinThreeSeconds(client: Client) async throws {
        if client == .whep && !Self.hasAiortc() {
            Issue.record("SKIPPED whep: aiortc is not installed (requirements-test.txt)")
            return
        }
        let dir = try temporaryDirectory("lg-shutdown")
        defer { try? FileManager.default.removeItem(at: dir) }
        var args = ["--record", dir.path]
        var helpers: [SilentServer] = []
        var canon: Process?
        defer {
            helpers.forEach { $0.stop() }
            if let c = canon, c.isRunning { kill(c.processIdentifier, SIGKILL) }
        }
        switch client {
        case .hls: args.append("--hls")
        case .stalledPush:
            let s = try await SilentServer()
            helpers.append(s)
            args += ["--push", "rtsp://127.0.0.1:\(s.port)/live"]
        case .silentCamera:
            let s = try await SilentServer()
            helpers.append(s)
            args = ["--camera", "sony://127.0.0.1:\(s.port)"]
        case .goneClientsCanon:
            let port = try freePort()
            let emu = Process()
            emu.executableURL = URL(fileURLWithPath: livegateBinary()!)
            emu.arguments = ["emulate", "canon", "--port", "\(port)"]
            emu.standardOutput = FileHandle.nullDevice
            emu.standardError = FileHandle.nullDevice
            try emu.run()
            canon = emu
            args += ["--camera", "ptpip://127.0.0.1:\(port)"]
        default: break
        }
        let gw = try GatewayProcess(args)
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        let curl = Locations.program("curl")!, ffmpeg = Locations.program("ffmpeg")!
        let rtsp = "rtsp://127.0.0.1:\(gw.rtsp)/cam0"
        var viewer: ClientProcess?
        defer { viewer?.stop() }
        switch client {
        case .events:
            viewer = try ClientProcess(curl, ["-sN", "\(gw.api)/api/v1/events"])
            #expect(await waitUntil(timeout: 10) { viewer!.output.contains("event: state") }, "no event came")
        case .mjpeg:
            viewer = try ClientProcess(curl, ["-sN", "\(gw.api)/mjpeg/cam0"])
            #expect(await waitUntil(timeout: 15) { viewer!.bytes > 50_000 }, "no MJPEG parts came")
        case .rtspH264, .rtspRaw, .stalledPush, .silentCamera:
            viewer = try ClientProcess(ffmpeg, ["-nostdin", "-rtsp_transport", "tcp", "-i", client == .rtspRaw ? rtsp + "/raw" : rtsp,
                                                "-f", "null", "-"])
            #expect(await waitUntil(timeout: 20) { viewer!.output.contains("frame=") }, "no frames: \(viewer!.output.suffix(500))")
        case .hls:
            viewer = try ClientProcess(ffmpeg, ["-nostdin", "-i", "\(gw.api)/hls/cam0/index.m3u8", "-f", "null", "-"])
            #expect(await waitUntil(timeout: 30) { viewer!.output.contains("frame=") }, "no frames: \(viewer!.output.suffix(500))")
        case .whep:
            let script = Locations.repository.appendingPathComponent("Tests/Scripts/whep_client.py").path
            viewer = try ClientProcess(Locations.program("python3")!, [script, "\(gw.api)/whep/cam0", "--seconds", "60"])
            #expect(await waitUntilAsync(timeout: 20) { await Self.branch(gw, "encoder") }, "the WebRTC session started no encoder")
            try await Task.sleep(for: .seconds(1))
        case .download:
            // The emulated card starts empty: a shot puts a file on it.
            #expect(await waitUntilAsync(timeout: 20) { (await httpGet("\(gw.api)/api/v1/cameras/cam0"))?.body.contains("\"streaming\"") == true })
            let shot = await httpGet("\(gw.api)/api/v1/cameras/cam0/capture", method: "POST")
            #expect(shot?.status == 200, "\(shot.map { "\($0.status) \($0.body)" } ?? "no answer")")
            let list = await httpGet("\(gw.api)/api/v1/cameras/cam0/files")
            let obj = try #require(list.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] }, "\(list?.body ?? "no answer")")
            let path = try #require((obj["files"] as? [[String: Any]])?.first?["path"] as? String, "\(obj)")
            // A reader that asks for the file and then reads nothing, its connection left open (the
            // picture, ~35 KB, fits in the sockets' buffers: the answer is written, never read).
            let script = """
                import socket, sys, time
                s = socket.create_connection(("127.0.0.1", \(gw.http)))
                s.sendall(b"GET /api/v1/cameras/cam0/files\(path) HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
                print("asked", flush=True)
                time.sleep(120)
                """
            viewer = try ClientProcess(Locations.program("python3")!, ["-c", script])
            #expect(await waitUntil(timeout: 10) { viewer!.output.contains("asked") })
            try await Task.sleep(for: .seconds(1))
            #expect(viewer!.process.isRunning, "the reader left before the signal")
        case .goneClientsCanon:
            // What a user does on a Canon, every client gone before the signal.
            #expect(await waitUntilAsync(timeout: 20) { (await httpGet("\(gw.api)/api/v1/cameras/cam0"))?.body.contains("\"streaming\"") == true })
            let events = try ClientProcess(curl, ["-sN", "\(gw.api)/api/v1/events"])
            let shot = await httpGet("\(gw.api)/api/v1/cameras/cam0/capture", method: "POST")
            #expect(shot?.status == 200, "\(shot.map { "\($0.status) \($0.body)" } ?? "no answer")")
            let list = await httpGet("\(gw.api)/api/v1/cameras/cam0/files")
            let obj = try #require(list.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] })
            let path = try #require((obj["files"] as? [[String: Any]])?.first?["path"] as? String)
            _ = try await runProcessAsync(curl, ["-s", "-o", "/dev/null", "\(gw.api)/api/v1/cameras/cam0/files\(path)"], timeout: 20)
            _ = try await runProcessAsync(curl, ["-s", "-o", "/dev/null", "-r", "0-99", "\(gw.api)/api/v1/cameras/cam0/files\(path)"], timeout: 20)
            _ = try await runProcessAsync(curl, ["-s", "-o", "/dev/null", "\(gw.api)/api/v1/cameras/cam0/files\(path)?thumbnail"], timeout: 20)
            events.stop()
        }
        kill(gw.process.processIdentifier, SIGTERM)
        let took = await LifecycleTests.secondsToExit(gw.process, timeout: 20)
        print("shutdown: \(client.rawValue) \(took.map { String(format: "%.2f s", $0) } ?? "> 20 s")")
        #expect(took != nil && took! <= 3, "\(client): exit took \(took.map { "\($0) s" } ?? "more than 20 s"): \(gw.output.suffix(1500))")
        #expect(!gw.process.isRunning && gw.process.terminationStatus == 0, "status: \(gw.output.suffix(1500))")
        // Clients are told: the HTTP streams end cleanly (curl exits 0), the players stop.
        // A WebRTC peer learns it only from ICE consent (aiortc: ~30 s); the reader that never
        // reads sleeps on.
        if let v = viewer, client != .download, client != .whep {
            #expect(await waitUntil(timeout: 5) { !v.process.isRunning }, "\(client): the client was not told")
            if client == .events || client == .mjpeg {
                #expect(v.process.terminationStatus == 0, "\(client): curl ended with \(v.process.terminationStatus) (a cut, not a clean end)")
            }
        }
        // The recording is finished: every segment has a duration.
        if client != .silentCamera {
            let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".mkv") }
            #expect(!segments.isEmpty, "no recording")
            for s in segments {
                let probe = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                                                          dir.appendingPathComponent(s).path], timeout: 30)
                #expect((Double(probe.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "\(s): \(probe.output)")
            }
        }
        await gw.stop()
    }
}
