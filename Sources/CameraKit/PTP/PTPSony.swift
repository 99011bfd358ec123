import CameraWire
import LiveViewCore
import Logging

/// Sony over PTP (ptp.md §2.3, sony.md §4): SDIO_Connect 1, 2, GetExtDeviceInfo, SDIO_Connect 3,
/// PriorityMode 0xD25A = 1; frames with GetObject(0xFFFFC002); 0x200F AccessDenied (polled too fast
/// / no new frame) and a zero image size are "not yet"; 0x2009 is "live view still starting".
/// Properties through SDIO_GetAllExtDevicePropInfo 0x9209 and SDIO_SetExtDevicePropValue 0x9205.
final class SonyPTPSession: PTPVendorBase, PTPVendorSession {
    let link: PTPLink
    /// Opened with SDIO_OpenSession in "remote control with transfer" mode (`PTPSonyCard.swift`).
    let openedForTransfer: Bool
    /// Contents-transfer mode is on (the card can be read; live view and releases may pause).
    let transferOn = Mutex(false)
    /// The setup is done and live view asked for (card work waits for it).
    let ready = Atomic<Bool>(false)
    /// Card work found the connection broken (the session loop, which asks nothing meanwhile,
    /// ends the session).
    let broken = Atomic<Bool>(false)
    /// The operations the body's SDIO_GetExtDeviceInfo lists (with DeviceInfo's).
    let vendorOperations = Mutex<Set<UInt16>>([])

    init(link: PTPLink, openedForTransfer: Bool = false) {
        self.link = link
        self.openedForTransfer = openedForTransfer
    }
    /// Captures of ours in progress, and when ObjectInMemory was last read for body shots (`PTPCapture.swift`).
    let capturing = Mutex(0)
    let bodyShots = PTPOncePer(.seconds(1))
    /// One reader of 0xFFFFC001 at a time (a capture's own shots and the body-shot poll).
    let shotLock = AsyncMutex()
    let vendor = PTPVendor.sony
    let pushed = false
    private let parser = Mutex(SonyPTPParser(transfer: .raw))
    static let priorityMode: UInt16 = 0xD25A

    func startLiveView() async throws {
        try await callOK(PTPOperation.sonySDIOConnect, [1, 0, 0])
        try await callOK(PTPOperation.sonySDIOConnect, [2, 0, 0])
        var ext = try await call(PTPOperation.sonySDIOGetExtDeviceInfo, [300, 1])
        if !ext.ok { ext = try await callOK(PTPOperation.sonySDIOGetExtDeviceInfo, [200, 1]) }
        vendorOperations.withLock { $0 = Self.extOperations(ext.data) }
        try await callOK(PTPOperation.sonySDIOConnect, [3, 0, 0])
        _ = try await call(PTPOperation.sonySDIOSetExtDevicePropValue, [UInt32(Self.priorityMode)], data: [1])
        if openedForTransfer {
            // The newer API's session (ptp.md §2.3): live view and postviews are switched on.
            _ = try await call(PTPOperation.sonySDIOControlDevice, [UInt32(Self.setLiveViewEnable)], data: [2, 0])
            _ = try await call(PTPOperation.sonySDIOControlDevice, [UInt32(Self.setPostViewEnable)], data: [2, 0])
        }
        _ = try await call(PTPOperation.getObjectInfo, [PTPEvent.sonyLiveViewHandle])
        ready.store(true, ordering: .releasing)
    }

    static let setLiveViewEnable: UInt16 = 0xD313
    static let setPostViewEnable: UInt16 = 0xD312

    /// The operation codes of SDIO_GetExtDeviceInfo's answer as far as they read as
    /// {u16 version, AUINT16 operations, …} (the notes give no layout; an answer that does not
    /// read so gives none).
    static func extOperations(_ data: [UInt8]) -> Set<UInt16> {
        var r = PTPReader(data)
        guard (try? r.u16()) != nil, let n = try? r.u32(), n <= 512, Int(n) * 2 <= r.remaining else { return [] }
        var out: Set<UInt16> = []
        for _ in 0..<n { if let op = try? r.u16() { out.insert(op) } }
        return out
    }

    /// The body lists SDIO_OpenSession (in DeviceInfo or SDIO_GetExtDeviceInfo).
    var offersTransferSession: Bool {
        info.operations.contains(PTPOperation.sonySDIOOpenSession)
            || vendorOperations.withLock { $0.contains(PTPOperation.sonySDIOOpenSession) }
    }

    func poll(_ emit: (WireFrame) -> Void) async throws -> PTPPoll {
        let r = try await call(PTPOperation.getObject, [PTPEvent.sonyLiveViewHandle])
        switch r.code {
        case PTPResponse.ok:
            // A zero image size means "no frame yet" (same as AccessDenied).
            guard r.data.count >= 16, r.data[4] | r.data[5] | r.data[6] | r.data[7] != 0 else { return .busy }
            let got = parser.withLock { p in
                let result = collectFrames(emit) { p.feed(r.data, $0) }
                if result.damaged { p = SonyPTPParser(transfer: .raw) }
                return result.got
            }
            return got ? .frame : .busy
        case PTPResponse.accessDenied, PTPResponse.deviceBusy, PTPResponse.invalidObjectHandle:
            return .busy
        default:
            throw Self.cameraError(r.code, op: PTPOperation.getObject)
        }
    }

    private func mapping(_ name: PropertyName) throws -> PTPPropertyMapping {
        guard let m = PTPVocabulary.sony.first(where: { $0.name == name }) else {
            throw CameraControlError.notSupported("\(name.rawValue) over Sony PTP")
        }
        return m
    }

    /// All Sony property descriptions (0x9209: u64 count, then DPDs with an IsEnabled byte).
    func allDescs() async throws -> [UInt16: PTPPropDesc] {
        let r = try await callOK(PTPOperation.sonySDIOGetAllExtDevicePropInfo)
        var reader = PTPReader(r.data)
        let n = try reader.u64()
        var out: [UInt16: PTPPropDesc] = [:]
        var i: UInt64 = 0
        while i < n && reader.remaining > 0 {
            let d = try PTPPropDesc.parse(&reader, sony: true)
            out[d.code] = d
            i += 1
        }
        return out
    }

    func properties() async throws -> [CameraProperty] {
        let all = try await allDescs()
        var out: [CameraProperty] = []
        for m in PTPVocabulary.sony {
            guard let d = all[m.code] else { continue }
            out.append(PTPVocabulary.property(m, current: d.current, offered: d.offered, writable: d.writable && d.enabled))
        }
        return out
    }

    func set(_ name: PropertyName, _ value: PropertyValue) async throws {
        let m = try mapping(name)
        guard let d = try await allDescs()[m.code] else {
            throw CameraControlError.notSupported("\(name.rawValue) on this Sony")
        }
        let v = try PTPVocabulary.resolve(m, value, offered: d.offered)
        guard d.writable, d.enabled else { throw CameraControlError.notSupported("\(name.rawValue) is not settable now") }
        try await callOK(PTPOperation.sonySDIOSetExtDevicePropValue, [UInt32(m.code)],
                         data: PTPDataType.encode(v, type: d.dataType))
    }

    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        throw CameraControlError.notSupported("touch-AF over Sony PTP (no operation in the notes)")
    }

    func stopLiveView() async {
        _ = try? await call(PTPOperation.closeSession)
    }
}
