public import LiveViewCore
public import Logging
public import NIOCore
import NIOPosix

/// Driver for Panasonic LUMIX cameras (and Leica bodies on the same platform) over `cam.cgi`:
/// access-control handshake, `camcmd&value=recmode`, UDP live view (`startstream`) on a socket bound
/// before the request, a `getstate` keep-alive so the camera does not end the stream, a stall
/// watchdog, and reconnect with back-off.
public final class PanasonicDriver: CameraDriver, StorageReporting, Sendable {
    public let vendor = "panasonic"
    public let stats = DriverStats()
    public let camcgi: PanasonicCamCGI
    public let endpoint: PanasonicEndpoint
    private let group: any EventLoopGroup
    let logger: Logger
    private let cameraIndex: Int
    private let pool = FramePool(capacity: 24, frameBytes: 128 * 1024)
    private let channelBox = Mutex<(any Channel)?>(nil)
    private let offeredBox = Mutex<PanasonicVocabulary.Offered?>(nil)
    private let boundPort = Mutex<Int?>(nil)
    /// Play mode lent to card work (listing, downloads, fetching shots).
    let playMode = CardModeLease()
    /// The card as last listed, and the sink for shots taken on the body.
    let card = PanasonicCardState()
    /// The running fetch of shots taken on the body (beside the session loop, which keeps the
    /// camera's session alive meanwhile).
    let bodyShotPass = Mutex<Task<Void, Never>?>(nil)
    /// The card as the latest keep-alive's `getstate` described it.
    private let lastStorage = Mutex<CameraStorage?>(nil)

    /// No frame for this long: re-issue `startstream`; for twice as long: reconnect.
    public let stallTimeout: Duration = .seconds(2)
    let lifecycle: DriverLifecycle

    public init(endpoint: PanasonicEndpoint, group: any EventLoopGroup, cameraIndex: Int = 0,
                timing: PanasonicTiming = .init(), logger: Logger) {
        self.endpoint = endpoint
        self.group = group
        self.cameraIndex = cameraIndex
        self.logger = logger
        self.camcgi = PanasonicCamCGI(endpoint: endpoint, timing: timing, logger: logger)
        self.lifecycle = DriverLifecycle(name: "\(endpoint)", logger: logger, stats: stats, loop: group.next())
    }

    /// Convenience: from a `panasonic://…` URL; nil when it does not parse.
    public convenience init?(url: String, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        guard let ep = PanasonicEndpoint.parse(url: url) else { return nil }
        self.init(endpoint: ep, group: group, cameraIndex: cameraIndex, logger: logger)
    }

    public var state: CameraState { lifecycle.state }
    /// The UDP port the live-view socket is bound to (nil while not streaming).
    public var liveViewPort: Int? { boundPort.withLock { $0 } }
    /// The last session error, for diagnostics.
    public var lastError: String? { lifecycle.lastError }

    public func start(hub: FrameHub) {
        let publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex)
        lifecycle.start(session: { [self] in try await self.session(publisher: publisher) },
                        afterSession: { [camcgi] in camcgi.invalidate() })
    }

    public func stop() async {
        channelBox.withLock { $0 }?.close(promise: nil)
        await lifecycle.stop()
    }

    /// One session: handshake, record mode, UDP socket, startstream, then keep-alive and watchdog
    /// until the stream stalls for good, the camera disappears, or the driver stops.
    private func session(publisher: FramePublisher) async throws {
        try await camcgi.ensureAccess()
        await takeCardBaseline()
        do {
            try await busyRetrying { try await self.camcgi.call(mode: "camcmd", value: "recmode") }
        } catch CameraControlError.camera(let code, _) where code == PanasonicResult.code("err_critical") {
            // S5II answers err_critical to recmode while switching anyway; startstream decides.
        }
        // A body switching modes answers err_busy to everything but getstate for a second or more
        // (S5II: ~5 s): the menus, the lens and startstream wait until it says `rec`.
        do {
            try await waitForCameraMode(play: false)
        } catch {
            logger.warning("panasonic \(endpoint): \(error); asking for the stream anyway")
        }
        playMode.left()
        await refreshOffered()
        let channel = try await bindLiveView(publisher: publisher)
        channelBox.withLock { $0 = channel }
        defer {
            channel.close(promise: nil)
            channelBox.withLock { $0 = nil }
            boundPort.withLock { $0 = nil }
            bodyShotPass.withLock { $0?.cancel(); $0 = nil }
        }
        let port = channel.localAddress?.port ?? endpoint.liveViewPort
        boundPort.withLock { $0 = port }
        try await camcgi.call(mode: "startstream", value: String(port))
        lifecycle.resetStallClock()
        var lastKeepAlive = ContinuousClock.now
        var keepAliveFailures = 0
        var restartedStream = false
        let stallNanos = stallTimeout.nanoseconds
        do {
            while channel.isActive {
                // 4 checks a second (each wakes two threads); the limits are seconds.
                try await lifecycle.tick(.milliseconds(250))
                if playMode.isOpen {
                    // Card work holds play mode: no frames are expected.
                    lifecycle.resetStallClock()
                    if await playMode.closeIfIdle({ await leavePlayMode(streamPort: port) }) {
                        lifecycle.resetStallClock()
                    }
                }
                if ContinuousClock.now - lastKeepAlive >= camcgi.timing.keepAliveInterval {
                    lastKeepAlive = ContinuousClock.now
                    do {
                        let r = try await camcgi.call(mode: "getstate", timeout: .seconds(2))
                        keepAliveFailures = 0
                        lastStorage.withLock { $0 = Self.storage(r.elements) }
                        let cardInUse = playMode.isOpen
                        if cardInUse && r.elements["cammode"] == "rec" { playMode.cameraLeftPlay() }
                        // Never while the body records a movie (a mode switch then can lock it up).
                        let recording = r.elements["rec"] == "on"
                        if card.observe(remaining: r.elements["remaincapacity"], cardAccess: recording ? nil : r.elements["sd_access"],
                                        cardInUse: cardInUse || recording), !cardInUse, !recording {
                            startBodyShotPass()
                        } else if r.elements["cammode"] == "play" && !cardInUse {
                            logger.info("panasonic \(endpoint): camera left record mode; re-entering it")
                            _ = try? await camcgi.call(mode: "camcmd", value: "recmode", timeout: .seconds(2))
                            _ = try? await camcgi.call(mode: "startstream", value: String(port), timeout: .seconds(2))
                        }
                    } catch CameraControlError.unavailable(let why) {
                        keepAliveFailures += 1
                        if keepAliveFailures >= 2 { throw CameraControlError.unavailable(why) }
                    } catch let e as CameraControlError {
                        // Busy and the like: the camera is there; the watchdog judges the stream.
                        logger.debug("panasonic keep-alive: \(e)")
                    }
                }
                let idle = lifecycle.idleNanos
                if idle > stallNanos && !restartedStream {
                    // The camera may have ended the stream (timeout, mode change): ask again once.
                    logger.info("panasonic \(endpoint): no frame for \(idle / 1_000_000) ms; re-issuing startstream")
                    restartedStream = true
                    try await camcgi.call(mode: "startstream", value: String(port), timeout: .seconds(2))
                } else if idle > 2 * stallNanos {
                    throw CameraControlError.unavailable("live view stalled for \(idle / 1_000_000) ms")
                } else if idle < stallNanos {
                    restartedStream = false
                }
            }
        } catch {
            if Task.isCancelled {
                _ = try? await camcgi.raw(PanasonicCamCGI.target(mode: "stopstream"), timeout: .seconds(1))
                throw CancellationError()
            }
            throw error
        }
        if Task.isCancelled {
            _ = try? await camcgi.raw(PanasonicCamCGI.target(mode: "stopstream"), timeout: .seconds(1))
            throw CancellationError()
        }
    }

    private func bindLiveView(publisher: FramePublisher) async throws -> any Channel {
        let expected = Self.isIPv4Literal(endpoint.host) ? endpoint.host : nil
        let lifecycle = self.lifecycle
        // Loopback cameras (emulators) get a loopback-only socket; real ones send from their own
        // network, so the socket listens on every interface.
        let host = endpoint.isLoopback ? (endpoint.host == "::1" ? "::1" : "127.0.0.1") : "0.0.0.0"
        func bootstrap() -> DatagramBootstrap {
            DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65536))
                .channelOption(.maxMessagesPerRead, value: 8)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHandler(PanasonicLiveViewHandler(
                            publisher: publisher, expectedSource: expected, onFrame: { lifecycle.frameArrived() }))
                    }
                }
        }
        do {
            return try await bootstrap().bind(host: host, port: endpoint.liveViewPort).get()
        } catch where endpoint.liveViewPort != 0 {
            logger.warning("panasonic: UDP port \(endpoint.liveViewPort) unavailable (\(error)); using any free port")
            return try await bootstrap().bind(host: host, port: 0).get()
        }
    }

    /// The card as the camera reports it (`getstate`, panasonic.md §3.3): `sd_memory` set/unset,
    /// `sdcardstatus` write_enable/write_protected, `sd_full` (newer bodies), `sd_access` on while
    /// writing, `remaincapacity` shots; nil when the reply says none of these.
    public var storage: CameraStorage? { lastStorage.withLock { $0 } }

    static func storage(_ e: [String: String]) -> CameraStorage? {
        guard e["sd_memory"] != nil || e["sdcardstatus"] != nil || e["remaincapacity"] != nil else { return nil }
        var s = CameraStorage()
        s.mounted = e["sd_memory"].map { $0 == "set" }
        s.writeProtected = e["sdcardstatus"].map { $0 == "write_protected" }
        s.writing = e["sd_access"].map { $0 == "on" }
        s.remainingShots = e["remaincapacity"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
        if let full = e["sd_full"] {
            s.full = full == "on" || full == "full" || full == "1"
        } else if s.mounted == true, let left = s.remainingShots {
            s.full = left == 0
        }
        return s
    }

    static func isIPv4Literal(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    // MARK: Offered values

    /// Reads what the camera offers (allmenu lists, lens ranges); failures keep the defaults.
    private func refreshOffered() async {
        var offered = PanasonicVocabulary.Offered.defaults
        if let menu = try? await camcgi.call(mode: "getinfo", type: "allmenu", timeout: .seconds(10)) {
            offered.apply(menu: PanasonicXML.menuValues(menu.text))
        }
        if let lens = try? await camcgi.raw(PanasonicCamCGI.target(mode: "getinfo", type: "lens"), timeout: .seconds(3)),
           lens.result == "ok" {
            offered.apply(lens: lens.fields)
        }
        offeredBox.withLock { $0 = offered }
    }

    /// The offered values, read from the camera when not known yet.
    public func offered() async -> PanasonicVocabulary.Offered {
        if let o = offeredBox.withLock({ $0 }) { return o }
        await refreshOffered()
        return offeredBox.withLock { $0 } ?? .defaults
    }

    // MARK: Properties

    public func properties() async throws -> [CameraProperty] {
        var out: [CameraProperty] = []
        var lastError: (any Error)?
        for name in PropertyName.allCases {
            do { out.append(try await property(name)) } catch { lastError = error }
        }
        if out.isEmpty {
            throw lastError ?? CameraControlError.unavailable("camera not connected")
        }
        return out
    }

    /// Reads one property (`getsetting`) with the values the camera offers.
    public func property(_ name: PropertyName) async throws -> CameraProperty {
        let type = PanasonicVocabulary.settingType(name)
        let reply = try await camcgi.call(mode: "getsetting", type: type)
        let raw = reply.settings[type]
        let o = await offered()
        switch name {
        case .whiteBalance:
            return CameraProperty(name: name, value: raw.map { .text(PanasonicVocabulary.commonWhiteBalance($0)) },
                                  displayText: raw, choices: o.whiteBalance.map { .text(PanasonicVocabulary.commonWhiteBalance($0)) },
                                  writable: !o.whiteBalance.isEmpty)
        case .iso:
            return CameraProperty(name: name, value: raw.map(PanasonicVocabulary.commonISO), displayText: raw,
                                  choices: o.iso.map(PanasonicVocabulary.commonISO), writable: !o.iso.isEmpty)
        case .shutterSpeed:
            let choices = o.shutterThirds.compactMap { PanasonicVocabulary.shutterNames[$0] }.map { PropertyValue.text($0) }
            return CameraProperty(name: name, value: raw.flatMap(PanasonicVocabulary.commonShutter).map { .text($0) },
                                  displayText: raw, choices: choices, writable: !choices.isEmpty)
        case .aperture:
            let choices = o.apertureThirds.map { PropertyValue.text(PanasonicVocabulary.apertureNames[$0]) }
            return CameraProperty(name: name, value: raw.flatMap(PanasonicVocabulary.commonAperture).map { .text($0) },
                                  displayText: raw, choices: choices, writable: !choices.isEmpty)
        case .exposureCompensation:
            let choices = o.exposure.compactMap(PanasonicVocabulary.ev).map(PanasonicVocabulary.commonEV)
            return CameraProperty(name: name, value: raw.flatMap(PanasonicVocabulary.ev).map(PanasonicVocabulary.commonEV),
                                  displayText: raw, choices: choices, writable: !choices.isEmpty)
        case .focusMode:
            return CameraProperty(name: name, value: raw.map { .text(PanasonicVocabulary.commonFocusMode($0)) },
                                  displayText: raw, choices: o.focusMode.map { .text(PanasonicVocabulary.commonFocusMode($0)) },
                                  writable: !o.focusMode.isEmpty)
        }
    }

    /// The Panasonic value for a common one, validated against what the camera offers.
    public func panasonicValue(_ name: PropertyName, _ value: PropertyValue) async throws -> String {
        let o = await offered()
        let text = value.description
        func invalid(_ valid: [String]) -> CameraControlError {
            .invalidValue(property: name, value: text, valid: valid)
        }
        switch name {
        case .whiteBalance:
            guard let v = PanasonicVocabulary.panasonicWhiteBalance(text, offered: o.whiteBalance) else {
                throw invalid(o.whiteBalance.map(PanasonicVocabulary.commonWhiteBalance))
            }
            return v
        case .iso:
            let v = PanasonicVocabulary.panasonicISO(value)
            guard o.iso.contains(v) else { throw invalid(o.iso.map { PanasonicVocabulary.commonISO($0).description }) }
            return v
        case .shutterSpeed:
            let valid = o.shutterThirds.compactMap { PanasonicVocabulary.shutterNames[$0] }
            guard let k = PanasonicVocabulary.shutterThirds(text), o.shutterThirds.contains(k) else { throw invalid(valid) }
            return PanasonicVocabulary.shutterValue(thirds: k)
        case .aperture:
            let valid = o.apertureThirds.map { PanasonicVocabulary.apertureNames[$0] }
            guard let k = PanasonicVocabulary.apertureThirds(text), o.apertureThirds.contains(k) else { throw invalid(valid) }
            return PanasonicVocabulary.apertureValue(thirds: k)
        case .exposureCompensation:
            let wanted: Double?
            switch value {
            case .number(let d): wanted = d
            case .text(let t): wanted = Double(t)
            }
            let valid = o.exposure.compactMap(PanasonicVocabulary.ev)
            guard let w = wanted, let i = valid.firstIndex(where: { CommonValues.sameEV($0, w) }) else {
                throw invalid(valid.map(CommonValues.evText))
            }
            return o.exposure.filter { PanasonicVocabulary.ev($0) != nil }[i]
        case .focusMode:
            let v = PanasonicVocabulary.panasonicFocusMode(text)
            guard o.focusMode.contains(v) else { throw invalid(o.focusMode.map(PanasonicVocabulary.commonFocusMode)) }
            return v
        }
    }

    /// A body that answers err_busy (switching modes, writing a shot, or now and then for no
    /// reason it says) is asked again after a pause (`busyRetrying`), never passed on at once.
    public func setProperty(_ name: PropertyName, to value: PropertyValue) async throws {
        let v = try await panasonicValue(name, value)
        try await busyRetrying {
            try await self.camcgi.call(mode: "setsetting", type: PanasonicVocabulary.settingType(name), value: v)
        }
    }

    /// Touch-AF: the point in JPEG pixels → Panasonic's 0..1000 grid, sent as
    /// `camctrl&type=touch&value=X/Y&value2=on` followed by `value2=off` (a tap).
    public func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        let p = AFCoordinateSpace.panasonic.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        let value = "\(Int(p.x.rounded()))/\(Int(p.y.rounded()))"
        try await camcgi.call(mode: "camctrl", type: "touch", value: value, value2: "on")
        _ = try? await camcgi.call(mode: "camctrl", type: "touch", value: value, value2: "off")
    }
}
