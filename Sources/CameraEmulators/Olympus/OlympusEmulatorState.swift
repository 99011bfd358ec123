import Foundation
import CameraWire
import JPEGKit
import LiveViewCore

/// One HTTP request as the Olympus emulator saw it.
public struct OlympusEmulatorRequest: Sendable, Hashable {
    public var method: String
    /// The CGI path (`/get_caminfo.cgi`), without the query.
    public var path: String
    /// Query options in the order sent, percent-decoded.
    public var query: [String: String]
    public var body: String
    /// The status the emulator answered.
    public var status: Int
}

/// One `set_camprop.cgi` POST as the emulator received it (accepted or not).
public struct OlympusSetCampropRecord: Sendable, Hashable {
    public var propname: String
    /// The `<value>` of the body (nil when there was none).
    public var value: String?
    public var status: Int

    public init(propname: String, value: String?, status: Int) {
        self.propname = propname
        self.value = value
        self.status = status
    }
}

/// The OI.Share dialect of the emulated body (olympus.md §7): camera mode, properties, touch-AF
/// and the `*.cgi` dispatcher. Pure: the emulator does the I/O and carries out `Effect`s.
struct OlympusEmulatorState: Sendable {
    /// What the dispatcher asks the emulator to do after answering.
    enum Effect: Sendable, Equatable {
        case startLiveView(ip: String, port: Int)
        case stopLiveView
        /// The shutter was released: the emulator renders the picture and writes it to the card.
        case shoot
    }

    struct Reply: Sendable {
        var status: Int
        var contentType: String
        var body: String
        var effects: [Effect] = []
        /// A binary body (a file from the card), sent instead of `body`.
        var bytes: [UInt8]? = nil
    }

    /// One file on the emulated card (`/DCIM/100OLYMP`), with its FAT date and time.
    struct CardFile: Sendable {
        var name: String
        var bytes: [UInt8]
        var date: Int
        var time: Int
    }

    static let cardFolder = "/DCIM/100OLYMP"

    /// One property: its name, whether it can be set, its allowed values.
    struct Property: Sendable {
        var name: String
        var writable: Bool
        var allowed: [String]
    }

    static let expcompValues: [String] = (-15...15).map { k in
        let tenths = Int((Double(k) * 10 / 3).rounded())
        let sign = tenths > 0 ? "+" : tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    static let properties: [Property] = [
        Property(name: "takemode", writable: true, allowed: ["iAuto", "P", "A", "S", "M", "ART"]),
        Property(name: "drivemode", writable: true, allowed: ["normal", "continuous-H", "continuous-L", "selftimer", "customselftimer"]),
        Property(name: "focalvalue", writable: true, allowed: [
            "1.8", "2.0", "2.2", "2.5", "2.8", "3.2", "3.5", "4.0", "4.5", "5.0", "5.6", "6.3", "7.1", "8.0", "9.0", "10",
            "11", "13", "14", "16", "18", "20", "22",
        ]),
        Property(name: "expcomp", writable: true, allowed: expcompValues),
        Property(name: "shutspeedvalue", writable: true, allowed: [
            "livecomp", "livetime", "livebulb", "60\"", "50\"", "40\"", "30\"", "25\"", "20\"", "15\"", "13\"", "10\"",
            "8\"", "6\"", "5\"", "4\"", "3.2\"", "2.5\"", "2\"", "1.6\"", "1.3\"", "1\"", "1.3", "1.6", "2", "2.5", "3",
            "4", "5", "6", "8", "10", "13", "15", "20", "25", "30", "40", "50", "60", "80", "100", "125", "160", "200",
            "250", "320", "400", "500", "640", "800", "1000", "1250", "1600", "2000", "2500", "3200", "4000",
        ]),
        Property(name: "isospeedvalue", writable: true, allowed: [
            "Auto", "Low", "200", "250", "320", "400", "500", "640", "800", "1000", "1250", "1600", "2000", "2500",
            "3200", "4000", "5000", "6400", "8000", "10000", "12800", "16000", "20000", "25600",
        ]),
        Property(name: "wbvalue", writable: true, allowed: ["0", "18", "16", "17", "20", "35", "64", "23", "256", "257", "258", "259", "512"]),
        Property(name: "touchactiveframe", writable: false, allowed: []),
    ]

    static let lvqtyValues = ["0320x0240", "0640x0480", "0800x0600", "1024x0768", "1280x0960"]
    static let errorBody = "<?xml version=\"1.0\"?><response><errorcode>0xB000</errorcode><errormsg>WIFI_INTERNAL_ERROR</errormsg><dbgmsg>reserved</dbgmsg></response>"

    let model: String
    let connectMode: String
    /// Live-view picture size (AF and touch coordinates are its pixels).
    let width: Int
    let height: Int

    var mode = "play"
    /// A moody body answers 503 (busy, olympus.md §3) until then after a mode switch, and refuses
    /// every n-th property set once.
    var mood: EmulatorMood = .prompt
    var busyUntil: UInt64 = 0
    var sets = 0
    var lvqty = "0640x0480"
    var liveView = false
    var values: [String: String] = [
        "takemode": "P", "drivemode": "normal", "focalvalue": "5.6", "expcomp": "0.0", "shutspeedvalue": "250",
        "isospeedvalue": "Auto", "wbvalue": "0",
    ]
    /// The touch-AF frame (live-view pixels, top-left + size) until `releaseafframe`.
    var touchFrame: (x: Int, y: Int, size: Int)?
    var requests: [OlympusEmulatorRequest] = []
    var setCamprops: [OlympusSetCampropRecord] = []
    /// The card, oldest first.
    var card: [CardFile] = []
    /// Shots refused with 520 and this message (a full card).
    var refuseShots: String?

    /// The 160×120 preview of a card file: the test pattern showing the file's number.
    func thumbnail(_ name: String) -> [UInt8]? {
        guard let i = card.firstIndex(where: { $0.name == name }) else { return nil }
        return EmulatedThumbnail.jpeg(showing: i + 1)
    }

    /// Writes a shot to the card under the next DCF name (`P` + month in hex + day + number).
    mutating func addShot(_ jpeg: [UInt8], at date: Date) -> String {
        let c = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: date)
        let month = c.month ?? 1, day = c.day ?? 1
        let name = String(format: "P%X%02d%04d.JPG", month, day, card.count + 1)
        let fatDate = ((c.year ?? 1980) - 1980) << 9 | month << 5 | day
        let fatTime = (c.hour ?? 0) << 11 | (c.minute ?? 0) << 5 | (c.second ?? 0) / 2
        card.append(CardFile(name: name, bytes: jpeg, date: fatDate, time: fatTime))
        return name
    }

    /// `get_imglist.cgi` text for a folder (nil: no such or empty folder, answered 404).
    func imageList(_ dir: String) -> String? {
        let d = dir.hasSuffix("/") && dir.count > 1 ? String(dir.dropLast()) : dir
        var lines = ["VER_100"]
        if d == "/DCIM" {
            guard let last = card.last else { return nil }
            lines.append("/DCIM,100OLYMP,0,16,\(last.date),\(last.time)")
        } else if d == Self.cardFolder {
            guard !card.isEmpty else { return nil }
            for f in card { lines.append("\(Self.cardFolder),\(f.name),\(f.bytes.count),0,\(f.date),\(f.time)") }
        } else {
            return nil
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
    /// Points received by `assignafframe` (live-view pixels).
    var touchPoints: [(x: Int, y: Int)] = []

    init(model: String, connectMode: String, width: Int, height: Int) {
        self.model = model
        self.connectMode = connectMode
        self.width = width
        self.height = height
    }

    /// The valid touch area: the inner 80 % (top-left x, y, width, height).
    var activeArea: (x: Int, y: Int, w: Int, h: Int) {
        let x = width / 10, y = height / 10
        return (x, y, width - 2 * x, height - 2 * y)
    }

    /// Side of the touch-AF frame: 72 px at VGA, scaled with the width.
    var touchFrameSize: Int { max(8, Int((72.0 * Double(width) / 640).rounded())) }

    func value(of name: String) -> String? {
        if name == "touchactiveframe" {
            let a = activeArea
            return "\(OlympusLiveViewSize.pad4(a.x))-\(OlympusLiveViewSize.pad4(a.y))_\(OlympusLiveViewSize.pad4(a.w))x\(OlympusLiveViewSize.pad4(a.h))"
        }
        return values[name]
    }

    // MARK: Dispatch

    /// Answers one request. `userAgent`/`host` are the headers (nil when absent); `contentLength`
    /// is the header's value (nil when absent).
    mutating func handle(method: String, uri: String, userAgent: String?, host: String?, contentLength: String?,
                         body: String, clientIP: String, checkUserAgent: Bool) -> Reply {
        let (path, query) = Self.split(uri)
        let reply: Reply
        if host == nil || host?.isEmpty == true {
            reply = Reply(status: 400, contentType: "text/plain", body: "")
        } else if checkUserAgent, !(userAgent?.hasPrefix("OI.Share") ?? false), !(userAgent?.hasPrefix("OlympusCameraKit") ?? false) {
            reply = Reply(status: 403, contentType: "text/plain", body: "")
        } else if method != "GET" && method != "POST" {
            reply = Reply(status: 501, contentType: "text/plain", body: "")
        } else if let busy = moodyAnswer(path) {
            reply = busy
        } else {
            reply = dispatch(method: method, path: path, query: query, contentLength: contentLength, body: body, clientIP: clientIP)
        }
        requests.append(OlympusEmulatorRequest(method: method, path: path, query: query, body: body, status: reply.status))
        return reply
    }

    /// A moody body: 503 for what needs the mode while a switch settles, and a property set now
    /// and then; nil to answer normally. A switch itself starts the busy time.
    private mutating func moodyAnswer(_ path: String) -> Reply? {
        guard mood.isMoody else { return nil }
        let now = MonotonicClock.nanos()
        if path == "/switch_cammode.cgi" {
            if now < busyUntil { return Self.busy }
            busyUntil = now + mood.modeSwitch.nanoseconds
            return nil
        }
        let always = ["/get_connectmode.cgi", "/get_commandlist.cgi", "/get_caminfo.cgi", "/get_state.cgi"]
        if now < busyUntil && !always.contains(path) { return Self.busy }
        if path == "/set_camprop.cgi", mood.refusesSet(counting: &sets) { return Self.busy }
        return nil
    }
    private static let busy = Reply(status: 503, contentType: "text/plain", body: "")

    private static func xml(_ inner: String) -> Reply {
        Reply(status: 200, contentType: "text/xml", body: "<?xml version=\"1.0\"?>" + inner)
    }
    private static let ok = Reply(status: 200, contentType: "text/plain", body: "")
    private static let badRequest = Reply(status: 400, contentType: "text/plain", body: "")
    private static let vendorError = Reply(status: 520, contentType: "text/xml", body: errorBody)

    private mutating func dispatch(method: String, path: String, query: [String: String], contentLength: String?,
                                   body: String, clientIP: String) -> Reply {
        switch (method, path) {
        case ("GET", "/get_connectmode.cgi"):
            return Self.xml("<connectmode>\(connectMode)</connectmode>")
        case ("GET", "/get_commandlist.cgi"):
            return Self.xml(Self.commandList)
        case ("GET", "/get_caminfo.cgi"):
            return Self.xml("<caminfo><model>\(model)</model></caminfo>")
        case ("GET", "/switch_cammode.cgi"):
            guard let m = query["mode"], ["rec", "play", "shutter"].contains(m) else { return Self.badRequest }
            if let q = query["lvqty"] {
                guard m != "play", Self.lvqtyValues.contains(q) else { return Self.badRequest }
                lvqty = q
            }
            mode = m
            touchFrame = nil
            var r = Self.ok
            if liveView {
                liveView = false
                r.effects = [.stopLiveView]
            }
            return r
        case ("GET", "/exec_takemisc.cgi"):
            switch query["com"] {
            case "startliveview":
                guard let p = query["port"].flatMap({ Int($0) }), (1...65535).contains(p) else { return Self.badRequest }
                guard mode == "rec" else { return Self.vendorError }
                liveView = true
                var r = Self.ok
                r.effects = [.startLiveView(ip: clientIP, port: p)]
                return r
            case "stopliveview":
                liveView = false
                var r = Self.ok
                r.effects = [.stopLiveView]
                return r
            default:
                return Self.badRequest
            }
        case ("GET", "/get_camprop.cgi"):
            guard let name = query["propname"] else { return Self.badRequest }
            guard mode == "rec" else { return Self.vendorError }
            switch query["com"] {
            case "desc":
                if name == "desclist" {
                    return Self.xml("<desclist>" + Self.properties.map(desc).joined() + "</desclist>")
                }
                guard let p = Self.properties.first(where: { $0.name == name }) else { return Self.badRequest }
                return Self.xml(desc(p))
            case "get":
                guard let v = value(of: name) else { return Self.badRequest }
                return Self.xml("<get><value>\(v)</value></get>")
            default:
                return Self.badRequest
            }
        case ("POST", "/set_camprop.cgi"):
            let name = query["propname"] ?? ""
            let value = Self.element("value", in: body)
            let status: Int
            if contentLength == nil {
                status = 411
            } else if query["com"] != "set" || Self.properties.first(where: { $0.name == name }) == nil || value == nil {
                status = 400
            } else if mode != "rec" {
                status = 520
            } else if let p = Self.properties.first(where: { $0.name == name }), p.writable, let v = value, p.allowed.contains(v) {
                values[name] = v
                status = 200
            } else {
                status = 520
            }
            setCamprops.append(OlympusSetCampropRecord(propname: name, value: value, status: status))
            switch status {
            case 200: return Self.ok
            case 520: return Self.vendorError
            default: return Reply(status: status, contentType: "text/plain", body: "")
            }
        case ("GET", "/exec_takemotion.cgi"):
            guard mode == "rec" else { return Self.vendorError }
            switch query["com"] {
            case "assignafframe":
                guard let point = query["point"], let (px, py) = Self.point(point) else { return Self.badRequest }
                guard px < width, py < height else { return Self.vendorError }
                touchPoints.append((px, py))
                let f = frameForTouch(at: px, py)
                touchFrame = f
                return Self.xml("<response><affocus>ok</affocus><afframepoint>\(OlympusLiveViewSize.pad4(f.x))x\(OlympusLiveViewSize.pad4(f.y))</afframepoint><afframesize>\(OlympusLiveViewSize.pad4(f.size))x\(OlympusLiveViewSize.pad4(f.size))</afframesize></response>")
            case "releaseafframe":
                touchFrame = nil
                return Self.ok
            case "starttake":
                guard liveView else { return Self.vendorError }
                if let why = refuseShots {
                    return Reply(status: 520, contentType: "text/xml",
                                 body: "<?xml version=\"1.0\"?><response><errorcode>0xB001</errorcode><errormsg>\(why)</errormsg><dbgmsg>reserved</dbgmsg></response>")
                }
                let f = touchFrame ?? frameForTouch(at: width / 2, height / 2)
                touchFrame = nil
                var r = Self.xml("<response><take>ok</take><affocus>ok</affocus><afframepoint>\(OlympusLiveViewSize.pad4(f.x))x\(OlympusLiveViewSize.pad4(f.y))</afframepoint><afframesize>\(OlympusLiveViewSize.pad4(f.size))x\(OlympusLiveViewSize.pad4(f.size))</afframesize></response>")
                r.effects = [.shoot]
                return r
            default:
                return Self.badRequest
            }
        case ("GET", "/get_thumbnail.cgi"):
            guard let dir = query["DIR"], dir.hasPrefix(Self.cardFolder + "/"),
                  let bytes = thumbnail(String(dir.dropFirst(Self.cardFolder.count + 1))) else {
                return Reply(status: 404, contentType: "text/plain", body: "")
            }
            return Reply(status: 200, contentType: "image/jpeg", body: "", bytes: bytes)
        case ("GET", "/get_imglist.cgi"):
            guard let dir = query["DIR"], let text = imageList(dir) else { return Reply(status: 404, contentType: "text/plain", body: "") }
            return Reply(status: 200, contentType: "text/plain", body: text)
        case ("GET", _) where path.hasPrefix(Self.cardFolder + "/"):
            let name = String(path.dropFirst(Self.cardFolder.count + 1))
            guard let f = card.first(where: { $0.name == name }) else { return Reply(status: 404, contentType: "text/plain", body: "") }
            return Reply(status: 200, contentType: "image/jpeg", body: "", bytes: f.bytes)
        default:
            return Reply(status: 404, contentType: "text/plain", body: "")
        }
    }

    /// The touch frame for a point: centred on it, then moved into the active area.
    func frameForTouch(at px: Int, _ py: Int) -> (x: Int, y: Int, size: Int) {
        let s = touchFrameSize
        let a = activeArea
        let x = min(max(px - s / 2, a.x), a.x + a.w - s)
        let y = min(max(py - s / 2, a.y), a.y + a.h - s)
        return (x, y, s)
    }

    private func desc(_ p: Property) -> String {
        var s = "<desc><propname>\(p.name)</propname><attribute>\(p.writable ? "getset" : "get")</attribute>"
        s += "<value>\(value(of: p.name) ?? "")</value>"
        if !p.allowed.isEmpty { s += "<enum>\(p.allowed.joined(separator: " "))</enum>" }
        return s + "</desc>"
    }

    // MARK: Parsing helpers

    /// `XXXXxYYYY` → (x, y); nil unless both are 4-digit decimals.
    static func point(_ s: String) -> (Int, Int)? {
        let parts = s.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 4 && $0.allSatisfy(\.isNumber) }),
              let x = Int(parts[0]), let y = Int(parts[1]) else { return nil }
        return (x, y)
    }

    /// The text of the first `<name>…</name>` in `xml`.
    static func element(_ name: String, in xml: String) -> String? {
        guard let open = xml.firstRange(of: "<\(name)>") else { return nil }
        let after = xml[open.upperBound...]
        guard let close = after.firstRange(of: "</\(name)>") else { return nil }
        return String(after[..<close.lowerBound])
    }

    /// Percent-decoded path and query options (a card file asked for by its encoded name is found).
    static func split(_ uri: String) -> (String, [String: String]) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = decode(parts.first ?? "")
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[decode(kv[0])] = kv.count == 2 ? decode(kv[1]) : ""
            }
        }
        return (path, query)
    }

    static func decode(_ s: Substring) -> String {
        var out: [UInt8] = []
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count, let v = UInt8(String(decoding: u[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                out.append(v)
                i += 3
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A plausible `get_commandlist.cgi` answer (structure of olympus.md §4.1).
    static let commandList: String = {
        func cgi(_ name: String, _ method: String = "get", _ cmds: String = "") -> String {
            "<cgi name=\"\(name)\"><http_method type=\"\(method)\">\(cmds)</http_method></cgi>"
        }
        func cmd(_ opt: String, _ params: [String], _ inner: String = "") -> String {
            "<cmd1 name=\"\(opt)\">" + params.map { "<param1 name=\"\($0)\">\(inner)</param1>" }.joined() + "</cmd1>"
        }
        var s = "<oishare><version>2.60</version>"
        s += "<support func=\"web\"/><support func=\"remote\"/><support func=\"gps\"/><support func=\"release\"/>"
        s += cgi("get_connectmode") + cgi("get_caminfo") + cgi("get_commandlist")
        s += cgi("switch_cammode", "get", "<cmd1 name=\"mode\"><param1 name=\"rec\"><cmd2 name=\"lvqty\">"
                 + lvqtyValues.map { "<param2 name=\"\($0)\"/>" }.joined() + "</cmd2></param1><param1 name=\"play\"/><param1 name=\"shutter\"/></cmd1>")
        s += cgi("exec_takemisc", "get", "<cmd1 name=\"com\"><param1 name=\"startliveview\"><cmd2 name=\"port\"/></param1><param1 name=\"stopliveview\"/></cmd1>")
        s += cgi("exec_takemotion", "get", "<cmd1 name=\"com\"><param1 name=\"assignafframe\"><cmd2 name=\"point\"/></param1><param1 name=\"releaseafframe\"/><param1 name=\"starttake\"/></cmd1>")
        s += cgi("get_camprop", "get", cmd("com", ["desc", "get"], "<cmd2 name=\"propname\"/>"))
        s += cgi("set_camprop", "post", cmd("com", ["set"], "<cmd2 name=\"propname\">" + properties.filter(\.writable).map { "<param2 name=\"\($0.name)\"/>" }.joined() + "</cmd2>"))
        s += cgi("get_imglist", "get", "<cmd1 name=\"DIR\"><param1/></cmd1>")
        s += cgi("exec_pwoff")
        return s + "</oishare>"
    }()
}
