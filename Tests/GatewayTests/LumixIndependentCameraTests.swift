import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing

/// A Panasonic LUMIX that livegate did not write: `Tests/Scripts/lumix_cam.py` (cam.cgi, UDP live
/// view, the card through UPnP ContentDirectory), written only from the protocol notes
/// (panasonic.md) by a session that never saw livegate's Panasonic code. Its `objects.jsonl` says
/// what it put on the card and served.
@Suite(.serialized) struct LumixIndependentCameraTests {
    static let script = repoRoot.appendingPathComponent("Tests/Scripts/lumix_cam.py").path
    static let usable = which("python3") != nil && which("ffmpeg") != nil && which("curl") != nil

    static func objects(_ camera: PythonCamera, _ evs: Set<String>) -> [[String: Any]] {
        PythonCamera.lines(camera.dir.appendingPathComponent("objects.jsonl")).filter { evs.contains($0["ev"] as? String ?? "") }
    }

    /// Remote capture and a shot on the body saved byte for byte, the card listed and read (whole
    /// and a range), live view going on; on a flat card and on one grouped by shooting day.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"), arguments: [false, true])
    func captureBodyShotAndCardAgainstAnIndependentLumix(groupedByDay: Bool) async throws {
        let dir = try temporaryDirectory("livegate-lumix-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Self.script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--dlna-port", "0",
        ] + (groupedByDay ? ["--group-by-day"] : []))
        let dlna = try #require(camera.readyLine.components(separatedBy: "dlna=").last.flatMap { Int($0) },
                                "no DLNA port in '\(camera.readyLine)'")
        let captures = dir.appendingPathComponent("captures")
        let url = "panasonic://127.0.0.1:\(camera.port)?lvport=0&dlnaport=\(dlna)"
        let gateway = try await startGateway(camera: url, label: "lumix-independent") { $0.capturesDirectory = captures.path }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 20 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")

        let shot = try await gateway.capture(camera: cam, autofocus: false)
        let captured = Self.objects(camera, ["captured"])
        #expect(shot.count == 1 && captured.count == 1 && shot.first?.sha256 == captured.first?["sha256"] as? String,
                "saved \(shot), camera captured \(captured)")
        #expect(await waitUntil(timeout: 20) { cam.driver.state == .streaming }, "live view did not come back after the capture")

        camera.signal(SIGUSR1)
        #expect(await waitUntil(timeout: 15) { !Self.objects(camera, ["body_shot"]).isEmpty })
        let body = Self.objects(camera, ["body_shot"]).first?["sha256"] as? String
        #expect(await waitUntil(timeout: 30) { gateway.captures(camera: "cam0").contains { $0.sha256 == body } },
                "the body shot was not saved: \(gateway.captures(camera: "cam0").map(\.name))")
        #expect(gateway.captures(camera: "cam0").count == 2, "\(gateway.captures(camera: "cam0").map(\.name))")

        let list = try await curlGet("\(base)/api/v1/cameras/cam0/files")
        let files = (try? JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["files"] as? [[String: Any]] ?? []
        let onCard = Self.objects(camera, ["card", "captured", "body_shot"])
        #expect(list.code == "200" && files.count == onCard.count,
                "listed \(files.compactMap { $0["path"] }) of \(onCard.compactMap { $0["name"] })")
        for f in files {
            guard let path = f["path"] as? String else { continue }
            let want = onCard.first { $0["name"] as? String == (path as NSString).lastPathComponent }?["sha256"] as? String
            let got = try await curlGet("\(base)/api/v1/cameras/cam0/files\(path)")
            #expect(got.code == "200" && SHA256.hex(got.body) == want, "\(path): \(got.code), \(got.body.count) bytes; camera: \(onCard.map { "\($0["name"] ?? "-") \($0["size"] ?? "-")" })")
            if path == files.first?["path"] as? String, got.body.count > 1_100 {
                let part = try await curlGet("\(base)/api/v1/cameras/cam0/files\(path)", ["-r", "100-1099"])
                #expect(part.code == "206" && part.body == Array(got.body[100...1099]), "range of \(path): \(part.code)")
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)), "\(names)")
        let frames = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 20) { cam.driver.stats.frames > frames + 10 }, "live view stopped")
        server.cancel()
        await gateway.stop()
        await camera.stop()
    }
}
