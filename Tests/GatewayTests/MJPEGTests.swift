import CameraEmulators
import CameraWire
import Foundation
import Gateway
import Hummingbird
import JPEGKit
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport

/// MJPEG over HTTP and snapshots, read with curl: Sony emulator → driver → hub → JPEG branch →
/// `/mjpeg/{camera}` and `/snapshot/{camera}.jpg`.
@Suite(.serialized, .tags(.integration, .sanitized)) struct MJPEGTests {
    static let curl = Locations.program("curl")

    /// Splits a `multipart/x-mixed-replace` body into its parts' (headers, body).
    static func parts(_ data: [UInt8], boundary: String) -> [(headers: String, body: [UInt8])] {
        let marker = Array("--\(boundary)\r\n".utf8)
        var out: [(String, [UInt8])] = []
        var i = 0
        while let start = find(marker, in: data, from: i) {
            let h = start + marker.count
            guard let end = find(Array("\r\n\r\n".utf8), in: data, from: h) else { break }
            let headers = String(decoding: data[h..<end], as: UTF8.self)
            let lengthLine = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            guard let n = lengthLine.flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }),
                  end + 4 + n + 2 <= data.count else { break }  // the last part may be cut by curl's timeout
            out.append((headers, Array(data[(end + 4)..<(end + 4 + n)])))
            i = end + 4 + n
        }
        return out
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    @Test(.enabled(if: curl != nil, "curl is needed (deploy/install-deps.sh installs it)"))
    func mjpegPartsAreTheCameraJPEGsAndSnapshotsTheNewest() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "mjpeg") { $0.lingerSeconds = 1 }
        let cam = try #require(gateway.cameras.first)
        let tap = EndToEndTests.Tap()
        cam.hub.attach(tap.queue)
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let streaming = await waitUntil(timeout: 10) { cam.driver.state == .streaming }
        try #require(streaming, "the camera never streamed")
        #expect(gateway.branches(camera: "cam0")["jpeg"] == false, "the JPEG branch runs with no viewer")

        // curl reads the stream for 2 s (it then stops with its timeout, exit 28).
        let dir = try temporaryDirectory("livegate-mjpeg")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("stream.bin").path
        let headerFile = dir.appendingPathComponent("headers.txt").path
        let r = try runProcess(Self.curl!, ["-s", "--max-time", "2", "-D", headerFile, "-o", out, "\(base)/mjpeg/cam0"], timeout: 20)
        #expect(r.status == 28, "curl: \(r.output)")
        let headers = try String(contentsOfFile: headerFile, encoding: .utf8)
        #expect(headers.contains("200") && headers.lowercased().contains("content-type: multipart/x-mixed-replace; boundary=livegate-mjpeg-frame"), "\(headers)")
        let body = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
        let parts = Self.parts(body, boundary: "livegate-mjpeg-frame")
        #expect(parts.count >= 5, "only \(parts.count) parts in 2 s")
        let sent = Set(tap.drain().map(\.sha))
        for (i, p) in parts.enumerated() {
            #expect(p.headers.contains("Content-Type: image/jpeg"), "part \(i): \(p.headers)")
            #expect(sent.contains(SHA256.hex(p.body)), "part \(i) is not a JPEG the camera sent (\(p.body.count) bytes)")
        }
        // The viewer left with curl: the branch stops after its linger.
        let freed = await waitUntil(timeout: 10) { gateway.branches(camera: "cam0")["jpeg"] == false }
        #expect(freed, "the JPEG branch still runs after the viewer left")

        // A snapshot: the newest frame, one the camera sent.
        let snap = dir.appendingPathComponent("snap.jpg").path
        let s = try runProcess(Self.curl!, ["-s", "-f", "-D", headerFile, "-o", snap, "\(base)/snapshot/cam0.jpg"], timeout: 20)
        #expect(s.status == 0, "\(s.output)")
        let jpeg = try [UInt8](Data(contentsOf: URL(fileURLWithPath: snap)))
        #expect(jpeg.starts(with: [0xFF, 0xD8]))
        #expect(Set(tap.drain().map(\.sha)).union(sent).contains(SHA256.hex(jpeg)))
        #expect(try String(contentsOfFile: headerFile, encoding: .utf8).lowercased().contains("x-frame-age-ms"))
        let missing = try runProcess(Self.curl!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/snapshot/cam9.jpg"], timeout: 20)
        #expect(missing.output.contains("404"))
        let noStream = try runProcess(Self.curl!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/mjpeg/cam9"], timeout: 20)
        #expect(noStream.output.contains("404"))

        await gateway.stop()
        await emulator.stop()
    }

    /// The frames a hub published, with their AF areas (for the overlay test).
    final class AFTap: @unchecked Sendable {
        let queue = BoundedFrameQueue(capacity: 4096)
        func drain() -> [(bytes: [UInt8], af: [AFArea])] {
            var out: [([UInt8], [AFArea])] = []
            while let f = queue.pop() {
                if !f.isSlate { out.append((Array(f.bytes), f.afAreas)) }
                f.release()
            }
            return out
        }
    }

    /// `?overlay=af`: every part is the camera's frame with its AF areas drawn where the camera put
    /// them (found by the test pattern's frame counter), no part is the camera's untouched JPEG; a
    /// plain viewer at the same time still gets the camera's bytes; a bad overlay value is a 400.
    @Test(.enabled(if: curl != nil, "curl is needed (deploy/install-deps.sh installs it)"))
    func mjpegWithOverlayDrawsTheCameraAFAreas() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "mjpeg-af") { $0.lingerSeconds = 1 }
        let cam = try #require(gateway.cameras.first)
        let tap = AFTap()
        cam.hub.attach(tap.queue)
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let streaming = await waitUntil(timeout: 10) { cam.driver.state == .streaming }
        try #require(streaming, "the camera never streamed")
        let dir = try temporaryDirectory("livegate-mjpeg-af")
        defer { try? FileManager.default.removeItem(at: dir) }
        let drawnFile = dir.appendingPathComponent("af.bin").path, plainFile = dir.appendingPathComponent("plain.bin").path
        async let plainRun = runProcessAsync(Self.curl!, ["-s", "--max-time", "2", "-o", plainFile, "\(base)/mjpeg/cam0"], timeout: 20)
        let r = try runProcess(Self.curl!, ["-s", "--max-time", "2", "-o", drawnFile, "\(base)/mjpeg/cam0?overlay=af"], timeout: 20)
        #expect(r.status == 28, "curl: \(r.output)")
        _ = try await plainRun
        let sent = tap.drain()
        let sentSHAs = Set(sent.map { SHA256.hex($0.bytes) })
        let plain = Self.parts(try [UInt8](Data(contentsOf: URL(fileURLWithPath: plainFile))), boundary: "livegate-mjpeg-frame")
        #expect(plain.count >= 5 && plain.allSatisfy { sentSHAs.contains(SHA256.hex($0.body)) }, "the plain viewer got something else than the camera's JPEGs")
        let drawn = Self.parts(try [UInt8](Data(contentsOf: URL(fileURLWithPath: drawnFile))), boundary: "livegate-mjpeg-frame")
        #expect(drawn.count >= 5, "only \(drawn.count) parts in 2 s")

        // The camera's frames by their counter.
        let decoder = try JPEGDecoder()
        var byCounter: [Int: [AFArea]] = [:]
        for f in sent where !f.af.isEmpty {
            let pic = I420Picture(width: 16, height: 16)
            try f.bytes.withUnsafeBytes { try decoder.decode($0, into: pic) }
            if let n = TestPattern.readCounter(from: pic, patternWidth: pic.width, patternHeight: pic.height) { byCounter[n] = f.af }
        }
        var checked = 0
        for (i, p) in drawn.enumerated() {
            #expect(!sentSHAs.contains(SHA256.hex(p.body)), "part \(i) is the camera's JPEG untouched")
            let pic = I420Picture(width: 16, height: 16)
            try p.body.withUnsafeBytes { try decoder.decode($0, into: pic) }
            guard let n = TestPattern.readCounter(from: pic, patternWidth: pic.width, patternHeight: pic.height),
                  let areas = byCounter[n] else { continue }
            // A white box over the counter can make it misread: those frames are not judged.
            if areas.contains(where: { $0.pixels.x < pic.width / 2 && $0.pixels.y < pic.height / 3 }) { continue }
            for a in areas where a.kind != .invalid && a.state != .invalid {
                // The middle of the box's top and left edges carries the overlay's colour.
                let colour = AFOverlay.color(for: a)
                let r = a.pixels
                for (x, y) in [(r.x + r.width / 2, r.y + 1), (r.x + 1, r.y + r.height / 2)] where x >= 0 && y >= 0 && x < pic.width && y < pic.height {
                    let luma = Int(pic.luma(x: x, y: y))
                    #expect(abs(luma - Int(colour.y)) < 48, "frame \(n): luma \(luma) at (\(x),\(y)), the overlay's is \(colour.y)")
                }
            }
            checked += 1
        }
        #expect(checked * 2 >= drawn.count, "only \(checked) of \(drawn.count) annotated parts matched a camera frame with AF areas")
        #expect(cam.afJPEG.counts.annotated >= checked && cam.afJPEG.counts.failures == 0)

        let bad = try runProcess(Self.curl!, ["-s", "-w", "\n%{http_code}", "\(base)/mjpeg/cam0?overlay=boxes"], timeout: 20)
        #expect(bad.output.hasSuffix("400") && bad.output.contains("overlay must be af or none"), "\(bad.output)")
        await gateway.stop()
        await emulator.stop()
    }
}
