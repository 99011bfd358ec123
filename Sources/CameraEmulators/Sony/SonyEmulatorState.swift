import Foundation
import LiveViewCore
import NIOCore

/// The emulated camera's settings, JSON-RPC dispatch and open liveview streams.
final class SonyEmulatorState: Sendable {
    struct Settings {
        var whiteBalanceMode = "Auto WB"
        var colorTemperature = -1
        var iso = "AUTO"
        var shutter = "1/60"
        var fNumber = "4.0"
        var evIndex = 0
        var focusMode = "AF-S"
        var recMode = false
        var liveview = false
        var frameInfo = false
        var touch: (Double, Double)? = nil
        /// actTakePicture answers 40403 and the picture comes from awaitTakePicture (a long exposure).
        var longExposure = false
        /// actTakePicture is refused with 40400 and this message (a full card, a wrong mode).
        var refuseShots: String? = nil
        /// Every property setter is refused with this error code and message (a body that is busy).
        var refuseSettings: (code: Int, message: String)? = nil
        /// Shots taken so far (API and body); picture names are DSC0NNNN.JPG.
        var shots = 0
        /// A long exposure in flight, claimed by awaitTakePicture.
        var awaiting: String? = nil
        /// Postview URLs of shots taken on the body, reported once by getEvent index 5.
        var bodyShots: [String] = []
        /// The shutter button is held half-way (focus locked).
        var halfPressed = false
        /// "Remote Shooting" or "Contents Transfer" (sony.md §8.3); a switch asked for takes
        /// `functionSwitchNanos` to happen.
        var function = "Remote Shooting"
        var functionTarget: (name: String, at: UInt64)? = nil
        /// Property sets so far (a moody body refuses every n-th once).
        var sets = 0
    }
    /// Prompt or moody (`EmulatorMood`); set before the camera is used.
    let mood: EmulatorMood

    init(mood: EmulatorMood = .prompt) { self.mood = mood }

    static let functions = ["Remote Shooting", "Contents Transfer"]
    static let functionSwitchNanos: UInt64 = 300_000_000

    static let whiteBalanceModes = [
        "Auto WB", "Daylight", "Shade", "Cloudy", "Incandescent", "Fluorescent: Warm White (-1)",
        "Fluorescent: Cool White (0)", "Fluorescent: Day White (+1)", "Fluorescent: Daylight (+2)", "Flash",
        "Color Temperature", "Custom",
    ]
    static let isoValues = ["AUTO", "100", "200", "400", "800", "1600", "3200", "6400"]
    static let shutterValues = [
        "30\"", "15\"", "8\"", "4\"", "2\"", "1\"", "0.5\"", "1/4", "1/8", "1/15", "1/30", "1/60", "1/125",
        "1/250", "1/500", "1/1000", "1/2000", "1/4000",
    ]
    static let fNumbers = ["2.8", "3.5", "4.0", "5.6", "8.0", "11", "16"]
    static let focusModes = ["AF-S", "AF-C", "DMF", "MF"]
    static let evMin = -9, evMax = 9, evStep = 1

    static let methods: [String] = [
        "getAvailableApiList", "getApplicationInfo", "getVersions", "getMethodTypes", "getEvent",
        "startRecMode", "stopRecMode", "startLiveview", "startLiveviewWithSize", "stopLiveview",
        "setLiveviewFrameInfo", "getLiveviewFrameInfo", "getLiveviewSize",
        "getAvailableWhiteBalance", "getWhiteBalance", "setWhiteBalance", "getSupportedWhiteBalance",
        "getAvailableIsoSpeedRate", "getIsoSpeedRate", "setIsoSpeedRate",
        "getAvailableShutterSpeed", "getShutterSpeed", "setShutterSpeed",
        "getAvailableFNumber", "getFNumber", "setFNumber",
        "getAvailableExposureCompensation", "getExposureCompensation", "setExposureCompensation",
        "getAvailableFocusMode", "getFocusMode", "setFocusMode",
        "setTouchAFPosition", "cancelTouchAFPosition", "getTouchAFPosition",
        "actTakePicture", "awaitTakePicture", "actHalfPressShutter", "cancelHalfPressShutter",
        "getCameraFunction", "setCameraFunction", "getSupportedCameraFunction", "getAvailableCameraFunction",
    ]

    private let lock = Mutex(Settings())
    private let card = Mutex<[String: [UInt8]]>([:])
    private let postviews = Mutex(0)
    private let cuts = Mutex(0)

    /// The next `n` postview GETs end half-way (the connection drops).
    func cutTransfers(_ n: Int) { cuts.withLock { $0 = n } }
    /// True when this postview GET is one to cut (and counts it).
    func takeCut() -> Bool { cuts.withLock { c in guard c > 0 else { return false }; c -= 1; return true } }

    /// A picture on the emulated card, by name.
    func cardFile(_ name: String) -> [UInt8]? { card.withLock { $0[name] } }
    var cardNames: [String] { card.withLock { $0.keys.sorted() } }
    func countPostviewServed() { postviews.withLock { $0 += 1 } }
    var postviewsServed: Int { postviews.withLock { $0 } }
    func update(_ change: (inout Settings) -> Void) { lock.withLock { change(&$0) } }

    /// Takes a picture (called with the settings locked): a still of the test pattern at frame
    /// 1 000 000 + shot number, saved on the card. Returns its name.
    private func shoot(_ s: inout Settings, source: any EmulatorFrameSource) -> String {
        s.shots += 1
        let name = String(format: "DSC%05d.JPG", s.shots)
        let jpeg = source.frame(index: 1_000_000 + s.shots).jpeg
        card.withLock { $0[name] = jpeg }
        return name
    }

    /// A shot taken on the camera body: saved, and announced through getEvent index 5.
    func shootOnBody(baseURL: String, source: any EmulatorFrameSource) -> String {
        lock.withLock { s in
            let name = shoot(&s, source: source)
            s.bodyShots.append("\(baseURL)/postview/\(name)")
            return name
        }
    }
    private let log = Mutex<[(method: String, params: String)]>([])
    private let streams = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let sent = Mutex(0)
    private let stallUntil = Mutex<UInt64>(0)

    /// Frames are not sent until this monotonic time (a stalled camera).
    func stall(until nanos: UInt64) { stallUntil.withLock { $0 = nanos } }
    var isStalled: Bool { MonotonicClock.nanos() < stallUntil.withLock { $0 } }

    var calls: [(method: String, params: String)] { log.withLock { $0 } }
    var framesSent: Int { sent.withLock { $0 } }
    var settings: Settings { lock.withLock { $0 } }
    func countFrame() { sent.withLock { $0 += 1 } }

    func addStream(_ ch: any Channel) { streams.withLock { $0[ObjectIdentifier(ch)] = ch } }
    func removeStream(_ ch: any Channel) { _ = streams.withLock { $0.removeValue(forKey: ObjectIdentifier(ch)) } }
    func closeStreams() {
        let all = streams.withLock { s -> [any Channel] in
            let v = Array(s.values)
            s.removeAll()
            return v
        }
        for ch in all { ch.close(promise: nil) }
    }

    enum Reply {
        case result([Any])
        case error(Int, String)
    }

    /// Handles one JSON-RPC request body; returns the reply body.
    func handle(body: [UInt8], liveviewURL: String, source: any EmulatorFrameSource) -> [UInt8] {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let method = obj["method"] as? String, let params = obj["params"] as? [Any] else {
            return encode(id: nil, .error(5, "Illegal Request"))
        }
        let id = obj["id"]
        let paramsText = (try? JSONSerialization.data(withJSONObject: params)).flatMap { String(data: $0, encoding: .utf8) } ?? "[]"
        log.withLock { log in
            // The newest requests only (a day of getEvent polls would be ~43 000).
            if log.count >= 8192 { log.removeFirst(4096) }
            log.append((method, paramsText))
        }
        let version = obj["version"] as? String ?? "1.0"
        let reply = contentsTransfer(method, params, version: version, base: baseURL(liveviewURL))
            ?? dispatch(method, params, liveviewURL: liveviewURL, source: source)
        return encode(id: id, reply)
    }

    /// The method of the newest request.
    var lastMethod: String? { log.withLock { $0.last?.method } }

    /// `http://HOST:PORT` of a liveview URL.
    func baseURL(_ liveviewURL: String) -> String {
        liveviewURL.replacingOccurrences(of: "/liveview/liveviewstream", with: "")
    }

    private func encode(id: Any?, _ reply: Reply) -> [UInt8] {
        var out: [String: Any] = ["id": id ?? 0]
        switch reply {
        case .result(let r): out["result"] = r
        case .error(let c, let m): out["error"] = [c, m]
        }
        return Array((try? JSONSerialization.data(withJSONObject: out)) ?? Data("{}".utf8))
    }

    /// The camera's function now (a switch asked for has happened once its time is up; entering
    /// Contents Transfer ends the live view).
    private func currentFunction(_ s: inout Settings) -> String {
        if let t = s.functionTarget, MonotonicClock.nanos() >= t.at {
            s.function = t.name
            s.functionTarget = nil
            if t.name == "Contents Transfer" {
                s.liveview = false
                s.recMode = false
                closeStreams()
            }
        }
        return s.function
    }

    /// The content id of a card picture (`DSC00005.JPG` → 0000000005), and back.
    static func contentID(_ name: String) -> String? {
        Int(name.dropFirst(3).prefix(5)).map { String(format: "%010d", $0) }
    }

    func cardName(contentID id: String) -> String? {
        guard let n = Int(id) else { return nil }
        let name = String(format: "DSC%05d.JPG", n)
        return cardFile(name) == nil ? nil : name
    }

    /// True while the camera is in Contents Transfer (its card is served).
    var inContentsTransfer: Bool { lock.withLock { currentFunction(&$0) == "Contents Transfer" } }

    /// Camera-function and avContent methods (sony.md §8.3); nil for every other method. Outside
    /// Contents Transfer avContent answers "Not Available Now"; in it, shooting methods do.
    private func contentsTransfer(_ method: String, _ p: [Any], version: String, base: String) -> Reply? {
        lock.withLock { s -> Reply? in
            let function = currentFunction(&s)
            switch method {
            case "getSupportedCameraFunction": return .result([Self.functions])
            case "getAvailableCameraFunction": return .result([function, Self.functions])
            // A moody body says it has switched at once, and is not ready until the switch is over.
            case "getCameraFunction": return .result([mood.isMoody ? (s.functionTarget?.name ?? function) : function])
            case "setCameraFunction":
                guard let wanted = p.first as? String, Self.functions.contains(wanted) else { return .error(3, "Illegal Argument") }
                if s.functionTarget != nil && mood.isMoody { return .error(1, "Not Available Now") }
                if wanted != function {
                    s.functionTarget = (wanted, MonotonicClock.nanos() + max(Self.functionSwitchNanos, mood.modeSwitchNanos))
                }
                if wanted == "Contents Transfer" { s.liveview = false }
                return .result([0])
            case "getSchemeList", "getSourceList", "getContentCount", "getContentList":
                guard function == "Contents Transfer" else { return .error(1, "Not Available Now") }
            case "startLiveview", "startLiveviewWithSize", "actTakePicture", "startRecMode", "actHalfPressShutter":
                return function == "Contents Transfer" || (mood.isMoody && s.functionTarget != nil) ? .error(1, "Not Available Now") : nil
            default:
                return nil
            }
            let names = card.withLock { $0.keys.sorted() }
            switch method {
            case "getSchemeList": return .result([[["scheme": "storage"]]])
            case "getSourceList": return .result([[["source": "storage:memoryCard1"]]])
            case "getContentCount":
                guard version == "1.2" else { return .error(14, "Unsupported Version") }
                return .result([["count": names.count]])
            default:
                guard version == "1.3" else { return .error(14, "Unsupported Version") }
                guard let q = p.first as? [String: Any], let start = (q["stIdx"] as? NSNumber)?.intValue,
                      let count = (q["cnt"] as? NSNumber)?.intValue, start >= 0, (1...100).contains(count) else {
                    return .error(3, "Illegal Argument")
                }
                let page = names.dropFirst(start).prefix(count).compactMap { name -> [String: Any]? in
                    guard let id = Self.contentID(name) else { return nil }
                    return [
                        "uri": "image:content?contentId=\(id)", "title": "", "contentKind": "still",
                        "createdTime": "2026-11-27T10:00:00+09:00", "folderNo": "100", "fileNo": String(name.dropFirst(4).prefix(4)),
                        "isPlayable": "false", "isBrowsable": "false", "isProtected": "false", "remotePlayType": NSNull(),
                        "content": [
                            "original": [["fileName": name, "stillObject": "jpeg", "url": "\(base)/contentstransfer/orgjpeg/\(id)"]],
                            "smallUrl": "", "largeUrl": "", "thumbnailUrl": "\(base)/contentstransfer/thumb/\(id)",
                        ] as [String: Any],
                    ]
                }
                return .result([page])
            }
        }
    }

    private func dispatch(_ method: String, _ p: [Any], liveviewURL: String, source: any EmulatorFrameSource) -> Reply {
        return lock.withLock { s -> Reply in
            let illegal = Reply.error(3, "Illegal Argument")
            if let r = s.refuseSettings, method.hasPrefix("set"), method != "setLiveviewFrameInfo" {
                return .error(r.code, r.message)
            }
            if method.hasPrefix("set"), !["setLiveviewFrameInfo", "setPostviewImageSize", "setCameraFunction"].contains(method),
               mood.refusesSet(counting: &s.sets) {
                return .error(40401, "Camera Not Ready")
            }
            switch method {
            case "getAvailableApiList": return .result([Self.methods])
            case "getApplicationInfo": return .result(["Smart Remote Control", "2.0.0"])
            case "getVersions": return .result([["1.0", "1.1", "1.2"]])
            case "getMethodTypes": return .result([])
            case "startRecMode": s.recMode = true; return .result([0])
            case "stopRecMode": s.recMode = false; return .result([0])
            case "startLiveview", "startLiveviewWithSize":
                guard s.recMode else { return .error(40401, "Camera Not Ready") }
                s.liveview = true
                return .result([liveviewURL])
            case "stopLiveview": s.liveview = false; return .result([0])
            case "setLiveviewFrameInfo":
                guard let o = p.first as? [String: Any], let on = o["frameInfo"] as? Bool else { return illegal }
                s.frameInfo = on
                return .result([])
            case "getLiveviewFrameInfo": return .result([["frameInfo": s.frameInfo]])
            case "getLiveviewSize": return .result(["L"])
            case "actTakePicture":
                guard s.recMode else { return .error(40401, "Camera Not Ready") }
                if let why = s.refuseShots { return .error(40400, why) }
                guard s.awaiting == nil else { return .error(40401, "Camera Not Ready") }
                let name = shoot(&s, source: source)
                let url = "\(baseURL(liveviewURL))/postview/\(name)"
                if s.longExposure {
                    s.awaiting = url
                    return .error(40403, "Long shooting")
                }
                return .result([[url]])
            case "actHalfPressShutter":
                guard s.recMode else { return .error(40401, "Camera Not Ready") }
                s.halfPressed = true
                return .result([0])
            case "cancelHalfPressShutter":
                s.halfPressed = false
                return .result([0])
            case "awaitTakePicture":
                guard let url = s.awaiting else { return .error(40401, "Camera Not Ready") }
                s.awaiting = nil
                return .result([[url]])
            case "getEvent":
                var r: [Any] = Array(repeating: NSNull(), count: 36)
                if !s.bodyShots.isEmpty {
                    r[5] = [["type": "takePicture", "takePictureUrl": s.bodyShots]]
                    s.bodyShots.removeAll()
                }
                r[0] = ["type": "availableApiList", "names": Self.methods]
                r[1] = ["type": "cameraStatus", "cameraStatus": s.recMode ? "IDLE" : "NotReady"]
                r[3] = ["type": "liveviewStatus", "liveviewStatus": s.liveview]
                r[25] = ["type": "exposureCompensation", "currentExposureCompensation": s.evIndex,
                         "maxExposureCompensation": Self.evMax, "minExposureCompensation": Self.evMin,
                         "stepIndexOfExposureCompensation": Self.evStep]
                r[27] = ["type": "fNumber", "currentFNumber": s.fNumber, "fNumberCandidates": Self.fNumbers]
                r[28] = ["type": "focusMode", "currentFocusMode": s.focusMode, "focusModeCandidates": Self.focusModes]
                r[29] = ["type": "isoSpeedRate", "currentIsoSpeedRate": s.iso, "isoSpeedRateCandidates": Self.isoValues]
                r[32] = ["type": "shutterSpeed", "currentShutterSpeed": s.shutter, "shutterSpeedCandidates": Self.shutterValues]
                r[33] = ["type": "whiteBalance", "currentWhiteBalanceMode": s.whiteBalanceMode,
                         "currentColorTemperature": s.colorTemperature]
                return .result(r)
            case "getAvailableWhiteBalance":
                let cands: [[String: Any]] = Self.whiteBalanceModes.map { m in
                    ["whiteBalanceMode": m, "colorTemperatureRange": m == "Color Temperature" ? [9900, 2500, 100] : []]
                }
                return .result([["whiteBalanceMode": s.whiteBalanceMode, "colorTemperature": s.colorTemperature], cands])
            case "getWhiteBalance":
                return .result([["whiteBalanceMode": s.whiteBalanceMode, "colorTemperature": s.colorTemperature]])
            case "getSupportedWhiteBalance":
                return .result([Self.whiteBalanceModes.map { ["whiteBalanceMode": $0] }])
            case "setWhiteBalance":
                guard p.count == 3, let mode = p[0] as? String, Self.whiteBalanceModes.contains(mode),
                      let hasTemp = p[1] as? Bool, let temp = (p[2] as? NSNumber)?.intValue else { return illegal }
                if hasTemp {
                    guard mode == "Color Temperature", (2500...9900).contains(temp), temp % 100 == 0 else { return illegal }
                }
                s.whiteBalanceMode = mode
                s.colorTemperature = hasTemp ? temp : -1
                return .result([0])
            case "getAvailableIsoSpeedRate": return .result([s.iso, Self.isoValues])
            case "getIsoSpeedRate": return .result([s.iso])
            case "setIsoSpeedRate":
                guard let v = p.first as? String, Self.isoValues.contains(v) else { return illegal }
                s.iso = v
                return .result([0])
            case "getAvailableShutterSpeed": return .result([s.shutter, Self.shutterValues])
            case "getShutterSpeed": return .result([s.shutter])
            case "setShutterSpeed":
                guard let v = p.first as? String, Self.shutterValues.contains(v) else { return illegal }
                s.shutter = v
                return .result([0])
            case "getAvailableFNumber": return .result([s.fNumber, Self.fNumbers])
            case "getFNumber": return .result([s.fNumber])
            case "setFNumber":
                guard let v = p.first as? String, Self.fNumbers.contains(v) else { return illegal }
                s.fNumber = v
                return .result([0])
            case "getAvailableExposureCompensation":
                return .result([s.evIndex, Self.evMax, Self.evMin, Self.evStep])
            case "getExposureCompensation": return .result([s.evIndex])
            case "setExposureCompensation":
                guard let v = (p.first as? NSNumber)?.intValue, (Self.evMin...Self.evMax).contains(v),
                      !(p.first is Bool) else { return illegal }
                s.evIndex = v
                return .result([0])
            case "getAvailableFocusMode": return .result([s.focusMode, Self.focusModes])
            case "getFocusMode": return .result([s.focusMode])
            case "setFocusMode":
                guard let v = p.first as? String, Self.focusModes.contains(v) else { return illegal }
                s.focusMode = v
                return .result([0])
            case "setTouchAFPosition":
                guard p.count == 2, let x = (p[0] as? NSNumber)?.doubleValue, let y = (p[1] as? NSNumber)?.doubleValue,
                      (0...100).contains(x), (0...100).contains(y) else { return illegal }
                s.touch = (x, y)
                source.focus(atX: x / 100, y: y / 100)
                return .result([0, ["AFResult": true, "AFType": "Touch"]])
            case "cancelTouchAFPosition":
                s.touch = nil
                return .result([])
            case "getTouchAFPosition":
                let coords: [Double] = s.touch.map { [$0.0, $0.1] } ?? []
                return .result([["set": s.touch != nil, "touchCoordinates": coords]])
            default:
                return .error(12, "No Such Method")
            }
        }
    }
}
