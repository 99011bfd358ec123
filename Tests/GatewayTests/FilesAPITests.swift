import CameraEmulators
import CameraWire
import Foundation
import Gateway
import JPEGKit
import Logging
import NIOPosix
import Testing
import TestSupport

/// The card through the API and the CLI, against the emulated Olympus card: listing, whole and
/// ranged downloads byte for byte, and paths that try to leave the card.
@Suite(.serialized, .tags(.integration)) struct FilesAPITests {
    static let curl = Locations.program("curl")

    func start() async throws -> (OlympusEmulator, Gateway, Task<Void, any Error>, String) {
        let emu = try OlympusEmulator(group: MultiThreadedEventLoopGroup.singleton)
        try await emu.start()
        emu.shootOnBody()
        emu.shootOnBody()
        let gateway = try await startGateway(camera: emu.cameraURL, label: "files")
        let (server, base) = try await startAPIServer(gateway)
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })
        return (emu, gateway, server, base)
    }

    func get(_ url: String, _ extra: [String] = []) async throws -> (code: String, body: [UInt8]) {
        try await curlGet(url, extra)
    }

    @Test(.enabled(if: curl != nil, "needs curl"))
    func listDownloadRangeAndTraversal() async throws {
        let (emu, gateway, server, base) = try await start()
        defer { server.cancel() }
        let names = emu.cardNames
        #expect(names.count == 2)
        let list = try await get("\(base)/api/v1/cameras/cam0/files")
        #expect(list.code == "200")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])
        let files = try #require(obj["files"] as? [[String: Any]])
        #expect(obj["total"] as? Int == 2)
        #expect(files.map { $0["path"] as? String } == names.map { "/DCIM/100OLYMP/\($0)" })
        #expect(files.first?["kind"] as? String == "image" && files.first?["size"] as? Int == emu.cardFile(names[0])?.count)
        #expect(files.first?["date"] is String)
        let paged = try await get("\(base)/api/v1/cameras/cam0/files?offset=1&limit=1")
        #expect(String(decoding: paged.body, as: UTF8.self).contains(names[1]) && !String(decoding: paged.body, as: UTF8.self).contains(names[0]))
        #expect(try await get("\(base)/api/v1/cameras/cam0/files?limit=0").code == "400")

        let camera = try #require(emu.cardFile(names[1]))
        let whole = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[1])")
        #expect(whole.code == "200" && whole.body == camera)
        let part = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[1])", ["-r", "100-1099"])
        #expect(part.code == "206" && part.body == Array(camera[100...1099]))
        let tail = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[1])", ["-H", "Range: bytes=-10"])
        #expect(tail.code == "206" && tail.body == Array(camera.suffix(10)))
        let beyond = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[1])", ["-r", "\(camera.count + 5)-"])
        #expect(beyond.code == "416")

        // Paths that try to leave the card, raw or encoded once or twice: refused, nothing served.
        for hostile in ["DCIM/../../etc/passwd", "DCIM/%2e%2e/%2e%2e/etc/passwd", "DCIM/%252e%252e/x", "DCIM%2F..%2F..%2Fetc",
                        "DCIM/100OLYMP/..%5c..%5cx", "DCIM/100OLYMP/%00.JPG", "DCIM/100OLYMP/NOPE.JPG"] {
            let r = try await get("\(base)/api/v1/cameras/cam0/files/\(hostile)")
            #expect(r.code == "400" || r.code == "404", "\(hostile) → \(r.code)")
            #expect(!String(decoding: r.body, as: UTF8.self).contains("root:"), "\(hostile)")
            #expect(r.body.count < 1000, "\(hostile) served \(r.body.count) bytes")
        }
        #expect(try await get("\(base)/api/v1/cameras/nope/files").code == "404")

        // The camera's thumbnails: listed files only.
        let thumb = try await get("\(base)/api/v1/cameras/cam0/thumbnails/DCIM/100OLYMP/\(names[0])")
        #expect(thumb.code == "200" && thumb.body == emu.thumbnail(names[0]) && thumb.body.starts(with: [0xFF, 0xD8]), "\(thumb.code)")
        #expect(try await get("\(base)/api/v1/cameras/cam0/thumbnails/DCIM/100OLYMP/\(names[1])").body == emu.thumbnail(names[1]))
        #expect(emu.thumbnail(names[0]) != emu.thumbnail(names[1]))
        #expect(try await get("\(base)/api/v1/cameras/cam0/thumbnails/DCIM/100OLYMP/NOPE.JPG").code == "404")
        #expect(try await get("\(base)/api/v1/cameras/cam0/thumbnails/DCIM/../../etc/passwd").code.hasPrefix("4"))

        // The same through the file's own address, `?thumbnail`; `?preview` is a JPEG livegate
        // makes from the picture (this small one stays whole: the same size, encoded again).
        for query in ["?thumbnail", "?thumbnail=1"] {
            let t = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[0])\(query)")
            #expect(t.code == "200" && t.body == emu.thumbnail(names[0]), "\(query): \(t.code)")
        }
        let preview = try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/\(names[1])?preview")
        #expect(preview.code == "200" && preview.body != camera, "\(preview.code)")
        let decoder = try JPEGDecoder()
        let shown = try preview.body.withUnsafeBytes { try decoder.header(of: $0) }
        let original = try camera.withUnsafeBytes { try decoder.header(of: $0) }
        #expect(shown.width == original.width && shown.height == original.height, "\(shown) from \(original)")
        #expect(try await get("\(base)/api/v1/cameras/cam0/files/DCIM/100OLYMP/NOPE.JPG?preview").code == "404")
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func theCLIListsAndDownloadsWithoutOverwriting() async throws {
        let (emu, gateway, server, base) = try await start()
        defer { server.cancel() }
        let names = emu.cardNames
        let listing = try await runProcessAsync(livegateBinary()!, ["files", "cam0", "--api", base])
        #expect(listing.status == 0 && listing.output.contains("/DCIM/100OLYMP/\(names[0])") && listing.output.contains("2 of 2 files"),
                "\(listing.output)")
        let dir = try temporaryDirectory("livegate-download")
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("shot.jpg").path
        let dl = try await runProcessAsync(livegateBinary()!, ["download", "cam0", "/DCIM/100OLYMP/\(names[0])", "-o", target, "--api", base])
        #expect(dl.status == 0, "\(dl.output)")
        #expect(dl.output.contains("100%"), "no progress shown: \(dl.output)")
        #expect(Array(FileManager.default.contents(atPath: target) ?? Data()) == emu.cardFile(names[0]))
        let again = try await runProcessAsync(livegateBinary()!, ["download", "cam0", "/DCIM/100OLYMP/\(names[1])", "-o", target, "--api", base])
        #expect(again.status != 0 && again.output.contains("not overwriting"), "\(again.output)")
        #expect(Array(FileManager.default.contents(atPath: target) ?? Data()) == emu.cardFile(names[0]))
        let missing = try await runProcessAsync(livegateBinary()!, ["download", "cam0", "/DCIM/100OLYMP/NOPE.JPG",
                                                                    "-o", dir.appendingPathComponent("x").path, "--api", base])
        #expect(missing.status != 0 && missing.output.contains("404"), "\(missing.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["shot.jpg"])
        server.cancel()
        await gateway.stop()
        await emu.stop()
    }
}
