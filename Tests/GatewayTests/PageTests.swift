import Foundation
import Gateway
import MediaKit
import Testing
import TestSupport

/// The page at `/` in a real browser: Debian's Chromium driven by Playwright (Tests/Scripts/page_test.py)
/// against a gateway on the Sony emulator. Screenshots stay in .build/test-artifacts/page/.
@Suite(.serialized, .tags(.integration)) struct PageTests {
    static let script = Locations.repository.appendingPathComponent("Tests/Scripts/page_test.py").path
    static let usable: Bool = {
        guard let python = Locations.program("python3"), Locations.program("chromium") != nil,
              GStreamerRuntime.hasElement("webrtcbin"), GStreamerRuntime.hasElement("nicesrc") else { return false }
        return (try? runProcess(python, ["-c", "import playwright"], timeout: 60).status) == 0
    }()

    @Test(.enabled(if: usable, "needs Debian's chromium and python3 with playwright (deploy/install-deps.sh, requirements-test.txt)"))
    func chromiumPlaysWebRTCAndSteersTheCamera() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "page")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let shots = Locations.repository.appendingPathComponent(".build/test-artifacts/page").path
        let handshake = try temporaryDirectory("livegate-page")
        defer { try? FileManager.default.removeItem(at: handshake) }
        // The script runs beside the test (not blocking one of its two threads); once it says so, the
        // camera stops, and the script watches the page show it.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Locations.program("python3")!)
        p.arguments = [Self.script, base, shots, handshake.path]
        p.environment = ProcessInfo.processInfo.environment.merging(["LIVEGATE_CHROMIUM": Locations.program("chromium")!]) { $1 }
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let ready = handshake.appendingPathComponent("ready").path
        for _ in 0..<1200 where p.isRunning && !FileManager.default.fileExists(atPath: ready) { try await Task.sleep(for: .milliseconds(50)) }
        let cameraStopped = FileManager.default.fileExists(atPath: ready)
        if cameraStopped { await emulator.stop() }
        for _ in 0..<1200 where p.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        if p.isRunning { p.terminate() }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "page_test.py: \(output.suffix(2000))")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(seen["preview"] as? String == "webrtc", "\(seen)")
        // Navigation, page load, offer, ICE gathering, answer, connection and the first key frame
        // (measured 0.5-0.8 s here; generous for a loaded CI machine).
        #expect((seen["first_frame_ms_after_navigation"] as? Int ?? .max) <= 3000, "first frame after \(seen["first_frame_ms_after_navigation"] ?? "?") ms")
        #expect((seen["frames_in_1s"] as? Int ?? 0) >= 10, "Chromium decoded \(seen["frames_in_1s"] ?? "?") frames in 1 s")
        #expect(seen["width"] as? Int == 320 && seen["height"] as? Int == 240)
        // A click at (25 %, 50 %) of the picture is touch-AF there: the Sony API takes percent.
        #expect((seen["focus_text"] as? String)?.contains("focus at 80,120") == true, "\(seen["focus_text"] ?? "")")
        #expect(emulator.calls.filter { $0.method == "setTouchAFPosition" }.map(\.params) == ["[25,50]"])
        // Choosing tungsten reached the camera, and the page shows the camera's value.
        #expect(emulator.calls.filter { $0.method == "setWhiteBalance" }.map(\.params) == [#"["Incandescent",false,-1]"#])
        #expect(seen["white_balance"] as? String == "tungsten")
        // The shutter button, pressed with the keyboard: the picture the camera made is listed.
        #expect((seen["picture"] as? String)?.contains("DSC00001.JPG") == true, "\(seen["picture"] ?? "none")")
        #expect((seen["shot_status"] as? String)?.contains("saved DSC00001.JPG") == true, "\(seen["shot_status"] ?? "")")
        #expect(emulator.cardNames == ["DSC00001.JPG"])
        #expect(seen["mjpeg_width"] as? Int == 320, "the MJPEG fallback showed no picture")
        // The AF toggle: the page draws the camera's boxes over its picture, scaled, and hides them again.
        let af = seen["af"] as? [String: Any] ?? [:]
        #expect((af["boxes"] as? Int ?? 0) >= 1, "no AF box drawn: \(af)")
        print("AF overlay seen by the page: \(af)")
        #expect((af["edge_alpha"] as? Int ?? 0) > 0 && af["inside_alpha"] as? Int == 0, "the box is not where the event puts it: \(af)")
        #expect(af["canvas_over_picture"] as? Bool == true && af["frame"] as? [Int] == [320, 240], "\(af)")
        #expect(af["hidden_after_off"] as? Bool == true)
        // Readable on a phone (390 px wide): no sideways scrolling, the picture fits the screen.
        let phone = seen["phone"] as? [String: Int] ?? [:]
        #expect((phone["scroll_width"] ?? .max) <= 390 && (phone["picture_width"] ?? .max) <= 390 && (phone["picture_width"] ?? 0) >= 300, "\(phone)")
        #expect(FileManager.default.fileExists(atPath: shots + "/page-webrtc.png"))
        // The camera died: the page says so with the reason, and the picture keeps coming (the slate).
        #expect(cameraStopped, "the script never got to the offline part")
        let offline = seen["offline_state"] as? String ?? ""
        #expect(!offline.hasPrefix("streaming") && offline.contains("—"), "state shown: \(offline)")
        #expect((seen["offline_frames_in_2s"] as? Int ?? 0) >= 3, "no slate frames in the browser: \(seen["offline_frames_in_2s"] ?? "?")")
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}
