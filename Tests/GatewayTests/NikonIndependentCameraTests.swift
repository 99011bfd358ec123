import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing

/// A Nikon over PTP/IP that livegate did not write: `Tests/Scripts/nikon_cam.py`, written only from
/// the protocol notes (ptp.md) by a session that never saw livegate's PTP code. It logs every
/// object it put on its card or in SDRAM and every byte range it served (`objects.jsonl`), which is
/// what these tests hold the saved files and downloads against.
@Suite(.serialized) struct NikonIndependentCameraTests {
    static let script = repoRoot.appendingPathComponent("Tests/Scripts/nikon_cam.py").path
    static let curl = which("curl")
    static let usable = which("python3") != nil && which("ffmpeg") != nil && curl != nil

    static func camera(_ dir: URL, _ extra: [String] = []) async throws -> PythonCamera {
        try await PythonCamera(script: script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--size", "640x424", "--fps", "15",
        ] + extra, portFlag: "--port", readyPrefix: "ready ptpip=")
    }

    static func objects(_ camera: PythonCamera) -> [[String: Any]] {
        PythonCamera.lines(camera.dir.appendingPathComponent("objects.jsonl"))
    }

    func get(_ url: String, _ extra: [String] = []) async throws -> (code: String, body: [UInt8]) { try await curlGet(url, extra) }

    /// Remote shot into SDRAM, a shot on the body, the card listed and read (whole and a range),
    /// every saved file the camera's bytes, nothing partial left, live view going on.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func captureBodyShotAndCardAgainstAnIndependentNikon() async throws {
        let dir = try temporaryDirectory("livegate-nikon-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir)
        let captures = dir.appendingPathComponent("captures")
        let gateway = try await startGateway(camera: "nikon://127.0.0.1:\(camera.port)", label: "nikon-independent") {
            $0.capturesDirectory = captures.path
        }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 20 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")

        // Remote capture: the saved file is the still the camera made, byte for byte.
        let shot = try await gateway.capture(camera: cam, autofocus: false)
        let captured = Self.objects(camera).filter { $0["ev"] as? String == "captured" }
        #expect(shot.count == 1 && captured.count == 1, "saved \(shot), camera captured \(captured)")
        if let s = shot.first, let c = captured.first {
            #expect(s.sha256 == c["sha256"] as? String && s.bytes == c["size"] as? Int, "saved \(s), camera \(c)")
            #expect(SHA256.hex(Array(FileManager.default.contents(atPath: s.path) ?? Data())) == s.sha256)
        }
        let frames = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { cam.driver.stats.frames > frames + 10 }, "live view did not go on after the capture")

        // A shot with the body's button arrives without a request.
        camera.signal(SIGUSR1)
        #expect(await waitUntil(timeout: 15) { gateway.captures(camera: "cam0").contains { $0.fromBody } }, "the body shot was not saved")
        let bodyShots = Self.objects(camera).filter { $0["ev"] as? String == "body_shot" }
        let saved = gateway.captures(camera: "cam0").filter(\.fromBody)
        #expect(bodyShots.count == 1 && saved.count == 1 && saved.first?.sha256 == bodyShots.first?["sha256"] as? String,
                "body shots \(bodyShots), saved \(saved)")

        // The card: listed, each file downloaded byte for byte (by the camera's log), a range.
        let list = try await get("\(base)/api/v1/cameras/cam0/files")
        #expect(list.code == "200", "\(String(decoding: list.body, as: UTF8.self))")
        let files = (try? JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["files"] as? [[String: Any]] ?? []
        let onCard = Self.objects(camera).filter { ["card", "body_shot"].contains($0["ev"] as? String) }
        #expect(files.count == onCard.count, "listed \(files.compactMap { $0["path"] }), the camera has \(onCard.compactMap { $0["name"] })")
        for f in files {
            guard let path = f["path"] as? String else { continue }
            let name = (path as NSString).lastPathComponent
            let want = onCard.first { $0["name"] as? String == name }?["sha256"] as? String
            let got = try await get("\(base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && SHA256.hex(got.body) == want, "\(path): \(got.code), \(got.body.count) bytes")
            if name == (files.first?["path"] as? NSString)?.lastPathComponent {
                let part = try await get("\(base)/api/v1/cameras/cam0/files\(path)", ["-r", "100-1099"])
                #expect(part.code == "206" && part.body == Array(got.body[100...1099]), "range of \(path): \(part.code)")
            }
        }
        // A name that leaves the card is refused as such; one that is not there is 404.
        let traversal = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/..%2F..%2Fetc/passwd")
        #expect(traversal.code == "400", "\(traversal.code) \(String(decoding: traversal.body, as: UTF8.self))")
        #expect(try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100NIKON/NOPE.JPG").code == "404")

        // Nothing partial or stray in the captures folder.
        let names = try FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)), "\(names)")
        let after = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 10) { cam.driver.stats.frames > after + 10 }, "live view stopped")
        server.cancel()
        await gateway.stop()
        await camera.stop()
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
}
