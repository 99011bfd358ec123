import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import Gateway
import NIOPosix
import Testing
import TestSupport

/// A LUMIX body's other half through the gateway, against the emulated body: the shutter (record
/// mode), the new shot found in play mode and fetched byte for byte, a shot on the body fetched by
/// itself, the card listed and downloaded (whole, ranged, thumbnails), a refusal as the camera's
/// reason, and the live view back after every trip to play mode.
@Suite(.serialized, .tags(.integration)) struct PanasonicCardGatewayTests {
    static let curl = Locations.program("curl")

    func emulator(_ configure: (inout PanasonicEmulator.Configuration) -> Void = { _ in }) async throws -> PanasonicEmulator {
        var config = PanasonicEmulator.Configuration()
        config.fps = 15
        configure(&config)
        let emu = try PanasonicEmulator(configuration: config, group: MultiThreadedEventLoopGroup.singleton)
        try await emu.start()
        return emu
    }

    func get(_ url: String, _ extra: [String] = []) async throws -> (code: String, body: [UInt8]) {
        try await curlGet(url, extra)
    }

    /// Waits until the driver has asked the body for its state `n` more times (its keep-alive, which
    /// is also how it notices shots on the body): an event to wait for, not a span of time.
    func moreKeepAlives(_ emu: PanasonicEmulator, _ n: Int = 2) async -> Bool {
        let seen = emu.requests(mode: "getstate").count
        return await waitUntil(timeout: 20) { emu.requests(mode: "getstate").count >= seen + n }
    }

    /// Against a prompt body and a moody one (EmulatorMood.moody: each switch between record and
    /// play mode 2 s long, err_busy to everything but getstate meanwhile, which still says the old
    /// mode; the first datagram 1.5 s after startstream; every third setsetting err_busy once;
    /// 300 ms a listing page): livegate waits for the body, the client never sees its busy answers.
    @Test(arguments: [EmulatorMood.prompt, .moody])
    func captureFetchesTheShotABodyShotArrivesAndARefusalIsTheCamerasReason(mood: EmulatorMood) async throws {
        let emu = try await emulator {
            $0.rawPlusJPEG = true
            $0.mood = mood
        }
        emu.shootOnBody()  // already on the card: not part of the next shot
        let dir = try temporaryDirectory("livegate-pana-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gateway = try await startGateway(camera: emu.cameraURL, label: "pana-capture") { $0.capturesDirectory = dir.path }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming && cam.driver.stats.frames > 5 })
        // Three property sets (a moody body answers the third err_busy once: waited out).
        for iso in [400, 800, 200] {
            do { try await cam.driver.setProperty(.iso, to: .number(Double(iso))) } catch {
                Issue.record("\(mood): ISO \(iso): \(error)")
            }
        }
        #expect(emu.currentSettings["iso"] == "200", "\(mood): \(emu.currentSettings)")
        let isoSets = emu.requests(mode: "setsetting", type: "iso").map(\.result)
        #expect(isoSets == (mood.isMoody ? ["ok", "ok", "err_busy", "ok"] : ["ok", "ok", "ok"]), "\(mood): \(isoSets)")
        if mood.isMoody {
            // The session waited for record mode before it asked for menus and the stream.
            let first = emu.requests.firstIndex { $0.mode == "camcmd" && $0.value == "recmode" }
            let busy = emu.requests.filter { $0.result == "err_busy" && $0.mode != "setsetting" }
            #expect(first != nil && busy.isEmpty, "\(mood): busy answers the driver asked for: \(busy.map { "\($0.mode) \($0.type ?? "")" })")
        }
        let files: [SavedCapture]
        do { files = try await gateway.capture(camera: cam, autofocus: true) } catch {
            Issue.record("\(error); requests: \(emu.requests.suffix(15).map { "\($0.mode) \($0.type ?? "") \($0.value ?? "") \($0.result)" })")
            throw error
        }
        // RAW+JPEG: both files of the new shot, byte for byte, under the camera's names.
        #expect(files.map(\.cameraName) == ["P1000002.JPG", "P1000002.RW2"], "\(files.map(\.cameraName))")
        for f in files {
            #expect(Array(FileManager.default.contents(atPath: f.path) ?? Data()) == emu.cardFile(f.cameraName), "\(f.cameraName)")
            #expect(f.sha256 == SHA256.hex(emu.cardFile(f.cameraName) ?? []))
        }
        #expect(emu.requests(mode: "camcmd").contains { $0.value == "oneshot_af" })
        // The shutter was pressed in record mode; the card was read in play mode; the live view came back.
        #expect(await waitUntil(timeout: 10) { emu.isStreaming && emu.currentSettings["cammode"] == "rec" })
        var before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { cam.driver.stats.frames > before + 5 }, "live view did not come back after the shot")
        let modes = emu.requests(mode: "camcmd").map { $0.value ?? "" }
        let shot = try #require(modes.lastIndex(of: "capture"))
        #expect(modes[..<shot].last(where: { $0 == "recmode" || $0 == "playmode" }) == "recmode", "\(modes)")
        #expect(modes[shot...].contains("playmode") && modes[shot...].last == "recmode", "\(modes)")

        // A shot on the body arrives without a request, once.
        let body = emu.shootOnBody()
        #expect(await waitUntil(timeout: 15) { gateway.captures(camera: "cam0").contains { $0.cameraName == body } },
                "the body shot \(body) was not fetched; requests: \(emu.requests.suffix(10).map { "\($0.mode) \($0.value ?? "")" })")
        let bodySaved = try #require(gateway.captures(camera: "cam0").first { $0.cameraName == body })
        #expect(bodySaved.fromBody && Array(FileManager.default.contents(atPath: bodySaved.path) ?? Data()) == emu.cardFile(body))
        before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { cam.driver.stats.frames > before + 5 }, "live view did not come back after the body shot")
        #expect(await moreKeepAlives(emu), "no more keep-alives")  // nothing fetched twice after them
        #expect(gateway.captures(camera: "cam0").count == 4, "\(gateway.captures(camera: "cam0").map(\.cameraName))")

        // The card as getstate reports it: in, writable, shots left falling with each shot.
        let storage = (cam.driver as? any StorageReporting)?.storage
        #expect(storage?.mounted == true && storage?.writeProtected == false && storage?.full == false
                && storage?.remainingShots == 999 - 3, "\(String(describing: storage))")

        // While the body records a movie the card is written all along: never a mode switch then.
        let switches = emu.requests(mode: "camcmd").count
        emu.recordMovieOnBody(true)
        #expect(await moreKeepAlives(emu, 3), "no more keep-alives")
        #expect(emu.requests(mode: "camcmd").count == switches, "\(emu.requests(mode: "camcmd").suffix(4).map { $0.value ?? "" })")
        emu.recordMovieOnBody(false)

        emu.refuseShots("err_reject")
        do {
            _ = try await gateway.capture(camera: cam, autofocus: false)
            Issue.record("a refused shot was reported as taken")
        } catch CameraControlError.refused(let why) {
            #expect(why.contains("err_reject"), "\(why)")
        } catch {
            Issue.record("a refusal is not reported as one: \(error)")
        }
        #expect(gateway.captures(camera: "cam0").count == 4)
        before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { cam.driver.stats.frames > before + 5 }, "live view stopped after the refusal")
        // Through every switch, livegate asked a switching body nothing but its state (busy answers
        // to setsetting are the mood's own; get_content_info's say the shot is still being written).
        let pressed = emu.requests.filter { $0.result == "err_busy" && !["setsetting", "get_content_info"].contains($0.mode) }
        #expect(pressed.isEmpty, "\(mood): asked while switching: \(pressed.map { "\($0.mode) \($0.type ?? "") \($0.value ?? "")" })")
        await gateway.stop()
        await emu.stop()
    }

    /// Newer bodies group the card by shooting day (one container per day at the root): a shot
    /// that lands in an existing day's container, one taken on the body while livegate returns to
    /// record mode, and one that opens a new day, are each found and fetched once — with the
    /// containers' `childCount` (here counting files, RAW+JPEG as two, unlike the container's own
    /// count) or, where a body lists none, their own counts; a listing before the shot changes
    /// nothing.
    @Test(arguments: [true, false])
    func aCardGroupedByDayFindsEachNewShotInItsContainer(listsChildCount: Bool) async throws {
        let emu = try await emulator {
            $0.cardGroupsByDay = true
            $0.cardListsChildCount = listsChildCount
            $0.rawPlusJPEG = listsChildCount
        }
        emu.shootOnBody()
        emu.shootOnBody()  // two shots of day 1 already on the card
        let old = Set(emu.cardNames)
        let dir = try temporaryDirectory("livegate-pana-days")
        defer { try? FileManager.default.removeItem(at: dir) }
        let gateway = try await startGateway(camera: emu.cameraURL, label: "pana-days") { $0.capturesDirectory = dir.path }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming && cam.driver.stats.frames > 5 })
        let card = try #require(cam.driver as? any CardBrowsing)
        #expect(Set(try await card.listFiles().map(\.name)) == old)
        let files = try await gateway.capture(camera: cam, autofocus: false)
        #expect(files.map(\.cameraName) == (listsChildCount ? ["P1000003.JPG", "P1000003.RW2"] : ["P1000003.JPG"]), "\(files.map(\.cameraName))")
        for f in files { #expect(Array(FileManager.default.contents(atPath: f.path) ?? Data()) == emu.cardFile(f.cameraName)) }

        // At once, while livegate goes back to record mode: a shot on the body, same day.
        let sameDay = emu.shootOnBody()
        #expect(await waitUntil(timeout: 20) { gateway.captures(camera: "cam0").contains { $0.cameraName == sameDay } },
                "the body shot \(sameDay) taken during the switch back was not fetched")
        // The next day: its shot opens a container of its own, and is fetched by itself.
        #expect(await waitUntil(timeout: 10) { emu.isStreaming && emu.currentSettings["cammode"] == "rec" })
        emu.setShootingDay(2)
        let nextDay = emu.shootOnBody()
        #expect(await waitUntil(timeout: 20) { gateway.captures(camera: "cam0").contains { $0.cameraName == nextDay } },
                "the body shot \(nextDay) was not fetched")
        #expect(await moreKeepAlives(emu), "no more keep-alives")  // nothing fetched twice after them
        let saved = gateway.captures(camera: "cam0").map(\.cameraName)
        #expect(saved.sorted() == emu.cardNames.filter { !old.contains($0) }.sorted(), "\(saved)")
        for c in gateway.captures(camera: "cam0") {
            #expect(Array(FileManager.default.contents(atPath: c.path) ?? Data()) == emu.cardFile(c.cameraName), "\(c.cameraName)")
        }
        #expect(try await card.listFiles().map(\.name).sorted() == emu.cardNames.sorted())
        await gateway.stop()
        await emu.stop()
    }

    /// A newer body, prompt, and an older one, moody (2 s mode switches with err_busy meanwhile,
    /// 300 ms a listing page): the listing waits for play mode, never answers the client 502.
    @Test(.enabled(if: curl != nil, "needs curl"), arguments: zip([true, false], [EmulatorMood.prompt, .moody]))
    func theCardIsListedAndDownloadedByteForByte(newerBody: Bool, mood: EmulatorMood) async throws {
        let emu = try await emulator {
            $0.cardListsNamesAndSizes = newerBody
            $0.mood = mood
        }
        emu.shootOnBody()
        emu.shootOnBody()
        let gateway = try await startGateway(camera: emu.cameraURL, label: "pana-files")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming && cam.driver.stats.frames > 5 })
        let began = ContinuousClock.now
        let list = try await get("\(base)/api/v1/cameras/cam0/files")
        print("LUMIX card listing (\(mood) body): \(began.duration(to: .now))")
        #expect(list.code == "200", "\(mood): \(String(decoding: list.body, as: UTF8.self))")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let files = try #require(obj["files"] as? [[String: Any]])
        // Newer bodies name the files; older ones are known by their download names, without sizes.
        let expected = newerBody ? ["/100/P1000001.JPG", "/100/P1000002.JPG"] : ["/100/DO1000001.JPG", "/100/DO1000002.JPG"]
        #expect(files.compactMap { $0["path"] as? String } == expected)
        #expect(files.first?["kind"] as? String == "image")
        if newerBody { #expect(files.first?["size"] as? Int == emu.cardFile("P1000001.JPG")?.count) }

        let camera = try #require(emu.cardFile("P1000002.JPG"))
        let whole = try await get("\(base)/api/v1/cameras/cam0/files\(expected[1])")
        #expect(whole.code == "200" && whole.body == camera, "\(whole.code) \(whole.body.count) vs \(camera.count)")
        let part = try await get("\(base)/api/v1/cameras/cam0/files\(expected[1])", ["-r", "100-1099"])
        #expect(part.code == "206" && part.body == Array(camera[100...1099]))
        let thumb = try await get("\(base)/api/v1/cameras/cam0/thumbnails\(expected[0])")
        #expect(thumb.code == "200" && thumb.body == emu.thumbnail(shot: 1) && thumb.body.starts(with: [0xFF, 0xD8]))
        for hostile in ["100/../../etc/passwd", "100/%2e%2e/%2e%2e/etc/passwd", "100/NOPE.JPG"] {
            let r = try await get("\(base)/api/v1/cameras/cam0/files/\(hostile)")
            #expect(r.code == "400" || r.code == "404", "\(hostile) → \(r.code)")
        }
        // A shot on the body while the card is in use: the listing shows it, and it is still
        // handed on as a body shot (a listing does not swallow it).
        emu.shootOnBody()
        var listed = ""
        for _ in 0..<30 where !listed.contains("\"total\":3") {
            listed = String(decoding: try await get("\(base)/api/v1/cameras/cam0/files").body, as: UTF8.self)
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(listed.contains("\"total\":3"), "\(listed.prefix(300))")
        #expect(await waitUntil(timeout: 15) { gateway.captures(camera: "cam0").count == 1 }, "the body shot was not handed on")
        let saved = try #require(gateway.captures(camera: "cam0").first)
        #expect(saved.fromBody && Array(FileManager.default.contents(atPath: saved.path) ?? Data()) == emu.cardFile("P1000003.JPG"))

        // Every card access in play mode; record mode and the live view back afterwards.
        #expect(emu.requests(mode: "camcmd").contains { $0.value == "playmode" })
        #expect(await waitUntil(timeout: 15) { emu.isStreaming && emu.currentSettings["cammode"] == "rec" },
                "\(emu.requests.suffix(12).map { "\($0.mode) \($0.value ?? "") \($0.result)" })")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > before + 5 }, "live view did not come back after the card")
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }
}
