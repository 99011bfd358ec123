import CameraEmulators
import CameraKit
import Foundation
import Gateway
import Testing
import TestSupport

/// A Sony body's card through the gateway (sony.md §8.3), against the emulated body: the camera is
/// switched to Contents Transfer, the avContent flat list read, files downloaded byte for byte
/// (whole and ranged) with thumbnails, and the live view comes back after the card work.
@Suite(.serialized, .tags(.integration, .sanitized)) struct SonyCardGatewayTests {
    /// Against a prompt body and a moody one (EmulatorMood.moody: a 2 s camera-function switch
    /// during which it already says it switched but answers "Not Available Now", the first frame
    /// 1.5 s after the stream starts, every third property set refused once, slow listing pages).
    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"), arguments: [EmulatorMood.prompt, .moody])
    func theCardIsListedInContentsTransferAndTheLiveViewComesBack(mood: EmulatorMood) async throws {
        let (emu, gateway) = try await startSonyGateway(fps: 15, label: "sony-card", mood: mood)
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let cam = try #require(gateway.cameras.first)
        #expect(await waitUntil(timeout: 15) { cam.driver.state == .streaming && cam.driver.stats.frames > 5 })
        let first = emu.shootOnBody(), second = emu.shootOnBody()

        // Property sets: a busy answer is waited out, never passed on.
        for iso in ["200", "400", "800"] {
            let set = try await curlGet("\(base)/api/v1/cameras/cam0/properties/iso",
                                        ["-X", "PUT", "-H", "Content-Type: application/json", "-d", "{\"value\": \"\(iso)\"}"])
            #expect(set.code == "200", "\(mood): ISO \(iso) → \(set.code) \(String(decoding: set.body, as: UTF8.self))")
        }

        let began = ContinuousClock.now
        let list = try await curlGet("\(base)/api/v1/cameras/cam0/files")
        print("sony card listing (\(mood) body): \(began.duration(to: .now))")
        #expect(list.code == "200", "\(mood): \(String(decoding: list.body, as: UTF8.self))")
        if mood.isMoody {
            // The body answered "Not Available Now" while switching, and livegate waited for it.
            #expect(emu.calls.filter { $0.method == "getSourceList" }.count >= 2, "getSourceList was not retried")
        }
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let files = try #require(obj["files"] as? [[String: Any]])
        #expect(files.compactMap { $0["path"] as? String } == ["/100/\(first)", "/100/\(second)"], "\(files)")
        #expect(files.first?["date"] as? String == "2026-11-27T01:00:00Z")
        #expect(emu.calls.contains { $0.method == "setCameraFunction" && $0.params.contains("Contents Transfer") })
        #expect(emu.calls.contains { $0.method == "getContentList" })

        let camera = try #require(emu.cardFile(second))
        let whole = try await curlGet("\(base)/api/v1/cameras/cam0/files/100/\(second)")
        #expect(whole.code == "200" && whole.body == camera, "\(whole.code) \(whole.body.count) of \(camera.count)")
        let part = try await curlGet("\(base)/api/v1/cameras/cam0/files/100/\(second)", ["-r", "10-2009"])
        #expect(part.code == "206" && part.body == Array(camera[10...2009]), "\(part.code)")
        let thumb = try await curlGet("\(base)/api/v1/cameras/cam0/thumbnails/100/\(first)")
        #expect(thumb.code == "200" && thumb.body == emu.thumbnail(first) && thumb.body.starts(with: [0xFF, 0xD8]))
        for hostile in ["100/../../etc/passwd", "100/%2e%2e/x", "100/NOPE.JPG"] {
            let r = try await curlGet("\(base)/api/v1/cameras/cam0/files/\(hostile)")
            #expect(r.code == "400" || r.code == "404", "\(hostile) → \(r.code)")
        }

        // A capture while the card is shown: the camera shoots again first, and the card lists the shot.
        #expect(emu.inContentsTransfer)
        let shot = try await gateway.capture(camera: cam, autofocus: false)
        #expect(shot.count == 1 && Array(FileManager.default.contents(atPath: shot.first?.path ?? "") ?? Data()) == emu.cardFile(shot.first?.cameraName ?? ""))
        // The capture left Contents Transfer, so the live view is started again: a listing asked
        // in that gap waits for it instead of answering "not connected".
        #expect(await waitUntil(timeout: 5) { cam.driver.state != .streaming }, "the live view was not restarted")
        let relisted = try await curlGet("\(base)/api/v1/cameras/cam0/files")
        #expect(relisted.code == "200")
        #expect(String(decoding: relisted.body, as: UTF8.self).contains("/100/\(shot.first?.cameraName ?? "?")"),
                "\(String(decoding: relisted.body, as: UTF8.self).prefix(300))")

        // Back to Remote Shooting once the card is left alone; the live view runs again.
        #expect(await waitUntil(timeout: 15) { !emu.inContentsTransfer }, "the camera stayed in Contents Transfer")
        #expect(await waitUntil(timeout: 15) { cam.driver.state == .streaming })
        let before = cam.driver.stats.frames
        #expect(await waitUntil(timeout: 15) { cam.driver.stats.frames > before + 5 }, "the live view did not come back")
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }
}
