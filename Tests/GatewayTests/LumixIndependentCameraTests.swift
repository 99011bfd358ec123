import Foundation
import Gateway
import Testing
import TestSupport

/// A Panasonic LUMIX that livegate did not write: `Tests/Scripts/lumix_cam.py` (cam.cgi, UDP live
/// view, the card through UPnP ContentDirectory), written only from the protocol notes
/// (panasonic.md) by a session that never saw livegate's Panasonic code.
@Suite(.serialized, .tags(.integration)) struct LumixIndependentCameraTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/lumix_cam.py").path
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil && Locations.program("curl") != nil

    /// `IndependentCameraChecks` on a flat card and on one grouped by shooting day.
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"), arguments: [false, true])
    func captureBodyShotAndCardAgainstAnIndependentLumix(groupedByDay: Bool) async throws {
        let dir = try temporaryDirectory("livegate-lumix-independent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Self.script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--dlna-port", "0",
        ] + (groupedByDay ? ["--group-by-day"] : []))
        let dlna = try #require(camera.readyLine.components(separatedBy: "dlna=").last.flatMap { Int($0) },
                                "no DLNA port in '\(camera.readyLine)'")
        let url = "panasonic://127.0.0.1:\(camera.port)?lvport=0&dlnaport=\(dlna)"
        try await IndependentCameraChecks.with(camera, url: url, label: "lumix-independent") { checks, cam in
            if await checks.streams(cam) { try await checks.run(cam) }
        }
    }

    /// The first download of a shot cut half-way (`IndependentCameraChecks.brokenTransfer`).
    @Test(.enabled(if: usable, "needs python3, ffmpeg and curl"))
    func aShotWhoseDownloadBrokeIsSavedWhole() async throws {
        let dir = try temporaryDirectory("livegate-lumix-broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Self.script, dir: dir, arguments: [
            "--objects-log", dir.appendingPathComponent("objects.jsonl").path, "--fps", "15", "--dlna-port", "0",
            "--break-transfer-once",
        ])
        let dlna = try #require(camera.readyLine.components(separatedBy: "dlna=").last.flatMap { Int($0) })
        try await IndependentCameraChecks.with(camera, url: "panasonic://127.0.0.1:\(camera.port)?lvport=0&dlnaport=\(dlna)",
                                               label: "lumix-broken") { checks, cam in
            if await checks.streams(cam) { try await checks.brokenTransfer(cam, captureSucceeds: true) }
        }
    }
}
