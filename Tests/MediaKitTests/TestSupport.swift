import JPEGKit
import Foundation
import LiveViewCore
import Logging
import MediaKit
import Testing
import TestSupport

/// One GStreamer runtime for the whole test process (one main loop, like the gateway).
let testRuntime: GStreamerRuntime = {
    do { return try GStreamerRuntime() } catch { fatalError("GStreamer: \(error)") }
}()

/// The result of running an external tool.
struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
    var seconds: Double = 0
}

/// Runs an external program with a hard timeout (SIGTERM, then SIGKILL); never hangs. Async, so a
/// waiting test does not hold one of the (two) cooperative threads that other suites need.
func runTool(_ path: String, _ args: [String], timeout: Double = 30, environment: [String: String]? = nil) async throws -> ToolResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if let environment { p.environment = environment }
    // Output goes to temporary files, not Pipes with readability handlers: clearing a handler while
    // libdispatch delivers to it crashed the test process once (`_dispatch_event_loop_drain`).
    let tmp = FileManager.default.temporaryDirectory
    let outFile = tmp.appendingPathComponent("livegate-tool-\(UUID().uuidString).out")
    let errFile = tmp.appendingPathComponent("livegate-tool-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
    let out = try FileHandle(forWritingTo: outFile), err = try FileHandle(forWritingTo: errFile)
    defer {
        try? out.close()
        try? err.close()
        try? FileManager.default.removeItem(at: outFile)
        try? FileManager.default.removeItem(at: errFile)
    }
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    let started = Date()
    let state = ToolState()
    try await withCheckedThrowingContinuation { (cont: CheckedContinuation<Void, Error>) in
        p.terminationHandler = { _ in
            state.exited.store(true, ordering: .releasing)
            cont.resume()
        }
        do { try p.run() } catch {
            p.terminationHandler = nil
            cont.resume(throwing: error)
            return
        }
        let pid = p.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            guard !state.exited.load(ordering: .acquiring) else { return }
            state.timedOut.store(true, ordering: .relaxed)
            kill(pid, SIGTERM)
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
                if !state.exited.load(ordering: .acquiring) { kill(pid, SIGKILL) }
            }
        }
    }
    let outData = (try? Data(contentsOf: outFile)) ?? Data()
    let errData = (try? Data(contentsOf: errFile)) ?? Data()
    return ToolResult(status: p.terminationStatus,
                      stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self),
                      timedOut: state.timedOut.load(ordering: .relaxed), seconds: Date().timeIntervalSince(started))
}

final class ToolState: Sendable {
    let exited = Atomic<Bool>(false)
    let timedOut = Atomic<Bool>(false)
}

/// Sleeps without blocking a cooperative thread.
func pause(_ seconds: Double) async {
    try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
}

/// ffmpeg's stderr without the null muxer's complaint about frames whose timestamps fall into the
/// same 1/fps tick (frames that arrived bunched under CPU load; the PTS is the arrival time, by
/// design). What is left are decode/transport problems.
func decodeProblems(_ stderr: String) -> String {
    stderr.split(separator: "\n")
        .filter { !$0.contains("non monotonically increasing dts to muxer") }
        .joined(separator: "\n")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

func toolExists(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

/// Publishes test-pattern frames into a hub at a fixed rate on its own thread.
final class TestFeeder: @unchecked Sendable {
    let hub: FrameHub
    let fps: Int
    let pattern: TestPattern
    let pool = FramePool(capacity: 16, frameBytes: 128 * 1024)
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    let published = Atomic<Int>(0)
    /// When set, these JPEG bytes are published instead of the test pattern.
    var fixedJPEG: [UInt8]?
    /// Camera PTS to stamp (ns) as `start + n * frame interval`, when set.
    var cameraPTSStart: Int64?
    let renderNanos = Atomic<Int>(0)

    init(hub: FrameHub, width: Int = 768, height: Int = 432, fps: Int = 30) throws {
        self.hub = hub
        self.fps = fps
        pattern = try TestPattern(width: width, height: height)
    }

    func start() {
        running.store(true, ordering: .relaxed)
        let t = Thread { [self] in
            let interval = 1_000_000_000 / UInt64(fps)
            var next = MonotonicClock.nanos()
            var n = 0
            while running.load(ordering: .relaxed) {
                publishOne(n)
                n += 1
                next += interval
                let now = MonotonicClock.nanos()
                if next > now { usleep(UInt32((next - now) / 1000)) }
            }
            finished.signal()
        }
        t.start()
    }

    func publishOne(_ n: Int) {
        let f = pool.take()
        let t0 = MonotonicClock.nanos()
        var box = PixelRect(x: 8, y: 8, width: 32, height: 32)
        if let fixed = fixedJPEG {
            f.setJPEG(fixed)
            if let size = JPEGScanner.size(of: f.bytes) { (f.width, f.height) = size }
        } else {
            box = try! pattern.render(frameNumber: n, into: f)
        }
        renderNanos.wrappingAdd(Int(MonotonicClock.nanos() - t0), ordering: .relaxed)
        f.sequence = UInt64(n)
        f.arrivalNanos = MonotonicClock.nanos()
        if let s = cameraPTSStart {
            f.cameraPTS = s + Int64(n) * Int64(1_000_000_000 / fps)
            f.timeBase = .camera
        }
        f.afAreas = [AFArea(pixels: box, camera: CameraRect(x: 0, y: 0, width: 0, height: 0), kind: .af, state: .focused)]
        hub.publish(f)
        published.wrappingAdd(1, ordering: .relaxed)
    }

    func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        finished.wait()
    }
}

/// A fresh temporary directory.
func makeTempDir(_ name: String) throws -> String {
    let dir = NSTemporaryDirectory() + "livegate-\(name)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// The client programs, found on PATH (a missing one fails `toolExists` and its test is skipped, said so).
let ffmpeg = Locations.program("ffmpeg") ?? "ffmpeg"
let ffprobe = Locations.program("ffprobe") ?? "ffprobe"
let gstLaunch = Locations.program("gst-launch-1.0") ?? "gst-launch-1.0"

/// A camera state that a test changes while the graph reads it.
final class PresenceBox: Sendable {
    private let value: Mutex<CameraPresence>
    init(_ p: CameraPresence) { value = Mutex(p) }
    func set(_ p: CameraPresence) { value.withLock { $0 = p } }
    var current: CameraPresence { value.withLock { $0 } }
}

/// A camera graph on the shared test runtime (linger 1 s unless changed).
func makeGraph(_ id: String, hub: FrameHub, presence: PresenceBox = PresenceBox(CameraPresence(state: "streaming")),
               _ configure: (inout CameraGraph.Configuration) -> Void = { _ in }) throws -> CameraGraph {
    var config = CameraGraph.Configuration(id: id)
    config.linger = .seconds(1)
    configure(&config)
    var logger = Logger(label: "test.graph")
    logger.logLevel = .error
    return try CameraGraph(configuration: config, hub: hub, runtime: testRuntime, presence: { presence.current }, logger: logger)
}

/// Seconds an RTSP server takes to answer DESCRIBE (a plain socket client; throws on no answer).
func describeSeconds(_ url: String, timeout: Double = 10) throws -> Double {
    let rest = url.dropFirst("rtsp://".count)
    let hostPort = rest.split(separator: "/")[0].split(separator: ":")
    let port = UInt16(hostPort[1])!
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw MediaError("socket failed") }
    defer { close(fd) }
    var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let start = Date()
    let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard rc == 0 else { throw MediaError("connect failed") }
    let request = "DESCRIBE \(url) RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n"
    _ = request.withCString { send(fd, $0, strlen($0), 0) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = recv(fd, &buffer, buffer.count, 0)
    guard n > 0 else { throw MediaError("no answer to DESCRIBE within \(timeout) s") }
    let head = String(decoding: buffer[0..<min(n, 64)], as: UTF8.self)
    guard head.hasPrefix("RTSP/1.0 200") else { throw MediaError("DESCRIBE answered \(head)") }
    return Date().timeIntervalSince(start)
}
