import CameraKit
import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing
import TestSupport

/// A Sony Alpha over PTP/IP ("PC Remote") that livegate did not write: `Tests/Scripts/sony_ptp_cam.py`,
/// written only from the protocol notes (ptp.md, sony.md §4) by a session that never saw livegate's
/// PTP code. It logs every live-view dataset with the AF frame its FocalFrameInfo described, every
/// property it was told to set, and every shot (`frames.jsonl`, `requests.jsonl`, `shots.jsonl`).
@Suite(.serialized, .tags(.integration)) struct SonyPTPIndependentCameraTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/sony_ptp_cam.py").path
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil

    static func camera(_ dir: URL, _ extra: [String] = []) async throws -> PythonCamera {
        try await PythonCamera(script: script, dir: dir, arguments: [
            "--shots-log", dir.appendingPathComponent("shots.jsonl").path, "--size", "640x360",
        ] + extra, portFlag: "--port", readyPrefix: "ready ptp=")
    }

    /// Collects the JPEG digest and AF areas of every frame the hub publishes.
    final class Seen: Sendable {
        final class List: Sendable { let frames = Mutex<[(sha: String, af: [PixelRect])]>([]) }
        let list = List()
        let pacer: FramePacer
        var count: Int { list.frames.withLock { $0.count } }
        var frames: [(sha: String, af: [PixelRect])] { list.frames.withLock { $0 } }

        init() {
            let list = self.list
            pacer = FramePacer(name: "sony-ptp-seen") { f, done in
                let entry = (SHA256.hex(Array(f.bytes)), f.afAreas.map(\.pixels))
                list.frames.withLock { $0.append(entry) }
                f.release()
                done()
            }
        }
    }

    /// Live view with the AF frame of each dataset on that dataset's JPEG (120 distinct JPEGs, one
    /// per step of the camera's AF circle, so a JPEG names the frame it came in).
    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func afFramesLandOnTheirJPEGs() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-af")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--frames", "120"])
        let gateway = try await startGateway(camera: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-af")
        let cam = try #require(gateway.cameras.first)
        let seen = Seen()
        cam.hub.attach(seen.pacer)
        let streamed = await waitUntil(timeout: 40) { seen.count >= 150 }
        cam.hub.detach(seen.pacer)
        await gateway.stop()
        await camera.stop()
        #expect(streamed, "\(seen.count) frames from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")

        var sent: [String: [Int]] = [:]
        for f in camera.frames {
            guard let sha = f["sha256"] as? String, let af = f["af"] as? [Int], af.count == 4 else { continue }
            sent[sha] = af
        }
        var withBox = 0, placed = 0
        var misplaced: [String] = []
        for f in seen.frames {
            guard let box = sent[f.sha] else { continue }
            withBox += 1
            let ok = f.af.contains { r in zip([r.x, r.y, r.width, r.height], box).allSatisfy { abs($0 - $1) <= 2 } }
            if ok { placed += 1 } else if misplaced.count < 5 { misplaced.append("sent \(box) got \(f.af)") }
        }
        print("sony-ptp (independent camera): \(placed) of \(withBox) AF frames in place")
        #expect(withBox >= 140, "\(withBox) frames were frames the camera logged")
        #expect(placed * 100 >= withBox * 99, "\(placed) of \(withBox) AF frames in place; e.g. \(misplaced)")
    }

    /// Every common property set through livegate reaches the camera as the code and value the
    /// notes give (the camera logs the set and answers OK only to a value it offers).
    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func propertiesReachTheCameraAsItsOwnCodes() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-props")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir)
        let gateway = try await startGateway(camera: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-props")
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 10 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        let wanted: [(PropertyName, String, code: Int, value: Int)] = [
            (.whiteBalance, "daylight", 0x5005, 4),
            (.aperture, "5.6", 0x5007, 560),
            (.exposureCompensation, "-0.7", 0x5010, -667),
            (.shutterSpeed, "1/250", 0xD20D, 0x0001_00FA),
            (.iso, "400", 0xD21E, 400),
        ]
        for (name, text, code, value) in wanted {
            do {
                try await cam.driver.setProperty(name, to: CommonValues.parse(text, for: name))
            } catch {
                Issue.record("\(name.rawValue) \(text): \(error)")
                continue
            }
            let sets = camera.requests.filter { $0["ev"] as? String == "set" && $0["code"] as? String == String(format: "0x%04X", code) }
            #expect(sets.contains { ($0["value"] as? Int) == value && $0["result"] as? String == "0x2001" },
                    "\(name.rawValue) \(text): the camera logged \(sets)")
        }
        // Read back in the vocabulary's words, never as raw codes.
        let props = try await cam.driver.properties()
        for (name, text, _, _) in wanted {
            let shown = props.first { $0.name == name }?.value?.description
            #expect(shown == text, "\(name.rawValue): shown as \(shown ?? "nothing"), set to \(text)")
        }
        await gateway.stop()
        await camera.stop()
    }

    /// The camera's shots log in the `ev` words `IndependentCameraChecks` reads: a card file is
    /// `card`, a shot `captured` or `body_shot` (its copy on the card is that same shot).
    static let translate: @Sendable ([String: Any]) -> [String: Any]? = { line in
        var o = line
        switch line["ev"] as? String {
        case "captured": o["ev"] = line["origin"] as? String == "body" ? "body_shot" : "captured"
        case "card" where line["origin"] as? String == "card": break
        default: return nil
        }
        return o
    }

    /// A remote shot and a shot with the body's button, saved byte for byte against the camera's
    /// log, each an event; the card (in the camera's contents-transfer mode, switched inside the
    /// session) listed whole with both shots on it, every file and a range read byte for byte;
    /// live view going on.
    @Test(.enabled(if: usable && Locations.program("curl") != nil, "needs python3, ffmpeg and curl"))
    func captureBodyShotAndCard() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--card", "--shots-on-card"])
        try await IndependentCameraChecks.with(camera, url: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-capture",
                                               objectsLog: "shots.jsonl", translate: Self.translate) { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam) }
        }
        let modes = camera.requests.filter { $0["ev"] as? String == "op" && $0["code"] as? String == "0x9212" }
            .compactMap { $0["params"] as? [Int] }
        #expect(modes.first == [2, 1, 0], "contents transfer was asked as \(modes)")
    }

    /// The other reading of the notes: a body that takes contents transfer only in a session opened
    /// with SDIO_OpenSession for transfer. livegate reconnects in such a session (mode 2), lists
    /// the card, reads files byte for byte, and the live view runs in that session again.
    @Test(.enabled(if: usable && Locations.program("curl") != nil, "needs python3, ffmpeg and curl"))
    func aBodyThatShowsItsCardOnlyInATransferSession() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-sdio")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--card", "--transfer-session", "sdio", "--card-files", "300"])
        try await IndependentCameraChecks.with(camera, url: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-sdio",
                                               objectsLog: "shots.jsonl", translate: Self.translate) { checks, cam in
            guard await checks.streams(cam) else { return }
            let list = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files?limit=1000")
            let files = (try? JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["files"] as? [[String: Any]] ?? []
            let onCard = checks.objects(["card"])
            #expect(list.code == "200" && files.count == onCard.count && onCard.count == 304,
                    "\(list.code): \(files.count) listed of \(onCard.count): \(String(decoding: list.body.prefix(300), as: UTF8.self))")
            let opened = camera.requests.filter { $0["ev"] as? String == "op" && $0["code"] as? String == "0x9210" }
                .compactMap { $0["params"] as? [Int] }
            #expect(opened.contains { $0.count >= 2 && $0[1] == 2 }, "no session opened for transfer: \(opened)")
            for want in onCard.prefix(5) + onCard.suffix(2) {
                guard let path = want["path"] as? String else { continue }
                let got = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files\(path)")
                #expect(got.code == "200" && SHA256.hex(got.body) == want["sha256"] as? String, "\(path): \(got.code) \(got.body.count) bytes")
            }
            let frames = cam.driver.stats.frames
            #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > frames + 10 }, "live view did not come back")
        }
    }

    /// The camera drops its connections half-way through the first read of a card file: that
    /// download fails (never a short file passed off as whole), the next one is whole, and live
    /// view comes back.
    @Test(.enabled(if: usable && Locations.program("curl") != nil, "needs python3, ffmpeg and curl"))
    func aCardReadCutHalfWay() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-cardbreak")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--card", "--break-card-read-once"])
        try await IndependentCameraChecks.with(camera, url: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-cardbreak",
                                               objectsLog: "shots.jsonl", translate: Self.translate) { checks, cam in
            guard await checks.streams(cam) else { return }
            let movie = try #require(checks.objects(["card"]).first { ($0["name"] as? String)?.hasSuffix(".MP4") == true })
            let path = try #require(movie["path"] as? String)
            let cut = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files\(path)")
            #expect(SHA256.hex(cut.body) != movie["sha256"] as? String, "the cut read was passed off as whole")
            #expect(PythonCamera.lines(dir.appendingPathComponent("shots.jsonl")).contains { $0["ev"] as? String == "broken_card_read" })
            // Once the camera is back, the same file whole.
            #expect(await waitUntil(timeout: 30) { cam.driver.state == .streaming })
            var whole: (code: String, body: [UInt8]) = ("", [])
            for _ in 0..<10 {
                whole = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files\(path)")
                if whole.code == "200" { break }
                try await Task.sleep(for: .seconds(1))
            }
            #expect(whole.code == "200" && SHA256.hex(whole.body) == movie["sha256"] as? String, "\(whole.code) \(whole.body.count) bytes \(String(decoding: whole.body.prefix(300), as: UTF8.self))")
            let frames = cam.driver.stats.frames
            #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > frames + 10 }, "live view did not come back")
        }
    }

    /// The camera drops its connections half-way through the first read of a shot; the shot stays
    /// in its memory: livegate fetches it once it is back, whole, under its name, nothing partial.
    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func aShotWhoseTransferBrokeIsFetchedAgain() async throws {
        let dir = try temporaryDirectory("livegate-sony-ptp-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--break-transfer-once"])
        let captures = dir.appendingPathComponent("captures")
        let gateway = try await startGateway(camera: "sony-ptp://127.0.0.1:\(camera.port)", label: "sony-ptp-broken") {
            $0.capturesDirectory = captures.path
        }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 10 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        // The capture itself may fail with the connection; the picture must not be lost.
        let shot = try? await gateway.capture(camera: cam, autofocus: false)
        let lines = PythonCamera.lines(dir.appendingPathComponent("shots.jsonl"))
        #expect(lines.contains { $0["ev"] as? String == "broken" }, "the camera did not break the transfer: \(lines)")
        let want = lines.first { $0["ev"] as? String == "captured" }?["sha256"] as? String
        #expect(want != nil)
        #expect(await waitUntil(timeout: 30) { gateway.captures(camera: "cam0").contains { $0.sha256 == want } },
                "the shot was not saved after the broken transfer (capture answered \(String(describing: shot.map { $0.map(\.name) })))")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)) ?? []
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)) && names.count == 1, "\(names)")
        #expect(await waitUntil(timeout: 30) { cam.driver.state == .streaming }, "live view did not come back")
        await gateway.stop()
        await camera.stop()
    }
}
