import CameraWire
import Foundation
import Gateway
import LiveViewCore
import Testing
import TestSupport

/// A Canon EOS over PTP/IP that livegate did not write: `Tests/Scripts/canon_cam.py`, written only
/// from the protocol notes (ptp.md) by a session that never saw livegate's PTP code. It logs every
/// object it made, served and let go (`objects.jsonl`) and every operation with the data sent
/// (`requests.jsonl`), which is what these tests hold livegate against.
@Suite(.serialized, .tags(.integration)) struct CanonIndependentCameraTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/canon_cam.py").path
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil && Locations.program("curl") != nil

    static func camera(_ dir: URL, _ extra: [String] = []) async throws -> PythonCamera {
        try await PythonCamera(script: script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--size", "640x424", "--fps", "15",
        ] + extra, portFlag: "--port", readyPrefix: "ready ptpip=")
    }

    static func objects(_ camera: PythonCamera, _ ev: String) -> [[String: Any]] {
        PythonCamera.lines(camera.dir.appendingPathComponent("objects.jsonl")).filter { $0["ev"] as? String == ev }
    }

    static func saved(_ gateway: Gateway, sha: String?) -> Bool {
        gateway.captures(camera: "cam0").contains { $0.sha256 == sha }
    }

    /// The card target, the first read of the shot cut off with the connection: the shot is read
    /// by name from the card in the next session (`IndependentCameraChecks.brokenTransfer`).
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func cardTargetShotWhoseTransferBrokeIsSavedWhole() async throws {
        let dir = try temporaryDirectory("livegate-canon-card-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--break-first-transfer"])
        try await IndependentCameraChecks.with(camera, url: "canon://127.0.0.1:\(camera.port)", label: "canon-card-broken") { checks, cam in
            if await checks.streams(cam) { try await checks.brokenTransfer(cam, captureSucceeds: false) }
        }
    }

    /// The card target: `IndependentCameraChecks` (a release, a body shot, the card).
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func cardTargetReleaseAndBodyShot() async throws {
        let dir = try temporaryDirectory("livegate-canon-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir)
        try await IndependentCameraChecks.with(camera, url: "canon://127.0.0.1:\(camera.port)", label: "canon-independent") { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam) }
            #expect(Self.objects(camera, "captured").first?["target"] as? String == "card")
        }
    }

    /// `?target=pc`: the camera keeps no copy. The first transfer is broken off half-way with both
    /// connections; the shot is offered again after the reconnect, read whole, let go with
    /// TransferComplete and saved once; a body shot follows the same way; at stop the body's own
    /// destination is put back.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func pcTargetSurvivesATransferBrokenHalfWay() async throws {
        let dir = try temporaryDirectory("livegate-canon-independent-pc")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await Self.camera(dir, ["--break-first-transfer"])
        let captures = dir.appendingPathComponent("captures")
        let gateway = try await startGateway(camera: "canon://127.0.0.1:\(camera.port)?target=pc", label: "canon-independent") {
            $0.capturesDirectory = captures.path
        }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 20 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        let answer = try? await gateway.capture(camera: cam, autofocus: false)
        #expect(await waitUntil(timeout: 10) { !Self.objects(camera, "captured").isEmpty })
        let captured = Self.objects(camera, "captured")
        #expect(captured.count == 1 && captured.first?["target"] as? String == "pc", "\(captured)")
        #expect(!Self.objects(camera, "broken").isEmpty, "the camera did not break the transfer")
        let want = captured.first?["sha256"] as? String
        #expect(await waitUntil(timeout: 30) { Self.saved(gateway, sha: want) },
                "the PC shot was not saved after the broken transfer (the release answered \(String(describing: answer)))")
        #expect(await waitUntil(timeout: 10) {
            Self.objects(camera, "transfer_complete").contains { $0["sha256"] as? String == want }
        }, "TransferComplete was not sent for the shot")

        camera.signal(SIGUSR1)
        #expect(await waitUntil(timeout: 15) { !Self.objects(camera, "body_shot").isEmpty })
        let body = Self.objects(camera, "body_shot").first
        #expect(body?["target"] as? String == "pc")
        #expect(await waitUntil(timeout: 15) { Self.saved(gateway, sha: body?["sha256"] as? String) }, "the body shot was not saved")
        #expect(gateway.captures(camera: "cam0").count == 2, "\(gateway.captures(camera: "cam0").map(\.name))")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: captures.appendingPathComponent("cam0").path)) ?? []
        #expect(Set(names) == Set(gateway.captures(camera: "cam0").map(\.name)), "\(names)")
        #expect(await waitUntil(timeout: 30) { cam.driver.state == .streaming }, "live view did not come back")

        await gateway.stop()
        // The last CaptureDestination (0xD11C) written is the body's own (the card: 2).
        let sets = camera.requests.filter { $0["op"] as? String == "0x9110" }.compactMap { $0["data"] as? String }
            .filter { $0.count >= 24 && $0.dropFirst(8).hasPrefix("1cd10000") }
        #expect(sets.last.map { String($0.dropFirst(16).prefix(8)) } == "02000000", "CaptureDestination writes: \(sets)")
        #expect(sets.contains { $0.dropFirst(16).hasPrefix("04000000") }, "the PC was never made the destination: \(sets)")
        await camera.stop()
    }
}
