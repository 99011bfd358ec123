import CameraWire
import LiveViewCore
import Logging

/// Canon EOS (ptp.md §2.2, §3): SetRemoteMode(1), SetEventMode(1), GetEvent until the EVF output
/// property 0xD1B0 is known, EVFMode 0xD1B1 = 1 and EVFOutputDevice 0xD1B0 = 2 (PC) through
/// SetDevicePropValueEx 0x9110; per frame one GetEvent (property changes, FocusInfoEx AF points)
/// then GetViewFinderData 0x9153; 0xA102 / 0x2019 → retry. Properties are the 0xD1xx codes, read
/// from GetEvent records and written with SetDevicePropValueEx.
final class CanonPTPSession: PTPVendorBase, PTPVendorSession {
    let link: PTPLink

    init(link: PTPLink) { self.link = link }
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

    /// GetEvent once; folds its records into the cache. Returns the number of records.
    @discardableResult
    func getEvent() async throws -> Int {
        let r = try await callOK(PTPOperation.canonGetEvent)
        return ingest(r.data)
    }

    func ingest(_ d: [UInt8]) -> Int { cache.withLock { $0.ingest(d) } }

    /// Takes the objects announced since the last call.
    func takeAddedObjects() -> [(handle: UInt32, storage: UInt32, name: String)] {
        cache.withLock { c in defer { c.added.removeAll() }; return c.added }
    }

    func setEx(_ code: UInt16, _ value: UInt32) async throws -> PTPResult {
        var data: [UInt8] = []
        data.ptpPutLE32(12); data.ptpPutLE32(UInt32(code)); data.ptpPutLE32(value)
        return try await call(PTPOperation.canonSetDevicePropValueEx, data: data)
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
        lastKeepAlive.withLock { $0 = ContinuousClock.now }
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
        let r = try await setEx(m.code, UInt32(truncatingIfNeeded: v))
        guard r.ok else { throw Self.cameraError(r.code, op: PTPOperation.canonSetDevicePropValueEx) }
    }

    /// TouchAfPosition 0x915B (type 0, x, y) in FocusInfoEx sensor units, origin top-left
    /// (coordinate origin UNCONFIRMED in the notes).
    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        guard let f = cache.withLock({ $0.focus }), f.sensorWidth > 0, f.sensorHeight > 0 else {
            throw CameraControlError.notSupported("touch-AF: the camera has not reported FocusInfoEx (sensor size)")
        }
        let space = AFCoordinateSpace(width: Double(f.sensorWidth), height: Double(f.sensorHeight))
        let p = space.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        try await callOK(PTPOperation.canonTouchAfPosition, [0, UInt32(p.x.rounded()), UInt32(p.y.rounded())])
    }

    func stopLiveView() async {
        _ = try? await setEx(Self.evfOutputDevice, 0)
        _ = try? await call(PTPOperation.canonSetEventMode, [0])
        _ = try? await call(PTPOperation.closeSession)
    }
}

/// What Canon GetEvent (0x9116) data told so far: property values (0xC189), allowed values
/// (0xC18A) and the latest FocusInfoEx (0xD1D3).
struct CanonEventCache: Sendable {
    /// Objects the camera announced (0xC181 ObjectAddedEx): handle, StorageID, name; taken by the capture.
    var added: [(handle: UInt32, storage: UInt32, name: String)] = []
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
                let nameBytes = d[(p + 0x28)..<(p + size)].prefix { $0 != 0 }
                added.append((le32(p + 8), le32(p + 0x0C), String(decoding: nameBytes, as: UTF8.self)))
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
