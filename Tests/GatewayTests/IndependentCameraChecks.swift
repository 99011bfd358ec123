import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing

/// What the tests against a camera livegate did not write (`Tests/Scripts/*_cam.py`) check once the
/// gateway streams from it: a remote capture and a shot with the body's button (SIGUSR1) saved
/// byte for byte against the camera's `objects.jsonl` (`captured`, `body_shot`), the card listed
/// whole (`card` + the shots) and every file — and a range of the first — read byte for byte,
/// nothing stray in the captures folder, live view going on.
struct IndependentCameraChecks {
    let camera: PythonCamera
    let gateway: Gateway
    let base: String
    let captures: URL
    /// The camera's log of objects (`objects.jsonl` in its folder).
    var objectsLog = "objects.jsonl"
    /// Turns a line of a camera's own log into the `ev` words above (nil: not an object event).
    var translate: @Sendable ([String: Any]) -> [String: Any]? = { $0 }

    /// A gateway on the camera at `url` (saving into `captures` beside the camera's logs) with the
    /// control API, `body` run with the checks and the camera's runtime, then everything stopped.
    static func with(_ camera: PythonCamera, url: String, label: String, objectsLog: String = "objects.jsonl",
                     translate: @escaping @Sendable ([String: Any]) -> [String: Any]? = { $0 },
                     _ body: (IndependentCameraChecks, CameraRuntime) async throws -> Void) async throws {
        let captures = camera.dir.appendingPathComponent("captures")
        let gateway = try await startGateway(camera: url, label: label) { $0.capturesDirectory = captures.path }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        try await body(IndependentCameraChecks(camera: camera, gateway: gateway, base: base, captures: captures,
                                               objectsLog: objectsLog, translate: translate), cam)
        server.cancel()
        await gateway.stop()
        await camera.stop()
    }

    func objects(_ evs: Set<String>) -> [[String: Any]] {
        PythonCamera.lines(camera.dir.appendingPathComponent(objectsLog)).compactMap(translate)
            .filter { evs.contains($0["ev"] as? String ?? "") }
    }

    func saved(_ sha: String?) -> Bool { gateway.captures(camera: "cam0").contains { $0.sha256 == sha } }

    /// Waits until the camera streams (≥ 20 frames).
    func streams(_ cam: CameraRuntime) async -> Bool {
        let ok = await waitUntil(timeout: 30) { cam.driver.stats.frames >= 20 }
        #expect(ok, "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        return ok
    }

    /// `remoteShutter: false`: livegate offers no shutter for this camera; the capture must be
    /// refused (not taken). `shotsOnCard: false`: a remote shot does not stay on the card (Nikon's
    /// SDRAM).
    func run(_ cam: CameraRuntime, remoteShutter: Bool = true, shotsOnCard: Bool = true) async throws {
        var shot: [SavedCapture] = []
        if remoteShutter {
            shot = try await gateway.capture(camera: cam, autofocus: false)
        } else {
            await #expect(throws: (any Error).self, "a capture was taken where livegate offers no shutter") {
                try await gateway.capture(camera: cam, autofocus: false)
            }
        }
        let captured = objects(["captured"])
        #expect(shot.count == captured.count && shot.isEmpty != remoteShutter
                && Set(shot.map(\.sha256)) == Set(captured.compactMap { $0["sha256"] as? String }),
                "saved \(shot.map { "\($0.name) \($0.sha256.prefix(8))" }), the camera captured \(captured)")
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming }, "live view did not come back after the capture")

        camera.signal(SIGUSR1)
        #expect(await waitUntil(timeout: 15) { !objects(["body_shot"]).isEmpty }, "the camera made no body shot")
        let body = objects(["body_shot"]).compactMap { $0["sha256"] as? String }
        #expect(await waitUntil(timeout: 30) { body.allSatisfy(saved) },
                "the body shot was not saved: \(gateway.captures(camera: "cam0").map(\.name))")
        #expect(gateway.captures(camera: "cam0").count == shot.count + body.count, "\(gateway.captures(camera: "cam0").map(\.name))")

        let list = try await curlGet("\(base)/api/v1/cameras/cam0/files")
        let files = (try? JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["files"] as? [[String: Any]] ?? []
        let onCard = objects(shotsOnCard ? ["card", "captured", "body_shot"] : ["card", "body_shot"])
        #expect(list.code == "200" && files.count == onCard.count,
                "\(list.code): listed \(files.compactMap { $0["path"] }) of \(onCard.compactMap { $0["name"] }) \(String(decoding: list.body.prefix(300), as: UTF8.self))")
        for f in files {
            guard let path = f["path"] as? String else { continue }
            let want = onCard.first { $0["name"] as? String == (path as NSString).lastPathComponent }?["sha256"] as? String
            let got = try await curlGet("\(base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && SHA256.hex(got.body) == want,
                    "\(path): \(got.code), \(got.body.count) bytes; the camera has \(onCard.map { "\($0["name"] ?? "-") \($0["size"] ?? "-")" })")
            if path == files.first?["path"] as? String, got.body.count > 1_100 {
                let part = try await curlGet("\(base)/api/v1/cameras/cam0/files\(path)", ["-r", "100-1099"])
                #expect(part.code == "206" && part.body == Array(got.body[100...1099]), "range of \(path): \(part.code)")
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)), "\(names)")
        let frames = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > frames + 10 }, "live view stopped")
    }
}
