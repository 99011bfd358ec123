import Foundation
public import LiveViewCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// Driver for cameras speaking Sony's Camera Remote API (JSON-RPC over HTTP + the liveview packet
/// stream): `startRecMode` when the camera lists it, `startLiveview`, `setLiveviewFrameInfo`,
/// `getEvent` polling, `stopLiveview`, reconnect with back-off when the stream or camera drops.
public final class SonyDriver: CameraDriver, Sendable {
    public let vendor = "sony"
    public let stats = DriverStats()
    public let rpc: SonyRPC
    private let group: any EventLoopGroup
    let logger: Logger
    private let cameraIndex: Int
    private let pool = FramePool(capacity: 24, frameBytes: 256 * 1024)
    let lifecycle: DriverLifecycle
    private let channelBox = Mutex<(any Channel)?>(nil)
    let stills = SonyStills()
    /// Contents Transfer lent to card work, and the card as last listed (`SonyCard.swift`).
    let cardMode = CardModeLease()
    let cardCache = CardListing<SonyCardEntry>()
    /// While card work holds Contents Transfer the live view pauses; while the body switches modes
    /// it answers "not ready" (both waited for): said in the camera's reason, events and slate.
    public var activity: String? {
        if let b = rpc.busy.text { return b }
        return cardMode.inCardMode ? "the camera is showing its card (Contents Transfer); live view resumes after the card work" : nil
    }

    /// `endpoint` is the JSON-RPC camera service, e.g. `http://192.168.122.1:8080/sony/camera`.
    public init(endpoint: HTTPURL, group: any EventLoopGroup, cameraIndex: Int = 0, logger: Logger) {
        self.rpc = SonyRPC(endpoint: endpoint)
        self.group = group
        self.cameraIndex = cameraIndex
        self.logger = logger
        self.lifecycle = DriverLifecycle(name: endpoint.description, logger: logger, stats: stats, loop: group.next())
    }

    public var state: CameraState { lifecycle.state }
    public var lastError: String? { lifecycle.lastError }

    public func start(hub: FrameHub) {
        let publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: cameraIndex)
        lifecycle.start { [self] in try await self.session(publisher: publisher) }
    }

    public func stop() async {
        channelBox.withLock { $0 }?.close(promise: nil)
        await lifecycle.stop()
        if cardMode.inCardMode {
            // Stopped while showing the card: the camera is left shooting, as it was found.
            _ = try? await rpc.call("setCameraFunction", [Self.remoteShooting], timeout: .seconds(2))
            cardMode.left()
        }
        _ = try? await rpc.call("stopLiveview", timeout: .seconds(2))
    }

    /// One session: set up the liveview and read it until it stops.
    private func session(publisher: FramePublisher) async throws {
        var apis: [String] = []
        if let list = try? await rpc.call("getAvailableApiList", timeout: .seconds(3)), let names = list.first as? [String] {
            apis = names
        }
        // Card work holds Contents Transfer (this session began while it ran): the live view waits
        // until it is over and the camera shoots again.
        while cardMode.isOpen && !Task.isCancelled {
            await cardMode.closeIfIdle { await leaveContentsTransfer() }
            try await lifecycle.tick(.milliseconds(200))
        }
        // A camera left in Contents Transfer (by another client, or livegate stopped) shoots again.
        if (try? await rpc.call("getCameraFunction", timeout: .seconds(3)))?.first as? String == Self.contentsTransfer {
            try? await switchFunction(to: Self.remoteShooting)
        }
        if apis.contains("startRecMode") {
            _ = try? await rpc.call("startRecMode", timeout: .seconds(5))
        }
        let result: [Any]
        do {
            // Right after a switch back from Contents Transfer a body answers "Not Available Now".
            result = try await rpc.callWhenReady("startLiveview", cameraNotReady: false)
        } catch CameraControlError.camera(let code, _) where code == 40401 {
            // Not in shooting mode yet (or the API list was missed): enter it and try again.
            _ = try? await rpc.call("startRecMode", timeout: .seconds(5))
            result = try await rpc.call("startLiveview")
        } catch CameraControlError.camera(let code, _) where code == 40402 || code == 7 {
            // Already running: stop and start again (a reconnect after our own drop).
            _ = try? await rpc.call("stopLiveview")
            result = try await rpc.call("startLiveview")
        }
        guard let urlText = result.first as? String, let url = HTTPURL(urlText) else {
            throw CameraControlError.camera(code: 6, message: "startLiveview gave no usable URL: \(result)")
        }
        _ = try? await rpc.call("setLiveviewFrameInfo", [["frameInfo": true]], timeout: .seconds(3))
        // Pictures shot on the body arrive as postviews too: the original, not a 2 MP copy.
        if apis.isEmpty || apis.contains("setPostviewImageSize") {
            _ = try? await rpc.call("setPostviewImageSize", ["Original"], timeout: .seconds(3))
        }
        try await stream(url: url, publisher: publisher)
    }

    private func stream(url: HTTPURL, publisher: FramePublisher) async throws {
        let statusBox = Mutex<Int?>(nil)
        let lifecycle = self.lifecycle
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(3))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.addHTTPClientHandlers()
                    try ch.pipeline.syncOperations.addHandler(SonyLiveviewHandler(
                        publisher: publisher,
                        onStatus: { code in statusBox.withLock { $0 = code } },
                        onFrame: { lifecycle.frameArrived() }))
                }
            }
            .connect(host: url.host, port: url.port).get()
        channelBox.withLock { $0 = channel }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.target)
        head.headers.add(name: "Host", value: "\(url.host):\(url.port)")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        lifecycle.resetStallClock()
        // The stall check runs on the stream's event loop, armed for the moment the stream would
        // have been silent for 2 s (one thread wakes every 2 s while frames flow); the session's
        // loop below polls getEvent every 2 s and follows card work.
        let logger = self.logger
        let cardMode = self.cardMode
        Self.armStallCheck(channel: channel, lifecycle: lifecycle, cardMode: cardMode, logger: logger,
                           after: Self.stallLimit)
        let pauses = ChannelWatchPauses(channel: channel)
        await withTaskCancellationHandler {
            // The live view ends while the card is in use (Contents Transfer): the session stays.
            while (channel.isActive || cardMode.isOpen) && !Task.isCancelled {
                if cardMode.isOpen {
                    try? await lifecycle.tick(.milliseconds(500))
                    lifecycle.resetStallClock()
                    if cardMode.shouldClose {
                        await cardMode.closeIfIdle { await leaveContentsTransfer() }
                        // The live view stopped with the function switch: a new session starts it
                        // (unless more card work came meanwhile).
                        if !cardMode.isOpen {
                            logger.info("sony \(rpc.endpoint): card work done; starting the live view again")
                            channel.close(promise: nil)
                            break
                        }
                    }
                    continue
                }
                // Ends early when the stream closes (the camera went away): the session ends at once.
                await pauses.pause(.seconds(2))
                guard channel.isActive, !Task.isCancelled, !cardMode.isOpen else { continue }
                if !(await liveviewStillOn()), !cardMode.isOpen {
                    logger.warning("sony camera reports liveview stopped; restarting it")
                    channel.close(promise: nil)
                    break
                }
            }
        } onCancel: {
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        channelBox.withLock { $0 = nil }
        if let code = statusBox.withLock({ $0 }), code != 200 {
            throw CameraControlError.camera(code: code, message: "liveview HTTP \(code)")
        }
        if Task.isCancelled { throw CancellationError() }
    }

    /// A stream silent this long is reconnected.
    static let stallLimit: Duration = .seconds(2)

    /// Checks the stream for a stall `after` from now and re-arms itself for the moment the stream
    /// would have been silent for `stallLimit`; ends with the channel.
    private static func armStallCheck(channel: any Channel, lifecycle: DriverLifecycle, cardMode: CardModeLease,
                                      logger: Logger, after delay: Duration) {
        channel.eventLoop.scheduleTask(in: TimeAmount(delay)) {
            guard channel.isActive else { return }
            var next = stallLimit
            if cardMode.isOpen {
                // Card work stops the live view on purpose: not a stall.
                lifecycle.resetStallClock()
            } else {
                let idle = lifecycle.idleNanos, limit = stallLimit.nanoseconds
                if idle > limit {
                    logger.warning("sony liveview stalled for \(idle / 1_000_000) ms; reconnecting")
                    channel.close(promise: nil)
                    return
                }
                next = .nanoseconds(Int64(limit - idle) + 1_000_000)
            }
            armStallCheck(channel: channel, lifecycle: lifecycle, cardMode: cardMode, logger: logger, after: next)
        }
    }

    /// `getEvent [false]`: false only when the camera answers and says liveviewStatus is off (a
    /// failed poll is left to the stall watchdog, since some bodies answer getEvent slowly).
    /// Postview URLs in getEvent index 5 (shots taken on the body, or livegate's own) are handed
    /// to the still fetcher.
    private func liveviewStillOn() async -> Bool {
        guard let r = try? await rpc.call("getEvent", [false], timeout: .seconds(2)) else { return true }
        if r.count > 5, let shots = r[5] as? [[String: Any]] {
            let urls = shots.flatMap { ($0["takePictureUrl"] as? [String]) ?? [] }
            if !urls.isEmpty {
                cardCache.invalidate()  // a shot on the body is a new file on the card
                await stills.announced(urls, client: stillClient)
            }
        }
        guard r.count > 3, let lv = r[3] as? [String: Any], let on = lv["liveviewStatus"] as? Bool else { return true }
        return on
    }

    var stillClient: CameraHTTP {
        var c = CameraHTTP()
        c.maxBodyBytes = SonyStills.maxImageBytes
        return c
    }

    // MARK: Properties

    public func properties() async throws -> [CameraProperty] {
        var out: [CameraProperty] = []
        for name in PropertyName.allCases {
            if let p = try? await property(name) { out.append(p) }
        }
        if out.isEmpty, state != .streaming {
            throw CameraControlError.unavailable("camera not connected")
        }
        return out
    }

    /// Reads one property with its choices from the camera (getAvailable…).
    public func property(_ name: PropertyName) async throws -> CameraProperty {
        switch name {
        case .whiteBalance:
            let r = try await rpc.call("getAvailableWhiteBalance")
            let cur = r.first as? [String: Any]
            let mode = cur?["whiteBalanceMode"] as? String ?? ""
            let temp = (cur?["colorTemperature"] as? NSNumber)?.intValue
            let offered = (r.count > 1 ? r[1] as? [[String: Any]] : nil)?.compactMap { $0["whiteBalanceMode"] as? String } ?? []
            var choices: [PropertyValue] = []
            for m in offered {
                let c = PropertyValue.text(SonyVocabulary.commonWhiteBalance(mode: m, temperature: nil))
                if m != "Color Temperature", !choices.contains(c) { choices.append(c) }
            }
            return CameraProperty(name: name, value: .text(SonyVocabulary.commonWhiteBalance(mode: mode, temperature: temp)),
                                  displayText: mode, choices: choices, writable: !offered.isEmpty)
        case .iso:
            let (cur, list) = try await currentAndList("getAvailableIsoSpeedRate")
            return CameraProperty(name: name, value: cur.map(SonyVocabulary.commonISO), displayText: cur,
                                  choices: list.map(SonyVocabulary.commonISO), writable: !list.isEmpty)
        case .shutterSpeed:
            let (cur, list) = try await currentAndList("getAvailableShutterSpeed")
            return CameraProperty(name: name, value: cur.map { .text($0) }, displayText: cur,
                                  choices: list.map { .text($0) }, writable: !list.isEmpty)
        case .aperture:
            let (cur, list) = try await currentAndList("getAvailableFNumber")
            return CameraProperty(name: name, value: cur.map { .text($0) }, displayText: cur,
                                  choices: list.map { .text($0) }, writable: !list.isEmpty)
        case .focusMode:
            let (cur, list) = try await currentAndList("getAvailableFocusMode")
            return CameraProperty(name: name, value: cur.map { .text(SonyVocabulary.commonFocusMode($0)) }, displayText: cur,
                                  choices: list.map { .text(SonyVocabulary.commonFocusMode($0)) }, writable: !list.isEmpty)
        case .exposureCompensation:
            let r = try await rpc.call("getAvailableExposureCompensation")
            let ints = r.compactMap { ($0 as? NSNumber)?.intValue }
            guard ints.count >= 4 else { throw CameraControlError.camera(code: 6, message: "getAvailableExposureCompensation: \(r)") }
            let choices = SonyVocabulary.evChoices(min: ints[2], max: ints[1], stepIndex: ints[3])
            let ev = SonyVocabulary.ev(index: ints[0], stepIndex: ints[3])
            return CameraProperty(name: name, value: .number((ev * 10).rounded() / 10), displayText: CommonValues.evText(ev),
                                  choices: choices.map { .number(($0.ev * 10).rounded() / 10) }, writable: !choices.isEmpty)
        }
    }

    private func currentAndList(_ method: String) async throws -> (String?, [String]) {
        let r = try await rpc.call(method)
        let cur = r.first as? String
        let list = (r.count > 1 ? r[1] as? [String] : nil) ?? []
        return (cur, list)
    }

    public func setProperty(_ name: PropertyName, to value: PropertyValue) async throws {
        let text = value.description
        func invalid(_ valid: [String]) -> CameraControlError {
            .invalidValue(property: name, value: text, valid: valid)
        }
        switch name {
        case .whiteBalance:
            let r = try await rpc.call("getAvailableWhiteBalance")
            let entries = (r.count > 1 ? r[1] as? [[String: Any]] : nil) ?? []
            let offered = entries.compactMap { $0["whiteBalanceMode"] as? String }
            // A colour temperature the camera's range does not hold is refused here (400 naming
            // the range), not sent for the camera to refuse.
            let range = entries.first { $0["whiteBalanceMode"] as? String == "Color Temperature" }?["colorTemperatureRange"]
                as? [NSNumber]
            if let k = SonyVocabulary.kelvin(text), let range, range.count >= 2 {
                let hi = max(range[0].intValue, range[1].intValue), lo = min(range[0].intValue, range[1].intValue)
                let step = range.count > 2 ? max(1, range[2].intValue) : 1
                guard (lo...hi).contains(k), (k - lo) % step == 0 else {
                    throw invalid(["\(lo)K…\(hi)K in steps of \(step)K"])
                }
            }
            guard let params = SonyVocabulary.whiteBalanceParams(text, offered: offered) else {
                var valid: [String] = []
                for m in offered where m != "Color Temperature" {
                    let c = SonyVocabulary.commonWhiteBalance(mode: m, temperature: nil)
                    if !valid.contains(c) { valid.append(c) }
                }
                if offered.contains("Color Temperature") { valid.append("<kelvin>K") }
                throw invalid(valid)
            }
            _ = try await rpc.callWhenReady("setWhiteBalance", params)
        case .iso:
            let (_, list) = try await currentAndList("getAvailableIsoSpeedRate")
            let sony = SonyVocabulary.sonyISO(value)
            guard list.contains(sony) else { throw invalid(list.map { SonyVocabulary.commonISO($0).description }) }
            _ = try await rpc.callWhenReady("setIsoSpeedRate", [sony])
        case .shutterSpeed:
            let (_, list) = try await currentAndList("getAvailableShutterSpeed")
            guard list.contains(text) else { throw invalid(list) }
            _ = try await rpc.callWhenReady("setShutterSpeed", [text])
        case .aperture:
            let (_, list) = try await currentAndList("getAvailableFNumber")
            guard let match = list.first(where: { $0 == text || Double($0) == Double(text) }) else { throw invalid(list) }
            _ = try await rpc.callWhenReady("setFNumber", [match])
        case .focusMode:
            let (_, list) = try await currentAndList("getAvailableFocusMode")
            let sony = SonyVocabulary.sonyFocusMode(text)
            guard list.contains(sony) else { throw invalid(list.map(SonyVocabulary.commonFocusMode)) }
            _ = try await rpc.callWhenReady("setFocusMode", [sony])
        case .exposureCompensation:
            let r = try await rpc.call("getAvailableExposureCompensation")
            let ints = r.compactMap { ($0 as? NSNumber)?.intValue }
            guard ints.count >= 4 else { throw CameraControlError.camera(code: 6, message: "getAvailableExposureCompensation: \(r)") }
            let choices = SonyVocabulary.evChoices(min: ints[2], max: ints[1], stepIndex: ints[3])
            let wanted: Double?
            switch value {
            case .number(let d): wanted = d
            case .text(let t): wanted = Double(t)
            }
            guard let w = wanted, let hit = choices.first(where: { CommonValues.sameEV($0.ev, w) }) else {
                throw invalid(choices.map { CommonValues.evText($0.ev) })
            }
            _ = try await rpc.callWhenReady("setExposureCompensation", [hit.index])
        }
    }

    public func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        // setTouchAFPosition takes percent (0…100) of the live view, origin top-left.
        let space = AFCoordinateSpace(width: 100, height: 100)
        let p = space.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        _ = try await rpc.callWhenReady("setTouchAFPosition", [p.x, p.y], timeout: .seconds(10))
    }
}
