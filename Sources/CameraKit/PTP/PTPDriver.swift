import CameraWire
import Foundation
public import LiveViewCore
public import Logging
public import NIOCore

/// What one live-view poll gave.
enum PTPPoll: Sendable {
    /// At least one frame was emitted.
    case frame
    /// The camera said "not yet" (DeviceBusy, AccessDenied, ObjectNotReady): ask again later.
    case busy
    /// Live view dropped out; the vendor session restarted it.
    case restarted
}

/// One vendor's live-view loop and property mapping on an open PTP session.
protocol PTPVendorSession: AnyObject, Sendable {
    var vendor: PTPVendor { get }
    /// True when the camera pushes frames (Fujifilm): the driver does not pace polls.
    var pushed: Bool { get }
    func startLiveView() async throws
    func poll(_ emit: (WireFrame) -> Void) async throws -> PTPPoll
    func properties() async throws -> [CameraProperty]
    func set(_ name: PropertyName, _ value: PropertyValue) async throws
    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws
    func stopLiveView() async
    func close()
    /// Events received on the event socket since the last call.
    func drainEvents() -> [PTPEventRecord]
    /// True while a capture of livegate's own runs (what the camera announces is then its own).
    var isCapturing: Bool { get }
}

/// What every vendor session is opened with: the transport, the body's DeviceInfo, the timeout of
/// one transaction and the logger.
struct PTPLink: Sendable {
    let transport: any PTPTransport
    let info: PTPDeviceInfo
    let timeout: Duration
    let logger: Logger
    /// Where frames the parser gives up on are counted.
    let stats: DriverStats
    /// Where DeviceBusy answers that were waited out are noted (the camera's reason says so).
    var busy: BusyNotes? = nil
}

/// Shared plumbing of the vendor sessions: transactions with camera errors mapped.
protocol PTPVendorBase: AnyObject, Sendable {
    var link: PTPLink { get }
}

extension PTPVendorBase {
    var transport: any PTPTransport { link.transport }
    var info: PTPDeviceInfo { link.info }
    var timeout: Duration { link.timeout }
    var logger: Logger { link.logger }

    func call(_ code: UInt16, _ params: [UInt32] = [], data: [UInt8]? = nil) async throws -> PTPResult {
        try await transport.transact(code, params, dataOut: data, timeout: timeout)
    }

    /// A transaction that must answer OK; any other code becomes `CameraControlError.camera`.
    @discardableResult
    func callOK(_ code: UInt16, _ params: [UInt32] = [], data: [UInt8]? = nil) async throws -> PTPResult {
        let r = try await call(code, params, data: data)
        guard r.ok else { throw Self.cameraError(r.code, op: code) }
        return r
    }

    /// A transaction asked again while the body answers DeviceBusy (0x2019: busy after a capture or
    /// a mode change, ptp.md §8.2), with a back-off from 50 ms growing to 500 ms for at most
    /// `patience`; the last answer otherwise. Only for control and card operations: the live-view
    /// loop paces its own busy answers.
    func callWhenReady(_ code: UInt16, _ params: [UInt32] = [], data: [UInt8]? = nil,
                       patience: Duration = .seconds(8)) async throws -> PTPResult {
        var backoff = BusyBackoff(first: .milliseconds(50), growth: 2, cap: .milliseconds(500), patience: patience)
        while true {
            let r = try await call(code, params, data: data)
            guard r.code == PTPResponse.deviceBusy else { return r }
            link.busy?.note("0x" + String(code, radix: 16, uppercase: true))
            guard try await backoff.wait() else { return r }
        }
    }

    /// `callWhenReady` that must end OK (else `CameraControlError.camera`, DeviceBusy → 503).
    @discardableResult
    func callOKWhenReady(_ code: UInt16, _ params: [UInt32] = [], data: [UInt8]? = nil) async throws -> PTPResult {
        let r = try await callWhenReady(code, params, data: data)
        guard r.ok else { throw Self.cameraError(r.code, op: code) }
        return r
    }

    static func cameraError(_ code: UInt16, op: UInt16) -> CameraControlError {
        .ptp(code, op: op)
    }

    /// Whether the DeviceInfo lists the property (an empty list means "unknown": try it).
    func advertises(property code: UInt16) -> Bool {
        info.properties.isEmpty || info.properties.contains(code)
    }

    func close() { transport.close() }

    func drainEvents() -> [PTPEventRecord] { transport.drainEvents() }

    /// Runs one parser feed (`feed` calls the parser with the event sink), forwarding frames to
    /// `emit`; says whether a frame came out and whether the parser reported damage (the caller
    /// then starts a fresh parser).
    func collectFrames(_ emit: (WireFrame) -> Void, feed: ((WireEvent) -> Void) -> Void) -> (got: Bool, damaged: Bool) {
        var got = false
        var damaged = false
        withoutActuallyEscaping(emit) { emit in
            feed { ev in
                switch ev {
                case .frame(let f):
                    got = true
                    emit(f)
                case .issue(let issue):
                    link.stats.dropped(issue)
                    damaged = true
                }
            }
        }
        return (got, damaged)
    }
}

/// Live view and control for PTP/IP cameras (Nikon, Canon EOS, Sony PTP, Fujifilm): the
/// two-socket PTP/IP handshake (Fujifilm: its own TCP dialect and ports), OpenSession,
/// GetDeviceInfo to pick the vendor, then the vendor's live-view loop paced at ≤ `maxFPS` with busy
/// replies retried, a stall watchdog, and reconnect with back-off ≤ 2 s.
public final class PTPDriver: CameraDriver, Sendable {
    public let stats = DriverStats()
    public let endpoint: PTPEndpoint
    private let group: any EventLoopGroup
    let logger: Logger
    private let cameraIndex: Int
    private let pool = FramePool(capacity: 24, frameBytes: 512 * 1024)
    let lifecycle: DriverLifecycle
    let sessionBox = Mutex<(any PTPVendorSession)?>(nil)
    /// Where pictures shot on the body go (`StillCapturing.setImageSink`).
    let imageSink = Mutex<CameraImageSink?>(nil)
    /// Canon: what one session leaves to the next (`CanonCarryOver`).
    let canonCarryOver = CanonCarryOver()
    /// Nikon: shots a broken connection left in SDRAM (`PTPPendingShots`).
    let nikonPending = PTPPendingShots()
    /// Card files of shots that a broken connection left unsaved (`PTPCardLeftovers`).
    let cardLeftovers = PTPCardLeftovers()
    /// Card paths to object handles, from the last listing (`PTPCard.swift`).
    let cardHandles = Mutex(PTPCardHandles())
    /// The last listing, kept while it is young and nothing announced a change (paging through a
    /// card of thousands of objects lists it once, not once per page).
    let cardListing = CardListing<CameraFile>(lifetime: .seconds(10))
    /// Sony: card work holds the body's contents-transfer mode (`PTPSonyCard.swift`).
    let sonyCard = CardModeLease()
    /// Sony: how sessions are opened (a body that shows its card only in a session opened for
    /// transfer gets such sessions from then on).
    let sonyOpening = Mutex(SonyOpening.plain)
    /// Sony: sessions opened for transfer in a row whose setup failed (two: ordinary sessions again).
    let sonyTransferSetupFailures = Mutex(0)
    private let vendorBox: Mutex<PTPVendor?>
    private let deviceInfoBox = Mutex<PTPDeviceInfo?>(nil)
    private let busyCount = Mutex(0)
    /// Control and card operations answered DeviceBusy and waited out (said in `activity`).
    let busy = BusyNotes()
    public var activity: String? { busy.text }
    private let eventsBox = Mutex<[PTPEventRecord]>([])
    private let sequence = Atomic<UInt64>(0)
    /// Events that change what the card lists: ObjectAdded, ObjectRemoved, StoreAdded,
    /// StoreRemoved, ObjectInfoChanged, StorageInfoChanged.
    static let cardEvents: Set<UInt16> = [0x4002, 0x4003, 0x4004, 0x4005, 0x4007, 0x400C]
    /// Timeout of one transaction / connect step.
    public let requestTimeout: Duration = .seconds(3)
    /// No frame for this long ends the session (the camera keeps answering busy, or stopped pushing).
    public let stallTimeout: Duration = .seconds(3)

    public init(endpoint: PTPEndpoint, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        self.endpoint = endpoint
        self.group = group
        self.cameraIndex = cameraIndex
        self.logger = logger
        self.vendorBox = Mutex(endpoint.vendor)
        self.lifecycle = DriverLifecycle(name: "\(endpoint)", logger: logger, stats: stats, loop: group.next())
    }

    /// Convenience: `ptpip://…` / `fuji://…` text; nil when the URL is not a PTP one.
    public convenience init?(url: String, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        guard let ep = PTPEndpoint.parse(url: url) else { return nil }
        self.init(endpoint: ep, group: group, cameraIndex: cameraIndex, logger: logger)
    }

    /// "nikon", "canon", "sony-ptp", "fuji" once known (or forced by the URL), else "ptp".
    public var vendor: String { vendorBox.withLock { $0 }?.rawValue ?? "ptp" }
    public var state: CameraState { lifecycle.state }
    public var lastError: String? { lifecycle.lastError }
    /// The DeviceInfo of the current/last session.
    public var deviceInfo: PTPDeviceInfo? { deviceInfoBox.withLock { $0 } }
    /// Busy / not-ready replies seen while polling (they are retried, not errors).
    public var busyReplies: Int { busyCount.withLock { $0 } }
    /// The latest events from the PTP/IP event socket (at most 64, oldest first).
    public var recentEvents: [PTPEventRecord] { eventsBox.withLock { $0 } }

    public func start(hub: FrameHub) {
        let publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex)
        lifecycle.start(session: { [self] in try await self.session(publisher: publisher) },
                        afterSession: { [self] in
                            takeSession()?.close()
                            sonyCard.left()  // the body leaves contents transfer with the session
                        })
    }

    public func stop() async {
        await lifecycle.stop()
        if let s = takeSession() {
            await s.stopLiveView()
            s.close()
        }
        // Shots the camera announced that no session could hand on: said loudly.
        let left = canonCarryOver.take()
        let leftInSDRAM = nikonPending.close()
        if let sink = imageSink.withLock({ $0 }) {
            for o in left.onCard {
                await sink(.lost(name: CanonPTPSession.shownName(o), reason: "livegate stopped before fetching it; it is on the card"))
            }
            for t in left.toPC {
                await sink(.lost(name: CanonPTPSession.shownName(t), reason: "livegate stopped before the camera handed it over"))
            }
            for h in leftInSDRAM {
                await sink(.lost(name: shownName(handle: h, name: ""), reason: "livegate stopped before reading it again from the camera's memory"))
            }
            for e in cardLeftovers.close() {
                await sink(.lost(name: e.name, reason: "the connection broke while it was read and livegate stopped before reading it again; it is on the card"))
            }
        }
    }

    private func takeSession() -> (any PTPVendorSession)? {
        sessionBox.withLock { v -> (any PTPVendorSession)? in
            let o = v
            v = nil
            return o
        }
    }

    /// Connects, opens the session and identifies the camera.
    private func open() async throws -> any PTPVendorSession {
        let transport: any PTPTransport
        if endpoint.fujiTransport {
            transport = try await FujiTransport.connect(host: endpoint.host, port: endpoint.port, group: group,
                                                        timeout: requestTimeout)
        } else if endpoint.vendor == nil {
            // A generic URL: standard PTP/IP first; a body that answers its init with something
            // else may speak Fujifilm's dialect, which is tried before giving up.
            do {
                transport = try await PTPIPTransport.connect(host: endpoint.host, port: endpoint.port, group: group,
                                                             timeout: requestTimeout)
            } catch let e as PTPTransportError {
                guard case .protocolError = e else { throw e }
                logger.info("ptp \(endpoint): no PTP/IP init answer (\(e)); trying Fujifilm's dialect")
                transport = try await FujiTransport.connect(host: endpoint.host, port: endpoint.port, group: group,
                                                            timeout: requestTimeout)
            }
        } else {
            transport = try await PTPIPTransport.connect(host: endpoint.host, port: endpoint.port, group: group,
                                                         timeout: requestTimeout)
        }
        do {
            // A Sony that shows its card only in a session opened for transfer: SDIO_OpenSession
            // in mode 2 (remote control with transfer), else the ordinary session.
            var openedForTransfer = false
            if vendorBox.withLock({ $0 }) == .sony, sonyOpening.withLock({ $0 }) == .forTransfer {
                // Refused, or no answer: ordinary sessions from now on (the card stays out of reach).
                let r = try? await transport.transact(PTPOperation.sonySDIOOpenSession, [1, 2], dataOut: nil, timeout: requestTimeout)
                openedForTransfer = r?.ok == true
                if !openedForTransfer {
                    logger.warning("ptp \(endpoint): the camera refused a session for transfer (\(r.map { "0x" + String($0.code, radix: 16) } ?? "no answer")); its card stays out of reach")
                    sonyOpening.withLock { $0 = .transferRefused }
                    if r == nil { throw PTPTransportError.timeout("SDIO_OpenSession was not answered") }
                }
            }
            if !openedForTransfer {
                var r = try await transport.transact(PTPOperation.openSession, [1], dataOut: nil, timeout: requestTimeout)
                var sessionID: UInt32 = 1
                while r.code == PTPResponse.invalidTransactionID && sessionID < 10 {
                    sessionID += 1
                    r = try await transport.transact(PTPOperation.openSession, [sessionID], dataOut: nil, timeout: requestTimeout)
                }
                guard r.ok || r.code == PTPResponse.sessionAlreadyOpened else {
                    throw CameraControlError.ptp(r.code, op: PTPOperation.openSession)
                }
            }
            let di = try await transport.transact(PTPOperation.getDeviceInfo, [], dataOut: nil, timeout: requestTimeout)
            let info = di.ok ? PTPDeviceInfo.parse(di.data) : PTPDeviceInfo()
            deviceInfoBox.withLock { $0 = info }
            guard let vendor = endpoint.vendor ?? PTPVendor.identify(info) else {
                throw CameraControlError.camera(code: 0, message: "unknown PTP vendor: extension \(info.vendorExtensionID), manufacturer '\(info.manufacturer)'")
            }
            vendorBox.withLock { $0 = vendor }
            if endpoint.captureTarget != nil && vendor != .canon {
                logger.warning("ptp \(endpoint): 'target' is for Canon EOS; this camera is \(vendor.rawValue), the option is ignored")
            }
            let link = PTPLink(transport: transport, info: info, timeout: requestTimeout, logger: logger, stats: stats, busy: busy)
            switch vendor {
            case .nikon: return NikonPTPSession(link: link, pending: nikonPending)
            case .sony: return SonyPTPSession(link: link, openedForTransfer: openedForTransfer)
            case .canon:
                return CanonPTPSession(link: link, captureTarget: endpoint.captureTarget, carried: canonCarryOver,
                                       leftovers: cardLeftovers)
            case .fuji:
                return FujiPTPSession(link: link, host: endpoint.host, eventPort: endpoint.eventPort,
                                      liveViewPort: endpoint.liveViewPort, group: group, leftovers: cardLeftovers)
            }
        } catch {
            transport.close()
            throw error
        }
    }

    private func session(publisher: FramePublisher) async throws {
        let s = try await open()
        sessionBox.withLock { $0 = s }
        var frames = 0
        do {
            try await s.startLiveView()
        } catch {
            if let sony = s as? SonyPTPSession, sony.openedForTransfer,
               sonyTransferSetupFailures.withLock({ n -> Int in n += 1; return n }) >= 2 {
                logger.warning("ptp \(endpoint): no setup in a session opened for transfer; back to ordinary sessions (no card)")
                sonyOpening.withLock { $0 = .transferRefused }
            }
            throw error
        }
        let interval = UInt64(1e9 / max(endpoint.maxFPS, 0.1))
        let stallNanos = stallTimeout.nanoseconds
        var lastFrame = MonotonicClock.nanos()
        var nextDue: UInt64 = 0
        var busyDelay: UInt64 = 3_000_000
        while !Task.isCancelled {
            if !s.pushed {
                let now = MonotonicClock.nanos()
                // On the event loop's timer: a sleep per frame through Task.sleep woke three threads.
                if nextDue > now { try await lifecycle.tick(.nanoseconds(Int64(nextDue - now))) }
            }
            if let sony = s as? SonyPTPSession, sony.inTransfer {
                // Contents transfer: no live view is asked for; the mode is left once the card
                // has been idle for the linger.
                if sony.broken.load(ordering: .acquiring) {
                    throw PTPTransportError.closed("the connection broke during card work")
                }
                lastFrame = MonotonicClock.nanos()
                if sonyCard.shouldClose {
                    await sonyCard.closeIfIdle {
                        await sony.leaveContentsTransfer()
                        sonyCard.left()
                    }
                }
                try await Task.sleep(for: .milliseconds(100))
                continue
            }
            let started = MonotonicClock.nanos()
            var got = 0
            let r = try await s.poll { wf in
                publish(wf, publisher)
                got += 1
            }
            let now = MonotonicClock.nanos()
            await transferShotsOnTheBody(s)
            let events = s.drainEvents()
            if !events.isEmpty {
                // An object added, removed or changed, a card put in or taken out: list anew.
                if events.contains(where: { Self.cardEvents.contains($0.code) }) { cardListing.invalidate() }
                eventsBox.withLock { list in
                    list += events
                    if list.count > 64 { list.removeFirst(list.count - 64) }
                }
                for e in events { logger.debug("ptp event 0x\(String(e.code, radix: 16)) \(e.params)") }
            }
            switch r {
            case .frame where got > 0:
                lastFrame = now
                if frames == 0 { sonyTransferSetupFailures.withLock { $0 = 0 } }
                frames += got
                nextDue = started + interval
                busyDelay = 3_000_000
                lifecycle.frameArrived()
            case .frame, .restarted:
                nextDue = now + busyDelay
            case .busy:
                busyCount.withLock { $0 += 1 }
                nextDue = now + busyDelay
                // Short retries while the camera is merely slower than our cap; longer ones once it
                // has been busy for a while (stall, mode change).
                let cap: UInt64 = now - lastFrame > 500_000_000 ? 50_000_000 : 8_000_000
                busyDelay = min(busyDelay * 3 / 2, cap)
            }
            if s is SonyPTPSession, sonyCard.isOpen {
                lastFrame = now  // card work is about to hold contents transfer
            } else if now - lastFrame > stallNanos {
                if let sony = s as? SonyPTPSession, sony.openedForTransfer, frames == 0 {
                    // A session opened for transfer that shows no live view: ordinary sessions again.
                    logger.warning("ptp \(endpoint): no live view in a session opened for transfer; back to ordinary sessions (no card)")
                    sonyOpening.withLock { $0 = .transferRefused }
                }
                throw PTPTransportError.timeout("no live-view frame for \((now - lastFrame) / 1_000_000) ms")
            }
        }
        throw CancellationError()
    }

    /// Publishes a frame; formats without a sequence number get the gateway's own count.
    private func publish(_ wf: WireFrame, _ publisher: FramePublisher) {
        let own = sequence.wrappingAdd(1, ordering: .relaxed).newValue
        publisher.publish(wf) { frame in
            if frame.sequence == nil { frame.sequence = own }
        }
    }

    // MARK: Control

    func current() throws -> any PTPVendorSession {
        guard let s = sessionBox.withLock({ $0 }) else { throw CameraControlError.unavailable("camera not connected") }
        return s
    }

    public func properties() async throws -> [CameraProperty] {
        try await mapTransport { try await self.current().properties() }
    }

    public func setProperty(_ name: PropertyName, to value: PropertyValue) async throws {
        try await mapTransport { try await self.current().set(name, value) }
    }

    public func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        try await mapTransport {
            try await self.current().touch(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        }
    }

    /// Transport failures become `unavailable` for the control API.
    private func mapTransport<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as PTPTransportError {
            throw CameraControlError.unavailable("\(e)")
        }
    }

    /// Waits (bounded) until the driver streams; for tests and the CLI.
    public func waitUntilStreaming(timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state == .streaming { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return state == .streaming
    }
}

extension CameraControlError {
    /// A PTP operation answered with something other than OK.
    static func ptp(_ code: UInt16, op: UInt16) -> CameraControlError {
        .camera(code: Int(code), message: "operation 0x\(String(op, radix: 16, uppercase: true)) answered 0x\(String(code, radix: 16, uppercase: true))")
    }
}
