import CameraWire
import LiveViewCore
import Logging
import NIOCore

/// Fujifilm X over Wi-Fi (ptp.md §2.4): ClientState 0xDF01 = 5, AppVersion 0xDF24 read and written
/// back, InitiateOpenCapture 0x101C, then the event and live-view ports; the camera pushes
/// `u32 len + 14-byte header + JPEG` frames on the live-view port. Properties as
/// `PTPFujiVocabulary.swift` lays them out; the focus point (`FujiFocusPoint`) from the state list
/// 0xD212, read at most twice a second, is every frame's AF area.
final class FujiPTPSession: PTPVendorBase, PTPVendorSession {
    let link: PTPLink
    let vendor = PTPVendor.fuji
    let pushed = true
    let host: String
    let eventPort: Int
    let liveViewPort: Int
    let group: any EventLoopGroup
    private let parser = Mutex(FujiLiveViewParser())
    private let sockets = Mutex<[PTPSocket]>([])
    private let liveView = Mutex<PTPSocket?>(nil)
    private let captureTID = Mutex<UInt32>(0)
    /// When the state list was last read, and whether the body answers it.
    let stateCheck = Mutex<(last: ContinuousClock.Instant?, works: Bool, capturing: Int)>((nil, true, 0))
    /// Shots on the body: the card's handles as last seen (nil before the first look), looked at
    /// every 2 s (`PTPCapture.swift`).
    let knownHandles = Mutex<Set<UInt32>?>(nil)
    let cardWatch = PTPOncePer(.seconds(2))
    /// The focus point's range maximum (its grid), when the body gives one.
    private let focusMaximum = Mutex<UInt32?>(nil)
    /// Touch-AF requests so far (a state list asked for before the latest one is not applied).
    private let touchCount = Mutex(0)
    static let clientState: UInt16 = 0xDF01
    static let appVersion: UInt16 = 0xDF24

    /// Card files a broken connection left unsaved (the driver's, kept across sessions).
    let leftovers: PTPCardLeftovers

    init(link: PTPLink, host: String,
         eventPort: Int, liveViewPort: Int, group: any EventLoopGroup, leftovers: PTPCardLeftovers = PTPCardLeftovers()) {
        self.leftovers = leftovers
        self.host = host
        self.eventPort = eventPort
        self.liveViewPort = liveViewPort
        self.group = group
        self.link = link
    }

    func startLiveView() async throws {
        var state: [UInt8] = []
        state.ptpPutLE16(5)
        // A body busy right after connecting answers DeviceBusy: waited out.
        try await callOKWhenReady(PTPOperation.setDevicePropValue, [UInt32(Self.clientState)], data: state)
        let v = try await call(PTPOperation.getDevicePropValue, [UInt32(Self.appVersion)])
        if v.ok, v.data.count >= 4 {
            _ = try await callWhenReady(PTPOperation.setDevicePropValue, [UInt32(Self.appVersion)], data: Array(v.data.prefix(4)))
        }
        let r = try await callOK(PTPOperation.initiateOpenCapture, [0, 0])
        captureTID.withLock { $0 = r.transactionID }
        if let d = try await desc(FujiFocusPoint.property), case .range(_, let hi, _) = d.form {
            focusMaximum.withLock { $0 = UInt32(truncatingIfNeeded: hi) }
        }
        stateCheck.withLock { $0.last = nil; $0.works = true }
        await readState()
        let evt = try await PTPSocket.connect(host: host, port: eventPort, group: group, mode: .lengthPrefixed,
                                              name: "fuji event", timeout: timeout)
        sockets.withLock { $0.append(evt) }
        let lv = try await PTPSocket.connect(host: host, port: liveViewPort, group: group, mode: .lengthPrefixed,
                                             name: "fuji live view", timeout: timeout)
        sockets.withLock { $0.append(lv) }
        liveView.withLock { $0 = lv }
    }

    func poll(_ emit: (WireFrame) -> Void) async throws -> PTPPoll {
        guard let lv = liveView.withLock({ $0 }) else { throw PTPTransportError.closed("fuji live view not started") }
        guard case .message(let m) = try await lv.receive(timeout: timeout) else { return .busy }
        let got = parser.withLock { p in
            let result = collectFrames(emit) { p.feed(m, $0) }
            if result.damaged {
                let focus = p.focusPoint
                p = FujiLiveViewParser()
                p.focusPoint = focus
            }
            return result.got
        }
        await readState()
        return got ? .frame : .busy
    }

    /// Reads the state list (0xD212) for the focus point, at most twice a second and never while a
    /// capture holds the command connection (frames would wait behind its download); the frames
    /// carry the point as their AF area until it changes. The list is optional: a body that does
    /// not answer it, or fails it, is not asked again this session, and live view goes on.
    private func readState() async {
        let now = ContinuousClock.now
        let due = stateCheck.withLock { s -> Bool in
            guard s.works, s.capturing == 0 else { return false }
            if let last = s.last, now - last < .milliseconds(500) { return false }
            s.last = now
            return true
        }
        guard due else { return }
        let touches = touchCount.withLock { $0 }
        let answer = try? await call(PTPOperation.getDevicePropValue, [UInt32(FujiStateList.property)])
        guard let r = answer, r.ok else {
            stateCheck.withLock { $0.works = false }
            logger.debug("fuji: no state list (0xD212: \(answer.map { "0x" + String($0.code, radix: 16) } ?? "no answer")): no focus point")
            return
        }
        guard let v = FujiStateList.parse(r.data).first(where: { $0.code == FujiFocusPoint.property })?.value else { return }
        let point = FujiFocusPoint(value: v, maximum: focusMaximum.withLock { $0 })
        // A touch since the list was asked for wins (the answer may predate it).
        guard touchCount.withLock({ $0 }) == touches else { return }
        parser.withLock { $0.focusPoint = point }
    }

    // MARK: Properties (`PTPFujiVocabulary.swift` has the table)

    /// The description of `code`, nil when the body has no such property.
    private func desc(_ code: UInt16) async throws -> PTPPropDesc? {
        guard advertises(property: code) else { return nil }
        let r = try await call(PTPOperation.getDevicePropDesc, [UInt32(code)])
        guard r.ok else { return nil }
        // A description this driver cannot read is a property it does not offer (these codes are
        // not documented), never a failed live view.
        return try? PTPPropDesc.parse(r.data)
    }

    /// The mapping the body answers for `name` (the Wi-Fi code before the USB one), with its
    /// description; white balance in the body's own numbering.
    private func lookup(_ name: PropertyName) async throws -> (PTPPropertyMapping, PTPPropDesc)? {
        for m in PTPVocabulary.fuji where m.name == name {
            guard let d = try await desc(m.code) else { continue }
            if name == .whiteBalance {
                return (PTPVocabulary.fujiWhiteBalanceMapping(.init(offered: d.offered)), d)
            }
            return (m, d)
        }
        return nil
    }

    func properties() async throws -> [CameraProperty] {
        var out: [CameraProperty] = []
        for name in PropertyName.allCases {
            guard let (m, d) = try await lookup(name) else { continue }
            var p = PTPVocabulary.property(m, current: d.current, offered: d.offered, writable: d.writable)
            if name == .whiteBalance { try await addKelvin(to: &p, whiteBalance: d) }
            out.append(p)
        }
        return out
    }

    /// White balance on a colour temperature reads as "5500K"; the temperatures the body offers
    /// are choices (a range at 100 K steps or its own step, whichever is coarser).
    private func addKelvin(to p: inout CameraProperty, whiteBalance d: PTPPropDesc) async throws {
        let mode = PTPVocabulary.FujiWhiteBalanceTable(offered: d.offered).kelvinMode
        guard d.offered.contains(mode) || d.current == mode, let k = try await desc(PTPVocabulary.fujiKelvin) else { return }
        if d.current == mode, let t = k.current {
            p.value = .text("\(t)K")
            p.displayText = "\(t)K"
        }
        let temperatures = PTPVocabulary.fujiKelvinChoices(k.form)
        p.choices += temperatures.map { .text("\($0)K") }
    }

    func set(_ name: PropertyName, _ value: PropertyValue) async throws {
        guard let (m, d) = try await lookup(name) else {
            throw CameraControlError.notSupported("\(name.rawValue) on this Fujifilm")
        }
        if name == .whiteBalance, let k = SonyVocabulary.kelvin(value.description) {
            return try await setKelvin(k, whiteBalance: d)
        }
        let v = try PTPVocabulary.resolve(m, value, offered: d.offered)
        guard d.writable else { throw CameraControlError.notSupported("\(name.rawValue) is read-only now") }
        let r = try await callWhenReady(PTPOperation.setDevicePropValue, [UInt32(m.code)], data: PTPDataType.encode(v, type: d.dataType))
        if r.ok { return }
        // Wi-Fi bodies change the exposure values only by steps: they refuse the write itself.
        let refusal = r.code == PTPResponse.accessDenied || r.code == PTPResponse.operationNotSupported
        guard refusal, let op = Self.stepOperation[m.code], info.operations.isEmpty || info.operations.contains(op) else {
            throw Self.cameraError(r.code, op: PTPOperation.setDevicePropValue)
        }
        logger.debug("fuji: SetDevicePropValue 0x\(String(m.code, radix: 16)) answered 0x\(String(r.code, radix: 16)); stepping")
        try await step(m, to: v, from: d, operation: op)
    }

    /// Colour temperature: white balance to the body's Kelvin mode, then 0xD017 to the value,
    /// after checking the body offers both.
    private func setKelvin(_ kelvin: Int, whiteBalance d: PTPPropDesc) async throws {
        let mode = PTPVocabulary.FujiWhiteBalanceTable(offered: d.offered).kelvinMode
        guard d.offered.contains(mode), let k = try await desc(PTPVocabulary.fujiKelvin) else {
            throw CameraControlError.invalidValue(property: .whiteBalance, value: "\(kelvin)K",
                                                  valid: ["(this body offers no colour temperature)"])
        }
        let t = Int64(kelvin)
        switch k.form {
        case .enumeration(let v) where !v.contains(t):
            throw CameraControlError.invalidValue(property: .whiteBalance, value: "\(kelvin)K", valid: v.map { "\($0)K" })
        case .range(let lo, let hi, let step) where t < lo || t > hi || (step > 0 && (t &- lo) % step != 0):
            throw CameraControlError.invalidValue(property: .whiteBalance, value: "\(kelvin)K",
                                                  valid: ["\(lo)K…\(hi)K in steps of \(max(step, 1))K"])
        default: break
        }
        if d.current != mode {
            try await callOKWhenReady(PTPOperation.setDevicePropValue, [0x5005], data: PTPDataType.encode(mode, type: d.dataType))
        }
        try await callOKWhenReady(PTPOperation.setDevicePropValue, [UInt32(PTPVocabulary.fujiKelvin)],
                         data: PTPDataType.encode(t, type: k.dataType))
    }

    /// Step operations of the Wi-Fi dialect, per property code.
    static let stepOperation: [UInt16: UInt16] = [0xD240: 0x902C, 0x500D: 0x902C, 0x5007: 0x902D, 0x5010: 0x902E]

    /// Moves an exposure value to `target` one step at a time, reading it back after each step;
    /// fails when a step does not move it or it passes the target (a value the steps skip).
    private func step(_ m: PTPPropertyMapping, to target: Int64, from d: PTPPropDesc, operation op: UInt16) async throws {
        guard let goal = PTPVocabulary.fujiMagnitude(code: m.code, target) else {
            throw CameraControlError.refused("\(m.name.rawValue): the body only steps, and cannot step to this value")
        }
        var current = d.current
        var lastSide: Bool?
        var lastDistance = Double.infinity
        for _ in 0...(d.offered.count + 1) {
            guard let c = current else { break }
            if c == target { return }
            guard let now = PTPVocabulary.fujiMagnitude(code: m.code, c) else {
                throw CameraControlError.refused("\(m.name.rawValue) is set on the body (\(m.toCommon(c)?.description ?? "\(c)"))")
            }
            let below = now < goal
            // Passed the target (a value the steps skip), or a step went the wrong way (the
            // direction of a step is UNCONFIRMED for some operations): stop where it is.
            let distance = abs(now - goal)
            if let lastSide, lastSide != below || !(distance < lastDistance) { break }
            lastSide = below
            lastDistance = distance
            // Shutter: 1 = faster (a shorter time); aperture and exposure compensation: 1 = larger.
            let param: UInt32 = m.code == 0x5007 || m.code == 0x5010 ? (below ? 1 : 0) : (below ? 0 : 1)
            try await callOK(op, [param])
            let r = try await callOK(PTPOperation.getDevicePropValue, [UInt32(m.code)])
            var reader = PTPReader(r.data)
            let next = try reader.value(type: d.dataType)
            guard next != c else { throw CameraControlError.refused("\(m.name.rawValue): the body did not take the step") }
            current = next
        }
        throw CameraControlError.refused("\(m.name.rawValue): stepping did not reach \(m.toCommon(target)?.description ?? "\(target)")")
    }

    /// Touch-AF: the focus point (0xD17C) set to the grid cell under the touch, keeping the bits
    /// above the point as the body reports them. UNCONFIRMED: how bodies take a new point is not
    /// documented; SetDevicePropValue is what the property's GetSet flag offers.
    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        guard let d = try await desc(FujiFocusPoint.property) else {
            throw CameraControlError.notSupported("touch-AF on this Fujifilm (it reports no focus point)")
        }
        guard d.writable else { throw CameraControlError.notSupported("touch-AF: the focus point is read-only on this body") }
        let maximum = focusMaximum.withLock { $0 }
        let point = FujiFocusPoint(pixelX: x, pixelY: y, imageWidth: imageWidth, imageHeight: imageHeight, maximum: maximum,
                                   upperBits: UInt32(truncatingIfNeeded: d.current ?? 0))
        touchCount.withLock { $0 += 1 }
        try await callOKWhenReady(PTPOperation.setDevicePropValue, [UInt32(FujiFocusPoint.property)],
                         data: PTPDataType.encode(Int64(point.value), type: d.dataType))
        parser.withLock { $0.focusPoint = point }
    }

    func stopLiveView() async {
        _ = try? await call(PTPOperation.terminateOpenCapture, [captureTID.withLock { $0 }])
        _ = try? await call(PTPOperation.closeSession)
    }

    func close() {
        for s in sockets.withLock({ $0 }) { s.close() }
        transport.close()
    }
}
