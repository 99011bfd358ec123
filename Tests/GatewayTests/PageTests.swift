import Foundation
import Gateway
import MediaKit
import Testing

/// The page at `/` in a real browser: Debian's Chromium driven by Playwright (Tests/Scripts/page_test.py)
/// against a gateway on the Sony emulator. Screenshots stay in .build/test-artifacts/page/.
@Suite(.serialized) struct PageTests {
    static let script = repoRoot.appendingPathComponent("Tests/Scripts/page_test.py").path
    static let usable: Bool = {
        guard let python = which("python3"), FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
              GStreamerRuntime.hasElement("webrtcbin"), GStreamerRuntime.hasElement("nicesrc") else { return false }
        return (try? runProcess(python, ["-c", "import playwright"], timeout: 60).status) == 0
    }()

    @Test(.enabled(if: usable, "needs Debian's chromium and python3 with playwright (deploy/install-deps.sh, requirements-test.txt)"))
    func chromiumPlaysWebRTCAndSteersTheCamera() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "page")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let shots = repoRoot.appendingPathComponent(".build/test-artifacts/page").path
        let r = try runProcess(which("python3")!, [Self.script, base, shots], timeout: 120)
        let line = try #require(r.output.split(separator: "\n").last { $0.hasPrefix("{") }, "page_test.py: \(r.output.suffix(2000))")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(seen["preview"] as? String == "webrtc", "\(seen)")
        #expect((seen["frames_in_1s"] as? Int ?? 0) >= 10, "Chromium decoded \(seen["frames_in_1s"] ?? "?") frames in 1 s")
        #expect(seen["width"] as? Int == 320 && seen["height"] as? Int == 240)
        // A click at (25 %, 50 %) of the picture is touch-AF there: the Sony API takes percent.
        #expect((seen["focus_text"] as? String)?.contains("focus at 80,120") == true, "\(seen["focus_text"] ?? "")")
        #expect(emulator.calls.filter { $0.method == "setTouchAFPosition" }.map(\.params) == ["[25,50]"])
        // Choosing tungsten reached the camera, and the page shows the camera's value.
        #expect(emulator.calls.filter { $0.method == "setWhiteBalance" }.map(\.params) == [#"["Incandescent",false,-1]"#])
        #expect(seen["white_balance"] as? String == "tungsten")
        #expect(seen["mjpeg_width"] as? Int == 320, "the MJPEG fallback showed no picture")
        #expect(FileManager.default.fileExists(atPath: shots + "/page-webrtc.png"))
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}
