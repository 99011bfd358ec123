import CameraWire
import LiveViewCore
import Logging
import NIOCore

/// Fujifilm X over Wi-Fi (ptp.md §2.4): ClientState 0xDF01 = 5, AppVersion 0xDF24 read and written
/// back, InitiateOpenCapture 0x101C, then the event and live-view ports; the camera pushes
/// `u32 len + 14-byte header + JPEG` frames on the live-view port. Properties: the notes give no
/// Fujifilm codes for the common vocabulary → not supported.
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
    static let clientState: UInt16 = 0xDF01
    static let appVersion: UInt16 = 0xDF24

    init(link: PTPLink, host: String,
         eventPort: Int, liveViewPort: Int, group: any EventLoopGroup) {
        self.host = host
        self.eventPort = eventPort
        self.liveViewPort = liveViewPort
        self.group = group
        self.link = link
    }

    func startLiveView() async throws {
        var state: [UInt8] = []
        state.ptpPutLE16(5)
        try await callOK(PTPOperation.setDevicePropValue, [UInt32(Self.clientState)], data: state)
        let v = try await call(PTPOperation.getDevicePropValue, [UInt32(Self.appVersion)])
        if v.ok, v.data.count >= 4 {
            _ = try await call(PTPOperation.setDevicePropValue, [UInt32(Self.appVersion)], data: Array(v.data.prefix(4)))
        }
        let r = try await callOK(PTPOperation.initiateOpenCapture, [0, 0])
        captureTID.withLock { $0 = r.transactionID }
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
            if result.damaged { p = FujiLiveViewParser() }
            return result.got
        }
        return got ? .frame : .busy
    }

    func properties() async throws -> [CameraProperty] { [] }

    func set(_ name: PropertyName, _ value: PropertyValue) async throws {
        throw CameraControlError.notSupported("\(name.rawValue) on Fujifilm (no property codes in the notes)")
    }

    func touch(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws {
        throw CameraControlError.notSupported("touch-AF on Fujifilm")
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
