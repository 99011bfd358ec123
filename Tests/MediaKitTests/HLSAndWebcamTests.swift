import Foundation
import LiveViewCore
import MediaKit
import Testing

extension MediaTests {
    @Suite("HLS output (hlssink2)")
    struct HLSOutputTests {
        @Test func writesPlaylistAndSegmentsThatFFprobeReads() async throws {
            try #require(GStreamerRuntime.hasElement("hlssink2") && GStreamerRuntime.hasElement("x264enc"), "hlssink2/x264enc missing")
            let root = try makeTempDir("hls")
            defer { try? FileManager.default.removeItem(atPath: root) }
            let hub = FrameHub()
            let annotate = try AnnotatedStream(name: "hls-test")
            annotate.attach(to: hub)
            let hls = HLSOutput(runtime: testRuntime, configuration: .init(root: root))
            try hls.addCamera(id: "cam1", annotate: annotate, fps: 30)
            let feeder = try TestFeeder(hub: hub)
            feeder.start()
            defer {
                feeder.stop()
                hls.stop()
                annotate.stop()
            }
            let playlist = hls.playlistPath(for: "cam1")
            // Wait for a playlist listing at least 3 segments.
            var segments: [String] = []
            await waitUntil(timeout: 30) {
                guard let text = try? String(contentsOfFile: playlist, encoding: .utf8) else { return false }
                segments = text.split(separator: "\n").filter { $0.hasSuffix(".ts") }.map(String.init)
                return segments.count >= 3
            }
            #expect(segments.count >= 3, "playlist segments: \(segments)")
            let text = try String(contentsOfFile: playlist, encoding: .utf8)
            #expect(text.contains("#EXT-X-TARGETDURATION:1"))
            for s in segments {
                let path = s.hasPrefix("/") ? s : root + "/cam1/" + s
                #expect(FileManager.default.fileExists(atPath: path), "missing \(path)")
            }
            let r = try await runTool(ffprobe, ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", playlist])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("h264,768,432"), "ffprobe: \(r.stdout) \(r.stderr)")
            if let keep = ProcessInfo.processInfo.environment["LIVEGATE_KEEP_HLS"], let last = segments.last {
                try? FileManager.default.copyItem(atPath: root + "/cam1/" + last, toPath: keep)
            }
            let st = try #require(hls.stats().first)
            #expect(st.framesOut > 60 && st.errors == 0, "\(st)")
        }
    }

    /// The real v4l2loopback device cannot be tested on this VM (no kernel module can be loaded);
    /// these tests run the same pipeline up to the sink with a `filesink` in place of `v4l2sink`.
    @Suite("Virtual webcam (v4l2 pipeline with a file sink)")
    struct VirtualWebcamTests {
        @Test func streamsSlateThenLetterboxedCamera() async throws {
            let dir = try makeTempDir("v4l2")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let out = dir + "/out.yuy2"
            var config = VirtualWebcamOutput.Configuration(device: "/dev/video-not-used")
            config.width = 640
            config.height = 360
            config.fps = 30
            config.offlineAfter = .milliseconds(500)
            config.sink = "filesink location=\"\(out)\" sync=false"
            let webcam = try VirtualWebcamOutput(runtime: testRuntime, configuration: config)
            try webcam.start()
            let frameBytes = 640 * 360 * 2
            await pause(1.0)
            // No camera yet: the slate keeps the device fed at about 30 fps.
            #expect(webcam.isShowingSlate)
            let slateFrames = webcam.slateFrames
            #expect(slateFrames >= 10, "only \(slateFrames) slate frames in 1 s")

            // A 4:3 camera: letterboxed (pillarboxed) into 16:9.
            let hub = FrameHub()
            let annotate = try AnnotatedStream(name: "v4l2-test")
            annotate.attach(to: hub)
            webcam.show(annotate)
            let feeder = try TestFeeder(hub: hub, width: 480, height: 360, fps: 30)
            feeder.start()
            await pause(1.0)
            #expect(!webcam.isShowingSlate)
            feeder.stop()
            webcam.stop()
            annotate.stop()

            let data = try Data(contentsOf: URL(fileURLWithPath: out))
            #expect(data.count % frameBytes == 0)
            let frames = data.count / frameBytes
            #expect(frames >= 30, "only \(frames) frames written in 2 s")
            // YUY2: Y0 U Y1 V. First frame is the slate (mid grey, limited range after conversion).
            let y0 = Int(data[0])
            #expect(y0 > 80 && y0 < 130, "slate luma \(y0)")
            // Last frame: black bars left/right of the 480×360 picture (80 px each at 640×360).
            let last = data.count - frameBytes
            let row = 180 * 640 * 2
            let left = Int(data[last + row + 10 * 2]), right = Int(data[last + row + 630 * 2])
            #expect(left <= 20 && right <= 20, "bars luma \(left) \(right)")
            let stats = webcam.stats(camera: "cam")
            #expect(stats.framesIn > 10 && stats.errors == 0, "\(stats)")
        }

        @Test func missingDeviceFailsToStart() throws {
            var config = VirtualWebcamOutput.Configuration(device: "/dev/video-livegate-missing")
            config.width = 320
            config.height = 180
            let webcam = try VirtualWebcamOutput(runtime: testRuntime, configuration: config)
            #expect(throws: MediaError.self) { try webcam.start() }
            webcam.stop()
        }
    }
}
