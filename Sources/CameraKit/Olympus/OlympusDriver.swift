public import CameraWire
public import LiveViewCore
public import Logging
public import NIOCore
import NIOPosix

/// Driver for Olympus / OM System bodies over Wi-Fi (OI.Share dialect, olympus.md §3):
/// `get_connectmode` (an `OPC` answer marks an Air-class body), `get_caminfo`,
/// `switch_cammode?mode=rec&lvqty=…`, a UDP socket bound before `exec_takemisc?com=startliveview`,
/// then RTP frames through `OlympusLiveViewReassembler` into the hub. The stream needs no
/// keep-alive; a camera that sends nothing for `Options.restartAfter` is asked for the live view
/// once more, and after `Options.deadAfter` the session ends and reconnects with back-off.
///
/// Frames: `sequence` = RTP timestamp (frame number, extended over wraps), time base = camera
/// (PTS = the frame number at the live view's rate, `OlympusFrameClock`). AF areas from TLV 2 and
/// the face TLVs. The EXIF orientation (TLV 4) is also kept in `orientation` / `lastMetadata`.
public final class OlympusDriver: CameraDriver, StorageReporting, Sendable {
    public let vendor = "olympus"
    public let stats = DriverStats()
    public let endpoint: OlympusEndpoint
    public let cgi: OlympusCGI
    /// A body busy after a mode switch (503, asked again) says so in the camera's reason.
    public var activity: String? { cgi.busy.text }
    let cardWatch = OlympusCardWatch()
    public let options: Options

    /// Timing of the stall handling.
    public struct Options: Sendable {
        /// No datagram for this long: ask for the live view again (once per silence).
        public var restartAfter: Duration = .milliseconds(1500)
        /// No datagram for this long: the camera is gone; the session ends and reconnects.
        public var deadAfter: Duration = .seconds(3)
        /// Largest pause between reconnect attempts.
        public var maxBackoff: Duration = .seconds(2)
        public init() {}
    }

    private struct Session {
        var channel: (any Channel)?
        var port: Int?
        var connectMode: String?
        var model: String?
        var descs: [String: OlympusPropertyDesc] = [:]
        var lastMetadata: OlympusRTP.Metadata?
    }

    private let group: any EventLoopGroup
    private let logger: Logger
    private let cameraIndex: Int
    private let pool = FramePool(capacity: 24, frameBytes: 128 * 1024)
    let lifecycle: DriverLifecycle
    private let current = Mutex(Session())

    public init(endpoint: OlympusEndpoint, group: any EventLoopGroup, cameraIndex: Int = 0, options: Options = Options(),
                logger: Logger) {
        self.endpoint = endpoint
        self.group = group
        self.cameraIndex = cameraIndex
        self.options = options
        self.logger = logger
        self.cgi = OlympusCGI(endpoint: endpoint)
        self.lifecycle = DriverLifecycle(name: "\(endpoint)", logger: logger, stats: stats, maxBackoff: options.maxBackoff, loop: group.next())
    }

    /// Convenience: from an `olympus://…` URL; nil when it does not parse.
    public convenience init?(url: String, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        guard let ep = OlympusEndpoint.parse(url: url) else { return nil }
        self.init(endpoint: ep, group: group, cameraIndex: cameraIndex, logger: logger)
    }

    public var state: CameraState { lifecycle.state }
    public var lastError: String? { lifecycle.lastError }
    /// The UDP port the live view is received on (nil while not streaming).
    public var liveViewPort: Int? { current.withLock { $0.port } }
    /// What `get_connectmode` answered (`OPC` on the Air; OI.Share bodies: UNCONFIRMED, `private`?).
    public var connectMode: String? { current.withLock { $0.connectMode } }
    /// True for an Open Platform Camera (Air A01): it is switched with `switch_cameramode`.
    public var isOPC: Bool { connectMode == "OPC" }
    /// The model `get_caminfo` named.
    public var model: String? { current.withLock { $0.model } }
    /// The header-extension metadata of the latest frame (exposure, focus, zoom, orientation…).
    public var lastMetadata: OlympusRTP.Metadata? { current.withLock { $0.lastMetadata } }
    /// EXIF orientation of the latest frame (1, 3, 6, 8), from TLV 4.
    public var orientation: Int? { lastMetadata?.rotation.map { Int($0) } }

    /// The card as the live view's TLV 3 (mntmediainfo) and TLV 5 (maxtakenum) describe it
    /// (olympus.md §6.3): bits [1:0] 01 mounted, [2] 1 not full, [3] write-protected, [4] error,
    /// [5] writing; remaining shots capped at 9999 by the camera.
    public var storage: CameraStorage? {
        guard let m = lastMetadata, m.mediaInfo != nil || m.maxTakeNumber != nil else { return nil }
        var s = CameraStorage()
        if let bits = m.mediaInfo {
            s.mounted = bits & 0b11 == 0b01
            s.full = s.mounted == true ? bits & 0b100 == 0 : nil
            s.writeProtected = bits & 0b1000 != 0
            s.error = bits & 0b1_0000 != 0
            s.writing = bits & 0b10_0000 != 0
        }
        s.remainingShots = m.maxTakeNumber.map { Int($0) }
        return s
    }

    public func start(hub: FrameHub) {
        let publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex)
        lifecycle.start(session: { [self] in try await self.session(publisher: publisher) })
    }

    public func stop() async {
        current.withLock { $0.channel }?.close(promise: nil)
        await lifecycle.stop()
        // Files of captures that could not be read yet: said loudly (they are on the card).
        let (unread, sink) = cardWatch.closeUnread()
        for f in unread {
            await sink?(.lost(name: f.name, reason: "livegate stopped before reading it; it is on the card"))
        }
    }

    // MARK: Session

    private func session(publisher: FramePublisher) async throws {
        let modeXML = try await cgi.get("get_connectmode")
        let mode = OlympusXML.element("connectmode", in: modeXML)
        if mode == "OPC" {
            logger.notice("olympus \(endpoint): Open Platform Camera (OPC dialect): using switch_cameramode")
        }
        let model = (try? await cgi.get("get_caminfo")).flatMap { OlympusXML.element("model", in: $0) }
        current.withLock {
            $0.connectMode = mode
            $0.model = model
        }
        if mode == "OPC" {
            try await cgi.get("switch_cameramode", [("mode", "rec")])
        } else {
            try await cgi.get("switch_cammode", [("mode", "rec"), ("lvqty", endpoint.liveViewSize.description)])
        }
        if let list = try? await cgi.get("get_camprop", [("com", "desc"), ("propname", "desclist")]) {
            let descs = OlympusXML.descs(list)
            current.withLock { s in for d in descs { s.descs[d.name] = d } }
        }
        let channel = try await bindLiveView(publisher: publisher)
        let port = channel.localAddress?.port ?? endpoint.liveViewPort
        current.withLock {
            $0.channel = channel
            $0.port = port
        }
        defer {
            channel.close(promise: nil)
            current.withLock {
                $0.channel = nil
                $0.port = nil
            }
        }
        let watch = cardWatch, cardCGI = cgi
        let watcher = Task { await watch.run(cgi: cardCGI) }
        defer { watcher.cancel() }
        lifecycle.resetStallClock()
        let start = [("com", "startliveview"), ("port", String(port))]
        try await cgi.get("exec_takemisc", start)
        let restartNanos = options.restartAfter.nanoseconds, deadNanos = options.deadAfter.nanoseconds
        var restarted = false
        // A quarter of the restart delay, at most 250 ms: each tick wakes two threads.
        let tick = min(.milliseconds(250), max(.milliseconds(100), options.restartAfter / 4))
        do {
            while channel.isActive {
                try await lifecycle.tick(tick)
                let idle = lifecycle.idleNanos
                if idle > deadNanos {
                    throw CameraControlError.unavailable("no live-view datagram for \(idle / 1_000_000) ms")
                } else if idle > restartNanos && !restarted {
                    // The body may have ended the stream (mode dial, menu): ask once more. A camera
                    // that is gone fails this request, which ends the session at once.
                    restarted = true
                    logger.info("olympus \(endpoint): no datagram for \(idle / 1_000_000) ms; re-issuing startliveview")
                    try await cgi.get("exec_takemisc", start, timeout: .seconds(2))
                } else if idle < restartNanos {
                    restarted = false
                }
            }
        } catch {
            if Task.isCancelled {
                _ = try? await cgi.get("exec_takemisc", [("com", "stopliveview")], timeout: .seconds(1))
                throw CancellationError()
            }
            throw error
        }
        if Task.isCancelled {
            _ = try? await cgi.get("exec_takemisc", [("com", "stopliveview")], timeout: .seconds(1))
            throw CancellationError()
        }
    }


    private func bindLiveView(publisher: FramePublisher) async throws -> any Channel {
        let expected = endpoint.isIPv4Literal ? endpoint.host : nil
        let liveViewSize = endpoint.afSpace == .lvqty ? endpoint.liveViewSize : nil
        let fps = endpoint.fps
        let lifecycle = self.lifecycle
        let onDatagram: @Sendable () -> Void = { lifecycle.resetStallClock() }
        let onFrame: @Sendable (OlympusRTP.Metadata) -> Void = { [weak self] m in
            lifecycle.frameArrived()
            self?.current.withLock { $0.lastMetadata = m }
        }
        let host: String
        if endpoint.isLoopback {
            host = endpoint.host == "::1" ? "::1" : "127.0.0.1"
        } else {
            host = await localAddress(toward: endpoint.host, port: endpoint.port) ?? "0.0.0.0"
        }
        func bootstrap() -> DatagramBootstrap {
            DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65536))
                .channelOption(.maxMessagesPerRead, value: 16)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHandler(OlympusLiveViewHandler(
                            publisher: publisher, expectedSource: expected, liveViewSize: liveViewSize, fps: fps,
                            onDatagram: onDatagram, onFrame: onFrame))
                    }
                }
        }
        do {
            return try await bootstrap().bind(host: host, port: endpoint.liveViewPort).get()
        } catch where endpoint.liveViewPort != 0 {
            logger.warning("olympus: UDP port \(endpoint.liveViewPort) unavailable (\(error)); using any free port")
            return try await bootstrap().bind(host: host, port: 0).get()
        }
    }

    /// The local address of the interface that routes to the camera (a connected UDP socket's
    /// own address; nothing is sent), nil when there is no route.
    private func localAddress(toward host: String, port: Int) async -> String? {
        guard let ch = try? await DatagramBootstrap(group: group).connect(host: host, port: port).get() else { return nil }
        let ip = ch.localAddress?.ipAddress
        try? await ch.close()
        return ip
    }

    // MARK: Properties

    /// One property's description, read from the camera now.
    private func desc(_ name: String) async throws -> OlympusPropertyDesc {
        let xml = try await cgi.get("get_camprop", [("com", "desc"), ("propname", name)])
        guard let d = OlympusXML.descs(xml).first(where: { $0.name == name }) else {
            throw CameraControlError.notSupported("\(name): the camera did not describe it")
        }
        current.withLock { $0.descs[name] = d }
        return d
    }

    public func properties() async throws -> [CameraProperty] {
        let list = try await cgi.get("get_camprop", [("com", "desc"), ("propname", "desclist")])
        var descs: [String: OlympusPropertyDesc] = [:]
        for d in OlympusXML.descs(list) { descs[d.name] = d }
        let metadata = current.withLock { s in
            s.descs = descs
            return s.lastMetadata
        }
        var out: [CameraProperty] = []
        for name in PropertyName.allCases {
            if let p = OlympusVocabulary.propertyName(name) {
                if let d = descs[p] { out.append(Self.property(name, d)) }
            } else if let system = metadata?.focusSystem {
                let v = OlympusVocabulary.commonFocusMode(system)
                out.append(CameraProperty(name: .focusMode, value: .text(v), displayText: v, choices: [], writable: false))
            }
        }
        return out
    }

    /// A camera description in the common vocabulary.
    static func property(_ name: PropertyName, _ d: OlympusPropertyDesc) -> CameraProperty {
        func common(_ v: String) -> PropertyValue? {
            switch name {
            case .whiteBalance: return .text(OlympusVocabulary.commonWhiteBalance(v))
            case .iso: return OlympusVocabulary.commonISO(v)
            case .shutterSpeed: return .text(OlympusVocabulary.commonShutter(v))
            case .aperture: return .text(OlympusVocabulary.commonAperture(v))
            case .exposureCompensation: return OlympusVocabulary.commonEV(v)
            case .focusMode: return .text(v)
            }
        }
        return CameraProperty(name: name, value: d.value.flatMap(common), displayText: d.value,
                              choices: d.allowed.compactMap(common), writable: d.writable && !d.allowed.isEmpty)
    }

    /// The camera's value for a common one, validated against the camera's current enum.
    public func cameraValue(_ name: PropertyName, _ value: PropertyValue) async throws -> (property: String, value: String) {
        guard let p = OlympusVocabulary.propertyName(name) else {
            throw CameraControlError.notSupported("\(name.rawValue) is read-only on Olympus bodies (shown from the live view)")
        }
        let d = try await desc(p)
        guard d.writable else { throw CameraControlError.notSupported("\(p) is read-only on this camera") }
        let offered = d.allowed
        let v: String?
        switch name {
        case .whiteBalance: v = OlympusVocabulary.whiteBalanceCode(value.description, offered: offered)
        case .iso: v = OlympusVocabulary.isoValue(value, offered: offered)
        case .shutterSpeed: v = OlympusVocabulary.shutterValue(value.description, offered: offered)
        case .aperture: v = OlympusVocabulary.apertureValue(value.description, offered: offered)
        case .exposureCompensation: v = OlympusVocabulary.evValue(value, offered: offered)
        case .focusMode: v = nil
        }
        guard let v else {
            let valid = Self.property(name, d).choices.map(\.description)
            throw CameraControlError.invalidValue(property: name, value: value.description, valid: valid)
        }
        return (p, v)
    }

    public func setProperty(_ name: PropertyName, to value: PropertyValue) async throws {
        let (p, v) = try await cameraValue(name, value)
        try await cgi.post("set_camprop", [("com", "set"), ("propname", p)], body: OlympusXML.setBody(v))
        current.withLock { $0.descs[p]?.value = v }
    }

    // MARK: Touch-AF

    /// The live-view pixel for a point in the JPEG's pixels (the inverse of the AF translation).
    public func liveViewPoint(x: Double, y: Double, imageWidth: Int, imageHeight: Int) -> (x: Int, y: Int) {
        let w = endpoint.afSpace == .lvqty ? endpoint.liveViewSize.width : max(imageWidth, 1)
        let h = endpoint.afSpace == .lvqty ? endpoint.liveViewSize.height : max(imageHeight, 1)
        let space = AFCoordinateSpace(width: Double(w), height: Double(h))
        let p = space.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        return (min(max(AFCoordinateSpace.roundToPixel(p.x), 0), w - 1), min(max(AFCoordinateSpace.roundToPixel(p.y), 0), h - 1))
    }

    /// Touch-AF: `exec_takemotion?com=assignafframe&point=XXXXxYYYY` in live-view pixels.
    public func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        let p = liveViewPoint(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        let point = OlympusLiveViewSize.pad4(p.x) + "x" + OlympusLiveViewSize.pad4(p.y)
        try await cgi.get("exec_takemotion", [("com", "assignafframe"), ("point", point)])
    }

    /// Clears the touch-AF point (`releaseafframe`).
    public func releaseTouchFocus() async throws {
        try await cgi.get("exec_takemotion", [("com", "releaseafframe")])
    }
}
