import CameraKit
import Foundation
import Gateway
import Testing
import TestSupport

/// The common property vocabulary against PTP/IP cameras livegate did not write (`nikon_cam.py`,
/// `canon_cam.py`, from ptp.md §3): each value set is sent as the camera's own code and value (the
/// cameras refuse a value outside their lists), logged by the camera, and read back in the
/// vocabulary's words.
@Suite(.serialized, .tags(.integration)) struct PTPIndependentPropertiesTests {
    static let usable = Locations.program("python3") != nil && Locations.program("ffmpeg") != nil

    struct Wanted: Sendable {
        let name: PropertyName
        let text: String
        /// The camera's property code and raw value (ptp.md §3).
        let code: Int
        let value: Int
    }

    static func setAndReadBack(_ script: String, scheme: String, _ wanted: [Wanted],
                               _ check: (PythonCamera, Wanted) -> Bool) async throws {
        let dir = try temporaryDirectory("livegate-ptp-props-\(scheme)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = try await PythonCamera(script: Locations.repository.appendingPathComponent("Tests/Scripts/\(script)").path, dir: dir,
                                            arguments: ["--size", "640x424", "--fps", "15"], portFlag: "--port", readyPrefix: "ready ptpip=")
        let gateway = try await startGateway(camera: "\(scheme)://127.0.0.1:\(camera.port)", label: "ptp-props-\(scheme)")
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 30) { cam.driver.stats.frames >= 10 },
                "no live view from the camera: \(cam.driver.state) \(cam.driver.lastError ?? "-")")
        for w in wanted {
            do {
                try await cam.driver.setProperty(w.name, to: CommonValues.parse(w.text, for: w.name))
            } catch {
                Issue.record("\(scheme) \(w.name.rawValue) \(w.text): \(error)")
                continue
            }
            #expect(check(camera, w), "\(scheme) \(w.name.rawValue) \(w.text): not sent as 0x\(String(w.code, radix: 16)) = \(w.value)")
        }
        // Read back in the vocabulary's words (Canon reports its values in GetEvent: allow it a poll).
        for w in wanted {
            var shown: String?
            for _ in 0..<25 {
                shown = try await cam.driver.properties().first { $0.name == w.name }?.value?.description
                if shown == w.text { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(shown == w.text, "\(scheme) \(w.name.rawValue): shown as \(shown ?? "nothing"), set to \(w.text)")
        }
        await gateway.stop()
        await camera.stop()
    }

    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func nikonTakesTheStandardCodes() async throws {
        try await Self.setAndReadBack("nikon_cam.py", scheme: "nikon", [
            Wanted(name: .whiteBalance, text: "daylight", code: 0x5005, value: 4),
            Wanted(name: .aperture, text: "5.6", code: 0x5007, value: 560),
            Wanted(name: .iso, text: "400", code: 0x500F, value: 400),
            Wanted(name: .exposureCompensation, text: "-0.7", code: 0x5010, value: -667),
            Wanted(name: .shutterSpeed, text: "1/250", code: 0xD100, value: 1 << 16 | 250),
        ]) { camera, w in
            // nikon_cam logs the operation (its data-out is checked by the camera against its list).
            camera.requests.contains { $0["op"] as? String == "0x1016" && ($0["params"] as? [Int])?.first == w.code }
        }
    }

    @Test(.enabled(if: usable, "needs python3 and ffmpeg"))
    func canonTakesItsEOSCodes() async throws {
        try await Self.setAndReadBack("canon_cam.py", scheme: "canon", [
            Wanted(name: .whiteBalance, text: "daylight", code: 0xD109, value: 1),
            Wanted(name: .aperture, text: "5.6", code: 0xD101, value: 0x30),
            Wanted(name: .iso, text: "400", code: 0xD103, value: 0x58),
            Wanted(name: .exposureCompensation, text: "-0.7", code: 0xD104, value: 0xFB),
            Wanted(name: .shutterSpeed, text: "1/250", code: 0xD102, value: 0x78),
        ]) { camera, w in
            // SetDevicePropValueEx data: u32 size 12, u32 property, u32 value (little-endian; the
            // camera masks a signed u8 such as the EV, so 0xFB and 0xFFFFFFFB are one value).
            func le(_ v: Int) -> String { (0..<4).map { String(format: "%02x", (v >> (8 * $0)) & 0xFF) }.joined() }
            let head = le(12) + le(w.code)
            return camera.requests.contains { r in
                guard r["op"] as? String == "0x9110", let data = (r["data"] as? String)?.lowercased(), data.hasPrefix(head) else { return false }
                let raw = String(data.dropFirst(16).prefix(8))
                return raw == le(w.value) || raw == le(w.value | ~0xFF)
            }
        }
    }
}
