import CameraEmulators
import CameraWire
import Foundation
import Gateway
import Hummingbird
import LiveViewCore
import Logging
import NIOPosix
import Synchronization
import Testing

/// MJPEG over HTTP and snapshots, read with curl: Sony emulator → driver → hub → JPEG branch →
/// `/mjpeg/{camera}` and `/snapshot/{camera}.jpg`.
@Suite(.serialized) struct MJPEGTests {
    static let curl = which("curl")

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
}
