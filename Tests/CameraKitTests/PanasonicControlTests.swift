import CameraEmulators
import CameraKit
import Foundation
import LiveViewCore
import Testing
import TestSupport

@Suite(.serialized, .tags(.integration, .sanitized)) struct PanasonicControlTests {
    @Test func everyCommonPropertyIsOneSetsettingWithPanasonicsValue() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 3))
        let cases: [(PropertyName, PropertyValue, String, String)] = [
            (.whiteBalance, .text("tungsten"), "whitebalance", "halogen"),
            (.whiteBalance, .text("daylight"), "whitebalance", "daylight"),
            (.iso, .number(400), "iso", "400"),
            (.iso, .text("auto"), "iso", "auto"),
            (.shutterSpeed, .text("1/250"), "shtrspeed", "2048/256"),
            (.shutterSpeed, .text("1/1000"), "shtrspeed", "2560/256"),
            (.aperture, .text("5.6"), "focal", "1280/256"),
            (.aperture, .text("2.8"), "focal", "768/256"),
            (.exposureCompensation, .number(-0.7), "exposure", "-2/3"),
            (.exposureCompensation, .number(1), "exposure", "1"),
            (.focusMode, .text("af-c"), "focusmode", "afc"),
            (.focusMode, .text("mf"), "focusmode", "mf"),
        ]
        for (name, value, type, pana) in cases {
            let before = s.emulator.requests(mode: "setsetting").count
            try await s.driver.setProperty(name, to: value)
            let sets = s.emulator.requests(mode: "setsetting").dropFirst(before)
            #expect(sets.count == 1, "\(name) \(value)")
            #expect(sets.first?.type == type && sets.first?.value == pana, "\(name) \(value) → \(String(describing: sets.first))")
            #expect(sets.first?.result == "ok")
        }
        #expect(s.emulator.currentSettings["focusmode"] == "mf")
        // Read back in the common vocabulary.
        try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
        let props = try await s.driver.properties()
        #expect(props.count == PropertyName.allCases.count)
        let byName = Dictionary(uniqueKeysWithValues: props.map { ($0.name, $0) })
        #expect(byName[.whiteBalance]?.value == .text("tungsten"))
        #expect(byName[.whiteBalance]?.displayText == "halogen")
        #expect(byName[.iso]?.value == .text("auto"))
        #expect(byName[.shutterSpeed]?.value == .text("1/1000"))
        #expect(byName[.aperture]?.value == .text("2.8"))
        #expect(byName[.exposureCompensation]?.value == .number(1))
        #expect(byName[.focusMode]?.value == .text("mf"))
        // Choices come from the camera (allmenu + lens): f/2.8…f/22, 60 s…1/16000.
        #expect(byName[.aperture]?.choices.first == .text("2.8"))
        #expect(byName[.aperture]?.choices.last == .text("22"))
        #expect(byName[.shutterSpeed]?.choices.first == .text("60\""))
        #expect(byName[.shutterSpeed]?.choices.last == .text("1/16000"))
        #expect(byName[.exposureCompensation]?.choices.contains(.number(-0.3)) == true)
        #expect(byName[.focusMode]?.choices.contains(.text("af-f")) == true)
        await s.shutdown()
    }

    @Test func invalidValuesAreRefusedWithoutARequest() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 3))
        // Let the session settle (allmenu/lens are read at session start), then count requests.
        let before = s.emulator.requests.filter { $0.mode != "getstate" }.count
        let bad: [(PropertyName, PropertyValue)] = [
            (.iso, .number(123)), (.shutterSpeed, .text("1/3000")), (.aperture, .text("1.4")),
            (.exposureCompensation, .number(7)), (.focusMode, .text("dmf")), (.whiteBalance, .text("5500K")),
        ]
        for (name, value) in bad {
            do {
                try await s.driver.setProperty(name, to: value)
                Issue.record("\(name) \(value) accepted")
            } catch CameraControlError.invalidValue(let p, let v, let valid) {
                #expect(p == name)
                #expect(v == value.description)
                #expect(!valid.isEmpty)
                if name == .aperture { #expect(valid.first == "2.8") }
                if name == .iso { #expect(valid.contains("400")) }
            }
        }
        let after = s.emulator.requests.filter { $0.mode != "getstate" }.count
        #expect(after == before, "no request reached the camera")
        #expect(s.emulator.requests(mode: "setsetting").isEmpty)
        await s.shutdown()
    }

    @Test func cameraErrorRepliesBecomeClearErrors() async throws {
        let s = try await PanasonicSetup.make(access: .none, start: false)
        // A busy answer is waited out (asked again after 0.5 s), never passed on at once ...
        s.emulator.failNext(mode: "setsetting", type: "iso", result: "err_busy")
        try await s.driver.setProperty(.iso, to: .number(400))
        let sets = s.emulator.requests(mode: "setsetting", type: "iso")
        #expect(sets.map(\.result) == ["err_busy", "ok"] && s.emulator.currentSettings["iso"] == "400", "\(sets)")
        if sets.count == 2 { #expect(sets[1].atNanos - sets[0].atNanos >= 450_000_000, "asked again at once") }
        // ... but a body busy for longer than 8 s is: 503 (unavailable), saying it is busy.
        for _ in 0..<6 { s.emulator.failNext(mode: "setsetting", type: "iso", result: "err_busy") }  // 0.5+1+2+2+2 s of pauses
        do {
            try await s.driver.setProperty(.iso, to: .number(800))
            Issue.record("expected the camera to stay busy")
        } catch CameraControlError.unavailable(let why) {
            #expect(why.contains("busy") && why.contains("err_busy"), "\(why)")
        }
        #expect(s.emulator.requests(mode: "setsetting", type: "iso").count == 2 + 6, "asked a busy camera other than 6 times in 8 s")
        s.emulator.failNext(mode: "setsetting", type: "focusmode", result: "err_non_support")
        await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.focusMode, to: .text("mf")) }
        do {
            s.emulator.failNext(mode: "setsetting", type: "focusmode", result: "err_non_support")
            try await s.driver.setProperty(.focusMode, to: .text("mf"))
        } catch CameraControlError.notSupported(let what) {
            #expect(what.contains("err_non_support"))
        }
        // err_unsuitable_app twice (the retry after re-registering fails too) → the camera's text.
        s.emulator.failNext(mode: "getsetting", type: "iso", result: "err_unsuitable_app")
        s.emulator.failNext(mode: "getsetting", type: "iso", result: "err_unsuitable_app")
        do {
            _ = try await s.driver.property(.iso)
            Issue.record("expected err_unsuitable_app")
        } catch CameraControlError.camera(let code, let message) {
            #expect(code == PanasonicResult.code("err_unsuitable_app"))
            #expect(message.hasPrefix("err_unsuitable_app"))
        }
        // Once only: the driver registers again and the retry succeeds.
        s.emulator.failNext(mode: "getsetting", type: "iso", result: "err_unsuitable_app")
        let p = try await s.driver.property(.iso)
        #expect(p.value == .number(400), "the ISO the busy-then-ok set left: \(p.value)")
        #expect(CameraControlError.camera(code: 3, message: "err_busy: x").description.contains("err_busy"))
        await s.shutdown()
    }

    @Test func alreadyConnectedIsReportedWithTheCamerasText() async throws {
        let s = try await PanasonicSetup.make(access: .reqAcc, start: false)
        s.emulator.failNext(mode: "accctrl", result: "err_already_connected")
        do {
            _ = try await s.driver.property(.iso)
            Issue.record("expected err_already_connected")
        } catch CameraControlError.camera(let code, let message) {
            #expect(code == PanasonicResult.code("err_already_connected"))
            #expect(message.hasPrefix("err_already_connected"))
        }
        await s.shutdown()
    }

    @Test func userRefusalStopsTheDriverForGood() async throws {
        let s = try await PanasonicSetup.make(access: .reqAcc, start: false)
        s.emulator.failNext(mode: "accctrl", result: "err_user_refused")
        s.driver.start(hub: s.hub)
        #expect(await waitUntil(timeout: 3) { s.driver.state == .failed })
        try await Task.sleep(for: .milliseconds(600))
        #expect(s.emulator.requests(mode: "accctrl").count == 1, "never asks again")
        #expect(s.driver.lastError?.contains("err_user_refused") == true)
        await s.shutdown()
    }

    @Test func touchFocusSendsThousandthsOfTheImage() async throws {
        let s = try await PanasonicSetup.make()
        #expect(await s.collector.wait(for: 3))
        try await s.driver.touchFocus(x: 320, y: 120, imageWidth: 640, imageHeight: 480)
        try await s.driver.touchFocus(x: 700, y: -5, imageWidth: 640, imageHeight: 480)
        let touches = s.emulator.requests(mode: "camctrl")
        #expect(touches.map { "\($0.type ?? "") \($0.value ?? "") \($0.value2 ?? "")" } == [
            "touch 500/250 on", "touch 500/250 off", "touch 1000/0 on", "touch 1000/0 off",
        ])
        #expect(touches.allSatisfy { $0.result == "ok" })
        await s.shutdown()
    }

    @Test func repliesWithLineEndsAndEntities() {
        let csv = PanasonicReply(text: "ok,S5D-FB94FA,remote,open,0123456789ABCDEF\n")
        #expect(csv.fields.last == "0123456789ABCDEF")
        let crlf = PanasonicReply(text: "ok_under_research_no_msg,S5D,remote_encrypted\r\n")
        #expect(crlf.result == "ok_under_research_no_msg" && crlf.fields.last == "remote_encrypted")
        let xml = PanasonicReply(text: "\u{FEFF}<?xml version=\"1.0\"?>\r\n<camrply><result>err_busy</result></camrply>\n")
        #expect(xml.isXML && xml.result == "err_busy" && !xml.isOK)
        let ent = PanasonicReply(text: "<camrply><result>ok</result><settingvalue device_name=\"a&amp;b &#x41;\"></settingvalue></camrply>")
        #expect(ent.settings["device_name"] == "a&b A")
    }

    @Test func endpointURLs() {
        let a = PanasonicEndpoint.parse(url: "panasonic://192.168.54.1")
        #expect(a == PanasonicEndpoint(host: "192.168.54.1", port: 80, liveViewPort: 49152))
        let b = PanasonicEndpoint.parse(url: "panasonic://127.0.0.1:8080/?lvport=0&name=my%20gate")
        #expect(b?.port == 8080 && b?.liveViewPort == 0 && b?.clientName == "my gate")
        #expect(PanasonicEndpoint.parse(url: "sony://1.2.3.4") == nil)
        #expect(PanasonicEndpoint.parse(url: "panasonic://1.2.3.4:99999") == nil)
        #expect(PanasonicEndpoint.parse(url: "panasonic://1.2.3.4?bogus=1") == nil)
        #expect(PanasonicEndpoint.parse(url: "panasonic://") == nil)
    }

    @Test func vocabularyRoundTrips() {
        for k in PanasonicVocabulary.shutterRange {
            let name = PanasonicVocabulary.commonShutter(PanasonicVocabulary.shutterValue(thirds: k))
            #expect(name != nil && PanasonicVocabulary.shutterThirds(name!) == k)
        }
        for k in PanasonicVocabulary.apertureNames.indices {
            let name = PanasonicVocabulary.commonAperture(PanasonicVocabulary.apertureValue(thirds: k))
            #expect(name == PanasonicVocabulary.apertureNames[k])
        }
        #expect(PanasonicVocabulary.commonShutter("1792/256") == "1/125")
        #expect(PanasonicVocabulary.commonShutter("0/256") == "1\"")
        #expect(PanasonicVocabulary.commonShutter("16384/256") == "bulb")
        #expect(PanasonicVocabulary.commonShutter("65280/256") == "2\"", "S5 unsigned read-back of -256")
        #expect(PanasonicVocabulary.commonAperture("2304/256") == "22")
        #expect(PanasonicVocabulary.commonAperture("32767/256") == nil)
        #expect(PanasonicVocabulary.panasonicEV(-2.0 / 3) == "-2/3")
        #expect(PanasonicVocabulary.ev("-14/3") == -14.0 / 3)
    }
}

/// The real `cam.cgi` replies in ../shared/fixtures/panasonic (origin licences unclear, so they
/// are read in place, not copied; skipped when the directory is absent).
@Suite(.enabled(if: FileManager.default.fileExists(atPath: PanasonicFixtures.dir),
                "needs ../shared/fixtures/panasonic (real camera replies, not copied into the repo)"))
struct PanasonicFixtureTests {
    func load(_ name: String) throws -> PanasonicReply {
        let data = try #require(FileManager.default.contents(atPath: "\(PanasonicFixtures.dir)/\(name)"))
        return PanasonicReply(body: Array(data))
    }

    @Test func getstateReplies() throws {
        let g80 = try load("lumixlinkdesktop-G80-getstate-recmode.xml")
        #expect(g80.isOK && g80.isXML)
        #expect(g80.elements["cammode"] == "rec")
        #expect(g80.elements["version"] == "D2.91")
        #expect(g80.elements["operate"] == "enable/disable")
        let s5 = try load("sciens-S5-getstate-playmode.xml")
        #expect(s5.isOK)
        #expect(s5.elements["cammode"] == "play")
    }

    @Test func getsettingReplies() throws {
        let iso = try load("sciens-S5-getsetting-iso.xml")
        #expect(iso.settings["iso"] == "auto")
        #expect(PanasonicVocabulary.commonISO(iso.settings["iso"]!) == .text("auto"))
        let sh = try load("sciens-S5-getsetting-shtrspeed.xml")
        #expect(sh.settings["shtrspeed"] == "2048/256")
        #expect(PanasonicVocabulary.commonShutter(sh.settings["shtrspeed"]!) == "1/250")
        let focal = try load("sciens-S5-getsetting-focal-playmode.xml")
        #expect(focal.settings["focal"] == "32767/256")
        #expect(PanasonicVocabulary.commonAperture(focal.settings["focal"]!) == nil)
    }

    @Test func menuAndCapabilityReplies() throws {
        let gh4 = try load("gmaster-allmenu-GH4.xml")
        #expect(gh4.isOK)
        let menu = PanasonicXML.menuValues(gh4.text)
        #expect(menu["whitebalance"]?.contains("halogen") == true)
        #expect(menu["iso"]?.first == "auto")
        #expect(menu["exposure"]?.count == 31)
        var offered = PanasonicVocabulary.Offered.defaults
        offered.apply(menu: menu)
        #expect(offered.exposure.first == "-5")
        let s5 = PanasonicXML.menuValues(try load("sciens-S5-getinfo-allmenu.xml").text)
        #expect(s5["focusmode"] == ["afs", "afc", "mf"])
        for name in ["gmaster-capability-GH4.xml", "gmaster-capability-GH5.xml", "gmaster-curmenu-GH4.xml"] {
            #expect(try load(name).isOK, "\(name)")
        }
        let gh5 = try load("gmaster-capability-GH5.xml")
        #expect(gh5.elements["comm_proto_ver"] != nil)
    }

    @Test func lensCSVFromTheNotes() {
        let r = PanasonicReply(text: "ok,2304/256,32767/256,3584/256,-1792/256,0,on,0,0,on,0/0,off,off")
        #expect(!r.isXML && r.isOK)
        var o = PanasonicVocabulary.Offered.defaults
        o.apply(lens: r.fields)
        #expect(PanasonicVocabulary.apertureNames[o.apertureThirds.upperBound] == "22")
        #expect(o.shutterThirds.upperBound == 42)
    }
}

enum PanasonicFixtures {
    static let dir = Locations.shared("fixtures/panasonic")
    static let capture = Locations.shared("conformance/captures/lumix-af.pcap")
}
