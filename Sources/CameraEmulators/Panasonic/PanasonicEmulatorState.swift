import LiveViewCore

/// How the emulated body handles access control (panasonic.md §4).
public enum PanasonicEmulatedAccess: String, Sendable, CaseIterable {
    /// GH3/GH4: no registration.
    case none
    /// G7/G80/GX80…: `accctrl&type=req_acc`, `err_unsuitable_app` until granted.
    case reqAcc = "req_acc"
    /// S5II: `req_acc_g` + `req_acc_e` polling, then `X-SESSION_ID` on every request.
    case session = "req_acc_g"
}

/// One `cam.cgi` request as the emulator saw it.
public struct PanasonicEmulatorRequest: Sendable, Hashable {
    public var mode: String
    public var type: String?
    public var value: String?
    public var value2: String?
    /// The `X-SESSION_ID` header, if any.
    public var sessionID: String?
    /// What the emulator answered (`ok`, `err_…`, or the CSV's first field).
    public var result: String
    /// Monotonic time of arrival (ns).
    public var atNanos: UInt64
}

/// The emulated camera's settings, access control and the `cam.cgi` dispatcher.
final class PanasonicEmulatorState: Sendable {
    struct Settings {
        var whitebalance = "auto"
        var iso = "auto"
        var shtrspeed = "2048/256"
        var focal = "1024/256"
        var exposure = "0"
        var focusmode = "afs"
        var liveviewsize = "vga"
        var deviceName = ""
        var cammode = "play"
        var touch: (Int, Int)? = nil
    }

    struct Access {
        var grantedNames: Set<String> = []
        /// Remaining "ok_under_research" answers before granting a new client.
        var pendingPolls: [String: Int] = [:]
        var slotArmed = false
        var sessionID: String?
        var sessionLastNanos: UInt64 = 0
        var sessionCounter = 0
    }

    /// A moody body's state: a mode switch in progress (until `untilNanos`, `getstate` still says
    /// `from` and every other `cam.cgi` request answers `err_busy`) and the setsetting count.
    struct Switch {
        var from = "play"
        var untilNanos: UInt64 = 0
        var sets = 0
    }

    static let whiteBalanceValues = ["auto", "daylight", "cloudy", "shade", "halogen", "flash", "white_set1", "white_set2",
                                     "white_set3", "white_set4", "color_temp"]
    static let isoValues = ["auto", "100", "125", "160", "200", "250", "320", "400", "500", "640", "800", "1000", "1250",
                            "1600", "2000", "2500", "3200", "4000", "5000", "6400", "12800", "25600"]
    static let exposureValues: [String] = (-15...15).map { t in t % 3 == 0 ? String(t / 3) : "\(t)/3" }
    static let focusModes = ["afs", "aff", "afc", "mf"]
    /// Lens: f/2.8 … f/22, shutter 60 s … 1/16000 (getinfo&type=lens CSV).
    static let lensCSV = "ok,2304/256,768/256,3584/256,-1515/256,0,off,60,12,on,0/0,off,off"

    let generation: PanasonicEmulatedAccess
    /// Polls answered with ok_under_research before a new client is granted.
    let pairingPolls: Int
    let modelName: String
    let sessionIdleNanos: UInt64
    let mood: EmulatorMood
    private let switching = Mutex(Switch())
    private let lock: Mutex<(settings: Settings, access: Access)>
    private let log = Mutex<[PanasonicEmulatorRequest]>([])
    private let overrides = Mutex<[String: [String]]>([:])
    /// What the emulator does when a request arrives, a stream starts or stops, or the screen is touched.
    struct Hooks {
        /// (client IP, UDP port) for startstream, nil for stopstream.
        var onStream: (@Sendable (_ target: (String, Int)?) -> Void)?
        var onRequest: (@Sendable () -> Void)?
        var onTouch: (@Sendable (Double, Double) -> Void)?
        /// The shutter was released: the emulator renders the shot and writes it to the card.
        var onCapture: (@Sendable () -> Void)?
    }
    let hooks = Mutex(Hooks())
    let card = PanasonicEmulatedCard()
    private var onStream: (@Sendable (_ target: (String, Int)?) -> Void)? { hooks.withLock { $0.onStream } }
    private var onRequest: (@Sendable () -> Void)? { hooks.withLock { $0.onRequest } }
    private var onTouch: (@Sendable (Double, Double) -> Void)? { hooks.withLock { $0.onTouch } }

    init(generation: PanasonicEmulatedAccess, pairingPolls: Int, modelName: String, sessionIdleSeconds: Double,
         mood: EmulatorMood = .prompt) {
        self.mood = mood
        self.generation = generation
        self.pairingPolls = pairingPolls
        self.modelName = modelName
        self.sessionIdleNanos = UInt64(max(0.1, sessionIdleSeconds) * 1e9)
        lock = Mutex((Settings(), Access()))
    }

    var requests: [PanasonicEmulatorRequest] { log.withLock { $0 } }
    var settings: Settings { lock.withLock { $0.settings } }
    var isRecMode: Bool { lock.withLock { $0.settings.cammode == "rec" } }
    /// The mode the body shows: during a moody switch, the one it is leaving.
    var visibleCammode: String {
        let now = MonotonicClock.nanos()
        if let from = switching.withLock({ now < $0.untilNanos ? $0.from : nil }) { return from }
        return settings.cammode
    }
    /// True while a moody mode switch is in progress.
    var isSwitching: Bool {
        let now = MonotonicClock.nanos()
        return switching.withLock { now < $0.untilNanos }
    }

    /// Changes the mode; a moody body then stays busy for `mood.modeSwitch` (a switch to the mode
    /// it is already in costs nothing).
    private func switchMode(to mode: String) {
        let from = lock.withLock { s -> String in
            let f = s.settings.cammode
            s.settings.cammode = mode
            return f
        }
        guard from != mode, mood.modeSwitch > .zero else { return }
        let until = MonotonicClock.nanos() + mood.modeSwitchNanos
        switching.withLock {
            $0.from = from
            $0.untilNanos = until
        }
    }

    /// Makes the next request of `mode` (and `type`, when given) answer `result` instead.
    func failNext(mode: String, type: String?, result: String) {
        overrides.withLock { $0[key(mode, type), default: []].append(result) }
    }

    private func key(_ mode: String, _ type: String?) -> String { type.map { "\(mode)&\($0)" } ?? mode }

    /// A reply: body and content type.
    struct Reply {
        var body: String
        var xml: Bool
        var result: String
    }

    static func xml(_ result: String, _ extra: String = "") -> Reply {
        Reply(body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<camrply><result>\(result)</result>\(extra)</camrply>",
              xml: true, result: result)
    }

    static func csv(_ fields: String) -> Reply {
        Reply(body: fields, xml: false, result: String(fields.split(separator: ",").first ?? ""))
    }

    /// Handles one request (query already split and percent-decoded).
    func handle(query: [String: String], sessionHeader: String?, clientIP: String) -> Reply {
        let mode = query["mode"] ?? ""
        let type = query["type"]
        let reply = dispatch(mode: mode, type: type, query: query, sessionHeader: sessionHeader, clientIP: clientIP)
        log.withLock {
            $0.append(PanasonicEmulatorRequest(mode: mode, type: type, value: query["value"], value2: query["value2"],
                                               sessionID: sessionHeader, result: reply.result, atNanos: MonotonicClock.nanos()))
        }
        return reply
    }

    private func dispatch(mode: String, type: String?, query: [String: String], sessionHeader: String?,
                          clientIP: String) -> Reply {
        // Injected failures first (tests of the error mapping).
        if let forced = overrides.withLock({ o -> String? in
            for k in [key(mode, type), mode] {
                if var list = o[k], !list.isEmpty {
                    let r = list.removeFirst()
                    o[k] = list
                    return r
                }
            }
            return nil
        }) {
            return mode == "accctrl" ? Self.csv(forced) : Self.xml(forced)
        }
        if mode == "accctrl" { return accctrl(type: type, query: query) }
        // Access control gate.
        let now = MonotonicClock.nanos()
        let gate: Reply? = lock.withLock { s -> Reply? in
            switch generation {
            case .none: return nil
            case .reqAcc: return s.access.grantedNames.isEmpty ? Self.xml("err_unsuitable_app") : nil
            case .session:
                guard let sid = s.access.sessionID, sid == sessionHeader,
                      now &- s.access.sessionLastNanos < sessionIdleNanos else { return Self.xml("err_critical") }
                s.access.sessionLastNanos = now
                return nil
            }
        }
        if let gate { return gate }
        onRequest?()
        // A moody body switching modes: only getstate answers (with the mode it is leaving).
        if mode != "getstate" && isSwitching { return Self.xml("err_busy") }
        switch mode {
        case "getstate":
            return Self.xml("ok", "<state><batt>3/3</batt><cammode>\(visibleCammode)</cammode><remaincapacity>\(999 - card.count)</remaincapacity>"
                + "<sdcardstatus>write_enable</sdcardstatus><sd_memory>set</sd_memory><rec>\(card.recording ? "on" : "off")</rec>"
                + "<sd_access>\(card.isWriting ? "on" : "off")</sd_access><operate>enable/disable</operate><temperature>normal</temperature>"
                + "<version>E1.0</version></state>")
        case "camcmd":
            switch query["value"] ?? "" {
            case "recmode":
                switchMode(to: "rec")
                return Self.xml("ok")
            case "playmode":
                switchMode(to: "play")
                onStream?(nil)
                return Self.xml("ok")
            case "capture":
                guard isRecMode else { return Self.xml("err_reject") }
                if let refusal = card.refuseShots { return Self.xml(refusal) }
                hooks.withLock { $0.onCapture }?()
                return Self.xml("ok")
            case "capture_cancel", "oneshot_af", "touchafrelease", "video_recstart", "video_recstop":
                return isRecMode ? Self.xml("ok") : Self.xml("err_busy")
            default:
                return Self.xml("err_param")
            }
        case "get_content_info":
            // Record mode answers busy (GM1 notes), as does a card being written.
            guard !isRecMode, !card.isWriting else { return Self.xml("err_busy") }
            let n = card.written().count
            return Self.xml("ok", "<current_position>\(n)</current_position><total_content_number>\(n)</total_content_number>"
                + "<content_number>\(n)</content_number>")
        case "startstream":
            guard let p = query["value"].flatMap(Int.init), (1...65535).contains(p) else { return Self.xml("err_param") }
            onStream?((clientIP, p))
            return Self.xml("ok")
        case "stopstream":
            onStream?(nil)
            return Self.xml("ok")
        case "getinfo":
            switch type ?? "" {
            case "capability":
                return Self.xml("ok", "<comm_proto_ver>2.0</comm_proto_ver><productinfo><modelname>\(modelName)</modelname></productinfo>"
                    + "<camspeclist><camspec>touch_command_auto</camspec></camspeclist>")
            case "lens":
                return Self.csv(Self.lensCSV)
            case "allmenu":
                return Self.xml("ok", Self.allmenu(model: modelName))
            default:
                return Self.xml("err_param")
            }
        case "getsetting":
            let s = settings
            let v: String?
            switch type ?? "" {
            case "whitebalance": v = s.whitebalance
            case "iso": v = s.iso
            case "shtrspeed": v = s.cammode == "rec" ? s.shtrspeed : nil
            case "focal": v = s.cammode == "rec" ? s.focal : "32767/256"
            case "exposure": v = s.exposure
            case "focusmode": v = s.focusmode
            case "liveviewsize": v = s.liveviewsize
            case "device_name": v = s.deviceName
            default: return Self.xml("err_param")
            }
            guard let v, let t = type else { return Self.xml("err_busy") }
            return Self.xml("ok", "<settingvalue \(t)=\"\(Self.escape(v))\"></settingvalue>")
        case "setsetting":
            guard let v = query["value"] else { return Self.xml("err_param") }
            if switching.withLock({ mood.refusesSet(counting: &$0.sets) }) { return Self.xml("err_busy") }
            return lock.withLock { st -> Reply in
                switch type ?? "" {
                case "whitebalance":
                    guard Self.whiteBalanceValues.contains(v) else { return Self.xml("err_param") }
                    st.settings.whitebalance = v
                case "iso":
                    guard Self.isoValues.contains(v) else { return Self.xml("err_param") }
                    st.settings.iso = v
                case "exposure":
                    guard Self.exposureValues.contains(v) else { return Self.xml("err_param") }
                    st.settings.exposure = v
                case "focusmode":
                    guard Self.focusModes.contains(v) else { return Self.xml("err_param") }
                    st.settings.focusmode = v
                case "shtrspeed":
                    guard Self.numerator(v) != nil else { return Self.xml("err_param") }
                    st.settings.shtrspeed = v // accepted silently, as real bodies do
                case "focal":
                    guard let n = Self.numerator(v) else { return Self.xml("err_param") }
                    st.settings.focal = "\(min(max(n, 768), 2304))/256" // clamped to the lens
                case "liveviewsize":
                    guard v == "vga" || v == "qvga" else { return Self.xml("err_param") }
                    st.settings.liveviewsize = v
                case "device_name":
                    st.settings.deviceName = v
                default:
                    return Self.xml("err_param")
                }
                return Self.xml("ok")
            }
        case "camctrl":
            guard type == "touch" || type == "touchaf" else { return Self.xml("err_param") }
            let parts = (query["value"] ?? "").split(separator: "/")
            guard parts.count == 2, let x = Int(parts[0]), let y = Int(parts[1]), (0...1000).contains(x),
                  (0...1000).contains(y) else { return Self.xml("err_param") }
            guard isRecMode else { return Self.xml("err_busy") }
            if query["value2"] != "off" {
                lock.withLock { $0.settings.touch = (x, y) }
                onTouch?(Double(x) / 1000, Double(y) / 1000)
            }
            return Self.xml("ok")
        default:
            return Self.xml("err_param")
        }
    }

    private func accctrl(type: String?, query: [String: String]) -> Reply {
        let now = MonotonicClock.nanos()
        return lock.withLock { s -> Reply in
            switch (generation, type ?? "") {
            case (.none, _):
                return Self.xml("err_non_support")
            case (.reqAcc, "req_acc"):
                let name = query["value2"] ?? ""
                guard !name.isEmpty else { return Self.csv("err_param") }
                if s.access.grantedNames.contains(name) { return Self.csv("ok,\(modelName)-EMU,remote") }
                let left = s.access.pendingPolls[name] ?? pairingPolls
                if left > 0 {
                    s.access.pendingPolls[name] = left - 1
                    return Self.csv("ok_under_research_no_msg,\(modelName)-EMU,remote")
                }
                s.access.grantedNames.insert(name)
                return Self.csv("ok,\(modelName)-EMU,remote")
            case (.reqAcc, _):
                return Self.csv("err_param")
            case (.session, "req_acc_g"):
                s.access.slotArmed = true
                return Self.csv("ok,1a2b3c4d")
            case (.session, "req_acc_e"):
                guard s.access.slotArmed else { return Self.csv("err_critical") }
                let udn = query["value"] ?? ""
                guard !udn.isEmpty, udn.allSatisfy(\.isHexDigit) else { return Self.csv("err_param") }
                let left = s.access.pendingPolls[udn] ?? pairingPolls
                if left > 0 {
                    s.access.pendingPolls[udn] = left - 1
                    return Self.csv("ok_under_research,\(modelName)-EMU,remote,open")
                }
                s.access.sessionCounter += 1
                let sid = Self.hex16(UInt64(s.access.sessionCounter) &* 0x9E37_79B9_7F4A_7C15)
                s.access.sessionID = sid
                s.access.sessionLastNanos = now
                s.access.slotArmed = false
                return Self.csv("ok,\(modelName)-EMU,remote,open,\(sid)")
            case (.session, _):
                return Self.csv("err_param")
            }
        }
    }

    static func hex16(_ v: UInt64) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 16 - s.count)) + s
    }

    static func numerator(_ v: String) -> Int? {
        let parts = v.split(separator: "/")
        guard parts.count == 2, let n = Int(parts[0]), parts[1] == "256" else { return nil }
        return n
    }

    static func escape(_ s: String) -> String {
        s.panaReplacing("&", "&amp;").panaReplacing("<", "&lt;").panaReplacing(">", "&gt;").panaReplacing("\"", "&quot;")
    }

    /// A small allmenu in the cameras' shape: `item`s with `cmd_mode`/`cmd_type`/`cmd_value`.
    static func allmenu(model: String) -> String {
        var out = "<menuset model=\"\(model)\" version=\"2.0\"><mainmenu><menu>"
        func group(_ id: String, _ type: String, _ values: [String]) {
            out += "<item id=\"menu_item_id_\(id)\" title_id=\"title_\(id)\" func_type=\"select\"><group>"
            for v in values {
                out += "<item id=\"menu_item_id_\(id)_\(v)\" title_id=\"title_\(id)_\(v)\" cmd_mode=\"setsetting\" cmd_type=\"\(type)\" cmd_value=\"\(v)\" ></item>"
            }
            out += "</group></item>"
        }
        group("liveview_quality", "liveviewsize", ["vga", "qvga"])
        group("whitebalance", "whitebalance", whiteBalanceValues)
        group("sensitivity", "iso", isoValues)
        group("exposure", "exposure", exposureValues)
        group("focusmode", "focusmode", focusModes)
        out += "</menu></mainmenu></menuset>"
        return out
    }
}

extension String {
    func panaReplacing(_ a: String, _ b: String) -> String {
        guard contains(a) else { return self }
        return split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}
