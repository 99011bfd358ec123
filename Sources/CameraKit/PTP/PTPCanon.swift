import CameraWire
import LiveViewCore
import Logging

/// Canon EOS (ptp.md §2.2, §3): SetRemoteMode(1), SetEventMode(1), GetEvent until the EVF output
/// property 0xD1B0 is known, EVFMode 0xD1B1 = 1 and EVFOutputDevice 0xD1B0 = 2 (PC) through
/// SetDevicePropValueEx 0x9110; per frame one GetEvent (property changes, FocusInfoEx AF points)
/// then GetViewFinderData 0x9153; 0xA102 / 0x2019 → retry. Properties are the 0xD1xx codes, read
/// from GetEvent records and written with SetDevicePropValueEx. With `target=pc`, CaptureDestination
/// 0xD11C is set to the PC once live view runs (and put back when the session ends): shots then come
/// as RequestObjectTransfer records and are read with GetPartialObject (`PTPCapture.swift`).
final class CanonPTPSession: PTPVendorBase, PTPVendorSession {
    let link: PTPLink
    let captureTarget: PTPCaptureTarget?
    /// What outlives this session: the body's own destination, shots not handed on yet.
    let carried: CanonCarryOver

    /// Card files a broken connection left unsaved (the driver's, kept across sessions).
    let leftovers: PTPCardLeftovers

    init(link: PTPLink, captureTarget: PTPCaptureTarget? = nil, carried: CanonCarryOver = CanonCarryOver(),
         leftovers: PTPCardLeftovers = PTPCardLeftovers()) {
        self.link = link
        self.captureTarget = captureTarget
        self.carried = carried
        self.leftovers = leftovers
    }
    let vendor = PTPVendor.canon
    let pushed = false
    private let parser = Mutex(CanonEVFParser())
    private let cache = Mutex(CanonEventCache())
    /// Captures of ours in progress (`PTPCapture.swift`).
    let capturing = Mutex(0)
    private let lastKeepAlive = Mutex(ContinuousClock.now)
    static let evfOutputDevice: UInt16 = 0xD1B0
    static let evfMode: UInt16 = 0xD1B1
    static let focusInfoEx: UInt32 = 0xD1D3
    static let captureDestination: UInt16 = 0xD11C
    static let availableShots: UInt16 = 0xD11B
    /// CaptureDestination values (ptp.md §8.3).
    static let destinationCard: UInt32 = 2, destinationPC: UInt32 = 4
    /// True once this session made the PC the destination (the body's own is put back at stop).
    private let routedToPC = Mutex(false)
    /// Handles of shots for the PC this session has taken on (a repeated announcement is ignored).
    private let claimed = Mutex<Set<UInt32>>([])
    /// Transfers running in tasks of their own (a stop waits for them).
    let transfersInFlight = Mutex(0)

    /// GetEvent once; folds its records into the cache. Returns the number of records.
    @discardableResult
    func getEvent() async throws -> Int {
        let r = try await callOK(PTPOperation.canonGetEvent)
        return ingest(r.data)
    }

    func ingest(_ d: [UInt8]) -> Int { cache.withLock { $0.ingest(d) } }

    /// Takes the shots announced since the last call, and those an earlier session left; a shot
    /// for the PC already taken on by this session is not taken again.
    func takeAnnounced() -> CanonAnnounced {
        var a = carried.take()
        a.append(takeFromCache())
        a.toPC = claimed.withLock { seen in a.toPC.filter { seen.insert($0.handle).inserted } }
        return a
    }

    private func takeFromCache() -> CanonAnnounced {
        cache.withLock { c in defer { c.announced = CanonAnnounced() }; return c.announced }
    }

    /// The session ends: what was announced and not taken is left for the next one.
    func close() {
        carried.keep(takeFromCache())
        transport.close()
    }

    /// SetDevicePropValueEx, asked again while the body answers DeviceBusy (at most `patience`: a
    /// body busy after connecting or a shot; one in movie mode stays busy for the EVF settings).
    func setEx(_ code: UInt16, _ value: UInt32, patience: Duration = .seconds(3)) async throws -> PTPResult {
        var data: [UInt8] = []
        data.ptpPutLE32(12); data.ptpPutLE32(UInt32(code)); data.ptpPutLE32(value)
        return try await callWhenReady(PTPOperation.canonSetDevicePropValueEx, data: data, patience: patience)
    }

    func startLiveView() async throws {
        try await callOK(PTPOperation.canonSetRemoteMode, [1])
        try await callOK(PTPOperation.canonSetEventMode, [1])
        for _ in 0..<20 {
            if try await getEvent() == 0 { break }
        }
        for _ in 0..<10 where cache.withLock({ $0.values[Self.evfOutputDevice] }) == nil {
            try await Task.sleep(for: .milliseconds(50))
            try await getEvent()
        }
        if let mode = cache.withLock({ $0.values[Self.evfMode] }), mode != 1 {
            // DeviceBusy here is fine (movie mode).
            _ = try await setEx(Self.evfMode, 1)
        }
        let out = cache.withLock { $0.values[Self.evfOutputDevice] } ?? 0
        if out & ~1 == 0 {
            let r = try await setEx(Self.evfOutputDevice, 2)
            guard r.ok || r.code == PTPResponse.deviceBusy else {
                throw Self.cameraError(r.code, op: PTPOperation.canonSetDevicePropValueEx)
            }
        }
        if captureTarget == .pc { try await routeShotsToPC() }
        lastKeepAlive.withLock { $0 = ContinuousClock.now }
    }

    /// CaptureDestination = PC (4), then PCHDDCapacity 0x911A (0x0FFFFFFF free clusters of 4096
    /// bytes, as libgphoto2 announces) and GetEvent until AvailableShots 0xD11B is above 0 (at most
    /// 3 s: a body that never reports it still shoots). A body that refuses the PC target keeps its
    /// card: logged, live view goes on.
    private func routeShotsToPC() async throws {
        if cache.withLock({ $0.values[Self.captureDestination] }) == nil,
           try await call(PTPOperation.canonRequestDevicePropValue, [UInt32(Self.captureDestination)]).ok {
            try await getEvent()
        }
        // The body's own value, once: a later session finds the PC there (livegate's doing).
        if let before = cache.withLock({ $0.values[Self.captureDestination] }), before != Int64(Self.destinationPC) {
            carried.keepDestination(UInt32(truncatingIfNeeded: before))
        }
        let r = try await setEx(Self.captureDestination, Self.destinationPC)
        guard r.ok else {
            logger.warning("canon: the camera refused CaptureDestination PC (\(CameraControlError.ptp(r.code, op: PTPOperation.canonSetDevicePropValueEx))); shots stay on the card")
            return
        }
        routedToPC.withLock { $0 = true }
        // The count the camera gives once it knows the PC's room (an earlier value says nothing).
        cache.withLock { $0.values[Self.availableShots] = nil }
        _ = try await call(PTPOperation.canonPCHDDCapacity, [0x0FFF_FFFF, 0x1000, 1])
        let by = ContinuousClock.now + .seconds(3)
        while (cache.withLock { $0.values[Self.availableShots] } ?? 0) <= 0, ContinuousClock.now < by {
            try await Task.sleep(for: .milliseconds(100))
            try await getEvent()
        }
    }

    func poll(_ emit: (WireFrame) -> Void) async throws -> PTPPoll {
        try await getEvent()
        let keepAliveDue = lastKeepAlive.withLock { last in
            guard ContinuousClock.now - last > .seconds(20) else { return false }
            last = ContinuousClock.now
            return true
        }
        if keepAliveDue { _ = try await call(PTPOperation.canonKeepDeviceOn) }
        let r = try await call(PTPOperation.canonGetViewFinderData, [0x0020_0000, 0, 0])
        switch r.code {
        case PTPResponse.ok:
            let focus = cache.withLock { $0.focus }
            let got = parser.withLock { p in
                p.focusInfo = focus
                let result = collectFrames(emit) { p.feed(r.data, $0) }
                if result.damaged {
                    p = CanonEVFParser()
                    p.focusInfo = focus
                }
                return result.got
            }
            return got ? .frame : .busy
        case PTPResponse.canonObjectNotReady, PTPResponse.deviceBusy:
            return .busy
        default:
            throw Self.cameraError(r.code, op: PTPOperation.canonGetViewFinderData)
        }
    }

    func properties() async throws -> [CameraProperty] {
        try await getEvent()
        let c = cache.withLock { $0 }
        var out: [CameraProperty] = []
        for m in PTPVocabulary.canon {
            let cur = c.values[m.code]
            let allowed = c.allowed[m.code] ?? []
            guard cur != nil || !allowed.isEmpty else { continue }
            out.append(PTPVocabulary.property(m, current: cur, offered: allowed, writable: !allowed.isEmpty))
        }
        return out
    }

    func set(_ name: PropertyName, _ value: PropertyValue) async throws {
        guard let m = PTPVocabulary.canon.first(where: { $0.name == name }) else {
            throw CameraControlError.notSupported("\(name.rawValue) on Canon EOS")
        }
        let (cur, allowed) = cache.withLock { ($0.values[m.code], $0.allowed[m.code]) }
        guard cur != nil || allowed != nil else {
            throw CameraControlError.notSupported("\(name.rawValue): the camera never reported 0x\(String(m.code, radix: 16, uppercase: true))")
        }
        let v = try PTPVocabulary.resolve(m, value, offered: allowed ?? [])
        let r = try await setEx(m.code, UInt32(truncatingIfNeeded: v), patience: .seconds(8))
        guard r.ok else { throw Self.cameraError(r.code, op: PTPOperation.canonSetDevicePropValueEx) }
    }

    /// TouchAfPosition 0x915B (type 0, x, y) in FocusInfoEx sensor units, origin top-left
    /// (coordinate origin UNCONFIRMED in the notes).
    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        guard let f = cache.withLock({ $0.focus }), f.sensorWidth > 0, f.sensorHeight > 0 else {
            throw CameraControlError.unavailable("touch-AF: the camera has not reported FocusInfoEx (sensor size) yet")
        }
        let space = AFCoordinateSpace(width: Double(f.sensorWidth), height: Double(f.sensorHeight))
        let p = space.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        try await callOK(PTPOperation.canonTouchAfPosition, [0, UInt32(p.x.rounded()), UInt32(p.y.rounded())])
    }

    /// Shots being read are finished first (≤ 10 s); then the body's own destination (the card when
    /// it was never seen) and the viewfinder off.
    func stopLiveView() async {
        let by = ContinuousClock.now + .seconds(10)
        while transfersInFlight.withLock({ $0 }) > 0, ContinuousClock.now < by {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if routedToPC.withLock({ $0 }) {
            _ = try? await setEx(Self.captureDestination, carried.destination ?? Self.destinationCard)
        }
        _ = try? await setEx(Self.evfOutputDevice, 0)
        _ = try? await call(PTPOperation.canonSetEventMode, [0])
        _ = try? await call(PTPOperation.closeSession)
    }
}

/// A shot the camera hands to the PC (0xC186 RequestObjectTransfer): read it, then TransferComplete.
struct CanonTransfer: Sendable, Equatable {
    var handle: UInt32
    /// 0 when the record did not say (then ObjectInfo does).
    var size: Int
    var name: String
}

/// What a Canon session leaves to the next (owned by the driver): the body's own
/// CaptureDestination, seen before livegate set the PC, and shots announced but not handed on —
/// a session that ended, or a read a lost connection broke off (the camera keeps a shot for the
/// PC until TransferComplete). Whatever is left when the driver stops is reported lost.
final class CanonCarryOver: Sendable {
    private let state = Mutex<(destination: UInt32?, shots: CanonAnnounced)>((nil, CanonAnnounced()))

    var destination: UInt32? { state.withLock { $0.destination } }
    func keepDestination(_ d: UInt32) { state.withLock { if $0.destination == nil { $0.destination = d } } }
    func keep(_ a: CanonAnnounced) { state.withLock { $0.shots.append(a) } }
    func take() -> CanonAnnounced {
        state.withLock { s in defer { s.shots = CanonAnnounced() }; return s.shots }
    }
}

/// Shots the camera announced, as GetEvent records brought them.
struct CanonAnnounced: Sendable {
    /// On the card (0xC181 ObjectAddedEx with a StorageID): handle and name.
    var onCard: [(handle: UInt32, name: String)] = []
    /// Waiting for the PC (0xC186, and 0xC1A9 whose layout the notes do not give: handle only).
    var toPC: [CanonTransfer] = []
    var isEmpty: Bool { onCard.isEmpty && toPC.isEmpty }

    mutating func append(_ other: CanonAnnounced) {
        onCard += other.onCard
        toPC += other.toPC
    }
}

/// What Canon GetEvent (0x9116) data told so far: property values (0xC189), allowed values
/// (0xC18A), the latest FocusInfoEx (0xD1D3) and the shots announced.
struct CanonEventCache: Sendable {
    /// Taken by the capture or, for shots on the body, the live-view loop.
    var announced = CanonAnnounced()
    var values: [UInt16: Int64] = [:]
    var allowed: [UInt16: [Int64]] = [:]
    var focus: CanonFocusInfo?

    /// Folds one GetEvent payload in (records `{u32 size, u32 code, …}` up to `{8, 0}`); returns the
    /// number of records.
    mutating func ingest(_ d: [UInt8]) -> Int {
        var p = 0
        var n = 0
        func le32(_ i: Int) -> UInt32 {
            UInt32(d[i]) | UInt32(d[i + 1]) << 8 | UInt32(d[i + 2]) << 16 | UInt32(d[i + 3]) << 24
        }
        /// The NUL-terminated name at `offset` of the record at `p` (to its end at most).
        func name(at offset: Int) -> String {
            let size = Int(le32(p))
            return String(decoding: d[(p + offset)..<(p + size)].prefix { $0 != 0 }, as: UTF8.self)
        }
        while p + 8 <= d.count {
            let size = Int(le32(p)), code = le32(p + 4)
            if size == 8 && code == 0 { break }
            guard size >= 8, p + size <= d.count else { break }
            n += 1
            switch code {
            case 0xC189 where size >= 16:
                let prop = le32(p + 8)
                if prop == CanonPTPSession.focusInfoEx {
                    if let f = CanonFocusInfo.parse(d[(p + 12)..<(p + size)]) { focus = f }
                } else {
                    values[UInt16(truncatingIfNeeded: prop)] = Int64(le32(p + 12))
                }
            case 0xC181 where size >= 0x29:
                // StorageID 0: not on a card (the PC target's own transfer record follows).
                if le32(p + 0x0C) != 0 { announced.onCard.append((le32(p + 8), name(at: 0x28))) }
            case 0xC186 where size >= 0x1D:
                announced.toPC.append(CanonTransfer(handle: le32(p + 8), size: Int(le32(p + 0x14)), name: name(at: 0x1C)))
            case 0xC1A9 where size >= 12:
                announced.toPC.append(CanonTransfer(handle: le32(p + 8), size: 0, name: ""))
            case 0xC18A where size >= 20:
                let prop = le32(p + 8)
                let count = Int(le32(p + 16))
                guard count >= 0, 20 + 4 * count <= size else { break }
                allowed[UInt16(truncatingIfNeeded: prop)] = (0..<count).map { Int64(le32(p + 20 + 4 * $0)) }
            default: break
            }
            p += size
        }
        return n
    }
}
