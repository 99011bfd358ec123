import ArgumentParser
import Foundation
import Gateway
import Hummingbird
import LiveViewCore
import Logging
import MediaKit
import NIOPosix
import ServiceLifecycle
import UnixSignals
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

    @Option(name: .long, help: ArgumentHelp("Push a camera's H.264 to a media server: rtsp:// (RECORD), rtmp:// or srt:// (repeatable). CAMERA=URL for one camera; a bare URL goes to every camera, with {camera} replaced by its id.", valueName: "[CAMERA=]URL"))
    var push: [String] = []
    @Option(name: .long, help: ArgumentHelp("A YAML file with cameras and settings (keys named like these flags in camelCase; see deploy/livegate.yaml). Flags override it, LIVEGATE_* variables override it too. SIGHUP or POST /api/v1/reload re-reads its cameras.", valueName: "FILE"))
    var config: String?
    @Option(name: .long, help: ArgumentHelp("A camera: [NAME=]URL (repeatable).", valueName: "[NAME=]URL"))
    var camera: [String] = []

    @Option(name: .long, help: "RTSP server port (default 8554).") var rtspPort: Int?
    @Option(name: .long, help: "Control API / HLS HTTP port (default 8080).") var httpPort: Int?
    @Option(name: .long, help: "Address the servers bind to (default 127.0.0.1; 0.0.0.0 for the LAN).")
    var listen: String?
    @Flag(name: .long, inversion: .prefixedNo, help: "Serve HLS at /hls/<camera>/index.m3u8 (default on).") var hls: Bool?
    @Option(name: .long, help: "Folder for HLS segments (default: a temporary folder).") var hlsDir: String?
    @Option(name: .long, help: "Record Matroska segments with the camera's JPEGs and PTS, plus AF sidecars, into DIR.")
    var record: String?
    @Option(name: .long, help: "Save the images cameras send (shots from the API or taken on the camera) into DIR/<camera>/ (default ./captures).")
    var captures: String?
    @Option(name: .long, help: "Recording segment length in seconds (default 300).") var segmentSeconds: Int?
    @Option(name: .long, help: "Write the first camera to this v4l2loopback device (e.g. /dev/video10).")
    var v4l2: String?
    @Option(name: .long, help: ArgumentHelp("Replace the webcam's v4l2sink with another GStreamer sink (testing without v4l2loopback).", visibility: .hidden))
    var v4l2Sink: String?
    @Option(name: .long, help: ArgumentHelp("Publish the first camera as a PipeWire camera node called NAME (root-free virtual webcam for browsers and OBS).", valueName: "NAME"))
    var pipewire: String?
    @Option(name: .long, help: ArgumentHelp("The virtual webcams' fixed picture size (--v4l2, --pipewire; default 1280x720); the camera's picture is scaled and letterboxed into it.", valueName: "WIDTHxHEIGHT"))
    var webcamSize: String?
    @Option(name: .long, help: ArgumentHelp("The virtual webcams' raw format: YUY2 (default; what Chrome, Zoom, Teams and OBS read from v4l2loopback) or I420.", valueName: "FORMAT"))
    var webcamFormat: String?
    @Option(name: .long, help: "Overlay on the H.264/HLS/webcam outputs: af (draw AF areas, the default) or none.")
    var overlay: String?
    @Option(name: .long, help: "Nominal output frame rate for the encoders (default 30).") var fps: Int?
    @Option(name: .long, help: "Seconds a camera's decode, encoder or HLS keeps running after its last viewer left (default 10).")
    var linger: Int?
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error (default info).") var logLevel: String?
    @Option(name: .long, help: ArgumentHelp("Require this token on every HTTP request (Authorization: Bearer, or ?token=) and RTSP (user livegate, the token as password). Needed when --listen is not a loopback address; `livegate token` makes one. Prefer LIVEGATE_TOKEN or the config file: a flag shows in the process list.", valueName: "TOKEN"))
    var token: String?
    @Option(name: .long, help: ArgumentHelp("Seconds a kept-alive HTTP connection may wait for its next request before it is closed (a new one has this, at most 10 s, to send its first); streamed answers are not idle.", visibility: .hidden))
    var httpIdleTimeout: Int = 30
    @Option(name: .long, help: ArgumentHelp("Seconds within which a request's body must have been read after its head.", visibility: .hidden))
    var httpRequestTimeout: Int = 30
    @Option(name: .long, help: ArgumentHelp("Most HTTP connections open at once; more are answered 503 (default 1024). Above a quarter of it, connections that wait for a request are closed after 2 s."))
    var httpMaxConnections: Int = 1024
    @Option(name: .long, help: ArgumentHelp("Seconds an RTSP connection may go without setting up a session before it is closed (0: never).", visibility: .hidden))
    var rtspIdleTimeout: Int = 30
    @Option(name: .long, help: ArgumentHelp("Seconds an RTSP client may acknowledge nothing while data waits for it (it stopped reading) before it is closed (0: never).", visibility: .hidden))
    var rtspStallTimeout: Int = 10
    @Option(name: .long, help: ArgumentHelp("Largest RTP packet of the raw RTSP mounts (…/raw), 400…65000 bytes (default: 60000 while listening on loopback, where a frame then goes out as one packet; 1400 otherwise, inside a network's MTU).", valueName: "BYTES"))
    var rawPacketSize: Int?
    @Option(name: .long, help: ArgumentHelp("A host name the HTTP server answers for besides IP addresses, localhost and this machine's name (repeatable).", valueName: "NAME"))
    var allowedHost: [String] = []
    @Option(name: .long, help: ArgumentHelp("A web origin (https://example.com) whose pages may read streams, snapshots and events (repeatable; by default only livegate's own page may).", valueName: "ORIGIN"))
    var allowOrigin: [String] = []

    func validate() throws {
        // The flags' values by the config file's rules, named as flags.
        if let p = flagSettings().problem() { throw ValidationError("\(ConfigFile.flag(p.key)) \(p.message)") }
        for (i, c) in camera.enumerated() {
            do { _ = try CameraSpec.parse(c, index: i) } catch { throw ValidationError("--camera: \(error)") }
        }
    }

    /// The settings the flags give (nil where a flag is absent).
    func flagSettings() -> ConfigFile {
        var c = ConfigFile()
        c.listen = listen
        c.rtspPort = rtspPort
        c.httpPort = httpPort
        c.hls = hls
        c.hlsDir = hlsDir
        c.record = record
        c.captures = captures
        c.segmentSeconds = segmentSeconds
        c.v4l2 = v4l2
        c.pipewire = pipewire
        c.overlay = overlay
        c.fps = fps
        c.linger = linger
        c.logLevel = logLevel
        c.token = token
        c.allowedHosts = allowedHost.isEmpty ? nil : allowedHost
        c.allowedOrigins = allowOrigin.isEmpty ? nil : allowOrigin
        return c
    }

    /// The file (when given) under the environment under the flags.
    func settings(environment env: [String: String]) throws -> ConfigFile {
        var c = ConfigFile()
        if let path = config ?? env["LIVEGATE_CONFIG"].flatMap({ $0.isEmpty ? nil : $0 }) {
            c = try ConfigFile.load(path: path)
        }
        c = try ConfigEnvironment.apply(env, to: c)
        return c.overridden(by: flagSettings())
    }

    /// The cameras: the flags' when any, else the file's / environment's, else an emulated camera.
    func cameraSpecs(_ c: ConfigFile) throws -> [CameraSpec] {
        var specs = try camera.enumerated().map { try CameraSpec.parse($1, index: $0) }
        if specs.isEmpty { specs = try c.cameraSpecs() }
        if specs.isEmpty { specs = [CameraSpec(id: "cam0", source: .emulator(vendor: Vendors.emulatorNames[0]))] }
        let ids = specs.map(\.id)
        guard Swift.Set(ids).count == ids.count else { throw CLIError("camera names must be unique: \(ids.joined(separator: ", "))") }
        for p in push {
            if let eq = p.firstIndex(of: "="), !p[..<eq].contains(":") {
                let id = String(p[..<eq]), url = String(p[p.index(after: eq)...])
                guard let i = specs.firstIndex(where: { $0.id == id }) else {
                    throw CLIError("--push \(id)=…: there is no camera '\(id)' (cameras: \(ids.joined(separator: ", ")))")
                }
                specs[i].push.append(url)
            } else {
                guard specs.count == 1 || p.contains("{camera}") else {
                    throw CLIError("--push URL goes to every camera: with \(specs.count) cameras put {camera} in it, or write CAMERA=URL")
                }
                for i in specs.indices { specs[i].push.append(p.replacingOccurrences(of: "{camera}", with: specs[i].id)) }
            }
        }
        for spec in specs {
            for u in spec.push {
                do { _ = try PushOutput.check(u) } catch { throw CLIError("--push: \(error)") }
            }
        }
        return specs
    }

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        let c: ConfigFile
        var options = GatewayOptions()
        do {
            c = try settings(environment: env)
            options.cameras = try cameraSpecs(c)
        } catch let e as ConfigError {
            throw CLIError("\(e)")
        }
        options.listen = c.listen ?? options.listen
        options.rtspPort = c.rtspPort ?? options.rtspPort
        options.httpPort = c.httpPort ?? options.httpPort
        guard options.rtspPort != options.httpPort else {
            throw CLIError("the RTSP and HTTP ports must differ (both are \(options.httpPort))")
        }
        options.hls = c.hls ?? options.hls
        options.hlsDirectory = c.hlsDir
        options.recordDirectory = c.record
        options.capturesDirectory = c.captures ?? options.capturesDirectory
        options.segmentSeconds = c.segmentSeconds ?? options.segmentSeconds
        options.v4l2Device = c.v4l2
        options.v4l2Sink = v4l2Sink
        if let size = webcamSize {
            guard let (w, h) = evenSize(size, width: 160...4096, height: 120...4096) else {
                throw CLIError("--webcam-size must be WIDTHxHEIGHT with even sides, 160x120 to 4096x4096, got '\(size)'")
            }
            (options.webcamWidth, options.webcamHeight) = (w, h)
        }
        if let format = webcamFormat {
            guard ["YUY2", "I420"].contains(format.uppercased()) else {
                throw CLIError("--webcam-format must be YUY2 or I420, got '\(format)'")
            }
            options.webcamFormat = format.uppercased()
        }
        options.pipewireNode = c.pipewire
        options.overlay = (c.overlay ?? "af") == "af"
        options.fps = c.fps ?? options.fps
        options.lingerSeconds = c.linger ?? options.lingerSeconds
        options.configPath = config ?? env["LIVEGATE_CONFIG"]
        options.token = c.token
        options.allowedHosts = c.allowedHosts ?? []
        options.allowedOrigins = c.allowedOrigins ?? []
        guard (1...3600).contains(httpIdleTimeout) else { throw CLIError("--http-idle-timeout must be 1…3600 seconds") }
        options.httpLimits.idleSeconds = Double(httpIdleTimeout)
        options.httpLimits.headSeconds = min(options.httpLimits.headSeconds, Double(httpIdleTimeout))
        guard (1...3600).contains(httpRequestTimeout) else { throw CLIError("--http-request-timeout must be 1…3600 seconds") }
        options.httpLimits.requestSeconds = Double(httpRequestTimeout)
        guard (8...1_000_000).contains(httpMaxConnections) else { throw CLIError("--http-max-connections must be 8…1000000") }
        // Every connection is a descriptor: the soft limit (often 1024) goes up to the hard one, and
        // the connection budget leaves room for cameras, outputs and files.
        let descriptors = raiseDescriptorLimit()
        options.httpLimits.maxConnections = min(httpMaxConnections, max(8, descriptors - 256))
        options.httpLimits.busyConnections = options.httpLimits.maxConnections / 4
        guard (0...3600).contains(rtspIdleTimeout) else { throw CLIError("--rtsp-idle-timeout must be 0…3600 seconds") }
        guard (0...3600).contains(rtspStallTimeout) else { throw CLIError("--rtsp-stall-timeout must be 0…3600 seconds") }
        options.rtspIdleTimeoutSeconds = rtspIdleTimeout
        options.rtspStallTimeoutSeconds = rtspStallTimeout
        if let n = rawPacketSize {
            guard (400...65_000).contains(n) else { throw CLIError("--raw-packet-size must be 400…65000 bytes") }
            options.rawPacketSize = n
        }
        if options.token == nil && !AccessPolicy.isLoopback(options.listen) {
            throw CLIError("""
                --listen \(options.listen) serves every camera to the network, so a token is required:                 set LIVEGATE_TOKEN (or token: in the config file, or --token) to a secret, for example one from `livegate token`
                """)
        }
        let logLevel = c.logLevel ?? "info"
        if let r = options.recordDirectory { try writableDirectory(r, flag: "--record") }
        if let h = options.hlsDirectory { try writableDirectory(h, flag: "--hls-dir") }
        try writableDirectory(options.capturesDirectory, flag: "--captures", create: false)

        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return h
        }
        let logger = Logger(label: "livegate")
        let gateway = Gateway(options: options, logger: logger)
        if options.configPath != nil {
            // What a reload reads: the file again, under the environment and the flags.
            let command = self
            gateway.reloadSource = { try command.cameraSpecs(try command.settings(environment: ProcessInfo.processInfo.environment)) }
        }
        // The banner goes out once both the gateway and the HTTP server are up.
        let ready = Mutex(0)
        let oneReady: @Sendable () -> Void = {
            if ready.withLock({ n -> Int in n += 1; return n }) == 2 { printBanner(gateway) }
        }
        gateway.onStarted = { _ in oneReady() }
        let app = Application(
            router: ControlAPI.buildRouter(model: gateway, access: AccessPolicy(token: options.token, allowedHosts: Set(options.allowedHosts), allowedOrigins: options.allowedOrigins)),
            server: gateway.httpGuard.http1(),
            configuration: .init(address: .hostname(options.listen, port: options.httpPort), serverName: "livegate"),
            onServerRunning: { _ in oneReady() },
            logger: logger)
        // One group: the gateway, the RTSP server, HLS and WebRTC, the HTTP server, the SIGHUP
        // reloader, and per camera its media graph and the camera, which the gateway adds as it
        // starts them. A graceful shutdown goes backwards: cameras and graphs, reloader, HTTP
        // server, HLS/WebRTC, RTSP server, then the gateway finishes the recordings.
        // SIGTERM/SIGINT also tell the gateway at once that it is closing (ClosingOnSignal): event
        // streams and MJPEG viewers end before the group reaches the HTTP server. What
        // still runs 2.5 s after the signal (a camera that stopped answering mid-request) is
        // cancelled, so livegate ends within 3 s whatever is connected; the gateway, last, still
        // finishes the recordings.
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: gateway)] + gateway.outputServices
                + [.init(service: app), .init(service: ReloadOnHangup(gateway: gateway, logger: logger)),
                   .init(service: ClosingOnSignal(gateway: gateway))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(2500)
        let group = ServiceGroup(configuration: configuration)
        gateway.runCameras(in: group)
        // Cameras and outputs first: a port in use or a missing device stops here, with one clear
        // message, before the HTTP server starts (the service's run() finds them started).
        do {
            try await gateway.start()
        } catch {
            await gateway.stop()
            throw CLIError("\(error)")
        }
        do {
            try await group.run()
        } catch {
            if "\(error)".contains("Address already in use") {
                throw CLIError("cannot listen on \(options.listen):\(options.httpPort) for the control API: the address is in use; pick another with --http-port")
            }
            throw error
        }
    }
}

/// Raises this process's soft descriptor limit to its hard limit (at most 1 048 576); returns the
/// limit in force.
func raiseDescriptorLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    let wanted = min(limit.rlim_max, 1_048_576)
    if limit.rlim_cur < wanted {
        var raised = limit
        raised.rlim_cur = wanted
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(wanted) }
    }
    return Int(min(limit.rlim_cur, 1_048_576))
}

func printBanner(_ gateway: Gateway) {
    var lines = ["livegate is running. Open:"]
    for cam in gateway.cameras {
        let u = gateway.urls(for: cam)
        lines.append("  \(cam.id) (\(cam.url))")
        for key in ["rtsp", "rtspRaw", "whep", "hls", "mjpeg", "snapshot", "v4l2", "pipewire", "recording"] {
            if let v = u[key] { lines.append("    \(key.padding(toLength: 10, withPad: " ", startingAt: 0)) \(v)") }
        }
        for p in gateway.pushes(camera: cam.id) {
            lines.append("    push       \(p.url)")
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

/// Reloads the configuration's cameras on SIGHUP (`systemctl reload livegate`).
struct ReloadOnHangup: Service {
    let gateway: Gateway
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            logger.info("SIGHUP: reloading the configuration")
            do { _ = try await gateway.reload() } catch { logger.error("reload failed: \(error)") }
        }
    }
}

/// A folder the gateway will write into: created when missing (when `create`), and refused with a
/// plain sentence when it cannot be (no error domains or codes).
func writableDirectory(_ path: String, flag: String, create: Bool = true) throws {
    let fm = FileManager.default
    var isDir: ObjCBool = false
    if fm.fileExists(atPath: path, isDirectory: &isDir) {
        guard isDir.boolValue else { throw CLIError("\(flag) \(path): this is a file, not a folder") }
        guard access(path, W_OK | X_OK) == 0 else { throw CLIError("\(flag) \(path): livegate may not write into this folder (permission denied)") }
        return
    }
    guard create else {
        // Created on the first save; its parent must let us.
        let parent = (path as NSString).deletingLastPathComponent
        let p = parent.isEmpty ? "." : parent
        if fm.fileExists(atPath: p), access(p, W_OK | X_OK) != 0 {
            throw CLIError("\(flag) \(path): cannot be created in \(p) (permission denied)")
        }
        return
    }
    // mkdir -p by hand, to name the folder that failed and why (errno in words, no error domains).
    var built = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/", omittingEmptySubsequences: true) {
        built += "/" + part
        if fm.fileExists(atPath: built, isDirectory: &isDir) {
            guard isDir.boolValue else { throw CLIError("\(flag) \(path): \(built) is a file, not a folder") }
            continue
        }
        if mkdir(built, 0o755) != 0 && errno != EEXIST {
            let why = errno == ENOENT ? "the parent folder does not accept new folders" : String(cString: strerror(errno)).lowercased()
            throw CLIError("\(flag) \(path): cannot create \(built) (\(why))")
        }
    }
    guard access(path, W_OK | X_OK) == 0 else { throw CLIError("\(flag) \(path): livegate may not write into this folder (permission denied)") }
}

/// Tells the gateway it is closing the moment SIGTERM or SIGINT arrives, before the service group's
/// graceful shutdown reaches the HTTP server (it goes service by service, cameras first): clients
/// of long-lived answers are told at once, so they never hold the shutdown.
struct ClosingOnSignal: Service {
    let gateway: Gateway

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        for await _ in signals.cancelOnGracefulShutdown() {
            gateway.beginClosing()
            break
        }
        // A service that returns early fails the group: wait for the shutdown's turn (at once when
        // it came first), and make sure nothing long-lived outlives it.
        try? await gracefulShutdown()
        gateway.beginClosing()
    }
}
