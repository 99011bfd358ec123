import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import Gateway
import NIOPosix
import Testing
import TestSupport

/// The card of PTP/IP cameras (standard operations, ptp.md §8.1) through the API, against the
/// emulated Nikon, Canon and Fujifilm cards: listing with folder paths, downloads byte for byte (a
/// 2.5 MB movie in 1 MiB GetPartialObject blocks, each download asking for its own object only),
/// ranges, and a Sony's card in its contents-transfer mode.
@Suite(.serialized, .tags(.integration)) struct PTPFilesTests {
    static let curl = Locations.program("curl")

    func get(_ url: String, _ extra: [String] = []) async throws -> (code: String, body: [UInt8]) { try await curlGet(url, extra) }

    @Test(.enabled(if: curl != nil, "needs curl"), arguments: [PTPEmulatorKind.nikon, .canon, .fuji])
    func theCardIsListedAndDownloaded(kind: PTPEmulatorKind) async throws {
        let emu = PTPEmulator(kind: kind, fps: 10, source: try TestPatternSource(width: 320, height: 240), group: MultiThreadedEventLoopGroup.singleton)
        _ = try await emu.start()
        let gateway = try await startGateway(camera: emu.cameraURL, label: "ptp-files")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })

        let list = try await get("\(base)/api/v1/cameras/cam0/files")
        #expect(list.code == "200", "\(String(decoding: list.body, as: UTF8.self))")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let files = try #require(obj["files"] as? [[String: Any]])
        let paths = files.compactMap { $0["path"] as? String }
        #expect(paths.count == 4 && paths.allSatisfy { $0.hasPrefix("/DCIM/100") }, "\(paths)")
        #expect(files.filter { $0["kind"] as? String == "image" }.count == 3)
        #expect(files.first?["date"] as? String != nil)
        // Downloads after a listing ask for their own object only: no listing of the whole card.
        emu.clearRequests()
        for path in paths {
            let want = try #require(emu.cardFile(path), "\(path) is not on the emulated card")
            let got = try await get("\(base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && got.body == want, "\(path): \(got.code), \(got.body.count) of \(want.count) bytes")
        }
        // One GetObjectInfo per download (its own object); a listing, cached or not, asks none.
        let infos = emu.requests.filter { $0.code == 0x1008 }.count
        #expect(infos == paths.count, "\(infos) GetObjectInfo for \(paths.count) downloads")
        let movie = try #require(paths.first { !$0.hasSuffix(".JPG") })
        let whole = try #require(emu.cardFile(movie))
        #expect(whole.count > 2 << 20, "the movie fits one block; the block loop is not tested")
        let part = try await get("\(base)/api/v1/cameras/cam0/files\(movie)", ["-r", "2000000-2000999"])
        #expect(part.code == "206" && part.body == Array(whole[2_000_000...2_000_999]))
        // GetPartialObject was used, in blocks of at most 1 MiB.
        let partials = emu.requests.filter { $0.code == 0x101B }
        #expect(!partials.isEmpty && partials.allSatisfy { ($0.params.last ?? .max) <= 1 << 20 })
        #expect(try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100NOPE/X.JPG").code == "404")
        // The camera still streams after the card was read.
        let before = gateway.cameras[0].driver.stats.frames
        #expect(await waitUntil(timeout: 5) { gateway.cameras[0].driver.stats.frames > before + 3 })
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }

    /// A Sony's card over PTP (ptp.md §8.4, both readings): contents-transfer mode (0x9212 2,1,0)
    /// is entered for the card work, in the ordinary session or — for a body that takes it only
    /// there — in a session reopened with SDIO_OpenSession mode 2; listing and downloads byte for
    /// byte; a capture while the card is shown leaves the mode first and is saved; the mode is left
    /// (0x9212 2,0,0) once the card is idle and live view comes back.
    @Test(.enabled(if: curl != nil, "needs curl"), arguments: [false, true])
    func aSonyShowsItsCardInContentsTransfer(needsSDIOSession: Bool) async throws {
        let emu = PTPEmulator(kind: .sony, fps: 15, source: try TestPatternSource(width: 320, height: 240),
                              group: MultiThreadedEventLoopGroup.singleton, sonyTransferNeedsSDIOSession: needsSDIOSession)
        _ = try await emu.start()
        let captures = try temporaryDirectory("livegate-sony-ptp-card")
        defer { try? FileManager.default.removeItem(at: captures) }
        let gateway = try await startGateway(camera: emu.cameraURL, label: "ptp-files") { $0.capturesDirectory = captures.path }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.state == .streaming && cam.driver.stats.frames > 3 })

        let list = try await get("\(base)/api/v1/cameras/cam0/files")
        #expect(list.code == "200", "\(String(decoding: list.body, as: UTF8.self))")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let paths = ((obj["files"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }
        #expect(paths == ["/DCIM/100MSDCF/DSC09001.JPG", "/DCIM/100MSDCF/DSC09002.JPG", "/DCIM/100MSDCF/DSC09003.JPG",
                          "/DCIM/100MSDCF/DSC09004.MP4"], "\(paths)")
        let modes = { emu.requests.filter { $0.code == 0x9212 }.map(\.params) }
        #expect(modes().last == [2, 1, 0], "\(modes())")
        let reopened = emu.requests.contains { $0.code == 0x9210 && $0.params == [1, 2] }
        #expect(reopened == needsSDIOSession, "SDIO_OpenSession for transfer: \(reopened)")
        for path in paths {
            let want = try #require(emu.cardFile(path), "\(path) is not on the emulated card")
            let got = try await get("\(base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && got.body == want, "\(path): \(got.code), \(got.body.count) of \(want.count) bytes")
        }
        let movie = try #require(emu.cardFile("/DCIM/100MSDCF/DSC09004.MP4"))
        let part = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100MSDCF/DSC09004.MP4", ["-r", "2000000-2000999"])
        #expect(part.code == "206" && part.body == Array(movie[2_000_000...2_000_999]))

        // A capture while the card is shown: contents transfer is left before the release.
        emu.clearRequests()
        #expect(try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100MSDCF/DSC09001.JPG").code == "200")
        let shot = try await gateway.capture(camera: cam, autofocus: false)
        #expect(shot.count == 1 && Array(FileManager.default.contents(atPath: shot.first?.path ?? "") ?? Data()) == emu.sonyShots.last)
        let order = emu.requests.compactMap { r -> String? in
            r.code == 0x9212 ? "mode \(r.params.dropFirst().first ?? 9)" : r.code == 0x9207 && r.params.first == 0xD2C2 ? "release" : nil
        }
        let leave = order.firstIndex(of: "mode 0"), release = order.firstIndex(of: "release")
        #expect(leave != nil && release != nil && leave! < release! && !order[leave!..<release!].contains("mode 1"), "\(order)")

        // The card again, then idle: the mode is left and live view comes back.
        #expect(try await get("\(base)/api/v1/cameras/cam0/files").code == "200")
        #expect(modes().last == [2, 1, 0], "\(modes())")
        #expect(await waitUntil(timeout: 15) { modes().last == [2, 0, 0] }, "contents transfer was not left: \(modes())")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > before + 5 }, "live view did not come back")
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }

    /// A Nikon shot into SDRAM (ptp.md §8.2): the picture is saved byte for byte, SDRAM is freed, a
    /// second shot gets its own file; a Canon says capture is not there yet.
    @Test func aNikonShootsIntoSDRAMAndTheGatewaySavesIt() async throws {
        let dir = try temporaryDirectory("livegate-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emu, gateway) = try await Self.streamingGateway(.nikon, captures: dir)
        let cam = gateway.cameras[0]
        let first = try await gateway.capture(camera: cam, autofocus: false)
        let second = try await gateway.capture(camera: cam, autofocus: false)
        let stills = emu.capturedStills
        #expect(stills.count == 2 && first.count == 1 && second.count == 1)
        #expect(Array(FileManager.default.contents(atPath: first[0].path) ?? Data()) == stills.first)
        #expect(Array(FileManager.default.contents(atPath: second[0].path) ?? Data()) == stills.last)
        #expect(first[0].name != second[0].name && first[0].name.hasPrefix("DSC_"))
        #expect(!emu.sdramOccupied, "SDRAM was not freed")
        // A shot with the body's button: ObjectAdded on the card, fetched and saved by itself.
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.fromBody })
        #expect(Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emu.capturedStills.last)
        #expect(gateway.captures(camera: "cam0").count == 3, "a picture was saved twice or not at all")
        let order = emu.requests.map(\.code).filter { [0x90C0, 0x90C7, 0x1009, 0x100B].contains($0) }
        let afterShot = Array(order.drop { $0 != 0x90C0 })  // GetEvent may also come before, asking for body shots
        #expect(afterShot.first == 0x90C0 && afterShot.contains(0x90C7) && afterShot.contains(0x100B), "\(order)")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 5) { cam.driver.stats.frames > before + 3 }, "live view stopped")
        await gateway.stop()
        await emu.stop()
    }

    /// A Sony PC-remote release (ptp.md §8.4): S1 down, S2 down, S2 up, S1 up; the shot is read
    /// from 0xFFFFC001 once ObjectInMemory says it waits, saved byte for byte; a shot with the
    /// body's button is taken over by itself (the camera keeps no copy for the PC); the handle is
    /// never read while nothing waits.
    @Test func aSonyPTPReleaseHandsTheShotOverAndBodyShotsFollow() async throws {
        let dir = try temporaryDirectory("livegate-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emu, gateway) = try await Self.streamingGateway(.sony, captures: dir)
        let cam = gateway.cameras[0]
        let files = try await gateway.capture(camera: cam, autofocus: true)
        #expect(files.count == 1 && files.first?.name == "DSC00001.JPG", "\(files.map(\.name))")
        #expect(Array(FileManager.default.contents(atPath: files.first?.path ?? "") ?? Data()) == emu.sonyShots.first)
        let presses = emu.requests.filter { $0.code == 0x9207 }.map { "\(String($0.params.first ?? 0, radix: 16)):\($0.data.first ?? 0)" }
        #expect(presses == ["d2c1:2", "d2c2:2", "d2c2:1", "d2c1:1"], "\(presses)")
        #expect(emu.sonyShotsWaiting == 0)
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.fromBody })
        #expect(Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emu.sonyShots.last && body.cameraName == "DSC00002.JPG")
        try await Task.sleep(for: .seconds(2))
        #expect(gateway.captures(camera: "cam0").count == 2, "a picture was saved twice")
        // 0xFFFFC001 was read exactly twice per shot (ObjectInfo, then the object), never while empty.
        let reads = emu.requests.filter { ($0.code == 0x1008 || $0.code == 0x1009) && $0.params.first == 0xFFFF_C001 }
        #expect(reads.count == 4, "\(reads.map(\.code))")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 5) { cam.driver.stats.frames > before + 3 }, "live view stopped")
        await gateway.stop()
        await emu.stop()
    }

    /// A Fujifilm capture (standard InitiateCapture): the new file is found by comparing the card's
    /// handle lists, saved byte for byte under its own name, listed on the card; live view goes on.
    @Test func aFujifilmCaptureSavesTheNewFileOnTheCard() async throws {
        let dir = try temporaryDirectory("livegate-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emu, gateway) = try await Self.streamingGateway(.fuji, captures: dir)
        let cam = gateway.cameras[0]
        let first = try await gateway.capture(camera: cam, autofocus: false)
        let second = try await gateway.capture(camera: cam, autofocus: false)
        let shots = emu.canonShots
        #expect(shots.count == 2 && first.count == 1 && second.count == 1)
        #expect(Array(FileManager.default.contents(atPath: first.first?.path ?? "") ?? Data()) == shots.first)
        #expect(Array(FileManager.default.contents(atPath: second.first?.path ?? "") ?? Data()) == shots.last)
        #expect(first.first?.name == "DSCF0304.JPG" && second.first?.name == "DSCF0305.JPG", "\(first) \(second)")
        #expect(emu.requests.filter { $0.code == PTPOperation.initiateCapture }.map(\.params) == [[0, 0], [0, 0]])
        let listed = try await (cam.driver as? any CardBrowsing)?.listFiles().map(\.path) ?? []
        #expect(listed.contains("/DCIM/100_FUJI/DSCF0305.JPG"), "\(listed)")
        // A shot with the body's button: found on the card (Fujifilm announces nothing) and saved
        // by itself, once; the API's shots are not taken for body shots.
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.fromBody })
        #expect(body.cameraName == "DSCF0306.JPG" && Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emu.canonShots.last)
        try await Task.sleep(for: .seconds(3))
        #expect(gateway.captures(camera: "cam0").count == 3, "\(gateway.captures(camera: "cam0").map(\.cameraName))")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 5) { cam.driver.stats.frames > before + 3 }, "live view stopped")
        await gateway.stop()
        await emu.stop()
    }

    /// A Canon EOS release (ptp.md §8.3): half press, full press, releases; the camera announces the
    /// file (ObjectAddedEx) and it is fetched from the card byte for byte and listed there.
    @Test func aCanonReleaseSavesTheFileTheCameraAnnounces() async throws {
        let dir = try temporaryDirectory("livegate-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (emu, gateway) = try await Self.streamingGateway(.canon, captures: dir)
        let cam = gateway.cameras[0]
        let files = try await gateway.capture(camera: cam, autofocus: true)
        #expect(files.count == 1 && files.first?.name.hasPrefix("IMG_") == true, "\(files.map(\.name))")
        #expect(Array(FileManager.default.contents(atPath: files[0].path) ?? Data()) == emu.canonShots.first)
        let releases = emu.requests.filter { $0.code == 0x9128 || $0.code == 0x9129 }.map { "\(String($0.code, radix: 16)):\($0.params.first ?? 0)" }
        #expect(releases == ["9128:1", "9128:2", "9129:2", "9129:1"], "\(releases)")
        // A shot with the button on the body: announced, fetched and saved by itself.
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.fromBody })
        #expect(Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emu.canonShots.last)
        #expect(gateway.captures(camera: "cam0").count == 2, "a picture was saved twice")
        let card = try #require(gateway.cameras[0].driver as? any CardBrowsing)
        #expect(try await card.listFiles().contains { $0.name == files[0].name }, "the shot is not on the card")
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 5) { cam.driver.stats.frames > before + 3 }, "live view stopped")
        await gateway.stop()
        await emu.stop()
    }

    /// A Canon with `target=pc` (ptp.md §8.3): CaptureDestination 4 and PCHDDCapacity once live view
    /// runs; a release's shot comes as RequestObjectTransfer, is read in GetPartialObject blocks
    /// (a read that fails twice is retried) and let go with TransferComplete, nothing lands on the
    /// card; a body shot comes the same way by itself; one that cannot be read is reported lost;
    /// the body's own destination is put back when the gateway stops.
    @Test func aCanonWithThePCTargetTakesEveryShotOffTheCamera() async throws {
        let dir = try temporaryDirectory("livegate-ptp-capture")
        defer { try? FileManager.default.removeItem(at: dir) }
        let emu = PTPEmulator(kind: .canon, fps: 10, source: try TestPatternSource(width: 320, height: 240),
                              group: MultiThreadedEventLoopGroup.singleton)
        _ = try await emu.start()
        let gateway = try await startGateway(camera: emu.cameraURL + "&target=pc", label: "ptp-capture") { $0.capturesDirectory = dir.path }
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })
        func destinations() -> [UInt32] {
            emu.requests.filter { $0.code == 0x9110 && $0.data.count >= 12 && ptpLE32($0.data, 4) == 0xD11C }.map { ptpLE32($0.data, 8) }
        }
        #expect(destinations() == [4], "\(destinations())")
        // PCHDDCapacity, then GetEvent until AvailableShots tells the room (the emulator's third)
        // before the live view goes on.
        let log = emu.requests.map(\.code)
        let room = try #require(log.firstIndex(of: 0x911A), "no PCHDDCapacity")
        #expect(emu.requests[room].params == [0x0FFF_FFFF, 0x1000, 1])
        let nextFrame = log[room...].firstIndex(of: 0x9153) ?? log.endIndex
        #expect(log[room..<nextFrame].filter { $0 == 0x9116 }.count >= 3, "live view went on before AvailableShots: \(log[room..<nextFrame])")
        let cam = gateway.cameras[0]
        let card = try #require(cam.driver as? any CardBrowsing)
        let onCard = try await card.listFiles().count

        emu.failNextTransfers(2)
        let files = try await gateway.capture(camera: cam, autofocus: false)
        #expect(files.map(\.name) == ["IMG_0501.JPG"])
        #expect(Array(FileManager.default.contents(atPath: files[0].path) ?? Data()) == emu.canonShots.first)
        let reads = emu.requests.filter { $0.code == 0x101B && $0.params.first == 0x8000_0001 }
        #expect(reads.count == 3 && reads.allSatisfy { $0.params.count == 3 && $0.params[2] <= 1 << 20 }, "\(reads.map(\.params))")
        #expect(emu.requests.filter { $0.code == 0x9117 }.map(\.params) == [[0x8000_0001]])
        #expect(emu.canonShotsWaitingForPC == 0, "the camera still holds the shot")
        #expect(try await card.listFiles().count == onCard, "the shot went to the card")

        // A shot with the body's button: handed over by itself.
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let body = try #require(gateway.captures(camera: "cam0").first { $0.fromBody })
        #expect(Array(FileManager.default.contents(atPath: body.path) ?? Data()) == emu.canonShots.last)
        #expect(await waitUntil(timeout: 5) { emu.canonShotsWaitingForPC == 0 })

        // A TransferComplete the camera does not accept does not cost the image.
        emu.failNextTransferCompletes(1)
        let second = try await gateway.capture(camera: cam, autofocus: false)
        #expect(second.map(\.name) == ["IMG_0503.JPG"] && Array(FileManager.default.contents(atPath: second[0].path) ?? Data()) == emu.canonShots.last)

        // One that cannot be read: the camera keeps no copy for anyone else, so it is reported lost.
        let events = try #require(gateway.eventStream(lastEventID: nil))
        emu.failNextTransfers(1000)
        emu.shootOnBody()
        let failed = await firstEvent(events, containing: "capture-failed", timeout: 15)
        #expect(failed?.contains("IMG_0504.JPG") == true, "\(failed ?? "no capture-failed event")")
        #expect(!emu.requests.contains { $0.code == 0x9117 && $0.params == [0x8000_0004] }, "a shot that was not read was let go")

        // A read that a lost connection breaks off: the next session takes it over.
        emu.shootOnBody()
        #expect(await waitUntil(timeout: 10) { emu.requests.contains { $0.code == 0x101B && $0.params.first == 0x8000_0005 } })
        emu.inject(.disconnect)
        emu.failNextTransfers(0)
        #expect(await waitUntil(timeout: 20) { gateway.captures(camera: "cam0").contains { $0.cameraName == "IMG_0505.JPG" } },
                "the shot whose reading the connection broke was not taken over")
        #expect(await waitUntil(timeout: 10) { cam.driver.state == .streaming })

        await gateway.stop()
        let d = destinations()
        #expect(d.dropLast().allSatisfy { $0 == 4 } && d.last == 2, "the card was not made the destination again: \(d)")
        await emu.stop()
    }

    /// The first event on `stream` that contains `text`, within `timeout` seconds.
    func firstEvent(_ stream: AsyncStream<String>, containing text: String, timeout: Double) async -> String? {
        await withTaskGroup(of: String?.self) { g in
            g.addTask {
                for await e in stream where e.contains(text) { return e }
                return nil
            }
            g.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                return nil
            }
            let first = await g.next() ?? nil
            g.cancelAll()
            return first
        }
    }

    /// An emulated PTP camera and a gateway on it saving pictures to `captures`, once streaming.
    static func streamingGateway(_ kind: PTPEmulatorKind, captures: URL) async throws -> (PTPEmulator, Gateway) {
        let emu = PTPEmulator(kind: kind, fps: 10, source: try TestPatternSource(width: 320, height: 240),
                              group: MultiThreadedEventLoopGroup.singleton)
        _ = try await emu.start()
        let gateway = try await startGateway(camera: emu.cameraURL, label: "ptp-capture") { $0.capturesDirectory = captures.path }
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })
        return (emu, gateway)
    }
}

/// A little-endian u32 at `at` of a request's data.
private func ptpLE32(_ b: [UInt8], _ at: Int) -> UInt32 {
    (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) }
}
