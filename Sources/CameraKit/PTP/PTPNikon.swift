import CameraWire
import LiveViewCore
import Logging

/// Nikon (ptp.md §2.1): LiveViewStatus 0xD1A2 / prohibit 0xD1A4, StartLiveView 0x9201, DeviceReady
/// 0x90C8 polling, then GetLiveViewImageEx 0x9428 when advertised, else GetLiveViewImg 0x9203;
/// 0x2019 → retry, 0xA00B NotLiveView → restart live view.
final class NikonPTPSession: PTPVendorBase, PTPVendorSession {
    let link: PTPLink
    /// SDRAM shots left unread (a broken connection, a busy camera), the driver's (kept across
    /// sessions), and the lock that keeps their fetch and a capture apart.
    let pending: PTPPendingShots
    let sdram = AsyncMutex()

    init(link: PTPLink, pending: PTPPendingShots) {
        self.link = link
        self.pending = pending
    }
    /// Captures of ours in progress, and when GetEvent was last asked for body shots (`PTPCapture.swift`).
    let capturing = Mutex(0)
    let bodyEvents = PTPOncePer(.seconds(1))
    let vendor = PTPVendor.nikon
    let pushed = false
    private let parser = Mutex(NikonLiveViewParser())
    /// The AF coordinate space of the latest frame (whole-size units), for touch-AF.
    private let lastSpace = Mutex<AFCoordinateSpace?>(nil)

    var useEx: Bool { info.operations.contains(PTPOperation.nikonGetLiveViewImageEx) }

    func startLiveView() async throws {
        let status = try await call(PTPOperation.getDevicePropValue, [0xD1A2])
        if status.ok, status.data.first == 1 { return }
        // Live view to SDRAM where the body has RecordingMedia 0xD10B (u8 1 = SDRAM).
        if info.properties.contains(0xD10B) {
            _ = try await call(PTPOperation.setDevicePropValue, [0xD10B], data: [1])
        }
        let prohibit = try await call(PTPOperation.getDevicePropValue, [0xD1A4])
        if prohibit.ok, prohibit.data.count >= 4 {
            var r = PTPReader(prohibit.data)
            let bits = try r.u32()
            if bits != 0 {
                throw CameraControlError.camera(code: Int(bits), message: "live view prohibited (0xD1A4 = 0x\(String(bits, radix: 16)))")
            }
        }
        let start = try await call(PTPOperation.nikonStartLiveView)
        guard start.ok || start.code == PTPResponse.deviceBusy else {
            throw Self.cameraError(start.code, op: PTPOperation.nikonStartLiveView)
        }
        // DeviceReady answers 0x2019 while StartLiveView is still running: poll every 20 ms up to 2 s.
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            let r = try await call(PTPOperation.nikonDeviceReady)
            if r.ok { return }
            guard r.code == PTPResponse.deviceBusy, ContinuousClock.now < deadline else {
                throw Self.cameraError(r.code, op: PTPOperation.nikonDeviceReady)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func poll(_ emit: (WireFrame) -> Void) async throws -> PTPPoll {
        let op = useEx ? PTPOperation.nikonGetLiveViewImageEx : PTPOperation.nikonGetLiveViewImg
        let r = try await call(op)
        switch r.code {
        case PTPResponse.ok:
            let (got, space) = parser.withLock { p in
                let result = collectFrames(emit) { p.feed(r.data, $0) }
                let space = p.lastHeader.coordinateSpace
                if result.damaged { p = NikonLiveViewParser() }
                return (result.got, space)
            }
            if got { lastSpace.withLock { $0 = space } }
            return got ? .frame : .busy
        case PTPResponse.deviceBusy:
            return .busy
        case PTPResponse.nikonNotLiveView:
            logger.info("nikon: live view dropped (0xA00B); restarting it")
            try await startLiveView()
            return .restarted
        default:
            throw Self.cameraError(r.code, op: op)
        }
    }

    private func mapping(_ name: PropertyName) throws -> PTPPropertyMapping {
        guard let m = PTPVocabulary.nikon.first(where: { $0.name == name }), advertises(property: m.code) else {
            throw CameraControlError.notSupported("\(name.rawValue) on this Nikon")
        }
        return m
    }

    private func desc(_ m: PTPPropertyMapping) async throws -> PTPPropDesc {
        let r = try await call(PTPOperation.getDevicePropDesc, [UInt32(m.code)])
        if r.code == PTPResponse.devicePropNotSupported || r.code == PTPResponse.operationNotSupported {
            throw CameraControlError.notSupported("\(m.name.rawValue) on this Nikon")
        }
        guard r.ok else { throw Self.cameraError(r.code, op: PTPOperation.getDevicePropDesc) }
        return try PTPPropDesc.parse(r.data)
    }

    func properties() async throws -> [CameraProperty] {
        var out: [CameraProperty] = []
        for name in PropertyName.allCases {
            guard let m = try? mapping(name), let d = try? await desc(m) else { continue }
            out.append(PTPVocabulary.property(m, current: d.current, offered: d.offered, writable: d.writable))
        }
        return out
    }

    func set(_ name: PropertyName, _ value: PropertyValue) async throws {
        let m = try mapping(name)
        let d = try await desc(m)
        let v = try PTPVocabulary.resolve(m, value, offered: d.offered)
        guard d.writable else { throw CameraControlError.notSupported("\(name.rawValue) is read-only now") }
        try await callOKWhenReady(PTPOperation.setDevicePropValue, [UInt32(m.code)], data: PTPDataType.encode(v, type: d.dataType))
    }

    /// ChangeAfArea 0x9205 (p1 x, p2 y) in the whole-size AF space of the live-view header.
    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        guard let space = lastSpace.withLock({ $0 }) else {
            throw CameraControlError.unavailable("no live-view frame yet (AF coordinate space unknown)")
        }
        let p = space.toCamera(x: x, y: y, imageWidth: imageWidth, imageHeight: imageHeight)
        try await callOK(PTPOperation.nikonChangeAfArea, [UInt32(max(0, p.x.rounded())), UInt32(max(0, p.y.rounded()))])
    }

    func stopLiveView() async {
        _ = try? await call(PTPOperation.nikonEndLiveView)
        _ = try? await call(PTPOperation.closeSession)
    }
}
