import CameraEmulators
import CameraKit
import Foundation
import NIOPosix
@testable import Gateway
import Testing
import TestSupport

/// A camera's capabilities follow what it turned out to be, whatever URL named it: the same PTP
/// body reached as `ptpip://HOST` (dialect read from DeviceInfo), `ptpip://HOST?vendor=NAME` and
/// its own scheme (`nikon://`, `canon://`, `sony-ptp://`, `fuji://`) shoots through the API, and
/// its JSON says so, once the camera is connected.
@Suite(.serialized, .tags(.integration)) struct URLFormTests {
    /// Every URL form the README lists for a PTP emulator of `kind`.
    static func forms(_ kind: PTPEmulatorKind, _ emu: PTPEmulator) -> [String] {
        let host = "127.0.0.1:\(emu.port)"
        if kind == .fuji {
            let ports = "event=\(emu.eventPort)&liveview=\(emu.liveViewPort)"
            return ["ptpip://\(host)?\(ports)", "ptpip://\(host)?vendor=fuji&\(ports)", "fuji://\(host)?\(ports)"]
        }
        return ["ptpip://\(host)", "ptpip://\(host)?vendor=\(kind.rawValue)", "\(kind.rawValue)://\(host)"]
    }

    /// Against a prompt body and a moody one (DeviceBusy for 2 s after the session opens and after
    /// each shot for card and property operations, every third property set refused once, no
    /// live-view frame for 1.5 s): livegate waits, the client never sees the busy answers.
    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"), arguments: PTPEmulatorKind.allCases, [EmulatorMood.prompt, .moody])
    func everyURLFormShoots(kind: PTPEmulatorKind, mood: EmulatorMood) async throws {
        let curl = Locations.program("curl")!
        let emu = PTPEmulator(kind: kind, fps: 10, source: try TestPatternSource(width: 320, height: 240),
                              group: MultiThreadedEventLoopGroup.singleton, mood: mood)
        _ = try await emu.start()
        defer { Task { await emu.stop() } }
        for url in Self.forms(kind, emu) {
            let dir = try temporaryDirectory("livegate-urlform")
            defer { try? FileManager.default.removeItem(at: dir) }
            let gateway = try await startGateway(camera: url, label: "urlform") { $0.capturesDirectory = dir.path }
            let (server, base) = try await startAPIServer(gateway)
            let streaming = await waitUntil(timeout: 20) { gateway.cameras.first?.driver.state == .streaming }
            #expect(streaming, "\(url): not streaming")
            let summary = try await runProcessAsync(curl, ["-s", "\(base)/api/v1/cameras/cam0"], timeout: 10)
            let obj = try #require(try JSONSerialization.jsonObject(with: Data(summary.output.utf8)) as? [String: Any], "\(url): \(summary.output)")
            let caps = try #require(obj["capabilities"] as? [String: Bool], "\(url): \(summary.output)")
            #expect(obj["vendor"] as? String == kind.rawValue, "\(url): \(obj["vendor"] ?? "-")")
            #expect(caps["shutter"] == true && caps["transfer"] == true && caps["files"] == true, "\(url): \(caps)")
            #expect(caps["touchAF"] == (kind != .sony), "\(url): \(caps)")
            // Three property sets (a moody body refuses the third once: waited out).
            let props = try await runProcessAsync(curl, ["-s", "\(base)/api/v1/cameras/cam0/properties/iso"], timeout: 30)
            let iso = try JSONSerialization.jsonObject(with: Data(props.output.utf8)) as? [String: Any]
            let choices = (iso?["choices"] as? [Any] ?? []).map { "\($0)" }
            if choices.count >= 2 {
                for value in [choices[0], choices[1], choices[0]] {
                    let set = try await runProcessAsync(curl, ["-s", "-w", "\n%{http_code}", "-X", "PUT", "-H", "Content-Type: application/json",
                                                               "-d", "{\"value\": \"\(value)\"}", "\(base)/api/v1/cameras/cam0/properties/iso"], timeout: 30)
                    #expect(set.output.hasSuffix("\n200"), "\(url) (\(mood)): ISO \(value) → \(set.output.suffix(300))")
                }
            }
            let shot = try await runProcessAsync(curl, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                                        "\(base)/api/v1/cameras/cam0/capture"], timeout: 60)
            #expect(shot.output.hasSuffix("\n200"), "\(url) (\(mood)): capture answered \(shot.output.suffix(300))")
            #expect(await waitUntil(timeout: 10) { !gateway.captures(camera: "cam0").isEmpty }, "\(url): nothing saved")
            // The card right after the shot (a moody body is busy saving).
            let list = try await runProcessAsync(curl, ["-s", "-w", "\n%{http_code}", "\(base)/api/v1/cameras/cam0/files"], timeout: 60)
            #expect(list.output.hasSuffix("\n200"), "\(url) (\(mood)): listing answered \(list.output.suffix(300))")
            server.cancel()
            await gateway.stop()
        }
    }

    /// Before a `ptpip://` camera has said which dialect it speaks, the shutter is not refused as
    /// missing (every dialect has one): the camera is not there, so the answer is 503.
    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"))
    func anAbsentGenericPTPCameraIsUnavailableNotUnsupported() async throws {
        let generic = try await startGateway(camera: "ptpip://127.0.0.1:1", label: "urlform-absent")
        let (server, base) = try await startAPIServer(generic)
        defer { server.cancel() }
        let refused = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                                             "\(base)/api/v1/cameras/cam0/capture"], timeout: 10)
        #expect(refused.output.hasSuffix("\n503"), "\(refused.output)")
        let focus = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                                           "-d", #"{"x": 10, "y": 10}"#, "\(base)/api/v1/cameras/cam0/focus"], timeout: 10)
        #expect(focus.output.hasSuffix("\n501") && focus.output.contains("not known yet"), "\(focus.output)")
        server.cancel()
        await generic.stop()
    }
}
