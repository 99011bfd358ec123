import CameraWire
import Foundation
import LiveViewCore

/// Which camera a PTP emulator plays.
public enum PTPEmulatorKind: String, Sendable, CaseIterable {
    case nikon
    case canon
    case sony = "sony-ptp"
    case fuji
}

/// Which Fujifilm body the emulator plays (`PTPFujiVocabulary.swift` in CameraKit has the readings).
public enum FujiEmulatedBody: String, Sendable, CaseIterable {
    /// Current numbering (white balance 0x8007 = colour temperature), SetDevicePropValue for everything.
    case xh1 = "x-h1"
    /// X-T1-era Wi-Fi firmware: white balance 0x800B = colour temperature, 0x800A underwater, and the
    /// exposure values (0xD240, 0x5007, 0x5010) change only by the step operations 0x902C–0x902E.
    case xt1 = "x-t1"
}

/// One operation the emulator received: code, params and the data-out payload (if any).
public struct PTPRequestRecord: Sendable, Hashable {
    public var code: UInt16
    public var params: [UInt32]
    public var data: [UInt8]
}

/// A reply: response code, params, and a data-in payload.
struct PTPReply {
    var code: UInt16
    var params: [UInt32] = []
    var data: [UInt8]?
}

/// The emulated camera's state and operation dispatch, shared by the PTP/IP and Fuji servers.
final class PTPEmulatorModel: Sendable {
    struct State {
        /// A moody body: DeviceBusy for control and card operations until then (after a capture or
        /// a session's start), property sets so far, when the session opened.
        var moodyBusyUntil: UInt64 = 0
        var moodySets = 0
        var sessionOpenedAt: UInt64 = 0
        var sessionOpen = false
        var props: [UInt16: PTPEmulatedProperty] = [:]
        var lvOn = false
        var deviceReadyBusyLeft = 0
        var lastServed: UInt64 = 0
        /// When the next frame may be served (a schedule of one frame per interval).
        var nextDue: UInt64 = 0
        var frameIndex = 0
        var framesSent = 0
        var busyReplies = 0
        var stallUntil: UInt64 = 0
        var sdioStage = 0
        var eventMode: UInt32 = 0
        var pendingEvents: [UInt8] = []
        var reportedFocusIndex = -1
        var captureOpen = false
        /// Nikon: end live view by itself after this many frames (0 = never), like a D7000 after ~14 000.
        var nikonDropEvery = 0
        var servedSinceStart = 0
        /// Nikon capture into SDRAM (ptp.md §8.2): when the shot in progress is done (0: none), the
        /// picture waiting at 0xFFFF0001, the events for 0x90C7, the stills taken so far.
        var nikonCaptureDue: UInt64 = 0
        var nikonSDRAM: (name: String, bytes: [UInt8])?
        var nikonEvents: [(code: UInt16, param: UInt32)] = []
        var nikonStills: [[UInt8]] = []
        /// Canon and Fujifilm: the stills written to the card by remote releases.
        var canonShots: [[UInt8]] = []
        /// Canon with CaptureDestination 0xD11C = 4 (ptp.md §8.3, PC target): shots waiting for the
        /// PC by handle (0x80000001…), gone after TransferComplete; how many shots went that way; how
        /// many of the next GetPartialObject reads of them fail (a transfer that breaks).
        var canonPC: [UInt32: (name: String, bytes: [UInt8])] = [:]
        var canonPCCount = 0
        var canonFailTransfers = 0
        var canonFailTransferCompletes = 0
        /// GetEvents until AvailableShots tells the PC's room after PCHDDCapacity (0: not pending).
        var canonRoomIn = 0
        /// Fujifilm: a client set the focus point (touch-AF); the state list reports it.
        var fujiPointChosen = false
        /// Sony PTP (ptp.md §8.4): the shots waiting at 0xFFFFC001 for the PC, oldest first, and
        /// every shot taken so far.
        var sonyMemory: [(name: String, bytes: [UInt8])] = []
        var sonyShots: [[UInt8]] = []
        /// Sony: the function mode SDIO_OpenSession 0x9210 opened the session in (0 with
        /// OpenSession), and when contents-transfer mode (0x9212) is on from (nil: off).
        var sonySessionMode: UInt32 = 0
        var sonyTransferFrom: UInt64?
        /// Events to push on the event socket after the next reply (code, params).
        var pushEvents: [(code: UInt16, params: [UInt32])] = []
    }

    let kind: PTPEmulatorKind
    let source: any EmulatorFrameSource
    let intervalNanos: UInt64
    let nikonUseEx: Bool
    let nikonExHeaderSize: Int
    let fujiBody: FujiEmulatedBody
    /// Sony: contents transfer only in a session opened with SDIO_OpenSession mode 1 or 2 (the
    /// other reading of ptp.md §8.4); else in any session.
    let sonyTransferNeedsSDIOSession: Bool
    let state: Mutex<State>
    let log = Mutex<[PTPRequestRecord]>([])
    /// Nikon whole-size AF space / Canon sensor size.
    static let nikonWhole = (w: 6048, h: 3400)
    static let canonSensor = (w: 6000, h: 4000)

    /// Prompt, or moody like a real body (`EmulatorMood`).
    let mood: EmulatorMood

    init(kind: PTPEmulatorKind, source: any EmulatorFrameSource, fps: Double, nikonUseEx: Bool, nikonExHeaderSize: Int,
         fujiBody: FujiEmulatedBody = .xh1, sonyTransferNeedsSDIOSession: Bool = false, mood: EmulatorMood = .prompt) {
        self.mood = mood
        self.kind = kind
        self.sonyTransferNeedsSDIOSession = sonyTransferNeedsSDIOSession
        self.fujiBody = fujiBody
        self.source = source
        self.intervalNanos = UInt64(1e9 / max(fps, 0.1))
        self.nikonUseEx = nikonUseEx
        self.nikonExHeaderSize = nikonExHeaderSize
        var s = State()
        for p in Self.initialProperties(kind, fujiBody: fujiBody) { s.props[p.code] = p }
        state = Mutex(s)
    }

    // MARK: Identity and properties

    var deviceInfo: PTPEmulatedDeviceInfo {
        let common: [UInt16] = [0x1001, 0x1002, 0x1003, 0x1008, 0x1009, 0x1014, 0x1015, 0x1016]
        let cardOps: [UInt16] = [0x1004, 0x1007, 0x101B]
        let props = state.withLock { Array($0.props.keys).sorted() }
        switch kind {
        case .nikon:
            var ops = common + cardOps + [0x9201, 0x9202, 0x9203, 0x9205, 0x90C8, 0x90C0, 0x90C7, 0x100B]
            if nikonUseEx { ops.append(0x9428) }
            return PTPEmulatedDeviceInfo(vendorExtensionID: 0x0A, vendorExtensionDesc: "microsoft.com: 1.0", operations: ops,
                                      events: [0x4006, 0xC10C], properties: props, manufacturer: "Nikon Corporation",
                                      model: nikonUseEx ? "Z emulated" : "D850 emulated", version: "V1.00",
                                      serial: "0000001")
        case .canon:
            return PTPEmulatedDeviceInfo(vendorExtensionID: 0x0B, vendorExtensionDesc: "", operations: common + cardOps + [0x9128, 0x9129,
                0x9110, 0x9114, 0x9115, 0x9116, 0x9117, 0x911A, 0x911D, 0x9127, 0x9153, 0x915B,
            ], events: [0xC189, 0xC18A], properties: props, manufacturer: "Canon Inc.", model: "Canon EOS emulated",
            version: "1-1.0.0", serial: "000000000001")
        case .sony:
            return PTPEmulatedDeviceInfo(vendorExtensionID: 0x06, vendorExtensionDesc: "Sony PTP Extensions",
                                      operations: common + cardOps + [0x9201, 0x9202, 0x9205, 0x9207, 0x9209, 0x9210, 0x9212],
                                      events: [0xC201, 0xC203], properties: props, manufacturer: "Sony Corporation",
                                      model: "ILCE emulated", version: "1.00", serial: "00000001")
        case .fuji:
            return PTPEmulatedDeviceInfo(vendorExtensionID: 0x06, vendorExtensionDesc: "fujifilm.co.jp: 1.0; ",
                                      operations: common + cardOps + [0x100E, 0x101C, 0x1018, 0x902C, 0x902D, 0x902E], events: [],
                                      properties: props, manufacturer: "FUJIFILM", model: fujiBody == .xt1 ? "X-T1" : "X-H1",
                                      version: "1.00", serial: "EMU0001")
        }
    }

    static func thirds(_ lo: Int, _ hi: Int) -> [Int64] { (lo...hi).map { Int64(($0 * 1000) / 3) } }

    static func initialProperties(_ kind: PTPEmulatorKind, fujiBody: FujiEmulatedBody = .xh1) -> [PTPEmulatedProperty] {
        let wb: [Int64] = [2, 4, 5, 6, 7, 0x8010, 0x8011]
        let f: [Int64] = [280, 400, 560, 800, 1100, 1600]
        func frac(_ n: Int64, _ d: Int64) -> Int64 { n << 16 | d }
        switch kind {
        case .nikon:
            return [
                PTPEmulatedProperty(code: 0x5005, type: 4, value: 2, allowed: wb),
                PTPEmulatedProperty(code: 0x500F, type: 4, value: 400, allowed: [100, 200, 400, 800, 1600, 3200, 6400]),
                PTPEmulatedProperty(code: 0xD100, type: 6, value: frac(1, 125), allowed: [
                    frac(1, 4000), frac(1, 2000), frac(1, 1000), frac(1, 500), frac(1, 250), frac(1, 125), frac(1, 60),
                    frac(1, 30), frac(1, 15), frac(10, 10), frac(20, 10),
                ]),
                PTPEmulatedProperty(code: 0x5007, type: 4, value: 560, allowed: f),
                PTPEmulatedProperty(code: 0x5010, type: 3, value: 0, allowed: thirds(-9, 9)),
                PTPEmulatedProperty(code: 0x500A, type: 4, value: 0x8010, allowed: [0x8010, 0x8011, 0x8012, 1]),
                PTPEmulatedProperty(code: 0xD1A2, type: 2, value: 0, allowed: [], writable: false),
                PTPEmulatedProperty(code: 0xD1A4, type: 6, value: 0, allowed: [], writable: false),
            ]
        case .sony:
            return [
                PTPEmulatedProperty(code: 0x5005, type: 4, value: 2, allowed: wb),
                PTPEmulatedProperty(code: 0x5007, type: 4, value: 400, allowed: f),
                PTPEmulatedProperty(code: 0x5010, type: 3, value: 0, allowed: thirds(-9, 9)),
                PTPEmulatedProperty(code: 0xD20D, type: 6, value: frac(1, 60), allowed: [
                    frac(1, 4000), frac(1, 1000), frac(1, 500), frac(1, 250), frac(1, 125), frac(1, 60), frac(1, 30),
                    frac(10, 10), frac(25, 10),
                ]),
                PTPEmulatedProperty(code: 0xD21E, type: 6, value: 0x00FF_FFFF, allowed: [0x00FF_FFFF, 100, 200, 400, 800, 1600, 3200]),
                PTPEmulatedProperty(code: 0xD25A, type: 2, value: 0, allowed: [0, 1]),
                PTPEmulatedProperty(code: 0xD221, type: 2, value: 1, allowed: [], writable: false),
                // ContentTransferEnable: 1 while the card can be read (contents transfer on).
                PTPEmulatedProperty(code: 0xD295, type: 2, value: 0, allowed: [], writable: false),
                // FocusFound (1 none, 2 focused) and ObjectInMemory (0x8000 + shots waiting).
                PTPEmulatedProperty(code: 0xD213, type: 2, value: 1, allowed: [], writable: false),
                PTPEmulatedProperty(code: 0xD215, type: 4, value: 0, allowed: [], writable: false),
            ]
        case .canon:
            return [
                PTPEmulatedProperty(code: 0xD101, type: 6, value: 0x30, allowed: [0x20, 0x23, 0x25, 0x28, 0x30, 0x38, 0x40, 0x48]),
                PTPEmulatedProperty(code: 0xD102, type: 6, value: 0x68, allowed: [0x50, 0x60, 0x68, 0x6B, 0x70, 0x75, 0x78, 0x80, 0x98]),
                PTPEmulatedProperty(code: 0xD103, type: 6, value: 0, allowed: [0, 0x48, 0x4B, 0x50, 0x58, 0x60, 0x68]),
                PTPEmulatedProperty(code: 0xD104, type: 6, value: 0, allowed: [0xF0, 0xF5, 0xF8, 0xFB, 0xFD, 0, 3, 5, 8, 0x0B, 0x10]),
                PTPEmulatedProperty(code: 0xD108, type: 6, value: 0, allowed: [0, 1, 2, 3]),
                PTPEmulatedProperty(code: 0xD109, type: 6, value: 0, allowed: [0, 1, 2, 3, 4, 5, 8]),
                PTPEmulatedProperty(code: 0xD1B0, type: 6, value: 1, allowed: []),
                PTPEmulatedProperty(code: 0xD1B1, type: 6, value: 0, allowed: []),
                // CaptureDestination (2 card, 4 PC) and AvailableShots (ptp.md §8.3, §8.5).
                PTPEmulatedProperty(code: 0xD11C, type: 6, value: 2, allowed: [2, 4]),
                PTPEmulatedProperty(code: 0xD11B, type: 6, value: 999, allowed: [], writable: false),
            ]
        case .fuji:
            return [
                PTPEmulatedProperty(code: 0xDF00, type: 4, value: 1, allowed: [], writable: false),
                PTPEmulatedProperty(code: 0xDF01, type: 4, value: 0, allowed: []),
                PTPEmulatedProperty(code: 0xDF24, type: 6, value: 0x0002_0001, allowed: []),
            ] + fujiExposure(fujiBody)
        }
    }

    /// Fujifilm's exposure properties. The step operations move along each list (ordered slow to
    /// fast, open to closed, dark to bright) by one place.
    static func fujiExposure(_ body: FujiEmulatedBody) -> [PTPEmulatedProperty] {
        let wb: [Int64] = body == .xt1
            ? [0x0002, 0x0004, 0x8006, 0x8001, 0x8002, 0x8003, 0x0006, 0x800A, 0x800B, 0x800C]
            : [0x0002, 0x0004, 0x8006, 0x8001, 0x8002, 0x8003, 0x0006, 0x0008, 0x8007, 0x8008, 0x8009]
        // 0xD02A: bit 31 = auto up to the ISO in the low bits, bit 30 = extended (L/H).
        let iso: [Int64] = [0x8000_0190, 0x8000_0320, 0x8000_0640, 0x8000_0C80, 0x8000_1900, 0x4000_0064]
            + [200, 250, 320, 400, 500, 640, 800, 1000, 1250, 1600, 2000, 2500, 3200, 4000, 5000, 6400]
            + [0x4000_3200, 0x4000_6400, 0x4000_C800]
        // 0xD240: milliseconds, or (bit 31) 1/N s as N × 1000.
        let shutter: [Int64] = [2000, 1000, 500] + [4, 8, 15, 30, 60, 125, 250, 500, 1000, 2000, 4000].map {
            0x8000_0000 | Int64($0 * 1000)
        }
        let apertures: [Int64] = [200, 220, 250, 280, 320, 360, 400, 450, 500, 560, 640, 710, 800, 900, 1000, 1100, 1300,
                                  1400, 1600]
        let ev = (-9...9).map { Int64((Double($0) * 1000 / 3).rounded()) }
        return [
            PTPEmulatedProperty(code: 0x5005, type: 4, value: 2, allowed: wb),
            PTPEmulatedProperty(code: 0xD017, type: 4, value: 5500, allowed: [], range: (2500, 10000, 10)),
            PTPEmulatedProperty(code: 0xD02A, type: 6, value: 0x8000_1900, allowed: iso),
            PTPEmulatedProperty(code: 0xD240, type: 6, value: 0x8000_0000 | 125_000, allowed: shutter,
                                stepsOnly: body == .xt1),
            PTPEmulatedProperty(code: 0x5007, type: 4, value: 560, allowed: apertures, stepsOnly: body == .xt1),
            PTPEmulatedProperty(code: 0x5010, type: 3, value: 0, allowed: ev, stepsOnly: body == .xt1),
            PTPEmulatedProperty(code: 0x500A, type: 4, value: 0x8001, allowed: [0x0001, 0x8001, 0x8002]),
            // The focus point's range as an X-T1 gives it: the maximum is a 7 × 7 grid.
            PTPEmulatedProperty(code: FujiFocusPoint.property, type: 6, value: Int64(FujiFocusPoint.value(x: 4, y: 4)),
                                allowed: [], range: (0, 0x1009_0707, 1)),
        ]
    }

    // MARK: Lifecycle

    /// The command connection went away: the session ends (a restarted camera starts clean).
    func connectionLost() {
        state.withLock { s in
            s.sessionOpen = false
            s.sonySessionMode = 0
            s.sonyTransferFrom = nil
            s.lvOn = false
            s.sdioStage = 0
            s.eventMode = 0
            s.pendingEvents.removeAll()
            s.captureOpen = false
            s.reportedFocusIndex = -1
            if kind == .nikon { s.props[0xD1A2]?.value = 0 }
        }
    }

    var isStalled: Bool { MonotonicClock.nanos() < state.withLock { $0.stallUntil } }

    /// The index of the frame to serve now, counted as sent, or nil when the rate or a stall says
    /// busy.
    private func claimFrame(_ s: inout State) -> Int? {
        guard takeFrameSlot(&s) else { return nil }
        s.frameIndex += 1
        s.framesSent += 1
        return s.frameIndex - 1
    }

    /// True when a frame may be served now (rate and stall), updating the rate clock.
    private func takeFrameSlot(_ s: inout State) -> Bool {
        let now = MonotonicClock.nanos()
        // Frames are due on a fixed schedule, one per interval: a poller running at the camera's rate
        // gets every frame even with a little jitter, and no poller gets more than the rate allows
        // (the schedule never lags "now" by more than half an interval, so bursts stay bounded).
        if now < s.stallUntil || now < s.nextDue {
            s.busyReplies += 1
            return false
        }
        s.lastServed = now
        s.nextDue = max(s.nextDue + intervalNanos, now - intervalNanos / 2)
        return true
    }

    // MARK: Dispatch

    func handle(code: UInt16, params: [UInt32], data: [UInt8]) -> PTPReply {
        log.withLock { $0.append(PTPRequestRecord(code: code, params: params, data: data)) }
        let p0 = params.first ?? 0
        // Session rules (ptp.md §6.2).
        let open = state.withLock { $0.sessionOpen }
        switch code {
        case 0x1002:
            return state.withLock { s in
                if s.sessionOpen { return PTPReply(code: PTPResponse.sessionAlreadyOpened) }
                s.sessionOpen = true
                s.sonySessionMode = 0
                s.sessionOpenedAt = MonotonicClock.nanos()
                s.moodyBusyUntil = s.sessionOpenedAt + mood.modeSwitch.nanoseconds
                return PTPReply(code: PTPResponse.ok)
            }
        case PTPOperation.sonySDIOOpenSession where kind == .sony:
            // SDIO_OpenSession(session, function mode 0 remote / 1 transfer / 2 both).
            return state.withLock { s in
                if s.sessionOpen { return PTPReply(code: PTPResponse.sessionAlreadyOpened) }
                guard params.count >= 2, params[1] <= 2 else { return PTPReply(code: PTPResponse.invalidParameter) }
                s.sessionOpen = true
                s.sonySessionMode = params[1]
                s.sessionOpenedAt = MonotonicClock.nanos()
                s.moodyBusyUntil = s.sessionOpenedAt + mood.modeSwitch.nanoseconds
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x1001:
            return PTPReply(code: PTPResponse.ok, data: deviceInfo.bytes)
        default:
            guard open else { return PTPReply(code: PTPResponse.sessionNotOpen) }
        }
        if code == 0x1003 {
            connectionLost()
            return PTPReply(code: PTPResponse.ok)
        }
        if mood.isMoody, let busy = moodyAnswer(code, p0) { return busy }
        let reply = dispatch(code, params, data, p0)
        if mood.isMoody, reply.code == PTPResponse.ok, Self.captureTriggers.contains(code) {
            // Busy saving and switching back for a while after the shutter.
            state.withLock { $0.moodyBusyUntil = MonotonicClock.nanos() + mood.modeSwitch.nanoseconds }
        }
        return reply
    }

    /// Operations that fire the shutter (Nikon, Canon, Fujifilm).
    static let captureTriggers: Set<UInt16> = [PTPOperation.initiateCapture, 0x90C0, 0x90CB, 0x9207, 0x9128, 0x910F]
    /// Control and card operations a moody body answers DeviceBusy while busy.
    static let moodyBusyOps: Set<UInt16> = [PTPOperation.getStorageIDs, PTPOperation.getObjectHandles, 0x100A,
                                            PTPOperation.setDevicePropValue, PTPOperation.canonSetDevicePropValueEx]
    /// Live-view image requests (a moody body has no frame for a while after the session opens).
    static let liveViewOps: Set<UInt16> = [PTPOperation.nikonGetLiveViewImg, PTPOperation.nikonGetLiveViewImageEx,
                                           PTPOperation.canonGetViewFinderData]

    /// What a moody body answers instead (ptp.md §8.2: DeviceBusy after a capture or a mode change):
    /// nil to answer normally.
    private func moodyAnswer(_ code: UInt16, _ p0: UInt32) -> PTPReply? {
        state.withLock { s -> PTPReply? in
            let now = MonotonicClock.nanos()
            let isSet = code == PTPOperation.setDevicePropValue || code == PTPOperation.canonSetDevicePropValueEx
            if Self.moodyBusyOps.contains(code) && now < s.moodyBusyUntil { return PTPReply(code: PTPResponse.deviceBusy) }
            if isSet && mood.refusesSet(counting: &s.moodySets) { return PTPReply(code: PTPResponse.deviceBusy) }
            let liveView = Self.liveViewOps.contains(code) || (kind == .sony && code == PTPOperation.getObject && p0 == 0xFFFF_C002)
            if liveView && now < s.sessionOpenedAt + mood.firstFrameDelay.nanoseconds { return PTPReply(code: PTPResponse.deviceBusy) }
            return nil
        }
    }

    private func dispatch(_ code: UInt16, _ params: [UInt32], _ data: [UInt8], _ p0: UInt32) -> PTPReply {
        if kind == .canon, let r = canonPCOperation(code, params) { return r }
        if kind != .sony, let r = cardOperation(code, params) { return r }
        switch kind {
        case .nikon: return nikon(code, params, data, p0)
        case .sony: return sony(code, params, data, p0)
        case .canon: return canon(code, params, data, p0)
        case .fuji: return fuji(code, params, data, p0)
        }
    }

    // MARK: The card (ptp.md §8.1; the emulator's choices as §8.5 describes them)

    /// One object on the emulated card.
    struct CardObject: Sendable {
        var handle: UInt32
        var parent: UInt32
        var name: String
        var format: UInt16
        var bytes: [UInt8]
    }
    static let cardStorage: UInt32 = 0x0001_0001
    /// Where a Nikon keeps the picture it shot into SDRAM.
    static let nikonSDRAMHandle: UInt32 = 0xFFFF_0001

    /// DCIM, one DCF folder, three JPEGs (the test pattern's first frames) and a 2.5 MB movie.
    private func makeCard() -> [CardObject] {
        let (folder, stem, movie): (String, String, String) = switch kind {
        case .nikon: ("100NIKON", "DSC_", "MOV")
        case .canon: ("100CANON", "IMG_", "MP4")
        case .fuji: ("100_FUJI", "DSCF", "MOV")
        case .sony: ("100MSDCF", "DSC09", "MP4")  // DSC09001.JPG…: shots are DSC0nnnn.JPG
        }
        var out = [CardObject(handle: 0x1000_0001, parent: 0, name: "DCIM", format: 0x3001, bytes: []),
                   CardObject(handle: 0x1000_0002, parent: 0x1000_0001, name: folder, format: 0x3001, bytes: [])]
        for i in 0..<3 {
            out.append(CardObject(handle: 0x1000_0003 + UInt32(i), parent: 0x1000_0002, name: "\(stem)\(kind == .sony ? "00" : "000")\(i + 1).JPG",
                                  format: 0x3801, bytes: source.frame(index: i).jpeg))
        }
        var g = UInt32(0x2545_F491)
        let clip = (0..<(2_500_000)).map { _ -> UInt8 in g ^= g << 13; g ^= g >> 17; g ^= g << 5; return UInt8(truncatingIfNeeded: g) }
        out.append(CardObject(handle: 0x1000_0006, parent: 0x1000_0002, name: "\(stem)\(kind == .sony ? "004" : "0004").\(movie)",
                              format: movie == "MOV" ? 0x300D : 0xB982, bytes: clip))
        return out
    }
    /// Made on first use (the movie costs 2.5 MB).
    private let card = Mutex<[CardObject]?>(nil)

    private func withCard<R: Sendable>(_ body: (inout [CardObject]) -> R) -> R {
        card.withLock { c in
            var objects = c ?? makeCard()
            defer { c = objects }
            return body(&objects)
        }
    }

    private func cardObject(_ handle: UInt32) -> CardObject? { withCard { card in card.first { $0.handle == handle } } }

    /// A card path's bytes (tests).
    func cardFile(_ path: String) -> [UInt8]? {
        withCard { card -> [UInt8]? in
            let byHandle = Dictionary(uniqueKeysWithValues: card.map { ($0.handle, $0) })
            for o in card where o.format != 0x3001 {
                var parts = [o.name], up = o.parent
                while let p = byHandle[up] { parts.insert(p.name, at: 0); up = p.parent }
                if "/" + parts.joined(separator: "/") == path { return o.bytes }
            }
            return nil
        }
    }

    /// GetStorageIDs, GetObjectHandles, and GetObjectInfo / GetObject / GetPartialObject of card objects.
    private func cardOperation(_ code: UInt16, _ params: [UInt32]) -> PTPReply? {
        let p0 = params.first ?? 0
        switch code {
        case PTPOperation.getStorageIDs:
            var b: [UInt8] = []
            b.ptpU32(1); b.ptpU32(Self.cardStorage)
            return PTPReply(code: PTPResponse.ok, data: b)
        case PTPOperation.getObjectHandles:
            guard p0 == 0xFFFF_FFFF || p0 == Self.cardStorage else { return PTPReply(code: 0x2008) }  // InvalidStorageID
            let handles = withCard { card in card.map(\.handle) }
            var b: [UInt8] = []
            b.ptpU32(UInt32(handles.count))
            for h in handles { b.ptpU32(h) }
            return PTPReply(code: PTPResponse.ok, data: b)
        case PTPOperation.getObjectInfo:
            guard let o = cardObject(p0) else { return nil }
            return PTPReply(code: PTPResponse.ok, data: Self.objectInfo(storage: Self.cardStorage, format: o.format,
                                                                      size: o.bytes.count, parent: o.parent, name: o.name))
        case PTPOperation.getObject:
            guard let o = cardObject(p0), o.format != 0x3001 else { return nil }
            return PTPReply(code: PTPResponse.ok, data: o.bytes)
        case PTPOperation.getPartialObject:
            guard let o = cardObject(p0), o.format != 0x3001, params.count >= 3 else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            let start = min(Int(params[1]), o.bytes.count), end = min(o.bytes.count, start + Int(params[2]))
            return PTPReply(code: PTPResponse.ok, params: [UInt32(end - start)], data: Array(o.bytes[start..<end]))
        default:
            return nil
        }
    }

    /// Standard GetDevicePropDesc / GetDevicePropValue / SetDevicePropValue.
    private func standardProps(_ code: UInt16, _ data: [UInt8], _ p0: UInt32, sony: Bool = false) -> PTPReply? {
        switch code {
        case 0x1014, 0x1015:
            return state.withLock { s in
                guard let p = s.props[UInt16(truncatingIfNeeded: p0)] else { return PTPReply(code: PTPResponse.devicePropNotSupported) }
                if code == 0x1014 { return PTPReply(code: PTPResponse.ok, data: p.desc(sony: sony)) }
                var b: [UInt8] = []
                b.ptpValue(p.value, type: p.type)
                return PTPReply(code: PTPResponse.ok, data: b)
            }
        case 0x1016:
            return PTPReply(code: set(UInt16(truncatingIfNeeded: p0), data))
        default:
            return nil
        }
    }

    private func set(_ prop: UInt16, _ data: [UInt8]) -> UInt16 {
        state.withLock { s in
            guard var p = s.props[prop] else { return PTPResponse.devicePropNotSupported }
            guard !p.stepsOnly else { return PTPResponse.accessDenied }
            guard p.writable, let v = ptpReadValue(data, type: p.type) else { return PTPResponse.invalidDevicePropValue }
            guard p.allowed.isEmpty || p.allowed.contains(v) else { return PTPResponse.invalidDevicePropValue }
            if let r = p.range, v < r.min || v > r.max || (v - r.min) % max(r.step, 1) != 0 {
                return PTPResponse.invalidDevicePropValue
            }
            p.value = v
            s.props[prop] = p
            return PTPResponse.ok
        }
    }

    private func nikon(_ code: UInt16, _ params: [UInt32], _ data: [UInt8], _ p0: UInt32) -> PTPReply {
        if let r = standardProps(code, data, p0) { return r }
        switch code {
        case 0x9201:
            return state.withLock { s in
                if !s.lvOn {
                    s.lvOn = true
                    s.deviceReadyBusyLeft = 2
                    s.servedSinceStart = 0
                    s.props[0xD1A2]?.value = 1
                }
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x9202:
            state.withLock { s in
                s.lvOn = false
                s.props[0xD1A2]?.value = 0
            }
            return PTPReply(code: PTPResponse.ok)
        case 0x90C8:
            return state.withLock { s in
                if s.deviceReadyBusyLeft > 0 {
                    s.deviceReadyBusyLeft -= 1
                    return PTPReply(code: PTPResponse.deviceBusy)
                }
                if s.nikonCaptureDue != 0 {
                    guard MonotonicClock.nanos() >= s.nikonCaptureDue else { return PTPReply(code: PTPResponse.deviceBusy) }
                    // The shot is done: the picture waits in SDRAM, the events say so.
                    s.nikonCaptureDue = 0
                    let bytes = source.frame(index: 500 + s.nikonStills.count).jpeg
                    s.nikonStills.append(bytes)
                    s.nikonSDRAM = (String(format: "DSC_%04d.JPG", 100 + s.nikonStills.count), bytes)
                    s.nikonEvents += [(0xC101, PTPEmulatorModel.nikonSDRAMHandle), (0xC102, 0)]
                }
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x90C0:  // InitiateCaptureRecInSdram
            return state.withLock { s in
                if s.nikonCaptureDue != 0 || s.nikonSDRAM != nil { return PTPReply(code: PTPResponse.deviceBusy) }
                s.nikonCaptureDue = MonotonicClock.nanos() + 300_000_000
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x90C7:  // GetEvent: u16 count + {u16 code, u32 param}
            let events = state.withLock { s -> [(code: UInt16, param: UInt32)] in
                defer { s.nikonEvents.removeAll() }
                return s.nikonEvents
            }
            var b: [UInt8] = []
            b.ptpU16(UInt16(events.count))
            for e in events { b.ptpU16(e.code); b.ptpU32(e.param) }
            return PTPReply(code: PTPResponse.ok, data: b)
        case PTPOperation.getObjectInfo, PTPOperation.getObject, PTPOperation.deleteObject:
            return state.withLock { s in
                guard p0 == PTPEmulatorModel.nikonSDRAMHandle, let pic = s.nikonSDRAM else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
                if code == PTPOperation.getObject { return PTPReply(code: PTPResponse.ok, data: pic.bytes) }
                if code == PTPOperation.deleteObject {
                    s.nikonSDRAM = nil
                    return PTPReply(code: PTPResponse.ok)
                }
                var b: [UInt8] = []
                b.ptpU32(0); b.ptpU16(0x3801); b.ptpU16(0); b.ptpU32(UInt32(pic.bytes.count))
                b.ptpU16(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0)
                b.ptpU32(0); b.ptpU16(0); b.ptpU32(0); b.ptpU32(0)
                b.ptpString(pic.name); b.ptpString("20260501T120000"); b.ptpString("20260501T120000"); b.ptpString("")
                return PTPReply(code: PTPResponse.ok, data: b)
            }
        case 0x9203, 0x9428:
            if code == 0x9428 && !nikonUseEx { return PTPReply(code: PTPResponse.operationNotSupported) }
            guard let index = state.withLock({ s -> Int?? in
                if s.lvOn && s.nikonDropEvery > 0 && s.servedSinceStart >= s.nikonDropEvery {
                    s.lvOn = false
                    s.props[0xD1A2]?.value = 0
                }
                guard s.lvOn else { return .some(nil) }
                guard let i = claimFrame(&s) else { return nil }
                s.servedSinceStart += 1
                return .some(i)
            }) else { return PTPReply(code: PTPResponse.deviceBusy) }
            guard let i = index else { return PTPReply(code: PTPResponse.nikonNotLiveView) }
            return PTPReply(code: PTPResponse.ok, data: nikonObject(index: i, ex: code == 0x9428))
        case 0x9205:
            guard params.count >= 2 else { return PTPReply(code: PTPResponse.invalidParameter) }
            source.focus(atX: Double(params[0]) / Double(Self.nikonWhole.w), y: Double(params[1]) / Double(Self.nikonWhole.h))
            return PTPReply(code: PTPResponse.ok)
        default:
            return PTPReply(code: PTPResponse.operationNotSupported)
        }
    }

    func nikonObject(index: Int, ex: Bool) -> [UInt8] {
        let f = source.frame(index: index)
        let W = Double(Self.nikonWhole.w), H = Double(Self.nikonWhole.h)
        let b = f.afBox
        let box = NikonLiveViewObject.Box(
            w: UInt16((b.x2 - b.x1) * W), h: UInt16((b.y2 - b.y1) * H),
            cx: UInt16((b.x1 + b.x2) / 2 * W), cy: UInt16((b.y1 + b.y2) / 2 * H))
        var out: [UInt8] = []
        if ex {
            NikonLiveViewObject.appendEx(jpeg: f.jpeg, headerSize: nikonExHeaderSize, wholeWidth: UInt16(W),
                                         wholeHeight: UInt16(H), jpegWidth: UInt16(f.width), jpegHeight: UInt16(f.height),
                                         boxes: [box], focusJudgement: f.focused ? 2 : 1, to: &out)
        } else {
            NikonLiveViewObject.appendLegacy(jpeg: f.jpeg, layout: .d600, wholeWidth: UInt16(W), wholeHeight: UInt16(H),
                                             box: box, to: &out)
        }
        return out
    }

    /// Sony contents transfer is on (0x9212 took effect: 150 ms after it was asked).
    private func sonyTransferOn(_ s: State) -> Bool {
        s.sonyTransferFrom.map { MonotonicClock.nanos() >= $0 } ?? false
    }

    private func sony(_ code: UInt16, _ params: [UInt32], _ data: [UInt8], _ p0: UInt32) -> PTPReply {
        if let r = standardProps(code, data, p0, sony: false) { return r }
        let transferOn = state.withLock { sonyTransferOn($0) }
        // The card (ptp.md §8.1) only in contents-transfer mode; StoreNotAvailable before.
        let shotOrLiveView = p0 == Self.sonyShotHandle || p0 == PTPEvent.sonyLiveViewHandle
        if [PTPOperation.getStorageIDs, PTPOperation.getObjectHandles].contains(code)
            || ([PTPOperation.getObjectInfo, PTPOperation.getObject, PTPOperation.getPartialObject].contains(code) && !shotOrLiveView) {
            guard transferOn else { return PTPReply(code: PTPResponse.storeNotAvailable) }
            return cardOperation(code, params) ?? PTPReply(code: PTPResponse.invalidObjectHandle)
        }
        switch code {
        case PTPOperation.sonySetContentsTransferMode:
            // (2 = the PC chooses, 1 on / 0 off, 0).
            guard params.count >= 2, params[0] == 1 || params[0] == 2, params[1] <= 1 else {
                return PTPReply(code: PTPResponse.invalidParameter)
            }
            return state.withLock { s in
                if sonyTransferNeedsSDIOSession && s.sonySessionMode == 0 { return PTPReply(code: PTPResponse.operationNotSupported) }
                if params[1] == 1 {
                    if s.sonyTransferFrom == nil { s.sonyTransferFrom = MonotonicClock.nanos() + 150_000_000 }
                } else {
                    s.sonyTransferFrom = nil
                }
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x1009 where p0 == PTPEvent.sonyLiveViewHandle && state.withLock({ $0.sonySessionMode == 1 }):
            return PTPReply(code: PTPResponse.accessDenied)
        case 0x1008 where shotOrLiveView && transferOn, 0x1009 where shotOrLiveView && transferOn:
            // The harsher reading: neither live view nor the shot for the PC while the card is shown.
            return PTPReply(code: PTPResponse.storeNotAvailable)
        case 0x9207 where transferOn:
            return PTPReply(code: PTPResponse.deviceBusy)
        default:
            break
        }
        switch code {
        case 0x9201:
            state.withLock { s in s.sdioStage = max(s.sdioStage, Int(p0)) }
            return PTPReply(code: PTPResponse.ok)
        case 0x9202:
            var b: [UInt8] = []
            b.ptpU16(UInt16(truncatingIfNeeded: p0))
            b.ptpU16Array([0x9201, 0x9202, 0x9205, 0x9207, 0x9209, 0x9210, 0x9212])
            b.ptpU16Array([0xC201, 0xC203])
            return PTPReply(code: PTPResponse.ok, data: b)
        case 0x9209:
            return state.withLock { s in
                let on: Int64 = sonyTransferOn(s) ? 1 : 0
                s.props[0xD295]?.value = on
                let list = s.props.values.sorted { $0.code < $1.code }
                var b: [UInt8] = []
                b.ptpU64(UInt64(list.count))
                for p in list { b += p.desc(sony: true) }
                return PTPReply(code: PTPResponse.ok, data: b)
            }
        case 0x9205:
            return PTPReply(code: set(UInt16(truncatingIfNeeded: p0), data))
        case 0x9207:
            // SDIO_ControlDevice: S1 (0xD2C1) half press focuses, S2 (0xD2C2) full press shoots; 2
            // = down, 1 = up.
            let value = data.count >= 2 ? UInt16(data[0]) | UInt16(data[1]) << 8 : 0
            if p0 == 0xD2C1 {
                state.withLock { $0.props[0xD213]?.value = value == 2 ? 2 : 1 }
            } else if p0 == 0xD2C2, value == 2 {
                sonyShoot()
            }
            return PTPReply(code: PTPResponse.ok)
        case 0x1008 where p0 == Self.sonyShotHandle:
            // The oldest waiting shot; nothing waiting is an error (real firmware may even crash).
            guard let shot = state.withLock({ $0.sonyMemory.first }) else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            return PTPReply(code: PTPResponse.ok, data: PTPEmulatorModel.objectInfo(storage: 0, format: 0x3801,
                                                                                    size: shot.bytes.count, parent: 0, name: shot.name))
        case 0x1009 where p0 == Self.sonyShotHandle:
            let shot = state.withLock { s -> [UInt8]? in
                guard !s.sonyMemory.isEmpty else { return nil }
                let first = s.sonyMemory.removeFirst()
                s.props[0xD215]?.value = s.sonyMemory.isEmpty ? 0 : 0x8000 + Int64(s.sonyMemory.count)
                return first.bytes
            }
            guard let shot else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            return PTPReply(code: PTPResponse.ok, data: shot)
        case 0x1008:
            guard p0 == PTPEvent.sonyLiveViewHandle else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            return PTPReply(code: PTPResponse.ok, data: Self.objectInfo(storage: 0x0001_0001, format: 0x3801, size: 0, parent: 0,
                                                                      name: "LiveView.JPG", date: ""))
        case 0x1009:
            guard p0 == PTPEvent.sonyLiveViewHandle else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            let slot = state.withLock { s -> Int? in
                guard s.sdioStage >= 3 else { return -1 }
                return claimFrame(&s)
            }
            guard let i = slot else { return PTPReply(code: PTPResponse.accessDenied) }
            guard i >= 0 else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
            let f = source.frame(index: i)
            var out: [UInt8] = []
            SonyPTPDataset.append(jpeg: f.jpeg, focalFrame: sonyFocalFrame(f), to: &out)
            return PTPReply(code: PTPResponse.ok, data: out)
        default:
            return PTPReply(code: PTPResponse.operationNotSupported)
        }
    }

    // MARK: Canon

    private static func canonValueRecord(_ prop: UInt16, _ value: UInt32) -> [UInt8] {
        var b: [UInt8] = []
        b.ptpU32(16); b.ptpU32(0xC189); b.ptpU32(UInt32(prop)); b.ptpU32(value)
        return b
    }

    private static func canonAllowedRecord(_ prop: UInt16, _ values: [Int64]) -> [UInt8] {
        var b: [UInt8] = []
        b.ptpU32(UInt32(20 + 4 * values.count)); b.ptpU32(0xC18A); b.ptpU32(UInt32(prop)); b.ptpU32(3)
        b.ptpU32(UInt32(values.count))
        for v in values { b.ptpU32(UInt32(truncatingIfNeeded: v)) }
        return b
    }

    func canonFocusInfo(index: Int) -> CanonFocusInfo {
        let f = source.frame(index: index)
        let W = Double(Self.canonSensor.w), H = Double(Self.canonSensor.h)
        let b = f.afBox
        let cx = (b.x1 + b.x2) / 2, cy = (b.y1 + b.y2) / 2
        let pt = CanonFocusPoint(x: Int(((cx - 0.5) * W).rounded()), y: Int(((0.5 - cy) * H).rounded()),
                                 width: Int(((b.x2 - b.x1) * W).rounded()), height: Int(((b.y2 - b.y1) * H).rounded()),
                                 selected: f.focused)
        return CanonFocusInfo(sensorWidth: Self.canonSensor.w, sensorHeight: Self.canonSensor.h, points: [pt])
    }

    /// Canon: a full press (RemoteReleaseOn 2 or 3) writes the next still to the card and queues its
    /// ObjectAddedEx record (0xC181, ptp.md §8.3; bytes the notes leave open are zero, the record is
    /// padded to 4 bytes).
    /// Nikon: a shot with the body's button goes to the card and is announced as ObjectAdded (0x4002).
    func nikonShootOnBody() {
        let shot = addStill(handles: 0x1000_0200, name: { String(format: "DSC_%04d.JPG", 200 + $0) }, frames: 900)
        state.withLock { $0.nikonEvents.append((0x4002, shot.handle)); $0.nikonStills.append(shot.bytes) }
    }

    /// An ObjectInfo dataset (ptp.md §8.1); a folder (0x3001) is a generic association.
    static func objectInfo(storage: UInt32, format: UInt16, size: Int, parent: UInt32, name: String,
                           date: String = "20260501T120000") -> [UInt8] {
        var b: [UInt8] = []
        b.ptpU32(storage); b.ptpU16(format); b.ptpU16(0); b.ptpU32(UInt32(truncatingIfNeeded: size))
        b.ptpU16(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0); b.ptpU32(0)
        b.ptpU32(parent); b.ptpU16(format == 0x3001 ? 1 : 0); b.ptpU32(0); b.ptpU32(0)
        b.ptpString(name); b.ptpString(date); b.ptpString(date); b.ptpString("")
        return b
    }

    /// Sony PTP: where a shot waits for the PC (ptp.md §8.4).
    static let sonyShotHandle: UInt32 = 0xFFFF_C001

    /// Sony PTP: a shot (remote or with the body's button) waits at 0xFFFFC001; ObjectInMemory
    /// counts it and ObjectAdded (0xC201) announces it.
    func sonyShoot() {
        state.withLock { s in
            let n = s.sonyShots.count + 1
            let bytes = source.frame(index: 1100 + n).jpeg
            s.sonyShots.append(bytes)
            s.sonyMemory.append((String(format: "DSC0%04d.JPG", n), bytes))
            s.props[0xD215]?.value = 0x8000 + Int64(s.sonyMemory.count)
            s.pushEvents.append((0xC201, [Self.sonyShotHandle]))
        }
    }

    /// Events waiting to be pushed on the event socket.
    func takePushEvents() -> [(code: UInt16, params: [UInt32])] {
        state.withLock { s in
            defer { s.pushEvents.removeAll() }
            return s.pushEvents
        }
    }

    /// Canon: a full press (or the body's button) writes the next still to the card and queues its
    /// ObjectAddedEx record (0xC181); with CaptureDestination 4 the still waits for the PC instead,
    /// announced by RequestObjectTransfer (0xC186: handle, format, size, name at 0x08/0x0C/0x14/0x1C).
    func canonShoot() {
        if state.withLock({ $0.props[Self.canonCaptureDestination]?.value == 4 }) {
            let n = state.withLock { s in s.canonPCCount += 1; return s.canonPCCount }
            let handle = 0x8000_0000 + UInt32(n)
            let name = String(format: "IMG_%04d.JPG", 500 + n)
            let bytes = source.frame(index: 600 + n).jpeg
            state.withLock { s in
                s.canonPC[handle] = (name, bytes)
                s.canonShots.append(bytes)
                s.pendingEvents += Self.canonRecord(0xC186, fields: [(0x08, handle), (0x0C, 0x3801), (0x14, UInt32(bytes.count))],
                                                    nameAt: 0x1C, name: name)
            }
            return
        }
        let shot = addStill(handles: 0x1000_0100, name: { String(format: "IMG_%04d.JPG", $0) }, frames: 700)
        let r = Self.canonRecord(0xC181, fields: [(0x08, shot.handle), (0x0C, Self.cardStorage), (0x10, UInt32(shot.format)),
                                                  (0x1C, UInt32(shot.bytes.count)), (0x20, shot.parent)],
                                 nameAt: 0x28, name: shot.name)
        state.withLock { $0.pendingEvents += r; $0.canonShots.append(shot.bytes) }
    }

    static let canonCaptureDestination: UInt16 = 0xD11C
    static let canonAvailableShots: UInt16 = 0xD11B

    /// A GetEvent record `code` with u32 `fields` at their offsets (a u16 format written as the low
    /// half of a u32: the bytes after it are zero anyway) and a NUL-terminated name at `nameAt`,
    /// padded to 4 bytes (bytes the notes leave open are zero).
    private static func canonRecord(_ code: UInt32, fields: [(Int, UInt32)], nameAt: Int, name: String) -> [UInt8] {
        var r = [UInt8](repeating: 0, count: nameAt)
        func put32(_ v: UInt32, _ at: Int) { for i in 0..<4 { r[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) } }
        put32(code, 4)
        for (at, v) in fields { put32(v, at) }
        r += Array(name.utf8) + [0]
        while r.count % 4 != 0 { r.append(0) }
        put32(UInt32(r.count), 0)
        return r
    }

    /// Canon PC target: GetPartialObject and GetObjectInfo of a shot waiting for the PC, and
    /// TransferComplete (0x9117), after which the handle is gone (0x2009, the emulator's choice).
    private func canonPCOperation(_ code: UInt16, _ params: [UInt32]) -> PTPReply? {
        let p0 = params.first ?? 0
        guard p0 & 0x8000_0000 != 0 || code == 0x9117 else { return nil }
        return state.withLock { s -> PTPReply? in
            switch code {
            case PTPOperation.getPartialObject:
                guard let o = s.canonPC[p0], params.count >= 3 else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
                if s.canonFailTransfers > 0 {
                    s.canonFailTransfers -= 1
                    return PTPReply(code: PTPResponse.generalError)
                }
                let start = min(Int(params[1]), o.bytes.count), end = min(o.bytes.count, start + Int(params[2]))
                return PTPReply(code: PTPResponse.ok, params: [UInt32(end - start)], data: Array(o.bytes[start..<end]))
            case PTPOperation.getObjectInfo:
                guard let o = s.canonPC[p0] else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
                return PTPReply(code: PTPResponse.ok, data: Self.objectInfo(storage: 0, format: 0x3801, size: o.bytes.count,
                                                                          parent: 0, name: o.name))
            case 0x9117:
                guard s.canonPC[p0] != nil else { return PTPReply(code: PTPResponse.invalidObjectHandle) }
                if s.canonFailTransferCompletes > 0 {
                    s.canonFailTransferCompletes -= 1
                    return PTPReply(code: PTPResponse.generalError)
                }
                s.canonPC[p0] = nil
                return PTPReply(code: PTPResponse.ok)
            default:
                return nil
            }
        }
    }

    /// Fujifilm: InitiateCapture writes a still to the card.
    func fujiShoot() {
        let shot = addStill(handles: 0x1000_0300, name: { String(format: "DSCF%04d.JPG", 300 + $0) }, frames: 500)
        state.withLock { $0.canonShots.append(shot.bytes) }
    }

    /// The card's next still (its n-th JPEG): handle `handles + n`, named `name(n)`, the test
    /// pattern's frame `frames + n`, in the DCF folder.
    private func addStill(handles: UInt32, name: (Int) -> String, frames: Int) -> CardObject {
        withCard { card -> CardObject in
            let n = card.filter { $0.format == 0x3801 }.count + 1
            let o = CardObject(handle: handles + UInt32(n), parent: 0x1000_0002, name: name(n), format: 0x3801,
                               bytes: source.frame(index: frames + n).jpeg)
            card.append(o)
            return o
        }
    }

    private static func setAvailableShots(_ n: Int64, _ s: inout State) {
        s.props[canonAvailableShots]?.value = n
        if s.eventMode != 0 { s.pendingEvents += canonValueRecord(canonAvailableShots, UInt32(n)) }
    }

    private func canon(_ code: UInt16, _ params: [UInt32], _ data: [UInt8], _ p0: UInt32) -> PTPReply {
        switch code {
        case 0x9114, 0x911D:
            return PTPReply(code: PTPResponse.ok)
        case 0x9115:
            state.withLock { s in
                s.eventMode = p0
                if p0 != 0 {
                    // No CaptureDestination record in the first dump (ptp.md §8.5): a client asks
                    // for it (0x9127) or sets it.
                    for p in s.props.values.sorted(by: { $0.code < $1.code }) where p.code != Self.canonCaptureDestination {
                        s.pendingEvents += Self.canonValueRecord(p.code, UInt32(truncatingIfNeeded: p.value))
                        if !p.allowed.isEmpty { s.pendingEvents += Self.canonAllowedRecord(p.code, p.allowed) }
                    }
                }
            }
            return PTPReply(code: PTPResponse.ok)
        case 0x9128:  // RemoteReleaseOn: 1 half press, 2 full press, 3 full press with focusing
            if p0 == 2 || p0 == 3 { canonShoot() }
            return PTPReply(code: PTPResponse.ok)
        case 0x9129:  // RemoteReleaseOff
            return PTPReply(code: PTPResponse.ok)
        case 0x9116:
            let (pending, focusIndex) = state.withLock { s -> ([UInt8], Int?) in
                if s.canonRoomIn > 0 {
                    s.canonRoomIn -= 1
                    if s.canonRoomIn == 0 { Self.setAvailableShots(9999, &s) }
                }
                let ev = s.pendingEvents
                s.pendingEvents.removeAll()
                var fi: Int?
                let evfOn = (s.props[0xD1B0]?.value ?? 0) & 2 != 0
                if evfOn && s.reportedFocusIndex != s.frameIndex {
                    s.reportedFocusIndex = s.frameIndex
                    fi = s.frameIndex
                }
                return (ev, fi)
            }
            var out = pending
            if let i = focusIndex {
                let v = canonFocusInfo(index: i).serialized()
                out.ptpU32(UInt32(12 + v.count)); out.ptpU32(0xC189); out.ptpU32(0xD1D3)
                out += v
            }
            out.ptpU32(8); out.ptpU32(0)
            return PTPReply(code: PTPResponse.ok, data: out)
        case 0x9110:
            // {u32 size = 12, u32 prop, u32 value}
            guard data.count >= 12 else { return PTPReply(code: PTPResponse.invalidParameter) }
            let prop = UInt16(truncatingIfNeeded: ptpReadLE32(data, 4))
            let value = ptpReadLE32(data, 8)
            return state.withLock { s in
                guard var p = s.props[prop] else { return PTPReply(code: PTPResponse.devicePropNotSupported) }
                guard p.allowed.isEmpty || p.allowed.contains(Int64(value)) else {
                    return PTPReply(code: PTPResponse.invalidDevicePropValue)
                }
                p.value = Int64(value)
                s.props[prop] = p
                if s.eventMode != 0 { s.pendingEvents += Self.canonValueRecord(prop, value) }
                // The PC target has no room until the PC says how much it has (0x911A).
                if prop == Self.canonCaptureDestination { Self.setAvailableShots(value == 4 ? 0 : 999, &s) }
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x9127:  // RequestDevicePropValue: the value comes as a GetEvent record
            return state.withLock { s in
                guard let p = s.props[UInt16(truncatingIfNeeded: p0)] else { return PTPReply(code: PTPResponse.devicePropNotSupported) }
                s.pendingEvents += Self.canonValueRecord(p.code, UInt32(truncatingIfNeeded: p.value))
                return PTPReply(code: PTPResponse.ok)
            }
        case 0x911A:  // PCHDDCapacity(free clusters, cluster size, 1)
            guard params.count >= 3 else { return PTPReply(code: PTPResponse.invalidParameter) }
            // The room shows in AvailableShots a few GetEvents later (a client must wait for it).
            state.withLock { s in
                if s.props[Self.canonCaptureDestination]?.value == 4 { s.canonRoomIn = 3 }
            }
            return PTPReply(code: PTPResponse.ok)
        case 0x9153:
            let slot = state.withLock { s -> Int? in
                guard (s.props[0xD1B0]?.value ?? 0) & 2 != 0 else { return -1 }
                return claimFrame(&s)
            }
            guard let i = slot else { return PTPReply(code: PTPResponse.deviceBusy) }
            guard i >= 0 else { return PTPReply(code: PTPResponse.canonObjectNotReady) }
            let f = source.frame(index: i)
            var zoom: [UInt8] = []
            zoom.ptpU32(1)
            var size: [UInt8] = []
            size.ptpU32(UInt32(Self.canonSensor.w)); size.ptpU32(UInt32(Self.canonSensor.h))
            var out: [UInt8] = []
            CanonEVFData.append(jpeg: f.jpeg, extra: [(4, zoom), (14, size)], to: &out)
            return PTPReply(code: PTPResponse.ok, data: out)
        case 0x915B:
            guard params.count >= 3 else { return PTPReply(code: PTPResponse.invalidParameter) }
            source.focus(atX: Double(params[1]) / Double(Self.canonSensor.w), y: Double(params[2]) / Double(Self.canonSensor.h))
            return PTPReply(code: PTPResponse.ok)
        case 0x1014, 0x1015, 0x1016:
            // EOS bodies do not use the standard property operations for these.
            return PTPReply(code: PTPResponse.operationNotSupported)
        default:
            return PTPReply(code: PTPResponse.operationNotSupported)
        }
    }

    // MARK: Fujifilm

    private func fuji(_ code: UInt16, _ params: [UInt32], _ data: [UInt8], _ p0: UInt32) -> PTPReply {
        if code == PTPOperation.getDevicePropValue, p0 == UInt32(FujiStateList.property) {
            return PTPReply(code: PTPResponse.ok, data: fujiStateList())
        }
        if code == PTPOperation.setDevicePropValue, p0 == UInt32(FujiFocusPoint.property) {
            // A point chosen by the client stays; the state list no longer follows the AF box.
            let r = set(FujiFocusPoint.property, data)
            if r == PTPResponse.ok { state.withLock { $0.fujiPointChosen = true } }
            return PTPReply(code: r)
        }
        if let r = standardProps(code, data, p0) { return r }
        switch code {
        case 0x101C:
            state.withLock { $0.captureOpen = true }
            return PTPReply(code: PTPResponse.ok)
        case 0x1018:
            state.withLock { $0.captureOpen = false }
            return PTPReply(code: PTPResponse.ok)
        case PTPOperation.initiateCapture:
            // Standard capture: the picture is on the card at once (announced on no socket: the
            // Fujifilm event format is not known, so clients compare the card's handle lists).
            guard state.withLock({ $0.captureOpen }) else { return PTPReply(code: PTPResponse.deviceBusy) }
            fujiShoot()
            return PTPReply(code: PTPResponse.ok)
        case 0x902C, 0x902D, 0x902E:
            // One step along the property's list: p1 1 = faster / closes / brighter.
            let prop: UInt16 = code == 0x902C ? 0xD240 : code == 0x902D ? 0x5007 : 0x5010
            return state.withLock { s in
                guard var p = s.props[prop], let i = p.allowed.firstIndex(of: p.value) else {
                    return PTPReply(code: PTPResponse.invalidDevicePropValue)
                }
                let j = p0 == 1 ? i + 1 : i - 1
                guard p.allowed.indices.contains(j) else { return PTPReply(code: PTPResponse.invalidDevicePropValue) }
                p.value = p.allowed[j]
                s.props[prop] = p
                return PTPReply(code: PTPResponse.ok)
            }
        default:
            return PTPReply(code: PTPResponse.operationNotSupported)
        }
    }

    /// The Wi-Fi state list (0xD212): the exposure properties and the focus point, the grid cell
    /// (7 × 7) holding the centre of the AF box of the frame pushed last.
    private func fujiStateList() -> [UInt8] {
        let (props, index, chosen) = state.withLock { ($0.props, max(0, $0.frameIndex - 1), $0.fujiPointChosen) }
        var entries: [(code: UInt16, value: UInt32)] = [0x5005, 0x5007, 0x5010, 0xD02A, 0xD240].compactMap { c in
            props[c].map { (c, UInt32(truncatingIfNeeded: $0.value)) }
        }
        if chosen, let p = props[FujiFocusPoint.property] {
            entries.append((FujiFocusPoint.property, UInt32(truncatingIfNeeded: p.value)))
        } else {
            let box = source.frame(index: index).afBox
            func cell(_ centre: Double) -> Int { min(7, max(1, Int(centre * 7) + 1)) }
            entries.append((FujiFocusPoint.property,
                            FujiFocusPoint.value(x: cell((box.x1 + box.x2) / 2), y: cell((box.y1 + box.y2) / 2))))
        }
        var out: [UInt8] = []
        FujiStateList.append(entries, to: &out)
        return out
    }

    /// The next pushed Fuji frame, or nil while stalled / capture not open.
    func nextFujiFrame() -> [UInt8]? {
        guard let i = state.withLock({ s -> Int? in
            guard s.captureOpen, MonotonicClock.nanos() >= s.stallUntil else { return nil }
            s.frameIndex += 1
            s.framesSent += 1
            return s.frameIndex - 1
        }) else { return nil }
        let f = source.frame(index: i)
        var out: [UInt8] = []
        FujiLiveViewFrame.append(jpeg: f.jpeg, to: &out)
        return out
    }
}

/// The frame's AF box as a Sony focal-frame block (ptp.md §2.3 layout, UNCONFIRMED; version 1.00,
/// one Focus entry, state 2 focused or 1 not focused).
func sonyFocalFrame(_ f: EmulatedFrame) -> [UInt8] {
    let b = f.afBox
    return SonyFocalFrame.block(focus: [SonyFocalFrame.Box(centreX: (b.x1 + b.x2) / 2, centreY: (b.y1 + b.y2) / 2,
                                                           width: b.x2 - b.x1, height: b.y2 - b.y1,
                                                           state: f.focused ? 2 : 1)])
}
