@testable import CameraEmulators
@testable import CameraKit
import CameraWire
import Foundation
import JPEGKit
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport

struct OlympusSetup {
    let emulator: OlympusEmulator
    let driver: OlympusDriver
    let hub: FrameHub
    let collector: FrameCollector

    /// Fast stall handling so the reconnect tests stay short.
    static var fastOptions: OlympusDriver.Options {
        var o = OlympusDriver.Options()
        o.restartAfter = .milliseconds(600)
        o.deadAfter = .milliseconds(1200)
        o.maxBackoff = .milliseconds(500)
        return o
    }

    static func make(configuration: OlympusEmulator.Configuration = .init(), start: Bool = true,
                     options: OlympusDriver.Options = OlympusDriver.Options()) async throws -> OlympusSetup {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = try OlympusEmulator(configuration: configuration, group: group)
        let port = try await emulator.start()
        let driver = OlympusDriver(endpoint: OlympusEndpoint(host: "127.0.0.1", port: port, liveViewPort: 0),
                                   group: group, options: options, logger: olympusLogger())
        let hub = FrameHub()
        let collector = FrameCollector()
        hub.attach(collector.pacer)
        if start { driver.start(hub: hub) }
        return OlympusSetup(emulator: emulator, driver: driver, hub: hub, collector: collector)
    }

    func shutdown() async {
        await driver.stop()
        await emulator.stop()
    }

    /// The frame the emulator sent with this RTP timestamp (frame number).
    func sent(_ seq: UInt64?) -> OlympusEmulator.SentFrame? {
        guard let seq else { return nil }
        return emulator.sentFrames.last { UInt64($0.frameNumber) == seq }
    }
}

func olympusLogger() -> Logger {
    var logger = Logger(label: "test.olympus")
    logger.logLevel = .critical
    return logger
}

/// The AF areas a frame must carry for the metadata the emulator sent (identity: live-view = JPEG pixels).
func olympusExpectedAF(_ m: OlympusRTP.Metadata) -> [PixelRect] {
    var out: [PixelRect] = []
    if let a = m.afFrame, a.width > 0, a.height > 0 {
        out.append(PixelRect(x: Int(a.x), y: Int(a.y), width: Int(a.width), height: Int(a.height)))
    }
    for f in m.faces { out.append(PixelRect(x: Int(f.x), y: Int(f.y), width: Int(f.width), height: Int(f.height))) }
    return out
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct OlympusDriverTests {
    // MARK: Pure parts

    @Test func urlParsing() {
        #expect(OlympusEndpoint.parse(url: "olympus://") == OlympusEndpoint())
        #expect(OlympusEndpoint.parse(url: "olympus://")?.host == "192.168.0.10")
        #expect(OlympusEndpoint.parse(url: "olympus://127.0.0.1:8080?lvport=0&lvqty=1024x768")
                == OlympusEndpoint(host: "127.0.0.1", port: 8080, liveViewPort: 0,
                                   liveViewSize: OlympusLiveViewSize(width: 1024, height: 768)))
        #expect(OlympusEndpoint.parse(url: "olympus://192.168.0.10/?lvport=40000")?.liveViewPort == 40000)
        #expect(OlympusEndpoint.parse(url: "olympus://:81")?.port == 81)
        #expect(OlympusEndpoint.parse(url: "olympus://cam?afspace=lvqty")?.afSpace == .lvqty)
        #expect(OlympusEndpoint.parse(url: "olympus://cam?lvqty=big") == nil)
        #expect(OlympusEndpoint.parse(url: "olympus://cam?lvport=70000") == nil)
        #expect(OlympusEndpoint.parse(url: "olympus://cam?foo=1") == nil)
        #expect(OlympusEndpoint.parse(url: "panasonic://cam") == nil)
        #expect(OlympusCGI.target("exec_takemotion", [("com", "assignafframe"), ("point", "0412x0346")])
                == "/exec_takemotion.cgi?com=assignafframe&point=0412x0346")
    }

    @Test func vocabularyMapsBothWays() {
        let wb = ["0", "18", "16", "17", "20", "35", "64", "23", "256", "257", "258", "259", "512"]
        let presets = ["auto": "0", "daylight": "18", "shade": "16", "cloudy": "17", "tungsten": "20",
                       "fluorescent": "35", "flash": "23", "custom": "512"]
        for (common, code) in presets {
            #expect(OlympusVocabulary.whiteBalanceCode(common, offered: wb) == code)
            #expect(OlympusVocabulary.commonWhiteBalance(code) == common)
        }
        let kelvin = ["3000K": "20", "4000K": "35", "5300K": "18", "6000K": "17", "7500K": "16", "5500K": "23"]
        for (k, code) in kelvin { #expect(OlympusVocabulary.whiteBalanceCode(k, offered: wb) == code) }
        #expect(OlympusVocabulary.whiteBalanceCode("3000k", offered: wb) == "20")
        #expect(OlympusVocabulary.whiteBalanceCode("3600K", offered: wb) == nil)   // 21 not offered
        #expect(OlympusVocabulary.whiteBalanceCode("wb64", offered: wb) == "64")
        #expect(OlympusVocabulary.commonWhiteBalance("64") == "wb64")
        #expect(OlympusVocabulary.whiteBalanceCode("sepia", offered: wb) == nil)

        let iso = ["Auto", "Low", "200", "400"]
        #expect(OlympusVocabulary.commonISO("Auto") == .text("auto"))
        #expect(OlympusVocabulary.commonISO("400") == .number(400))
        #expect(OlympusVocabulary.isoValue(.text("auto"), offered: iso) == "Auto")
        #expect(OlympusVocabulary.isoValue(.number(400), offered: iso) == "400")
        #expect(OlympusVocabulary.isoValue(.number(100), offered: iso) == nil)

        let shutter = ["livebulb", "60\"", "1.3\"", "1.3", "2", "250"]
        #expect(OlympusVocabulary.commonShutter("60\"") == "60\"")
        #expect(OlympusVocabulary.commonShutter("250") == "1/250")
        #expect(OlympusVocabulary.commonShutter("1.3") == "1/1.3")
        #expect(OlympusVocabulary.shutterValue("1/250", offered: shutter) == "250")
        #expect(OlympusVocabulary.shutterValue("60\"", offered: shutter) == "60\"")
        #expect(OlympusVocabulary.shutterValue("60s", offered: shutter) == "60\"")
        #expect(OlympusVocabulary.shutterValue("1.3\"", offered: shutter) == "1.3\"")
        #expect(OlympusVocabulary.shutterValue("1/1.3", offered: shutter) == "1.3")
        #expect(OlympusVocabulary.shutterValue("1/8000", offered: shutter) == nil)
        // A bare number is ambiguous (the camera's "2" is 1/2 s): refused, the valid values say how to write it.
        #expect(OlympusVocabulary.shutterValue("2", offered: shutter) == nil)
        #expect(OlympusVocabulary.shutterValue("1/2", offered: shutter) == "2")
        #expect(OlympusVocabulary.shutterValue("livebulb", offered: shutter) == "livebulb")

        let f = ["2.8", "5.6", "8.0", "11"]
        #expect(OlympusVocabulary.apertureValue("5.6", offered: f) == "5.6")
        #expect(OlympusVocabulary.apertureValue("f/8", offered: f) == "8.0")
        #expect(OlympusVocabulary.apertureValue("F11", offered: f) == "11")
        #expect(OlympusVocabulary.apertureValue("4", offered: f) == nil)

        let ev = ["-0.7", "-0.3", "0.0", "+0.3", "+0.7"]
        #expect(OlympusVocabulary.commonEV("+0.3") == .number(0.3))
        #expect(OlympusVocabulary.commonEV("0.0") == .number(0))
        #expect(OlympusVocabulary.evValue(.number(0.3), offered: ev) == "+0.3")
        #expect(OlympusVocabulary.evValue(.number(-2.0 / 3), offered: ev) == "-0.7")
        #expect(OlympusVocabulary.evValue(.text("+0.3"), offered: ev) == "+0.3")
        #expect(OlympusVocabulary.evValue(.number(1), offered: ev) == nil)
        #expect(OlympusVocabulary.commonFocusMode(.continuousAF) == "af-c")

        let xml = "<?xml version=\"1.0\"?><desclist><desc><propname>wbvalue</propname><attribute>getset</attribute><value>20</value><enum>0 18 20</enum></desc><desc><propname>touchactiveframe</propname><attribute>get</attribute><value>0064-0048_0512x0384</value></desc></desclist>"
        #expect(OlympusXML.descs(xml) == [
            OlympusPropertyDesc(name: "wbvalue", attribute: "getset", value: "20", allowed: ["0", "18", "20"]),
            OlympusPropertyDesc(name: "touchactiveframe", attribute: "get", value: "0064-0048_0512x0384", allowed: []),
        ])
    }

    @Test func touchPointTranslation() {
        let group = MultiThreadedEventLoopGroup.singleton
        let identity = OlympusDriver(endpoint: OlympusEndpoint(host: "127.0.0.1"), group: group, logger: olympusLogger())
        let a = identity.liveViewPoint(x: 448, y: 383, imageWidth: 640, imageHeight: 480)
        #expect(a.x == 448 && a.y == 383)
        let b = identity.liveViewPoint(x: 700, y: -5, imageWidth: 640, imageHeight: 480)
        #expect(b.x == 639 && b.y == 0)
        let scaled = OlympusDriver(endpoint: OlympusEndpoint(host: "127.0.0.1", afSpace: .lvqty), group: group,
                                   logger: olympusLogger())
        let c = scaled.liveViewPoint(x: 896, y: 766, imageWidth: 1280, imageHeight: 960)
        #expect(c.x == 448 && c.y == 383)
    }

    // MARK: Emulator protocol

    @Test func emulatorEnforcesTheOIShareRules() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = try OlympusEmulator(group: group)
        let port = try await emulator.start()
        let http = CameraHTTP()
        func url(_ t: String) -> HTTPURL { HTTPURL(host: "127.0.0.1", port: port, target: t) }
        let ua = [("User-Agent", "OI.Share v2")]
        #expect(try await http.request("GET", url("/get_caminfo.cgi")).status == 403)
        #expect(try await http.request("GET", url("/get_caminfo.cgi"), headers: [("User-Agent", "curl/8")]).status == 403)
        #expect(try await http.request("GET", url("/get_caminfo.cgi"), headers: [("User-Agent", "OlympusCameraKit")]).status == 200)
        let info = try await http.request("GET", url("/get_caminfo.cgi"), headers: ua)
        #expect(String(decoding: info.body, as: UTF8.self) == "<?xml version=\"1.0\"?><caminfo><model>E-M10 Mark IV</model></caminfo>")
        let list = String(decoding: try await http.request("GET", url("/get_commandlist.cgi"), headers: ua).body, as: UTF8.self)
        #expect(list.contains("<oishare><version>") && list.contains("<cgi name=\"set_camprop\"><http_method type=\"post\">"))
        // Play mode: no live view, no properties.
        #expect(try await http.request("GET", url("/exec_takemisc.cgi?com=startliveview&port=40000"), headers: ua).status == 520)
        #expect(try await http.request("GET", url("/switch_cammode.cgi?mode=rec&lvqty=0123x0456"), headers: ua).status == 400)
        #expect(try await http.request("GET", url("/switch_cammode.cgi?mode=rec&lvqty=0640x0480"), headers: ua).status == 200)
        #expect(emulator.cameraMode == "rec")
        // set_camprop: Content-Length mandatory, known property, value in the enum, not read-only.
        let body = Array(OlympusXML.setBody("20").utf8)
        // (Sent by hand: an HTTP client adds `Content-Length: 0` to a POST without a body.)
        #expect(rawStatus(port: port, "POST /set_camprop.cgi?com=set&propname=wbvalue HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "User-Agent: OI.Share v2\r\nConnection: close\r\n\r\n") == 411)
        #expect(try await http.request("POST", url("/set_camprop.cgi?com=set&propname=nosuch"), headers: ua, body: body).status == 400)
        #expect(try await http.request("POST", url("/set_camprop.cgi?com=set&propname=touchactiveframe"), headers: ua, body: body).status == 520)
        #expect(try await http.request("POST", url("/set_camprop.cgi?com=set&propname=wbvalue"), headers: ua,
                                       body: Array(OlympusXML.setBody("21").utf8)).status == 520)
        #expect(try await http.request("POST", url("/set_camprop.cgi?com=set&propname=wbvalue"), headers: ua, body: body).status == 200)
        #expect(emulator.propertyValue("wbvalue") == "20")
        #expect(emulator.setCamprops.map(\.status) == [411, 400, 520, 520, 200])
        let got = try await http.request("GET", url("/get_camprop.cgi?com=get&propname=touchactiveframe"), headers: ua)
        #expect(String(decoding: got.body, as: UTF8.self) == "<?xml version=\"1.0\"?><get><value>0064-0048_0512x0384</value></get>")
        // Touch-AF: centred 72x72 frame answered as top-left + size, clamped to the inner 80 %.
        let af = try await http.request("GET", url("/exec_takemotion.cgi?com=assignafframe&point=0448x0383"), headers: ua)
        #expect(String(decoding: af.body, as: UTF8.self).contains("<afframepoint>0412x0347</afframepoint><afframesize>0072x0072</afframesize>"))
        let corner = try await http.request("GET", url("/exec_takemotion.cgi?com=assignafframe&point=0000x0479"), headers: ua)
        #expect(String(decoding: corner.body, as: UTF8.self).contains("<afframepoint>0064x0360</afframepoint>"))
        #expect(try await http.request("GET", url("/exec_takemotion.cgi?com=assignafframe&point=12x34"), headers: ua).status == 400)
        #expect(try await http.request("GET", url("/nothing.cgi"), headers: ua).status == 404)
        await emulator.stop()
    }

    // MARK: Driver against the emulator

    @Test func framesArriveByteIdenticalWithTheEmulatorsAFBoxes() async throws {
        var config = OlympusEmulator.Configuration()
        config.firstSequence = 65_000        // the 16-bit sequence number wraps within the first second
        config.faces = [OlympusRTP.Face(x: 40, y: 60, width: 90, height: 100)]
        config.orientation = 6
        let s = try await OlympusSetup.make(configuration: config)
        #expect(await s.collector.wait(for: 45, seconds: 15))
        let port = s.driver.liveViewPort
        await s.shutdown()
        let frames = s.collector.all
        try #require(frames.count >= 45)
        var compared = 0
        let first = frames[0]
        for f in frames {
            // PTS: the frame number (RTP timestamp) at the live view's rate, 30 fps.
            #expect(f.width == 640 && f.height == 480 && f.timeBase == .camera)
            #expect(f.pts.map { $0 - (first.pts ?? 0) } == Int64((f.seq ?? 0) - (first.seq ?? 0)) * 1_000_000_000 / 30)
            guard let sent = s.sent(f.seq) else { continue }
            compared += 1
            #expect(f.bytes == sent.jpeg, "frame \(f.seq ?? 0) differs from what the emulator sent")
            #expect(f.af.map(\.pixels) == olympusExpectedAF(sent.metadata))
            #expect(f.af.last?.kind == .face)
            if let a = sent.metadata.afFrame, a.width > 0 {
                #expect(f.af.first?.kind == .af && f.af.first?.state == (a.colour == 1 ? .focused : .notFocused))
            }
        }
        #expect(compared >= 40)
        let seqs = frames.compactMap(\.seq)
        for (a, b) in zip(seqs, seqs.dropFirst()) { #expect(b > a) }
        // The handshake of olympus.md §3, in order, with the driver's UDP port.
        let paths = s.emulator.requests.map(\.path)
        let order = ["/get_connectmode.cgi", "/get_caminfo.cgi", "/switch_cammode.cgi", "/exec_takemisc.cgi"]
        let idx = order.compactMap { paths.firstIndex(of: $0) }
        #expect(idx.count == 4 && idx == idx.sorted())
        #expect(s.emulator.requests("switch_cammode").first?.query == ["mode": "rec", "lvqty": "0640x0480"])
        let start = try #require(s.emulator.requests("exec_takemisc").first)
        #expect(start.query["com"] == "startliveview" && start.query["port"] == port.map { String($0) })
        #expect(s.emulator.requests("exec_takemisc").last?.query["com"] == "stopliveview")
        #expect(s.driver.model == "E-M10 Mark IV" && s.driver.connectMode == "private" && !s.driver.isOPC)
        #expect(s.driver.orientation == 6)
        #expect(s.driver.lastMetadata?.iso == OlympusRTP.ISOInfo(current: 200, auto: true, extendedWarning: false))
    }

    @Test func whiteBalanceTungstenIsExactlyOneSetCampropWithValue20() async throws {
        let s = try await OlympusSetup.make()
        #expect(await s.collector.wait(for: 3))
        try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
        #expect(s.emulator.setCamprops == [OlympusSetCampropRecord(propname: "wbvalue", value: "20", status: 200)])
        #expect(s.emulator.propertyValue("wbvalue") == "20")
        let props = try await s.driver.properties()
        let wb = try #require(props.first { $0.name == .whiteBalance })
        #expect(wb.value == .text("tungsten") && wb.displayText == "20" && wb.writable)
        #expect(wb.choices.contains(.text("fluorescent")) && wb.choices.contains(.text("wb64")))
        #expect(props.first { $0.name == .iso }?.value == .text("auto"))
        #expect(props.first { $0.name == .shutterSpeed }?.value == .text("1/250"))
        #expect(props.first { $0.name == .aperture }?.value == .text("5.6"))
        #expect(props.first { $0.name == .exposureCompensation }?.value == .number(0))
        #expect(props.first { $0.name == .focusMode } == CameraProperty(name: .focusMode, value: .text("af-s"),
                                                                       displayText: "af-s", choices: [], writable: false))
        // Kelvin text sets the same code.
        try await s.driver.setProperty(.whiteBalance, to: .text("4000K"))
        #expect(s.emulator.setCamprops.map(\.value) == ["20", "35"])
        await s.shutdown()
    }

    @Test func invalidValuesAreRefusedWithoutASetCamprop() async throws {
        let s = try await OlympusSetup.make()
        #expect(await s.collector.wait(for: 3))
        let invalid: [(PropertyName, PropertyValue)] = [
            (.whiteBalance, .text("sepia")), (.iso, .number(123)), (.shutterSpeed, .text("1/8000")),
            (.aperture, .text("1.2")), (.exposureCompensation, .number(7)),
        ]
        for (name, value) in invalid {
            do {
                try await s.driver.setProperty(name, to: value)
                Issue.record("\(name) \(value) was accepted")
            } catch let CameraControlError.invalidValue(property, v, valid) {
                #expect(property == name && v == value.description && !valid.isEmpty)
            }
        }
        await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.focusMode, to: .text("mf")) }
        #expect(s.emulator.setCamprops.isEmpty)
        // Valid ones in every vocabulary: one POST each, the camera's spelling.
        try await s.driver.setProperty(.iso, to: .number(400))
        try await s.driver.setProperty(.shutterSpeed, to: .text("1/250"))
        try await s.driver.setProperty(.shutterSpeed, to: .text("60\""))
        try await s.driver.setProperty(.aperture, to: .text("f/8"))
        try await s.driver.setProperty(.exposureCompensation, to: .number(0.3))
        #expect(s.emulator.setCamprops.map(\.value) == ["400", "250", "60\"", "8.0", "+0.3"])
        #expect(s.emulator.setCamprops.allSatisfy { $0.status == 200 })
        // The live view reflects them (TLV 9, 10, 12).
        #expect(await waitUntil(timeout: 3) {
            let m = s.driver.lastMetadata
            return m?.aperture?.current == 80 && m?.exposureCompensation?.current == 3 && m?.iso?.current == 400
        })
        await s.shutdown()
    }

    @Test func touchFocusSendsTheLiveViewPointAndTheFrameShowsIt() async throws {
        let s = try await OlympusSetup.make()
        #expect(await s.collector.wait(for: 3))
        try await s.driver.touchFocus(x: 448, y: 383, imageWidth: 640, imageHeight: 480)
        #expect(s.emulator.touchPoints.map { [$0.x, $0.y] } == [[448, 383]])
        #expect(s.emulator.requests("exec_takemotion").last?.query == ["com": "assignafframe", "point": "0448x0383"])
        let n = s.collector.count
        #expect(await waitUntil(timeout: 3) {
            s.collector.all.dropFirst(n).contains { f in
                f.af.first?.pixels == PixelRect(x: 412, y: 347, width: 72, height: 72) && f.af.first?.state == .focused
            }
        })
        try await s.driver.releaseTouchFocus()
        let released = s.emulator.touchFrame == nil
        #expect(released)
        await s.shutdown()
    }

    @Test func cameraStoppedAndRestartedOnTheSamePortStreamsAgain() async throws {
        let s = try await OlympusSetup.make(options: OlympusSetup.fastOptions)
        #expect(await s.collector.wait(for: 10))
        #expect(s.driver.state == .streaming)
        let port = s.emulator.port
        await s.emulator.stop()
        // While the camera is away: the state says so, with a reason.
        #expect(await waitUntil(timeout: 5) { s.driver.state == .reconnecting && s.driver.lastError != nil })
        let reason = s.driver.lastError ?? ""
        #expect(reason.contains("connect") || reason.contains("datagram"), "lastError: \(reason)")
        // A new body on the same port (switched on again).
        let second = try OlympusEmulator(port: port, group: MultiThreadedEventLoopGroup.singleton)
        #expect(try await second.start() == port)
        let n = s.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { s.driver.stats.frames >= n + 10 })
        #expect(s.driver.state == .streaming)
        #expect(s.driver.stats.reconnects >= 1)
        #expect(second.requests("exec_takemisc").contains { $0.query["com"] == "startliveview" })
        // And the same emulator instance can be stopped and started again too.
        await second.stop()
        #expect(await waitUntil(timeout: 5) { s.driver.state != .streaming })
        #expect(try await second.start() == port)
        let m = s.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { s.driver.stats.frames >= m + 10 })
        await s.driver.stop()
        await second.stop()
        #expect(s.driver.state == .stopped)
    }

    @Test func lostPacketsDropWholeFramesOnly() async throws {
        var config = OlympusEmulator.Configuration()
        config.chunk = 4000
        let s = try await OlympusSetup.make(configuration: config)
        s.emulator.inject(.dropEveryNthDatagram(23))
        #expect(await s.collector.wait(for: 20, seconds: 15))
        #expect(await waitUntil(timeout: 5) { s.driver.stats.drops >= 3 })
        await s.shutdown()
        var compared = 0
        for f in s.collector.all {
            guard let sent = s.sent(f.seq) else { continue }
            compared += 1
            #expect(!sent.damaged, "frame \(f.seq ?? 0) lost a packet but was published")
            #expect(f.bytes == sent.jpeg)
        }
        #expect(compared >= 10)
    }
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct OlympusStallTests {
    @Test func stalledLiveViewIsAskedForAgainWithoutReconnecting() async throws {
        var options = OlympusDriver.Options()
        options.restartAfter = .milliseconds(500)
        options.deadAfter = .milliseconds(2500)
        let s = try await OlympusSetup.make(options: options)
        #expect(await s.collector.wait(for: 10))
        s.emulator.inject(.stall(seconds: 1.0))
        let n = s.driver.stats.frames
        #expect(await waitUntil(timeout: 6) {
            s.emulator.liveViewSessions >= 2 && s.driver.stats.frames >= n + 10
        })
        #expect(s.driver.state == .streaming)
        #expect(s.driver.stats.reconnects == 0)
        #expect(s.emulator.requests("get_connectmode").count == 1)
        await s.shutdown()
    }

    @Test func missingHostHeaderIs400() {
        var st = OlympusEmulatorState(model: "E-M10 Mark IV", connectMode: "private", width: 640, height: 480)
        let r = st.handle(method: "GET", uri: "/get_caminfo.cgi", userAgent: "OI.Share v2", host: nil, contentLength: nil,
                          body: "", clientIP: "127.0.0.1", checkUserAgent: true)
        #expect(r.status == 400)
        let ok = st.handle(method: "GET", uri: "/get_connectmode.cgi", userAgent: "OI.Share v2", host: "192.168.0.10",
                           contentLength: nil, body: "", clientIP: "127.0.0.1", checkUserAgent: true)
        #expect(ok.status == 200 && ok.body == "<?xml version=\"1.0\"?><connectmode>private</connectmode>")
        let anyAgent = st.handle(method: "GET", uri: "/get_caminfo.cgi", userAgent: "curl/8", host: "h", contentLength: nil,
                                 body: "", clientIP: "127.0.0.1", checkUserAgent: false)
        #expect(anyAgent.status == 200)
        #expect(st.requests.map(\.status) == [400, 200, 200])
    }
}

/// The card listing as OI.Share bodies send it (CRLF lines, FAT dates), with hostile lines dropped.
@Suite struct OlympusCardListingTests {
    @Test func parsesTheListingAndDropsHostileOrMalformedLines() {
        let text = "VER_100\r\n/DCIM/100OLYMP,P6130005.JPG,6137845,0,20685,36243\r\n/DCIM,100OLYMP,0,16,20685,36243\r\n"
            + "/DCIM/100OLYMP,..,1,0,1,1\r\n/DCIM/100OLYMP,a/b.JPG,1,0,1,1\r\nDCIM,x.JPG,1,0,1,1\r\n/DCIM/100OLYMP,y.JPG,big,0,1,1\r\n"
            + "/DCIM/100OLYMP,short\r\n"
        let entries = OlympusCardEntry.parse(text)
        #expect(entries.map(\.path) == ["/DCIM/100OLYMP/P6130005.JPG", "/DCIM/100OLYMP"])
        #expect(entries.first?.size == 6137845 && entries.first?.isDirectory == false)
        #expect(entries.last?.isDirectory == true)
    }
}

/// PTS from the RTP timestamp: a frame number at the live view's rate (olympus.md §6.2), or a
/// 90 kHz clock when the timestamps step like one (the other reading).
@Suite struct OlympusFrameClockTests {
    @Test func frameNumbersAtTheLiveViewRate() {
        var c = OlympusFrameClock(fps: 30)
        #expect(c.pts(frameNumber: 7) == 0)
        #expect(c.pts(frameNumber: 8) == 33_333_333)
        #expect(c.pts(frameNumber: 10) == 100_000_000, "a lost frame leaves its gap")
        #expect(c.pts(frameNumber: 307) == 10_000_000_000)
        #expect(!c.readsAsClock)
        // The camera restarted its live view: numbers from 0 again, PTS from 0 again.
        #expect(c.pts(frameNumber: 0) == 0)
        #expect(c.pts(frameNumber: 1) == 33_333_333)
        var odd = OlympusFrameClock(fps: 29.97)
        _ = odd.pts(frameNumber: 0)
        #expect(odd.pts(frameNumber: 1) == 33_366_700)
        #expect(odd.pts(frameNumber: 2997) == 100_000_000_000)
    }

    @Test func ninetyKilohertzTimestampsReadAsAClock() {
        var c = OlympusFrameClock(fps: 30)
        #expect(c.pts(frameNumber: 90_000) == 0)
        #expect(c.pts(frameNumber: 93_000) == 33_333_333)
        #expect(c.readsAsClock)
        #expect(c.pts(frameNumber: 180_000) == 1_000_000_000)
    }
}

/// The status code of the answer to `request`, written as it is to a new loopback connection
/// (nil when none came within 5 s).
func rawStatus(port: Int, _ request: String) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let bytes = Array(request.utf8)
    guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { return nil }
    var reply = [UInt8](repeating: 0, count: 256)
    let n = recv(fd, &reply, reply.count, 0)
    guard n > 12 else { return nil }
    // "HTTP/1.1 411 …"
    return Int(String(decoding: reply[9..<12], as: UTF8.self))
}
