import CameraEmulators
import Foundation
import Gateway
import NIOPosix
import Testing
import TestSupport

/// A TCP port that was free a moment ago (bound to 0 and closed).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { throw CocoaError(.fileWriteUnknown) }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// `livegate run` as a child process whose output goes to a file (read it with `output`).
final class GatewayProcess: @unchecked Sendable {  // the Process is only touched by the test's task
    let process = Process()
    let log: URL
    let http: Int
    let rtsp: Int

    init(_ args: [String], environment: [String: String] = [:]) throws {
        http = try freePort()
        rtsp = try freePort()
        log = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-run-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let out = try FileHandle(forWritingTo: log)
        process.executableURL = URL(fileURLWithPath: livegateBinary()!)
        process.arguments = ["run", "--http-port", "\(http)", "--rtsp-port", "\(rtsp)"] + (args.contains("--hls") ? [] : ["--no-hls"]) + [
                             "--captures", FileManager.default.temporaryDirectory.appendingPathComponent("lg-cap-\(UUID().uuidString)").path] + args
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    var api: String { "http://127.0.0.1:\(http)" }

    /// Waits until the banner is printed (every camera and the HTTP server are up).
    func waitReady(timeout: Double = 30) async -> Bool {
        await waitUntil(timeout: timeout) { output.contains("livegate is running") || !process.isRunning }
            && process.isRunning
    }

    func stop() async {
        if process.isRunning { process.terminate() }
        await waitUntil(timeout: 10) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: log)
    }
}

/// GET a URL; the body as text (nil on failure).
func httpGet(_ url: String, method: String = "GET") async -> (status: Int, body: String)? {
    guard let curl = Locations.program("curl"),
          let r = try? await runProcessAsync(curl, ["-s", "-m", "10", "-X", method, "-H", "Content-Type: application/json",
                                                    "-w", "\n%{http_code}", url], timeout: 15),
          r.status == 0 else { return nil }
    var lines = r.output.split(separator: "\n", omittingEmptySubsequences: false)
    let code = Int(lines.popLast() ?? "") ?? 0
    return (code, lines.joined(separator: "\n"))
}

/// The camera ids the API lists.
func cameraIDs(_ api: String) async -> [String] {
    guard let r = await httpGet("\(api)/api/v1/cameras"),
          let list = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [[String: Any]] else { return [] }
    return list.compactMap { $0["id"] as? String }
}

@Suite("Configuration file")
struct ConfigFileTests {
    @Test func theIssueShapeAndEveryKey() throws {
        let c = try ConfigFile.parse("""
            cameras: [{name: left, url: "sony://127.0.0.1:10000"}, {name: right, url: "emulator:sony"}]
            rtspPort: 9554
            httpPort: 9080
            listen: 127.0.0.1
            record: /tmp/rec
            hls: false
            overlay: none
            fps: 25
            linger: 3
            segmentSeconds: 60
            logLevel: debug
            pipewire: desk
            """)
        #expect(c.rtspPort == 9554 && c.httpPort == 9080 && c.hls == false && c.record == "/tmp/rec")
        #expect(c.overlay == "none" && c.fps == 25 && c.linger == 3 && c.segmentSeconds == 60 && c.pipewire == "desk")
        let specs = try c.cameraSpecs()
        #expect(specs.map(\.id) == ["left", "right"])
        #expect(specs[1].source == .emulator(vendor: "sony"))
    }

    @Test func perCameraOverlayAndRecording() throws {
        let c = try ConfigFile.parse("""
            cameras:
              - url: "emulator:sony"
                overlay: none
                record: false
              - url: "emulator:panasonic"
            """)
        let specs = try c.cameraSpecs()
        #expect(specs.map(\.id) == ["cam0", "cam1"])
        #expect(specs[0].overlay == false && specs[0].record == false)
        #expect(specs[1].overlay == nil && specs[1].record == nil)
    }

    @Test func pushTargetsPerCamera() throws {
        let c = try ConfigFile.parse("""
            cameras:
              - {name: a, url: "emulator:sony", push: "rtmp://127.0.0.1:1935/live/a"}
              - {name: b, url: "emulator:sony", push: ["rtsp://127.0.0.1:8555/b", "srt://127.0.0.1:9000"]}
            """)
        #expect(try c.cameraSpecs().map(\.push) == [["rtmp://127.0.0.1:1935/live/a"], ["rtsp://127.0.0.1:8555/b", "srt://127.0.0.1:9000"]])
        #expect(throws: ConfigError.self) { try ConfigFile.parse("cameras:\n  - {url: \"emulator:sony\", push: \"http://x/y\"}\n") }
        do { _ = try ConfigFile.parse("cameras:\n  - url: emulator:sony\n    push: \"ftp://x\"\n", file: "f.yaml") } catch {
            #expect(error.description == "f.yaml:3: cameras[0].push: push URL scheme 'ftp' is not supported; use rtsp://, rtmp:// or srt://")
        }
    }

    @Test func errorsNameTheLineAndTheKey() {
        func error(_ text: String) -> String {
            do { _ = try ConfigFile.parse(text, file: "f.yaml"); return "no error" } catch { return error.description }
        }
        #expect(error("httpPort: 8080\nrtspPort: abc\n") == "f.yaml:2: rtspPort: must be a whole number")
        #expect(error("httpPort: 8080\nrtsp_port: 1\n") == "f.yaml:2: rtsp_port: unknown key; did you mean 'rtspPort'?")
        #expect(error("listen: 127.0.0.1\nfoo: 1\n").hasPrefix("f.yaml:2: foo: unknown key; known keys: listen, rtspPort"))
        #expect(error("httpPort: 70000\n") == "f.yaml:1: httpPort: must be 1…65535, got 70000")
        #expect(error("hls: maybe\n") == "f.yaml:1: hls: must be true or false")
        #expect(error("cameras:\n  - name: a\n    url: \"sony://\"\n") == "f.yaml:3: cameras[0].url: camera URL 'sony://': missing host")
        #expect(error("cameras:\n  - name: a b\n    url: emulator:sony\n") == "f.yaml:2: cameras[0].name: 'a b' may only use letters, digits, '-' and '_'")
        #expect(error("cameras:\n  - name: a\n") == "f.yaml:2: cameras[0] has no 'url'")
        #expect(error("cameras:\n  - url: emulator:sony\n    colour: red\n") == "f.yaml:3: cameras[0].colour: unknown key; known keys: name, url, overlay, record, push")
        // The line where the broken construct starts, not where the parser gave up.
        #expect(error("httpPort: [8080\nfps: 3\n").hasPrefix("f.yaml:1: not valid YAML: while parsing a flow sequence"))
        let unclosed = error("listen: 127.0.0.1\ncameras:\n  - url: [unclosed\n  - name: b\n    url: sony://h\n")
        #expect(unclosed.hasPrefix("f.yaml:3: not valid YAML: while parsing a flow sequence") && unclosed.contains("noticed at line 4"), "\(unclosed)")
        #expect(error("- a\n- b\n") == "f.yaml:1: the file must be a mapping of keys (listen:, cameras: …)")
        #expect(error("httpPort: 8080\npipewire: 'a b'\n") == "f.yaml:2: pipewire: may only use letters, digits, '-', '_' and '.'")
    }

    @Test func theEnvironmentOverridesTheFile() throws {
        let file = try ConfigFile.parse("httpPort: 8080\nrecord: /a\n")
        let c = try ConfigEnvironment.apply(["LIVEGATE_HTTP_PORT": "9090", "LIVEGATE_RECORD": "/b", "LIVEGATE_HLS": "off",
                                             "LIVEGATE_CAMERAS": "left=emulator:sony, emulator:panasonic"], to: file)
        #expect(c.httpPort == 9090 && c.record == "/b" && c.hls == false)
        #expect(try c.cameraSpecs().map(\.id) == ["left", "cam1"])
        #expect(ConfigEnvironment.variable("segmentSeconds") == "LIVEGATE_SEGMENT_SECONDS")
        #expect(throws: ConfigError.self) { try ConfigEnvironment.apply(["LIVEGATE_FPS": "fast"], to: file) }
        #expect(throws: ConfigError.self) { try ConfigEnvironment.apply(["LIVEGATE_RTSP_PORT": "0"], to: file) }
    }

    @Test func theShippedExampleLoads() throws {
        // livegate's own parser: every key known, every value acceptable (deploy_check.sh leaves it here).
        let c = try ConfigFile.load(path: Locations.repository.appendingPathComponent("deploy/livegate.yaml").path)
        #expect(try c.cameraSpecs().count >= 1)
        #expect(c.cameras?.allSatisfy { $0.name != nil } == true, "every example camera has a name")
    }
}

@Suite("Operations", .serialized, .tags(.integration))
struct OperationsTests {
    @Test(.enabled(if: livegateBinary() != nil && Locations.program("ffprobe") != nil, "needs the livegate binary and ffprobe"))
    func runWithAConfigFileServesBothCamerasAndReloadsOnSIGHUP() async throws {
        // One camera by its URL (an emulator of ours on loopback), one emulated in-process.
        let sony = SonyEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240),
                                group: MultiThreadedEventLoopGroup.singleton)
        let sonyPort = try await sony.start()
        let dir = try temporaryDirectory("lg-config")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("livegate.yaml")
        try "cameras: [{name: left, url: \"sony://127.0.0.1:\(sonyPort)\"}, {name: right, url: \"emulator:sony\"}]\n"
            .write(to: file, atomically: true, encoding: .utf8)
        let gw = try GatewayProcess(["--config", file.path])
        #expect(await gw.waitReady(), "\(gw.output)")
        #expect(await cameraIDs(gw.api) == ["left", "right"])
        for (id, size) in [("left", "320,240"), ("right", "768,432")] {
            let probe = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v",
                                                                     "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                                                     "rtsp://127.0.0.1:\(gw.rtsp)/\(id)/raw"], timeout: 20)
            #expect(probe.status == 0 && probe.output.contains(size), "\(id): \(probe.output)")
        }

        // A client of `left` watches while the file drops `right` and adds `third`.
        let frames = dir.appendingPathComponent("left-frames")
        try FileManager.default.createDirectory(at: frames, withIntermediateDirectories: true)
        let client = try startRTSPFrameWriter("rtsp://127.0.0.1:\(gw.rtsp)/left/raw", into: frames)
        func count() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: frames.path).count) ?? 0 }
        #expect(await waitUntil(timeout: 15) { count() >= 30 }, "the left client got \(count()) frames")
        try "cameras:\n  - {name: left, url: \"sony://127.0.0.1:\(sonyPort)\"}\n  - {name: third, url: \"emulator:panasonic\"}\n"
            .write(to: file, atomically: true, encoding: .utf8)
        kill(gw.process.processIdentifier, SIGHUP)
        var ids: [String] = []
        for _ in 0..<100 {
            ids = await cameraIDs(gw.api)
            if ids == ["left", "third"] { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(ids == ["left", "third"], "\(gw.output)")
        #expect(gw.output.contains("reloaded: added [\"third\"], removed [\"right\"], unchanged [\"left\"]"), "\(gw.output)")
        // The left client was not touched: same process, frames keep coming.
        let before = count()
        #expect(await waitUntil(timeout: 10) { count() >= before + 30 }, "left stalled at \(count()) after the reload")
        #expect(client.isRunning)
        client.terminate()
        let gone = try await runProcessAsync(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp",
                                                                "rtsp://127.0.0.1:\(gw.rtsp)/right/raw"], timeout: 20)
        #expect(gone.status != 0, "the removed camera's mount still answers")

        // POST /api/v1/reload with a broken file: refused, nothing changes.
        try "cameras: [{name: left\n".write(to: file, atomically: true, encoding: .utf8)
        let refused = await httpGet("\(gw.api)/api/v1/reload", method: "POST")
        #expect(refused?.status == 400 && refused?.body.contains("livegate.yaml:") == true, "\(String(describing: refused))")
        #expect(await cameraIDs(gw.api) == ["left", "third"])
        await gw.stop()
        await sony.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary"))
    func aBrokenConfigFileNamesItsLine() async throws {
        let dir = try temporaryDirectory("lg-badconfig")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("bad.yaml")
        try "httpPort: 8080\ncameras:\n  - name: left\n    url: \"emulator:sony\"\n    overlay: boxes\n".write(to: file, atomically: true, encoding: .utf8)
        let r = try await runProcessAsync(livegateBinary()!, ["run", "--config", file.path], timeout: 30)
        #expect(r.status != 0)
        #expect(r.output.contains("Error: \(file.path):5: cameras[0].overlay: must be af or none, got 'boxes'"), "\(r.output)")
    }

    @Test(.enabled(if: livegateBinary() != nil && Locations.program("python3") != nil && Locations.program("ffmpeg") != nil, "needs the livegate binary, python3 and ffmpeg"))
    func metricsParseWithAPrometheusTextParser() async throws {
        let gw = try GatewayProcess([])
        #expect(await gw.waitReady(), "\(gw.output)")
        // Some frames and one H.264 viewer, so counters and the latency histogram move.
        let probe = try await runProcessAsync(Locations.program("ffmpeg")!, ["-v", "error", "-rtsp_transport", "tcp",
                                                                "-i", "rtsp://127.0.0.1:\(gw.rtsp)/cam0", "-t", "2", "-f", "null", "-"], timeout: 30)
        #expect(probe.status == 0, "\(probe.output)")
        let script = """
            import sys, json, urllib.request
            from prometheus_client.parser import text_string_to_metric_families
            text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=10).read().decode()
            fams = {f.name: f for f in text_string_to_metric_families(text)}
            out = {n: {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]} for n, f in fams.items() if n.startswith("livegate_")}
            print(json.dumps(out))
            """
        let r = try await runProcessAsync(Locations.program("python3")!, ["-c", script, gw.api], timeout: 30)
        #expect(r.status == 0, "\(r.output)")
        let fams = (try? JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: [String: Any]]) ?? [:]
        #expect(fams.count >= 5, "\(fams.keys.sorted())")
        func samples(_ f: String) -> [[Any]] { fams[f]?["samples"] as? [[Any]] ?? [] }
        func value(_ f: String, _ labels: [String: String], name: String? = nil) -> Double? {
            samples(f).first { s in
                (name == nil || s[0] as? String == name) && labels.allSatisfy { (s[1] as? [String: String])?[$0.key] == $0.value }
            }?[2] as? Double
        }
        // The parser strips _total from counter family names.
        #expect(fams["livegate_frames_received"]?["type"] as? String == "counter")
        #expect((value("livegate_frames_received", ["camera": "cam0"]) ?? 0) > 10)
        #expect(fams["livegate_frames_dropped"]?["type"] as? String == "counter")
        #expect(value("livegate_frames_dropped", ["camera": "cam0", "output": "ingest", "reason": "damaged"]) == 0)
        #expect(fams["livegate_encoders_running"]?["type"] as? String == "gauge")
        #expect(fams["livegate_encode_latency_seconds"]?["type"] as? String == "histogram")
        let encoded = value("livegate_encode_latency_seconds", ["camera": "cam0"], name: "livegate_encode_latency_seconds_count") ?? 0
        #expect(encoded > 10, "encoded frames in the histogram: \(encoded)")
        await gw.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary"))
    func cliMessagesTellTheTruth() async throws {
        let bin = livegateBinary()!
        let version = try await runProcessAsync(bin, ["--version"], timeout: 20)
        #expect(version.status == 0 && version.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0.1.0")
        let completion = try await runProcessAsync(bin, ["--generate-completion-script", "bash"], timeout: 20)
        #expect(completion.status == 0 && completion.output.contains("_livegate") && completion.output.contains("--config"))

        // Unwritable folders: a sentence, never an error domain.
        let dir = try temporaryDirectory("lg-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a-file")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data())
        let record = try await runProcessAsync(bin, ["run", "--record", file.path + "/rec"], timeout: 20)
        #expect(record.status != 0 && record.output.contains("Error: --record \(file.path)/rec: \(file.path) is a file, not a folder"), "\(record.output)")
        let proc = try await runProcessAsync(bin, ["run", "--record", "/proc/livegate-nope"], timeout: 20)
        #expect(proc.status != 0 && proc.output.contains("Error: --record /proc/livegate-nope: cannot create /proc/livegate-nope"), "\(proc.output)")
        let hls = try await runProcessAsync(bin, ["run", "--hls-dir", file.path], timeout: 20)
        #expect(hls.status != 0 && hls.output.contains("Error: --hls-dir \(file.path): this is a file, not a folder"), "\(hls.output)")
        for r in [record, proc, hls] { #expect(!r.output.contains("Domain") && !r.output.contains("Code="), "\(r.output)") }

        // Busy ports, RTSP and HTTP.
        let holder = try GatewayProcess([])
        #expect(await holder.waitReady(), "\(holder.output)")
        let rtspBusy = try await runProcessAsync(bin, ["run", "--rtsp-port", "\(holder.rtsp)", "--http-port", "\(try freePort())"], timeout: 30)
        #expect(rtspBusy.status != 0 && rtspBusy.output.contains(
            "Error: cannot listen on 127.0.0.1:\(holder.rtsp) for RTSP: the address is in use (or not this machine's); pick another with --rtsp-port"),
            "\(rtspBusy.output)")
        let httpBusy = try await runProcessAsync(bin, ["run", "--http-port", "\(holder.http)", "--rtsp-port", "\(try freePort())"], timeout: 30)
        #expect(httpBusy.status != 0 && httpBusy.output.contains(
            "Error: cannot listen on 127.0.0.1:\(holder.http) for the control API: the address is in use; pick another with --http-port"),
            "\(httpBusy.output)")
        await holder.stop()

        // Each subcommand's error shows that subcommand's usage.
        let set = try await runProcessAsync(bin, ["set", "cam0"], timeout: 20)
        #expect(set.status != 0 && set.output.contains("Usage: livegate set "), "\(set.output)")
        let capture = try await runProcessAsync(bin, ["capture"], timeout: 20)
        #expect(capture.status != 0 && capture.output.contains("Usage: livegate capture "), "\(capture.output)")
        let port = try await runProcessAsync(bin, ["run", "--rtsp-port", "99999"], timeout: 20)
        #expect(port.status != 0 && port.output.contains("Error: --rtsp-port must be 1…65535, got 99999")
                && port.output.contains("Usage: livegate run "), "\(port.output)")
        // The flags follow the config file's rules, named as flags.
        let segment = try await runProcessAsync(bin, ["run", "--segment-seconds", "1"], timeout: 20)
        #expect(segment.status != 0 && segment.output.contains("Error: --segment-seconds must be 5…86400, got 1"), "\(segment.output)")
        let node = try await runProcessAsync(bin, ["run", "--pipewire", "a\" ! fakesink"], timeout: 20)
        #expect(node.status != 0 && node.output.contains("Error: --pipewire may only use letters, digits, '-', '_' and '.'"), "\(node.output)")
        let env = try await runProcessAsync("/usr/bin/env", ["LIVEGATE_HTTP_PORT=eighty", bin, "run"], timeout: 20)
        #expect(env.status != 0 && env.output.contains("Error: environment: LIVEGATE_HTTP_PORT: must be a whole number, got 'eighty'"), "\(env.output)")
    }

    @Test(.enabled(if: Locations.program("bash") != nil, "needs bash"))
    func deployFilesVerify() async throws {
        let r = try await runProcessAsync("/bin/bash", [Locations.repository.appendingPathComponent("Tests/Scripts/deploy_check.sh").path], timeout: 60)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("PASS unit: systemd-analyze verify") || r.output.contains("SKIP unit"), "\(r.output)")
        #expect(!r.output.contains("FAIL"), "\(r.output)")
    }
}
