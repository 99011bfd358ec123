import JPEGKit
import CameraEmulators
import CameraWire
import Foundation
import Gateway
import Hummingbird
import LiveViewCore
import Logging
import MediaKit
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// The whole path with real parts: Sony emulator → driver → hub → RTSP (both mounts), HLS and the
/// recorder, read back with ffprobe/ffmpeg.
@Suite(.serialized, .tags(.integration)) struct EndToEndTests {
    static let ffmpegPresent = Locations.program("ffmpeg") != nil && Locations.program("ffprobe") != nil

    /// Collects every camera frame the hub publishes (lossless), to compare with the recording.
    /// Offline-slate frames (published once the camera stops while a viewer lingers) are counted
    /// apart: the recorder must skip them.
    final class Tap: @unchecked Sendable {
        let queue = BoundedFrameQueue(capacity: 4096)
        var slates = 0
        func drain() -> [(sha: String, pts: Int64?, seq: UInt64?)] {
            var out: [(String, Int64?, UInt64?)] = []
            while let f = queue.pop() {
                if f.isSlate {
                    slates += 1
                    f.release()
                    continue
                }
                out.append((SHA256.hex(Array(f.bytes)), f.cameraPTS, f.sequence))
                f.release()
            }
            return out
        }
    }

    @Test(.enabled(if: ffmpegPresent, "ffmpeg/ffprobe are needed (deploy/install-deps.sh installs them)"))
    func sonyCameraToRTSPHLSAndRecording() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = SonyEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        let port = try await emulator.start()
        let recDir = try temporaryDirectory("livegate-rec")
        let hlsDir = try temporaryDirectory("livegate-hls")
        var options = GatewayOptions()
        options.cameras = [try CameraSpec.parse("sony://127.0.0.1:\(port)", index: 0)]
        options.rtspPort = 0
        options.hlsDirectory = hlsDir.path
        options.recordDirectory = recDir.path
        var logger = Logger(label: "e2e")
        logger.logLevel = .warning
        let gateway = Gateway(options: options, logger: logger)
        try await gateway.start()
        let cam = try #require(gateway.cameras.first)
        let tap = Tap()
        cam.hub.attach(tap.queue)

        let rtsp = gateway.urls(for: cam)["rtsp"]!
        let raw = gateway.urls(for: cam)["rtspRaw"]!
        let probeH264 = try runProcess(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                                          "stream=codec_name,width,height", "-of", "csv=p=0", rtsp], timeout: 30)
        #expect(probeH264.output.contains("h264,320,240"), "\(probeH264.output)")
        let probeRaw = try runProcess(Locations.program("ffprobe")!, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                                         "stream=codec_name,width,height", "-of", "csv=p=0", raw], timeout: 30)
        #expect(probeRaw.output.contains("mjpeg,320,240"), "\(probeRaw.output)")
        // ffmpeg decodes 30 frames of each mount without errors.
        for url in [rtsp, raw] {
            let r = try runProcess(Locations.program("ffmpeg")!, ["-v", "error", "-rtsp_transport", "tcp", "-i", url,
                                                      "-frames:v", "30", "-f", "null", "-"], timeout: 40)
            #expect(r.status == 0, "\(url): \(r.output)")
        }
        // HLS starts on the first request, whose answer waits for the playlist; the playlist is readable.
        let playlist = hlsDir.appendingPathComponent("cam0/index.m3u8").path
        #expect(!FileManager.default.fileExists(atPath: playlist), "HLS ran before anyone asked")
        #expect(await gateway.hlsRequest(camera: "cam0", playlist: true) == .ready)
        let hlsProbe = try runProcess(Locations.program("ffprobe")!, ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", playlist], timeout: 30)
        #expect(hlsProbe.output.contains("h264"), "\(hlsProbe.output)")

        let sentBeforeStop = emulator.framesSent
        await gateway.stop()
        await emulator.stop()
        let published = tap.drain()
        #expect(published.count > 60)
        #expect(sentBeforeStop - published.count <= 3, "frames lost between camera and hub")

        // The recording holds exactly the published JPEGs, byte for byte, with the camera's PTS.
        let segments = try FileManager.default.contentsOfDirectory(atPath: recDir.path).filter { $0.hasSuffix(".mkv") }.sorted()
        #expect(segments.count == 1)
        let first = try #require(segments.first, "no recording segment in \(recDir.path)")
        let mkv = recDir.appendingPathComponent(first).path
        let frameDir = try temporaryDirectory("livegate-frames")
        let extract = try runProcess(Locations.program("ffmpeg")!, ["-v", "error", "-i", mkv, "-c", "copy", "-f", "image2",
                                                        frameDir.appendingPathComponent("f%05d.jpg").path], timeout: 60)
        #expect(extract.status == 0, "\(extract.output)")
        let files = try FileManager.default.contentsOfDirectory(atPath: frameDir.path).sorted()
        let recorded = try files.map { SHA256.hex(Array(try Data(contentsOf: frameDir.appendingPathComponent($0)))) }
        #expect(recorded == published.map(\.sha), "recorded JPEGs differ from what the camera sent")
        let pts = try runProcess(Locations.program("ffprobe")!, ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                                    "-of", "csv=p=0", mkv], timeout: 30)
        let recordedMs = pts.output.split(separator: "\n").compactMap { Double($0) }.map { Int64(($0 * 1000).rounded()) }
        #expect(recordedMs == published.compactMap { $0.pts.map { $0 / 1_000_000 } })
        // The sidecar has one line per frame with the camera PTS and the AF box.
        let sidecar = mkv.replacingOccurrences(of: ".mkv", with: ".af.jsonl")
        let lines = try String(contentsOfFile: sidecar, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == published.count)
        if let first = lines.first, let obj = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any] {
            #expect((obj["pts"] as? NSNumber)?.int64Value == published.first?.pts)
            #expect(obj["timeBase"] as? String == "camera")
            #expect((obj["af"] as? [[String: Any]])?.count == 1)
        }
        try? FileManager.default.removeItem(at: recDir)
        try? FileManager.default.removeItem(at: hlsDir)
        try? FileManager.default.removeItem(at: frameDir)
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func cliSetAndGetGoThroughTheAPI() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 10, label: "cli")
        let (server, api) = try await startAPIServer(gateway)
        let bin = livegateBinary()!

        let ok = try runProcess(bin, ["set", "cam0", "whiteBalance", "tungsten", "--api", api], timeout: 30)
        #expect(ok.status == 0, "\(ok.output)")
        #expect(emulator.calls.filter { $0.method == "setWhiteBalance" }.map(\.params) == [#"["Incandescent",false,-1]"#])

        // A negative value is a value, not an option (before --api and after it).
        let negative = try runProcess(bin, ["set", "cam0", "exposureCompensation", "-0.7", "--api", api], timeout: 30)
        #expect(negative.status == 0, "\(negative.output)")
        let negativeLast = try runProcess(bin, ["set", "--api", api, "cam0", "exposureCompensation", "-1.0"], timeout: 30)
        #expect(negativeLast.status == 0, "\(negativeLast.output)")
        #expect(emulator.calls.filter { $0.method == "setExposureCompensation" }.map(\.params) == ["[-2]", "[-3]"])
        let twoValues = try runProcess(bin, ["set", "cam0", "iso", "100", "200", "--api", api], timeout: 30)
        #expect(twoValues.status != 0 && twoValues.output.contains("one value only"), "\(twoValues.output)")

        let refused = try runProcess(bin, ["set", "cam0", "iso", "123", "--api", api], timeout: 30)
        #expect(refused.status != 0)
        #expect(refused.output.contains("valid values"), "\(refused.output)")
        #expect(refused.output.contains("400"))

        let get = try runProcess(bin, ["get", "cam0", "whiteBalance", "--api", api], timeout: 30)
        #expect(get.status == 0)
        #expect(get.output.contains("tungsten"), "\(get.output)")

        let unknown = try runProcess(bin, ["get", "cam9", "--api", api], timeout: 30)
        #expect(unknown.status != 0)
        #expect(unknown.output.contains("no camera"), "\(unknown.output)")

        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
    /// `livegate set` on a Fujifilm body sends Fujifilm's own property codes and values (the
    /// emulator's request log), and `livegate get` reads them back in words.
    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func cliSetOnAFujifilmSendsItsOwnCodes() async throws {
        let emulator = PTPEmulator(kind: .fuji, fps: 10, source: try TestPatternSource(width: 320, height: 240),
                                   group: MultiThreadedEventLoopGroup.singleton)
        try await emulator.start()
        let gateway = try await startGateway(camera: emulator.cameraURL, label: "cli-fuji")
        let (server, api) = try await startAPIServer(gateway)
        let bin = livegateBinary()!
        // The camera must be connected before its properties can be set.
        await waitUntil(timeout: 10) { emulator.framesSent >= 3 }
        emulator.clearRequests()
        let values: [(String, String)] = [
            ("whiteBalance", "5500K"), ("iso", "1600"), ("shutterSpeed", "1/500"), ("aperture", "8"),
            ("exposureCompensation", "-1.0"), ("focusMode", "mf"),
        ]
        for (name, value) in values {
            let r = try runProcess(bin, ["set", "cam0", name, value, "--api", api], timeout: 30)
            #expect(r.status == 0, "set \(name) \(value): \(r.output)")
        }
        let sets = emulator.requests.filter { $0.code == 0x1016 }.map { "\(String($0.params[0], radix: 16)) \($0.data)" }
        #expect(sets == [
            "5005 [7, 128]", "d017 [124, 21]", "d02a [64, 6, 0, 0]", "d240 [32, 161, 7, 128]", "5007 [32, 3]",
            "5010 [24, 252]", "500a [1, 0]",
        ])
        let get = try runProcess(bin, ["get", "cam0", "--api", api], timeout: 30)
        #expect(get.status == 0, "\(get.output)")
        var read: [String: String] = [:]
        for line in get.output.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count == 2 { read[String(parts[0])] = String(parts[1]) }
        }
        #expect(read == ["whiteBalance": "5500K", "iso": "1600", "shutterSpeed": "1/500", "aperture": "8.0",
                         "exposureCompensation": "-1", "focusMode": "mf"], "\(get.output)")
        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}
