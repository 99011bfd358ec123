import Foundation
public import LiveViewCore
public import Logging
public import NIOCore
import NIOPosix

/// Errors specific to the Bandit's vendor controls.
public enum BanditControlError: Error, Sendable, CustomStringConvertible {
    /// The camera's `capabilities/recording` does not list this combination (nothing was sent).
    case videoModeNotOffered(BanditVideoMode, offered: [BanditVideoMode])
    /// The camera is in image mode; there is no video mode to read.
    case notInVideoMode

    public var description: String {
        switch self {
        case .videoModeNotOffered(let m, let offered):
            return "video mode \(m) is not offered by the camera; offered: \(offered.map(\.description).joined(separator: ", "))"
        case .notInVideoMode: return "the camera is in image mode"
        }
    }
}

/// Driver for the TomTom Bandit action camera (bandit.md): REST control at `http://HOST:PORT/api/2/…`,
/// the live viewfinder as JPEGs split over UDP datagrams sent to a port the gateway binds, and
/// backchannel notifications over TCP.
///
/// A session: `GET /api/version`, `GET /api/2/status`, bind the UDP port on the interface that reaches
/// the camera, connect the backchannel, `POST /api/2/viewfinder {active, port}`; then watch it:
/// a `viewfinder_stopped` notification restarts the viewfinder, 2 s without a datagram restarts it too
/// (stop + start), a closed backchannel or a failed restart ends the session, and the session loop
/// reconnects with back-off (≤ 2 s between attempts).
///
/// Shutter: `capture` in an image mode (`BanditTransfer.swift`).
///
/// Common vocabulary: only white balance exists (auto + Kelvin presets, see `BanditVocabulary`); ISO,
/// shutter, aperture, exposure compensation, focus mode and touch-AF are `notSupported`. Vendor
/// controls: `startRecording()`, `stopRecording()`, `videoMode()`, `videoModes()`, `setVideoMode(_:)`,
/// `status()`, `events` / `onEvent`.
public final class BanditDriver: CameraDriver, Sendable {
    public let vendor = "bandit"
    public let stats = DriverStats()
    public let endpoint: BanditEndpoint
    public let rest: BanditREST
    private let group: any EventLoopGroup
    private let logger: Logger
    private let cameraIndex: Int
    private let pool = FramePool(capacity: 24, frameBytes: 128 * 1024)
    private let lifecycle: DriverLifecycle
    private let channels = Mutex<[any Channel]>([])
    private let restartRequested = Mutex(false)
    /// The card as last listed: path → the item's kind and id (`BanditCard.swift`).
    let cardIndex = Mutex<[String: BanditMedia]>([:])
    /// The last listing while it is young and the camera announced no new photo or video.
    let cardListing = CardListing<BanditMedia>(lifetime: .seconds(10))
    private let backchannelClosed = Mutex(false)
    private let backchannelUp = Mutex(false)
    private let eventLog = Mutex<[BanditEvent]>([])
    private let eventCallback = Mutex<(@Sendable (BanditEvent) -> Void)?>(nil)
    private let recordingBox = Mutex(false)
    private let portBox = Mutex(0)
    private let restarts = Mutex(0)
    let transfer = BanditTransfer()

    /// No datagram for this long restarts the viewfinder.
    public let stallTimeout: Duration = .seconds(2)
    /// How long a capture waits for the camera's `photo_captured` after the shutter.
    public let shotTimeout: Duration = .seconds(15)
    /// Events kept in `events`.
    public static let eventHistory = 256

    public init(endpoint: BanditEndpoint, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        self.endpoint = endpoint
        self.rest = BanditREST(endpoint: endpoint)
        self.lifecycle = DriverLifecycle(name: "\(endpoint)", logger: logger, stats: stats, loop: group.next())
        self.group = group
        self.cameraIndex = cameraIndex
        self.logger = logger
    }

    /// `bandit://HOST[:PORT][?udp=PORT]`; nil when the URL is not one.
    public convenience init?(url: String, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        guard let e = BanditEndpoint.parse(url: url) else { return nil }
        self.init(endpoint: e, group: group, cameraIndex: cameraIndex, logger: logger)
    }

    public var state: CameraState { lifecycle.state }
    public var lastError: String? { lifecycle.lastError }

    /// Backchannel notifications received so far (the last `eventHistory`).
    public var events: [BanditEvent] { eventLog.withLock { $0 } }

    /// Called for every backchannel notification (on an event-loop thread; keep it short).
    public var onEvent: (@Sendable (BanditEvent) -> Void)? {
        get { eventCallback.withLock { $0 } }
        set { eventCallback.withLock { $0 = newValue } }
    }

    /// True while the camera records, as far as the driver knows (status, notifications, own requests).
    public var isRecording: Bool { recordingBox.withLock { $0 } }

    /// True while the backchannel (the camera's notifications) is connected.
    var hasBackchannel: Bool { backchannelUp.withLock { $0 } && !backchannelClosed.withLock { $0 } }

    /// The local UDP port of the current viewfinder session (0 when none).
    public var viewfinderPort: Int { portBox.withLock { $0 } }

    /// Viewfinder restarts inside a session (stall watchdog or `viewfinder_stopped`).
    public var viewfinderRestarts: Int { restarts.withLock { $0 } }

    // MARK: Session

    public func start(hub: FrameHub) {
        lifecycle.start(session: { [self] in try await self.session(hub: hub) },
                        afterSession: { [self] in
                            closeChannels()
                            backchannelUp.withLock { $0 = false }
                            portBox.withLock { $0 = 0 }
                        })
    }

    public func stop() async {
        let wasRunning = state != .stopped
        closeChannels()
        await lifecycle.stop()
        if wasRunning {
            // Best effort: the camera streams only to one client at a time.
            _ = try? await rest.call("POST", "viewfinder", body: ["viewfinder_active": false], timeout: .seconds(1))
        }
    }

    private func closeChannels() {
        let all = channels.withLock { c -> [any Channel] in
            let o = c
            c.removeAll()
            return o
        }
        for ch in all { ch.close(promise: nil) }
    }

    private struct SessionEnded: Error, CustomStringConvertible {
        var description: String
    }

    private func session(hub: FrameHub) async throws {
        let version = try await rest.discoverVersion()
        let status = BanditStatus(try await rest.call("GET", "status"))
        recordingBox.withLock { $0 = status.recordingActive }
        // The card may have changed while the camera was away (another card, photos deleted).
        cardListing.invalidate()
        cardIndex.withLock { $0.removeAll() }
        logger.debug("bandit API \(version.version).\(version.revision), backchannel port \(status.backchannelPort)")

        // The viewfinder socket: on the interface whose address the camera sees as our HTTP peer.
        let bindHost = try await localAddress(toward: endpoint)
        let (pool, stats, cameraIndex, lifecycle) = (self.pool, self.stats, self.cameraIndex, self.lifecycle)
        let acceptFrom = (try? SocketAddress(ipAddress: bindHostFor(endpoint.host), port: 0))?.ipAddress
        // No SO_REUSEADDR: a second gateway on the same UDP port must fail loudly instead of silently
        // sharing (and splitting) the camera's datagrams.
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.maxMessagesPerRead, value: 64)
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    // The ingest is the channel's own: it lives on the channel's event loop.
                    let ingest = BanditViewfinderIngest(
                        hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex,
                        onFrame: { _ in lifecycle.frameArrived() })
                    try ch.pipeline.syncOperations.addHandler(BanditViewfinderHandler(
                        ingest: ingest, acceptFrom: acceptFrom,
                        onDatagram: { lifecycle.resetStallClock() }))
                }
            }
            .bind(host: bindHost, port: endpoint.viewfinderPort).get()
        channels.withLock { $0.append(udp) }
        guard let port = udp.localAddress?.port else { throw SessionEnded(description: "UDP socket has no port") }
        portBox.withLock { $0 = port }

        // Backchannel (camera pushes JSON lines; we never send).
        backchannelClosed.withLock { $0 = false }
        let backchannel = await connectBackchannel(port: status.backchannelPort)
        backchannelUp.withLock { $0 = backchannel != nil }

        restartRequested.withLock { $0 = false }
        lifecycle.resetStallClock()
        do {
            try await startViewfinder(port: port)
            try await watch(udp: udp, backchannel: backchannel, port: port)
        } catch let error where !(error is CancellationError) && !Task.isCancelled {
            // Best effort: tell the camera to stop streaming to a socket that is going away.
            _ = try? await rest.call("POST", "viewfinder", body: ["viewfinder_active": false], timeout: .seconds(1))
            throw error
        }
    }

    private func connectBackchannel(port: Int) async -> (any Channel)? {
        guard port > 0 else { return nil }
        do {
            let ch = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(1))
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHandler(BanditBackchannelHandler(
                            onEvent: { [weak self] e in self?.handle(event: e) },
                            onClose: { [weak self] in self?.backchannelClosed.withLock { $0 = true } }))
                    }
                }
                .connect(host: endpoint.host, port: port).get()
            channels.withLock { $0.append(ch) }
            return ch
        } catch {
            logger.warning("bandit backchannel \(endpoint.host):\(port): \(error); continuing without notifications")
            return nil
        }
    }

    /// Watches a running viewfinder until something ends the session.
    private func watch(udp: any Channel, backchannel: (any Channel)?, port: Int) async throws {
        let stallNanos = stallTimeout.nanoseconds
        try await withTaskCancellationHandler {
            while !Task.isCancelled {
                // 4 checks a second (each wakes two threads); the limits are seconds.
                try await lifecycle.tick(.milliseconds(250))
                guard udp.isActive else { throw SessionEnded(description: "viewfinder socket closed") }
                if backchannel != nil, backchannelClosed.withLock({ $0 }) {
                    throw SessionEnded(description: "backchannel closed by the camera")
                }
                if restartRequested.withLock({ v -> Bool in
                    let o = v
                    v = false
                    return o
                }) {
                    let s = BanditStatus(try await rest.call("GET", "status", timeout: .seconds(2)))
                    if !(s.viewfinderActive && s.viewfinderStreamingPort == port) {
                        logger.warning("bandit camera stopped the viewfinder; restarting it")
                        restarts.withLock { $0 += 1 }
                        try await startViewfinder(port: port)
                        lifecycle.resetStallClock()
                    }
                }
                let idle = lifecycle.idleNanos
                if idle > stallNanos {
                    logger.warning("bandit viewfinder stalled for \(idle / 1_000_000) ms; restarting it")
                    restarts.withLock { $0 += 1 }
                    _ = try await rest.call("POST", "viewfinder", body: ["viewfinder_active": false], timeout: .seconds(2))
                    try await startViewfinder(port: port)
                    lifecycle.resetStallClock()
                }
            }
        } onCancel: {
            udp.close(promise: nil)
            backchannel?.close(promise: nil)
        }
        throw CancellationError()
    }

    /// `POST viewfinder {active: true, port}`; a 409 (one already running, e.g. our own from before a
    /// reconnect) is answered by stop + start.
    private func startViewfinder(port: Int) async throws {
        let body: [String: Any] = ["viewfinder_active": true, "viewfinder_streaming_port": port]
        do {
            try await rest.call("POST", "viewfinder", body: body)
        } catch CameraControlError.camera(let code, _) where code == 409 || code == 400 || code == 500 || code == 503 {
            try await rest.call("POST", "viewfinder", body: ["viewfinder_active": false])
            try await rest.call("POST", "viewfinder", body: body)
        }
    }

    private func handle(event: BanditEvent) {
        eventLog.withLock {
            $0.append(event)
            if $0.count > Self.eventHistory { $0.removeFirst($0.count - Self.eventHistory) }
        }
        switch event {
        case .recordingStarted:
            recordingBox.withLock { $0 = true }
            transfer.recordingStarted()
            logger.info("bandit: recording started")
        case .recordingStopped(let ids):
            recordingBox.withLock { $0 = false }
            cardListing.invalidate()
            logger.info("bandit: recording stopped \(ids)")
        case .photoCaptured(let ids):
            logger.info("bandit: photo captured \(ids)")
            cardListing.invalidate()
            // Routed here, in the order the camera announced them; only the fetching is a task.
            let forSink = transfer.route(ids)
            if !forSink.isEmpty {
                let rest = self.rest, transfer = self.transfer
                Task { await transfer.fetchForSink(forSink, rest: rest) }
            }
        case .memoryLow(let bytes):
            logger.warning("bandit: memory low, \(bytes) bytes available")
        case .memoryError:
            logger.error("bandit: memory error")
        case .viewfinderStopped:
            logger.info("bandit: viewfinder stopped by the camera")
            restartRequested.withLock { $0 = true }
        case .shuttingDown, .wifiStopped:
            logger.warning("bandit: \(event)")
        default:
            logger.debug("bandit: \(event)")
        }
        eventCallback.withLock { $0 }?(event)
    }

    /// The local address a socket toward the camera uses (a connected UDP socket sends nothing).
    private func localAddress(toward e: BanditEndpoint) async throws -> String {
        let probe = try await DatagramBootstrap(group: group).connect(host: bindHostFor(e.host), port: e.port).get()
        defer { probe.close(promise: nil) }
        guard let ip = probe.localAddress?.ipAddress else {
            throw SessionEnded(description: "no local address toward \(e.host)")
        }
        return ip
    }

    /// "localhost" is the IPv4 loopback here (the emulator listens on 127.0.0.1), so the probe and the
    /// source filter agree with the address the camera's datagrams come from.
    private func bindHostFor(_ host: String) -> String {
        host.lowercased() == "localhost" ? "127.0.0.1" : host
    }

    // MARK: Vendor controls

    /// `GET /api/2/status`.
    public func status() async throws -> BanditStatus {
        BanditStatus(try await rest.call("GET", "status"))
    }

    /// `POST /api/2/record {"recording_active": true}`.
    public func startRecording() async throws {
        try await rest.call("POST", "record", body: ["recording_active": true])
        recordingBox.withLock { $0 = true }
    }

    /// `POST /api/2/record {"recording_active": false}`.
    public func stopRecording() async throws {
        try await rest.call("POST", "record", body: ["recording_active": false])
        recordingBox.withLock { $0 = false }
    }

    /// The current video mode (`settings.video`); throws `notInVideoMode` in image mode.
    public func videoMode() async throws -> BanditVideoMode {
        let s = try await rest.call("GET", "settings")
        guard let v = s["video"] as? [String: Any], let m = BanditVideoMode(v) else { throw BanditControlError.notInVideoMode }
        return m
    }

    /// The video modes the camera offers (`capabilities/recording` → `video`).
    public func videoModes() async throws -> [BanditVideoMode] {
        let c = try await rest.call("GET", "capabilities/recording")
        return ((c["video"] as? [Any]) ?? []).compactMap { ($0 as? [String: Any]).flatMap(BanditVideoMode.init) }
    }

    /// Sets a video mode the camera offers (`POST /api/2/settings/video`); anything else is refused
    /// before a request is sent.
    public func setVideoMode(_ mode: BanditVideoMode) async throws {
        let offered = try await videoModes()
        guard offered.contains(where: { $0.sameCombination(mode) }) else {
            throw BanditControlError.videoModeNotOffered(mode, offered: offered)
        }
        try await rest.call("POST", "settings/video", body: mode.json)
    }

    /// Every camera, scene and video setting as flat `section.key` → text (e.g. `video.resolution` →
    /// `1080p`, `camera.white_balance_mode` → `3000K`), for showing the vendor's own settings.
    public func vendorSettings() async throws -> [String: String] {
        let s = try await rest.call("GET", "settings")
        var out: [String: String] = [:]
        for (section, value) in s {
            guard let dict = value as? [String: Any] else { continue }
            for (k, v) in dict {
                if let text = v as? String {
                    out["\(section).\(k)"] = text
                } else if let data = try? JSONSerialization.data(withJSONObject: v, options: [.fragmentsAllowed, .sortedKeys]) {
                    // Numbers, booleans and lists as their JSON text ("60", "true", "[]").
                    out["\(section).\(k)"] = String(decoding: data, as: UTF8.self)
                }
            }
        }
        return out
    }

    // MARK: Common properties

    public func properties() async throws -> [CameraProperty] {
        let s = try await rest.call("GET", "settings")
        let camera = s["camera"] as? [String: Any] ?? [:]
        guard let wb = camera["white_balance_mode"] as? String else {
            throw CameraControlError.camera(code: 6, message: "settings have no camera.white_balance_mode")
        }
        return [CameraProperty(name: .whiteBalance, value: .text(BanditVocabulary.commonWhiteBalance(wb)),
                               displayText: wb, choices: BanditVocabulary.whiteBalanceChoices, writable: true)]
    }

    public func setProperty(_ name: PropertyName, to value: PropertyValue) async throws {
        switch name {
        case .whiteBalance:
            let text = value.description
            guard let mode = BanditVocabulary.banditWhiteBalance(text) else {
                throw CameraControlError.invalidValue(property: name, value: text, valid: BanditVocabulary.acceptedWhiteBalance)
            }
            try await rest.call("PUT", "settings/camera", body: ["white_balance_mode": mode])
        case .iso, .shutterSpeed, .aperture, .exposureCompensation, .focusMode:
            throw CameraControlError.notSupported("\(name.rawValue) (the TomTom Bandit has no such setting)")
        }
    }

    public func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        throw CameraControlError.notSupported("touch-AF (the TomTom Bandit is a fixed-focus camera)")
    }
}
