import LiveViewCore
import CameraEmulators
import Foundation
import Gateway
import Hummingbird
import Logging
import NIOPosix
import Testing
import TestSupport

/// A started program whose stdout and stderr go to a temporary file. (A file, not a Pipe with a
/// readability handler: clearing that handler while libdispatch delivers to it crashed the test
/// process once in `_dispatch_event_loop_drain`.)
private func launch(_ path: String, _ args: [String]) throws -> (Process, FileHandle, URL) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-proc-\(UUID().uuidString).out")
    guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
        throw CocoaError(.fileWriteUnknown)
    }
    let out = try FileHandle(forWritingTo: file)
    p.standardOutput = out
    p.standardError = out
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch {
        try? out.close()
        try? FileManager.default.removeItem(at: file)
        throw error
    }
    return (p, out, file)
}

private func collect(_ p: Process, _ out: FileHandle, _ file: URL) -> (status: Int32, output: String) {
    try? out.close()
    let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    try? FileManager.default.removeItem(at: file)
    return (p.terminationStatus, text)
}

/// Runs a program with a deadline; returns exit status and output (stdout + stderr).
func runProcess(_ path: String, _ args: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
    let (p, out, collected) = try launch(path, args)
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(20_000) }
    if p.isRunning {
        p.terminate()
        p.waitUntilExit()
    }
    return collect(p, out, collected)
}

/// `runProcess` that waits without holding one of the (two) cooperative threads: use it in tests
/// whose gateway serves the program being run.
func runProcessAsync(_ path: String, _ args: [String], timeout: Double = 60) async throws -> (status: Int32, output: String) {
    let (p, out, collected) = try launch(path, args)
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    if p.isRunning {
        p.terminate()
        while p.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    }
    return collect(p, out, collected)
}

/// The `livegate` binary of this build: the one `swift test` built beside the test bundle that is
/// running (same configuration, same sanitizer, same scratch path), never one left by another build.
func livegateBinary() -> String? {
    let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let p = bundle.deletingLastPathComponent().appendingPathComponent("livegate").path
    return FileManager.default.isExecutableFile(atPath: p) ? p : nil
}

func temporaryDirectory(_ prefix: String) throws -> URL {
    let d = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
    return d
}

/// A gateway on one Sony emulator (320×240 test pattern), RTSP on a free port, HLS off unless
/// `configure` turns it on.
func startSonyGateway(fps: Double, label: String, mood: EmulatorMood = .prompt,
                      _ configure: (inout GatewayOptions) -> Void = { _ in }) async throws -> (SonyEmulator, Gateway) {
    let emulator = SonyEmulator(port: 0, fps: fps, source: try TestPatternSource(width: 320, height: 240),
                                group: MultiThreadedEventLoopGroup.singleton, mood: mood)
    let port = try await emulator.start()
    return (emulator, try await startGateway(camera: "sony://127.0.0.1:\(port)", label: label, configure))
}

/// A started gateway with one camera (`cam0`): no HLS, a free RTSP port, warnings logged.
func startGateway(camera url: String, label: String,
                  _ configure: (inout GatewayOptions) -> Void = { _ in }) async throws -> Gateway {
    var options = GatewayOptions()
    options.cameras = [try CameraSpec.parse(url, index: 0)]
    options.rtspPort = 0
    options.hls = false
    // Pictures never land in the working directory of a test run.
    options.capturesDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("livegate-captures-\(UUID().uuidString)").path
    configure(&options)
    var logger = Logger(label: label)
    logger.logLevel = .warning
    let gateway = Gateway(options: options, logger: logger)
    try await gateway.start()
    return gateway
}

/// The control API of `model` served on a free loopback port; returns the server task and base URL.
func startAPIServer(_ model: any ControlModel) async throws -> (Task<Void, any Error>, String) {
    var logger = Logger(label: "api")
    logger.logLevel = .warning
    let bound = Mutex(0)
    let app = Application(router: ControlAPI.buildRouter(model: model),
                          configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                          onServerRunning: { ch in bound.withLock { $0 = ch.localAddress?.port ?? 0 } },
                          logger: logger)
    let server = Task { try await app.runService() }
    for _ in 0..<250 where bound.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(20)) }
    let port = bound.withLock { $0 }
    guard port != 0 else { throw CancellationError() }
    return (server, "http://127.0.0.1:\(port)")
}

/// An ffmpeg RTSP client (TCP) that writes every frame it gets into `dir` as f000001.jpg, … (the
/// stream copied, not decoded); stop it with `terminate()`.
func startRTSPFrameWriter(_ url: String, into dir: URL) throws -> Process {
    let ffmpeg = Process()
    ffmpeg.executableURL = URL(fileURLWithPath: Locations.program("ffmpeg")!)
    ffmpeg.arguments = ["-v", "error", "-rtsp_transport", "tcp", "-i", url, "-c", "copy", "-f", "image2",
                        dir.appendingPathComponent("f%06d.jpg").path]
    ffmpeg.standardInput = FileHandle.nullDevice
    ffmpeg.standardOutput = FileHandle.nullDevice
    ffmpeg.standardError = FileHandle.nullDevice
    try ffmpeg.run()
    return ffmpeg
}

/// Runs `body` with 127.0.0.1:`port` as a `sockaddr` (connect, bind, sendto).
func withLoopbackAddress<R>(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// A GET with curl (the path sent as written): the status code and the body.
func curlGet(_ url: String, _ extra: [String] = []) async throws -> (code: String, body: [UInt8]) {
    guard let curl = Locations.program("curl") else { throw CurlMissing() }
    let dir = try temporaryDirectory("livegate-curl")
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("body").path
    let r = try await runProcessAsync(curl, ["-s", "-g", "--path-as-is", "-o", out, "-w", "%{http_code}"] + extra + [url], timeout: 60)
    return (r.output, Array(FileManager.default.contents(atPath: out) ?? Data()))
}

struct CurlMissing: Error {}

/// A camera written in Python (`Tests/Scripts/*_cam.py`, each from the protocol notes alone) as a
/// child process: `--http-port` (or `portFlag`), `--log` (its requests) and `--frames-log` (every
/// frame it sent) plus `arguments`; it prints `ready http=PORT` (or `readyPrefix` PORT) once it
/// listens. Unchecked: the `Process` is only started in `init` and signalled in `stop`.
final class PythonCamera: @unchecked Sendable {
    let dir: URL
    let process = Process()
    let port: Int
    /// The whole `ready` line (a camera with more than one port names the others there).
    let readyLine: String

    /// Starts it (port 0: any free port) and waits for its `ready` line.
    init(script: String, dir: URL, port: Int = 0, arguments: [String] = [],
         portFlag: String = "--http-port", readyPrefix: String = "ready http=") async throws {
        self.dir = dir
        let out = dir.appendingPathComponent("stdout-\(UUID().uuidString.prefix(8)).txt")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: Locations.program("python3")!)
        process.arguments = [script, portFlag, "\(port)",
                             "--log", dir.appendingPathComponent("requests.jsonl").path,
                             "--frames-log", dir.appendingPathComponent("frames.jsonl").path] + arguments
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = process.standardOutput
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, process.isRunning {
            let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(readyPrefix) }),
               let p = Int(line.dropFirst(readyPrefix.count).prefix(while: \.isNumber)) {
                self.port = p
                readyLine = String(line)
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.terminate()
        throw CLIFailure("\(URL(fileURLWithPath: script).lastPathComponent) did not start: \((try? String(contentsOf: out, encoding: .utf8)) ?? "")")
    }

    /// SIGTERM, then waits for it to exit (SIGKILL after 5 s).
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<40 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
    }

    static func lines(_ url: URL) -> [[String: Any]] {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
    var requests: [[String: Any]] { Self.lines(dir.appendingPathComponent("requests.jsonl")) }
    var frames: [[String: Any]] { Self.lines(dir.appendingPathComponent("frames.jsonl")) }
    /// Sends the child a signal (a camera's "shutter on the body", …).
    func signal(_ s: Int32) { kill(process.processIdentifier, s) }
}
