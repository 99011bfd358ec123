import ArgumentParser
import Foundation
import Gateway
import Hummingbird
import LiveViewCore
import Logging
import NIOPosix
import ServiceLifecycle
import Vendors

/// `livegate run` (the default): the gateway.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the gateway (the default). Without --camera it starts an emulated camera (emulator:\(Vendors.emulatorNames[0])) in-process.",
        discussion: """
            Camera URLs:
            \(Vendors.all.map { "  \($0.urlSyntax) — \($0.summary)" }.joined(separator: "\n"))
            and emulator:VENDOR (\(Vendors.emulatorNames.joined(separator: ", "))) for an emulated camera started \
            in-process. Name a camera with NAME=URL; ids default to cam0, cam1, …
            Each camera is served at rtsp://HOST:RTSP_PORT/<id> (H.264, AF areas drawn) and …/<id>/raw (the \
            camera's own JPEGs), and at http://HOST:HTTP_PORT/hls/<id>/index.m3u8. The control API is at \
            http://HOST:HTTP_PORT/api/v1/cameras. Ctrl-C or SIGTERM stops cleanly and finishes recordings.
            """)

    @Option(name: .long, help: ArgumentHelp("A camera: [NAME=]URL (repeatable).", valueName: "[NAME=]URL"))
    var camera: [String] = []

    @Option(name: .long, help: "RTSP server port.") var rtspPort: Int = 8554
    @Option(name: .long, help: "Control API / HLS HTTP port.") var httpPort: Int = 8080
    @Option(name: .long, help: "Address the servers bind to (loopback by default; 0.0.0.0 for the LAN).")
    var listen: String = "127.0.0.1"
    @Flag(name: .long, inversion: .prefixedNo, help: "Serve HLS at /hls/<camera>/index.m3u8.") var hls = true
    @Option(name: .long, help: "Folder for HLS segments (default: a temporary folder).") var hlsDir: String?
    @Option(name: .long, help: "Record Matroska segments with the camera's JPEGs and PTS, plus AF sidecars, into DIR.")
    var record: String?
    @Option(name: .long, help: "Save the images cameras send (shots from the API or taken on the camera) into DIR/<camera>/.")
    var captures: String = "captures"
    @Option(name: .long, help: "Recording segment length in seconds.") var segmentSeconds: Int = 300
    @Option(name: .long, help: "Write the first camera to this v4l2loopback device (e.g. /dev/video10).")
    var v4l2: String?
    @Option(name: .long, help: ArgumentHelp("Replace the webcam's v4l2sink with another GStreamer sink (testing without v4l2loopback).", visibility: .hidden))
    var v4l2Sink: String?
    @Option(name: .long, help: "Overlay on the H.264/HLS/webcam outputs: af (draw AF areas) or none.")
    var overlay: String = "af"
    @Option(name: .long, help: "Nominal output frame rate for the encoders.") var fps: Int = 30
    @Option(name: .long, help: "Seconds a camera's decode, encoder or HLS keeps running after its last viewer left.")
    var linger: Int = 10
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error.") var logLevel: String = "info"

    func validate() throws {
        for (name, p) in [("--rtsp-port", rtspPort), ("--http-port", httpPort)] where !(1...65535).contains(p) {
            throw ValidationError("\(name) must be 1…65535, got \(p)")
        }
        guard rtspPort != httpPort else { throw ValidationError("--rtsp-port and --http-port must differ") }
        guard ["af", "none"].contains(overlay) else { throw ValidationError("--overlay must be af or none") }
        guard (1...120).contains(fps) else { throw ValidationError("--fps must be 1…120") }
        guard (5...86_400).contains(segmentSeconds) else { throw ValidationError("--segment-seconds must be 5…86400") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        for (i, c) in camera.enumerated() {
            do { _ = try CameraSpec.parse(c, index: i) } catch { throw ValidationError("--camera: \(error)") }
        }
    }

    func run() async throws {
        var options = GatewayOptions()
        options.cameras = try camera.enumerated().map { try CameraSpec.parse($1, index: $0) }
        if options.cameras.isEmpty { options.cameras = [CameraSpec(id: "cam0", source: .emulator(vendor: Vendors.emulatorNames[0]))] }
        let ids = options.cameras.map(\.id)
        guard Swift.Set(ids).count == ids.count else { throw ValidationError("camera names must be unique: \(ids)") }
        options.listen = listen
        options.rtspPort = rtspPort
        options.httpPort = httpPort
        options.hls = hls
        options.hlsDirectory = hlsDir
        options.recordDirectory = record
        options.capturesDirectory = captures
        options.segmentSeconds = segmentSeconds
        options.v4l2Device = v4l2
        options.v4l2Sink = v4l2Sink
        options.overlay = overlay == "af"
        options.fps = fps
        guard linger >= 0 else { throw ValidationError("--linger must be 0 or more seconds") }
        options.lingerSeconds = linger
        if let r = record {
            try FileManager.default.createDirectory(atPath: r, withIntermediateDirectories: true)
        }

        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return h
        }
        let logger = Logger(label: "livegate")
        let gateway = Gateway(options: options, logger: logger)
        // The banner goes out once both the gateway and the HTTP server are up.
        let ready = Locked(0)
        let oneReady: @Sendable () -> Void = {
            if ready.withLock({ n -> Int in n += 1; return n }) == 2 { printBanner(gateway) }
        }
        gateway.onStarted = { _ in oneReady() }
        // Cameras and outputs first: a port in use or a missing device stops here, with one clear
        // message, before the HTTP server starts (the service's run() finds them started).
        do {
            try await gateway.start()
        } catch {
            await gateway.stop()
            throw CLIError("\(error)")
        }
        let app = Application(
            router: ControlAPI.buildRouter(model: gateway),
            configuration: .init(address: .hostname(listen, port: httpPort), serverName: "livegate"),
            onServerRunning: { _ in oneReady() },
            logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: gateway), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch {
            if "\(error)".contains("Address already in use") {
                throw CLIError("cannot listen on \(listen):\(httpPort) for the control API: the address is in use; pick another with --http-port")
            }
            throw error
        }
    }
}

func printBanner(_ gateway: Gateway) {
    var lines = ["livegate is running. Open:"]
    for cam in gateway.cameras {
        let u = gateway.urls(for: cam)
        lines.append("  \(cam.id) (\(cam.url))")
        for key in ["rtsp", "rtspRaw", "whep", "hls", "mjpeg", "snapshot", "v4l2", "recording"] {
            if let v = u[key] { lines.append("    \(key.padding(toLength: 10, withPad: " ", startingAt: 0)) \(v)") }
        }
    }
    let host = gateway.options.listen == "0.0.0.0" || gateway.options.listen == "::" ? "127.0.0.1" : gateway.options.listen
    lines.append("  control API  http://\(host):\(gateway.options.httpPort)/api/v1/cameras")
    lines.append("  status page  http://\(host):\(gateway.options.httpPort)/")
    lines.append("  metrics      http://\(host):\(gateway.options.httpPort)/metrics")
    lines.append("Press Ctrl-C to stop.")
    print(lines.joined(separator: "\n"))
    fflush(nil)
}
