import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import NIOPosix
import Logging
@testable import Gateway
import Testing
import TestSupport

/// Still capture end to end: the CLI fires the shutter of an emulated Sony camera through the API,
/// the gateway fetches the picture and saves it byte for byte; a shot on the body arrives by itself.
@Suite(.serialized, .tags(.integration)) struct CaptureTests {
    func gateway(_ dir: URL) async throws -> (SonyEmulator, Gateway, Task<Void, any Error>, String) {
        let (emulator, gateway) = try await startSonyGateway(fps: 10, label: "capture") { $0.capturesDirectory = dir.path }
        let (server, base) = try await startAPIServer(gateway)
        let streaming = await waitUntil(timeout: 10) { gateway.cameras.first?.driver.state == .streaming }
        try #require(streaming)
        return (emulator, gateway, server, base)
    }

    /// No hidden temporary file is left beside the saved ones.
    func noPartialFiles(_ dir: URL) throws -> Bool {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("cam0").path)
        return !names.contains { $0.hasPrefix(".") }
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func theCLICapturesAndTheFileIsTheCamerasBytes() async throws {
        let dir = try temporaryDirectory("livegate-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emulator, gateway, server, base) = try await gateway(dir)
        defer { server.cancel() }
        let out = try await runProcessAsync(livegateBinary()!, ["capture", "cam0", "--api", base], timeout: 60)
        #expect(out.status == 0, "\(out.output)")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(out.output.utf8)) as? [String: Any], "\(out.output)")
        let files = try #require(obj["files"] as? [[String: Any]])
        #expect(files.count == 1)
        let name = try #require(files.first?["name"] as? String)
        let camera = try #require(emulator.cardFile(name), "\(name) is not on the emulated card \(emulator.cardNames)")
        let path = try #require(files.first?["path"] as? String)
        #expect(path.hasPrefix(dir.path))
        let saved = try #require(FileManager.default.contents(atPath: path))
        #expect(Array(saved) == camera, "saved \(saved.count) bytes, the camera made \(camera.count)")
        #expect(files.first?["sha256"] as? String == SHA256.hex(camera))
        #expect(files.first?["bytes"] as? Int == camera.count)
        #expect(try noPartialFiles(dir))
        let list = try await runProcessAsync(Locations.program("curl") ?? "/usr/bin/curl", ["-s", "\(base)/api/v1/cameras/cam0/captures"], timeout: 10)
        #expect(list.output.contains("\"name\":\"\(name)\""), "\(list.output)")
        // Live view goes on after the shot.
        let before = gateway.cameras[0].driver.stats.frames
        #expect(await waitUntil(timeout: 5) { gateway.cameras[0].driver.stats.frames > before + 3 })
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }

    @Test func aShotOnTheBodyArrivesWithoutARequestAndLongExposuresWait() async throws {
        let dir = try temporaryDirectory("livegate-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emulator, gateway, server, _) = try await gateway(dir)
        defer { server.cancel() }
        let name = emulator.shootOnBody()
        let arrived = await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.cameraName == name } }
        #expect(arrived, "the body shot \(name) was not saved within 10 s")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.cameraName == name })
        #expect(body.fromBody)
        #expect(Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emulator.cardFile(name))
        // A long exposure, focusing first: half-press, then the camera answers 40403 and the picture
        // comes from awaitTakePicture; the half-press is released after.
        emulator.setLongExposure(true)
        let cam = gateway.cameras[0]
        let files = try await gateway.capture(camera: cam, autofocus: true)
        let order = emulator.calls.map(\.method).filter { ["actHalfPressShutter", "actTakePicture", "cancelHalfPressShutter"].contains($0) }
        #expect(await waitUntil(timeout: 5) { emulator.calls.contains { $0.method == "cancelHalfPressShutter" } })
        #expect(order.prefix(2) == ["actHalfPressShutter", "actTakePicture"], "\(order)")
        #expect(files.count == 1 && !files[0].fromBody)
        #expect(Array(FileManager.default.contents(atPath: files[0].path) ?? Data()) == emulator.cardFile(files[0].cameraName))
        #expect(emulator.calls.contains { $0.method == "awaitTakePicture" })
        // Each picture was fetched once, and both are listed.
        #expect(gateway.captures(camera: "cam0").count == 2)
        #expect(gateway.metricsText().contains("livegate_captures_saved_total{camera=\"cam0\"} 2"), "the counter counts the saved pictures")
        #expect(try noPartialFiles(dir))
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }

    /// A picture download that dies half-way is fetched again; one that always dies is an error, and
    /// neither leaves a partial file (under its name or hidden).
    @Test func aTransferKilledHalfWayIsRetriedAndNeverLeavesAPartialFile() async throws {
        let dir = try temporaryDirectory("livegate-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emulator, gateway, server, _) = try await gateway(dir)
        defer { server.cancel() }
        let cam = gateway.cameras[0]
        emulator.cutNextTransfers(1)
        let files = try await gateway.capture(camera: cam, autofocus: false)
        #expect(files.count == 1)
        #expect(emulator.postviewsServed == 2, "the cut download was not fetched again")
        #expect(Array(FileManager.default.contents(atPath: files[0].path) ?? Data()) == emulator.cardFile(files[0].cameraName),
                "the saved picture is not the camera's whole file")
        // Every attempt dies: the capture fails with the reason, nothing is saved.
        emulator.cutNextTransfers(100)
        await #expect(throws: (any Error).self) { try await gateway.capture(camera: cam, autofocus: false) }
        #expect(gateway.captures(camera: "cam0").count == 1)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("cam0").path)
        #expect(names == [files[0].name], "\(names)")
        #expect(try noPartialFiles(dir))
        emulator.cutNextTransfers(0)
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }

    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"))
    func aRefusalIs409WithTheCamerasReasonAndLiveViewGoesOn() async throws {
        let dir = try temporaryDirectory("livegate-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emulator, gateway, server, base) = try await gateway(dir)
        defer { server.cancel() }
        emulator.refuseShots("Card full")
        let r = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "\(base)/api/v1/cameras/cam0/capture"], timeout: 30)
        #expect(r.output.hasSuffix("\n409"), "\(r.output)")
        #expect(r.output.contains("Card full"), "\(r.output)")
        let bad = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"autofocus": "yes"}"#,
                                                 "\(base)/api/v1/cameras/cam0/capture"], timeout: 30)
        #expect(bad.output.hasSuffix("\n400"), "\(bad.output)")
        #expect(gateway.captures(camera: "cam0").isEmpty)
        let before = gateway.cameras[0].driver.stats.frames
        #expect(await waitUntil(timeout: 5) { gateway.cameras[0].driver.stats.frames > before + 3 })
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}

/// The Bandit: photos taken with its button are fetched by themselves; livegate's shutter works in
/// an image mode (`POST record`, the reading bandit.md leaves open) and is refused in video mode or
/// when the camera answers the other way (starts a recording).
@Suite(.serialized, .tags(.integration)) struct BanditTransferTests {
    /// Against a prompt body and a moody one (EmulatorMood.moody: 503 "busy" for 2 s after a switch
    /// to photos and after a recording stops, every third settings write 503 once, the first frame
    /// late, slow listings): the shutter, the card and the refusal come out the same.
    @Test(arguments: [EmulatorMood.prompt, .moody])
    func aPhotoTakenOnTheCameraIsFetchedByItselfAndTheShutterWorksInImageMode(mood: EmulatorMood) async throws {
        let emu = BanditEmulator(port: 0, fps: 10, source: try TestPatternSource(width: 320, height: 240),
                                 group: MultiThreadedEventLoopGroup.singleton, sentFrameHistory: 0, mood: mood)
        _ = try await emu.start()
        let dir = try temporaryDirectory("livegate-bandit-transfer")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gateway = try await startGateway(camera: emu.cameraURL, label: "bandit-transfer") { $0.capturesDirectory = dir.path }
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })
        let id = emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { !gateway.captures(camera: "cam0").isEmpty }, "the photo was not fetched")
        let saved = try #require(gateway.captures(camera: "cam0").first)
        #expect(saved.fromBody && saved.cameraName == "TT00001.JPG")
        #expect(Array(FileManager.default.contents(atPath: saved.path) ?? Data()) == emu.imageContents(id))

        // Video mode (the default): refused before the camera is asked anything.
        let driver = try #require(gateway.cameras[0].driver as? BanditDriver)
        await #expect(throws: CameraControlError.self, "a capture was taken in video mode") {
            try await gateway.capture(camera: gateway.cameras[0], autofocus: false)
        }
        #expect(!emu.requests.contains { $0.path == "/api/2/record" }, "the shutter was sent in video mode")

        // Image mode, single: one photo, saved byte for byte as this capture's (not a body shot).
        try await driver.rest.call("PUT", "settings/image")
        let one = try await gateway.capture(camera: gateway.cameras[0], autofocus: false)
        #expect(one.count == 1 && one.first?.cameraName == "TT00002.JPG", "\(one.map(\.cameraName))")
        #expect(one.allSatisfy { !$0.fromBody })
        #expect(Array(FileManager.default.contents(atPath: one.first?.path ?? "") ?? Data()) == emu.imageContents("IMG00002"))

        // Burst of three: one capture, three files.
        try await driver.rest.call("POST", "settings/image", body: ["mode": "burst", "resolution": "8MP", "burst_count": 3])
        let burst = try await gateway.capture(camera: gateway.cameras[0], autofocus: false)
        #expect(burst.map(\.cameraName) == ["TT00003.JPG", "TT00004.JPG", "TT00005.JPG"], "\(burst.map(\.cameraName))")
        for (f, cid) in zip(burst, ["IMG00003", "IMG00004", "IMG00005"]) {
            #expect(Array(FileManager.default.contents(atPath: f.path) ?? Data()) == emu.imageContents(cid), "\(f.cameraName)")
        }
        // A body that announces each photo of the burst on its own: still one capture of three.
        emu.burstInOneNotification = false
        let split = try await gateway.capture(camera: gateway.cameras[0], autofocus: false)
        #expect(split.map(\.cameraName) == ["TT00006.JPG", "TT00007.JPG", "TT00008.JPG"], "\(split.map(\.cameraName))")
        // Nothing of the captures was saved a second time as a body shot.
        #expect(gateway.captures(camera: "cam0").count == 8, "\(gateway.captures(camera: "cam0").map(\.cameraName))")

        // The card: the photos listed and read back byte for byte, a thumbnail too.
        let card = try #require(gateway.cameras[0].driver as? any CardBrowsing)
        let files = try await card.listFiles()
        #expect(files.map(\.path) == (1...8).map { "/DCIM/100TTCAM/TT0000\($0).JPG" }, "\(files)")
        var bytes: [UInt8] = []
        try await card.download(try await card.resolve(files[0])) { bytes += Array(buffer: $0) }
        #expect(bytes == emu.imageContents(id))
        #expect(try await card.thumbnail(of: files[0]) == emu.imageContents(id))

        // A body that reads the call as "record a video": no photo comes, the recording it started
        // is stopped and the capture refused with that reason.
        emu.recordIsShutter = false
        let refusal: (any Error)?
        do { _ = try await gateway.capture(camera: gateway.cameras[0], autofocus: false); refusal = nil } catch { refusal = error }
        #expect("\(refusal.map { "\($0)" } ?? "taken")".contains("started a recording"), "\(String(describing: refusal))")
        #expect(!emu.isRecording, "the recording the shutter started was left running")
        #expect(driver.state == .streaming)
        if mood.isMoody {
            // The body's busy spells were waited out: a request it answered 503 came again.
            // (A prompt body gets 5: three shots, and the refused one's start and stop.)
            let records = emu.requests.filter { $0.path == "/api/2/record" }.count
            #expect(records > 5, "\(records) record requests: the shot right after the switch to photos did not wait")
        }
        await gateway.stop()
        await emu.stop()
    }
}

/// The saver on its own: names the camera gives cannot leave the folder or replace a file.
@Suite struct CaptureStoreTests {
    @Test func hostileNamesStayInTheFolderAndNothingIsOverwritten() throws {
        let dir = try temporaryDirectory("livegate-store")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = CaptureStore(root: dir.path)
        let a = try store.save(camera: "cam0", image: CameraImage(name: "DSC00001.JPG", bytes: [1, 2, 3], fromBody: false))
        let b = try store.save(camera: "cam0", image: CameraImage(name: "DSC00001.JPG", bytes: [4, 5], fromBody: true))
        #expect(a.name == "DSC00001.JPG" && b.name == "DSC00001-1.JPG")
        #expect(FileManager.default.contents(atPath: a.path) == Data([1, 2, 3]))
        #expect(FileManager.default.contents(atPath: b.path) == Data([4, 5]))
        for hostile in ["../../etc/passwd", "..", "/abs/x.jpg", "a\\..\\b.jpg", ".hidden", "%2e%2e%2fx", "", "x\u{0}y.jpg"] {
            let f = try store.save(camera: "cam0", image: CameraImage(name: hostile, bytes: [9], fromBody: false))
            #expect(URL(fileURLWithPath: f.path).deletingLastPathComponent().standardizedFileURL.path
                    == dir.appendingPathComponent("cam0").standardizedFileURL.path, "\(hostile) → \(f.path)")
            #expect(!f.name.hasPrefix("."), "\(hostile) → \(f.name)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("cam0").path)
        #expect(!names.contains { $0.hasPrefix(".") }, "\(names)")
        #expect(store.list(camera: "cam0").count == 10)
    }
}
