import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing
import TestSupport

/// A Nikon over PTP/IP that livegate did not write: `Tests/Scripts/nikon_cam.py`, written only from
/// the protocol notes (ptp.md) by a session that never saw livegate's PTP code. It logs every
/// object it put on its card or in SDRAM and every byte range it served (`objects.jsonl`), which is
/// what these tests hold the saved files and downloads against.
@Suite(.serialized, .tags(.integration)) struct NikonIndependentCameraTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/nikon_cam.py").path
    static let curl = Locations.program("curl")
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil && curl != nil

    static func camera(_ dir: URL, _ extra: [String] = []) async throws -> PythonCamera {
        try await PythonCamera(script: script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--size", "640x424", "--fps", "15",
        ] + extra, portFlag: "--port", readyPrefix: "ready ptpip=")
    }

    static func objects(_ camera: PythonCamera) -> [[String: Any]] {
        PythonCamera.lines(camera.dir.appendingPathComponent("objects.jsonl"))
    }

    /// `IndependentCameraChecks` (remote shot into SDRAM, body shot, the card), and a path that
    /// leaves the card refused as such.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func captureBodyShotAndCardAgainstAnIndependentNikon() async throws {
        let dir = try temporaryDirectory("livegate-nikon-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir)
        try await IndependentCameraChecks.with(camera, url: "nikon://127.0.0.1:\(camera.port)", label: "nikon-independent") { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam, shotsOnCard: false) }
            // A name that leaves the card is refused as such; one that is not there is 404.
            let traversal = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files/DCIM/..%2F..%2Fetc/passwd")
            #expect(traversal.code == "400", "\(traversal.code) \(String(decoding: traversal.body, as: UTF8.self))")
            #expect(try await curlGet("\(checks.base)/api/v1/cameras/cam0/files/DCIM/100NIKON/NOPE.JPG").code == "404")
        }
    }

    /// The camera drops both connections half-way through the first transfer of a shot: the
    /// shot is fetched again once livegate is back, saved whole under its name, with no partial file.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func aTransferBrokenHalfWayIsFetchedAgainFromTheIndependentNikon() async throws {
        let dir = try temporaryDirectory("livegate-nikon-independent-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--break-first-transfer"])
        let captures = dir.appendingPathComponent("captures")
        let gateway = try await startGateway(camera: "nikon://127.0.0.1:\(camera.port)", label: "nikon-independent") {
            $0.capturesDirectory = captures.path
        }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 20 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        // The remote capture itself may fail with the connection; the picture must not be lost.
        let shot = try? await gateway.capture(camera: cam, autofocus: false)
        let captured = Self.objects(camera).filter { $0["ev"] as? String == "captured" }
        #expect(captured.count == 1)
        #expect(Self.objects(camera).contains { $0["ev"] as? String == "broken" }, "the camera did not break the transfer")
        let want = captured.first?["sha256"] as? String
        #expect(await waitUntil(timeout: 30) { gateway.captures(camera: "cam0").contains { $0.sha256 == want } },
                "the shot was not saved after the broken transfer (capture answered \(String(describing: shot)))")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)) ?? []
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)), "\(names)")
        #expect(await waitUntil(timeout: 30) { cam.driver.state == .streaming }, "live view did not come back")
        await gateway.stop()
        await camera.stop()
    }

    /// A card of 9 000 pictures and a movie (the most this camera makes): listed whole, paged through by the
    /// API without listing it again per page, a file in the middle read byte for byte without a
    /// listing, and live view going on.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func aCardOfNineThousandFilesIsListedOnceAndRead() async throws {
        let dir = try temporaryDirectory("livegate-nikon-big-card")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--card-files", "9000"])
        try await IndependentCameraChecks.with(camera, url: "nikon://127.0.0.1:\(camera.port)", label: "nikon-big-card") { checks, cam in
            guard await checks.streams(cam) else { return }
            let card = Self.objects(camera).filter { $0["ev"] as? String == "card" }
            #expect(card.count >= 9000, "\(card.count) files on the card")
            func page(_ offset: Int) async throws -> (total: Int?, paths: [String]) {
                let r = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files?offset=\(offset)&limit=1000")
                let obj = try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
                let files = obj?["files"] as? [[String: Any]] ?? []
                return ((obj?["total"] as? NSNumber)?.intValue, files.compactMap { $0["path"] as? String })
            }
            func count(_ op: String) -> Int { camera.requests.filter { $0["op"] as? String == op }.count }
            func listings() -> Int { count("0x1007") }
            let started = ContinuousClock.now
            let first = try await page(0)
            let listed = ContinuousClock.now - started
            let listedAt = ContinuousClock.now
            #expect(first.total == card.count && first.paths.count == 1000, "total \(String(describing: first.total)), \(first.paths.count) on the page")
            let afterFirst = listings()
            var all = first.paths
            for offset in stride(from: 1000, to: card.count, by: 1000) { all += try await page(offset).paths }
            #expect(Set(all).count == card.count, "\(Set(all).count) distinct paths over the pages")
            // The listing is kept 10 s: a slow machine may list once more per 10 s, never per page.
            let allowed = afterFirst + Int((ContinuousClock.now - listedAt) / .seconds(10))
            #expect(listings() <= allowed, "the card was listed again for the pages (\(listings()) GetObjectHandles, \(allowed) allowed)")
            let infosBefore = count("0x1008")
            let middle = try #require(card.first { $0["name"] as? String == "DSC_4500.JPG" })
            let path = try #require(all.first { $0.hasSuffix("/DSC_4500.JPG") })
            let got = try await curlGet("\(checks.base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && SHA256.hex(got.body) == middle["sha256"] as? String, "\(path): \(got.code), \(got.body.count) bytes")
            #expect(count("0x1008") == infosBefore + 1, "the download asked for \(count("0x1008") - infosBefore) ObjectInfos, not its own one")
            print("nikon (independent camera): \(card.count) files listed in \(listed), then the other pages and a download without a listing")
            let frames = cam.driver.stats.frames
            #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > frames + 10 }, "live view stopped")
        }
    }
}
