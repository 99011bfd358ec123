import Foundation
import Gateway
import Testing
import TestSupport

/// Fujifilm X (its own TCP dialect: `Tests/Scripts/fuji_cam.py`, from ptp.md) and TomTom Bandit
/// (REST, UDP viewfinder, backchannel: `Tests/Scripts/bandit_cam.py`, from bandit.md), cameras
/// written from the protocol notes alone by sessions that never saw livegate's vendor code.
@Suite(.serialized, .tags(.integration)) struct FujiBanditIndependentCameraTests {
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil && Locations.program("curl") != nil

    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func captureBodyShotAndCardAgainstAnIndependentFujifilm() async throws {
        let dir = try temporaryDirectory("livegate-fuji-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Locations.repository.appendingPathComponent("Tests/Scripts/fuji_cam.py").path, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15",
        ], portFlag: "--port", readyPrefix: "ready fuji=")
        let p = camera.port
        try await IndependentCameraChecks.with(camera, url: "fuji://127.0.0.1:\(p)?event=\(p + 1)&liveview=\(p + 2)", label: "fuji-independent") { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam) }
        }
    }

    /// The Bandit takes photos in an image mode; this camera reads `POST record` there as the
    /// shutter (bandit.md names none), as livegate does: the image mode is set on the camera first
    /// (as its owner would), then the capture, a photo from the camera's button and the card.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func captureBodyShotAndCardAgainstAnIndependentBandit() async throws {
        let dir = try temporaryDirectory("livegate-bandit-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Locations.repository.appendingPathComponent("Tests/Scripts/bandit_cam.py").path, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--notify-port", "0",
        ])
        let mode = try await curlGet("http://127.0.0.1:\(camera.port)/api/2/settings/image", ["-X", "PUT"])
        #expect(mode.code == "200", "the camera did not switch to image mode: \(mode.code) \(String(decoding: mode.body, as: UTF8.self))")
        try await IndependentCameraChecks.with(camera, url: "bandit://127.0.0.1:\(camera.port)?udp=0", label: "bandit-independent") { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam) }
        }
    }

    /// The first read of a shot cut half-way: the Fujifilm drops the connection (the shot is read by
    /// name in the next session), the Bandit closes the download (read again at once).
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func aShotWhoseTransferBrokeIsSavedWholeFromAnIndependentFujifilm() async throws {
        let dir = try temporaryDirectory("livegate-fuji-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Locations.repository.appendingPathComponent("Tests/Scripts/fuji_cam.py").path, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--break-transfer-once",
        ], portFlag: "--port", readyPrefix: "ready fuji=")
        let p = camera.port
        try await IndependentCameraChecks.with(camera, url: "fuji://127.0.0.1:\(p)?event=\(p + 1)&liveview=\(p + 2)", label: "fuji-broken") { checks, cam in
            if await checks.streams(cam) { try await checks.brokenTransfer(cam, captureSucceeds: false) }
        }
    }

    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func aShotWhoseTransferBrokeIsSavedWholeFromAnIndependentBandit() async throws {
        let dir = try temporaryDirectory("livegate-bandit-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Locations.repository.appendingPathComponent("Tests/Scripts/bandit_cam.py").path, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--notify-port", "0", "--break-transfer-once",
        ])
        let mode = try await curlGet("http://127.0.0.1:\(camera.port)/api/2/settings/image", ["-X", "PUT"])
        #expect(mode.code == "200")
        try await IndependentCameraChecks.with(camera, url: "bandit://127.0.0.1:\(camera.port)?udp=0", label: "bandit-broken") { checks, cam in
            if await checks.streams(cam) { try await checks.brokenTransfer(cam, captureSucceeds: true) }
        }
    }
}
