import Foundation
import LiveViewCore
import MediaKit
import Testing

extension MediaTests {
    @Suite("RTSP output (real gst-rtsp-server, ffmpeg/ffprobe/gst-launch clients)")
    struct RTSPOutputTests {
        @Test func bothMountsServeDecodableStreams() throws {
            try #require(toolExists(ffprobe) && toolExists(ffmpeg), "ffmpeg/ffprobe not installed")
            let hub = FrameHub()
            let annotate = try AnnotatedStream(name: "rtsp-test")
            annotate.attach(to: hub)
            var config = RTSPOutput.Configuration(address: "127.0.0.1", port: 0)
            config.bitrateKbps = 3000
            let rtsp = try RTSPOutput(runtime: testRuntime, configuration: config)
            try rtsp.addCamera(id: "cam1", hub: hub, annotate: annotate, fps: 30)
            let feeder = try TestFeeder(hub: hub)
            feeder.start()
            defer {
                feeder.stop()
                rtsp.stop()
                annotate.stop()
            }
            #expect(rtsp.port > 0)

            // ffprobe: codec and size of both mounts.
            for (raw, codec) in [(false, "h264"), (true, "mjpeg")] {
                let r = try runTool(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                              "stream=codec_name,width,height", "-of", "csv=p=0",
                                              rtsp.url(for: "cam1", raw: raw)], timeout: 60)
                #expect(r.status == 0 && !r.timedOut, "ffprobe \(raw ? "raw" : "h264") after \(r.seconds) s: \(r.stderr)")
                print("ffprobe \(raw ? "raw" : "h264"): \(String(format: "%.2f", r.seconds)) s")
                #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(codec),768,432",
                        "ffprobe said \(r.stdout) \(r.stderr)")
            }

            // ffmpeg decodes 30 frames of each mount, two clients at once, without errors.
            let results = ConcurrentResults()
            let group = DispatchGroup()
            for (i, raw) in [false, true, false].enumerated() {
                DispatchQueue.global().async(group: group) {
                    // The third client joins the shared H.264 media late, in the middle of a GOP.
                    if i == 2 { Thread.sleep(forTimeInterval: 1.5) }
                    let r = try? runTool(ffmpeg, ["-nostdin", "-v", "warning", "-rtsp_transport", "tcp", "-i",
                                                  rtsp.url(for: "cam1", raw: raw), "-frames:v", i == 0 ? "120" : "30", "-f", "null", "-"],
                                         timeout: 60)
                    results.append((raw, r))
                }
            }
            group.wait()
            for (raw, r) in results.all {
                let r = try #require(r)
                #expect(r.status == 0 && !r.timedOut, "ffmpeg \(raw ? "raw" : "h264") exit \(r.status): \(r.stderr)")
                #expect(decodeProblems(r.stderr).isEmpty, "ffmpeg \(raw ? "raw" : "h264") reported: \(r.stderr.prefix(2000))")
            }

            // What the viewers see: the H.264 mount has the AF box drawn where the frame's counter says
            // the test pattern put it; the raw mount is the camera's picture without overlay.
            for raw in [false, true] {
                let path = NSTemporaryDirectory() + "livegate-rtsp-\(UUID().uuidString.prefix(8)).yuv"
                defer { try? FileManager.default.removeItem(atPath: path) }
                let r = try runTool(ffmpeg, ["-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", rtsp.url(for: "cam1", raw: raw),
                                             "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", path], timeout: 60)
                #expect(r.status == 0, "\(r.stderr)")
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                try #require(data.count == 768 * 432 * 3 / 2)
                let pic = I420Picture(width: 768, height: 432)
                data.withUnsafeBytes { pic.mutableBytes.copyMemory(from: $0) }
                let n = try #require(TestPattern.readCounter(from: pic, patternWidth: 768, patternHeight: 432), "counter unreadable")
                let box = TestPattern.afBox(frameNumber: n, width: 768, height: 432)
                // Middle of the box's left edge: green (U, V low) on the H.264 mount only.
                let (u, v) = pic.chroma(x: box.x, y: box.y + box.height / 2)
                let green = u < 90 && v < 70  // green ≈ (54, 34); the background tints are ≥ 100
                #expect(green == !raw, "\(raw ? "raw" : "h264") frame \(n): edge chroma u=\(u) v=\(v)")
            }

            // A GStreamer client.
            if toolExists(gstLaunch) {
                for raw in [false, true] {
                    let depay = raw ? "rtpjpegdepay ! jpegdec" : "rtph264depay ! avdec_h264"
                    let r = try runTool(gstLaunch, ["-q", "rtspsrc", "location=\(rtsp.url(for: "cam1", raw: raw))",
                                                    "protocols=tcp", "latency=0", "!"] + depay.split(separator: " ").map(String.init)
                                            + ["!", "fakesink", "num-buffers=20"], timeout: 60)
                    #expect(r.status == 0 && !r.timedOut, "gst-launch rtspsrc \(raw ? "raw" : "h264") after \(r.seconds) s: \(r.stderr) \(r.stdout)")
                }
            }
            // Once the clients have gone, their medias are unprepared and leave the registry.
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline, rtsp.stats().contains(where: { $0.clients > 0 }) { Thread.sleep(forTimeInterval: 0.1) }
            #expect(rtsp.stats().allSatisfy { $0.clients == 0 }, "medias left in the registry: \(rtsp.stats())")
            // The next viewer gets a fresh media (media-configure runs again) that streams.
            let again = try runTool(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                              "-of", "csv=p=0", rtsp.url(for: "cam1")], timeout: 60)
            #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "h264", "after teardown: \(again.stderr)")
            let stats = rtsp.stats()
            let raw = try #require(stats.first { $0.output == "rtsp-raw" })
            let h264 = try #require(stats.first { $0.output == "rtsp-h264" })
            #expect(raw.framesOut > 30)
            #expect(h264.framesOut > 30)
            #expect(raw.reencoded == 0)
            // Every frame wrapped into a GStreamer buffer came back: the pool stayed small and warm.
            feeder.stop()
            let pool = feeder.pool
            let until = Date().addingTimeInterval(3)
            while Date() < until, pool.idle < pool.allocated - 1 { Thread.sleep(forTimeInterval: 0.05) }
            #expect(pool.allocated <= pool.capacity, "pool allocated \(pool.allocated) frames for \(feeder.published.load(ordering: .relaxed)) published")
            #expect(pool.idle >= pool.allocated - 1, "frames not released: \(pool.allocated - pool.idle)")
            print("RTSP stats: \(stats); annotate: \(annotate.stats(camera: "cam1")), decode \(String(format: "%.2f", annotate.meanDecodeMilliseconds)) ms/frame")
        }
    }
}

extension MediaTests.RTSPOutputTests {
    /// A real camera JPEG (baseline 4:2:2) goes out unchanged; a 4:4:4 one is re-encoded and counted.
    @Test func rawMountPassesCameraJPEGsAndReencodesOthers() throws {
        try #require(toolExists(ffprobe) && toolExists(ffmpeg), "ffmpeg/ffprobe not installed")
        let rtsp = try RTSPOutput(runtime: testRuntime, configuration: .init(address: "127.0.0.1", port: 0))
        defer { rtsp.stop() }
        var cases: [(id: String, jpeg: [UInt8], probe: String, reencode: Bool)] = []
        if let path = sharedFixture("panasonic/erspicu-GX7-liveview-frame-640x480.jpg") {
            cases.append(("fixture", [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), "mjpeg,640,480,yuvj422p", false))
        } else {
            print("SKIPPED fixture passthrough: ../shared/fixtures/panasonic/erspicu-GX7-liveview-frame-640x480.jpg is absent")
        }
        if let j444 = try ffmpegJPEG(pixFmt: "yuvj444p", huffman: "default", size: "480x272") {
            cases.append(("yuv444", [UInt8](j444), "mjpeg,480,272,yuvj420p", true))
        }
        var feeders: [TestFeeder] = []
        var streams: [AnnotatedStream] = []
        for c in cases {
            let hub = FrameHub()
            let annotate = try AnnotatedStream(name: c.id)
            annotate.attach(to: hub)
            try rtsp.addCamera(id: c.id, hub: hub, annotate: annotate, fps: 30)
            let feeder = try TestFeeder(hub: hub, width: 64, height: 64)
            feeder.fixedJPEG = c.jpeg
            feeder.start()
            feeders.append(feeder)
            streams.append(annotate)
        }
        defer {
            feeders.forEach { $0.stop() }
            streams.forEach { $0.stop() }
        }
        for c in cases {
            let url = rtsp.url(for: c.id, raw: true)
            let p = try runTool(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries",
                                          "stream=codec_name,width,height,pix_fmt", "-of", "csv=p=0", url], timeout: 60)
            #expect(p.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == c.probe, "\(c.id): \(p.stdout) \(p.stderr)")
            let r = try runTool(ffmpeg, ["-nostdin", "-v", "warning", "-rtsp_transport", "tcp", "-i", url,
                                         "-frames:v", "20", "-f", "null", "-"], timeout: 60)
            #expect(r.status == 0 && decodeProblems(r.stderr).isEmpty, "\(c.id): \(r.stderr.prefix(1500))")
            let st = try #require(rtsp.stats().first { $0.camera == c.id && $0.output == "rtsp-raw" })
            #expect((st.reencoded > 0) == c.reencode, "\(c.id): \(st)")
            #expect(st.framesOut > 20)
        }
    }
}

final class ConcurrentResults: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(Bool, ToolResult?)] = []
    func append(_ x: (Bool, ToolResult?)) { lock.lock(); items.append(x); lock.unlock() }
    var all: [(Bool, ToolResult?)] { lock.lock(); defer { lock.unlock() }; return items }
}

extension MediaTests.RTSPOutputTests {
    @Test func busyPortThrowsAndCamerasCanBeRemounted() throws {
        let first = try RTSPOutput(runtime: testRuntime, configuration: .init(address: "127.0.0.1", port: 0))
        defer { first.stop() }
        #expect(throws: MediaError.self) {
            _ = try RTSPOutput(runtime: testRuntime, configuration: .init(address: "127.0.0.1", port: first.port))
        }
        let hub = FrameHub()
        let annotate = try AnnotatedStream(name: "remount", hub: hub)
        defer { annotate.stop() }
        try first.addCamera(id: "cam", hub: hub, annotate: annotate)
        #expect(throws: MediaError.self) { try first.addCamera(id: "cam", hub: hub, annotate: annotate) }
        #expect(hub.consumerCount == 2)  // the annotated stream and the raw mount
        first.removeCamera(id: "cam")
        #expect(hub.consumerCount == 1)
        #expect(first.stats().isEmpty)
        try first.addCamera(id: "cam", hub: hub, annotate: annotate)
        #expect(first.stats().count == 2)
        // An unknown mount is refused by the server (ffprobe fails fast, no hang).
        if toolExists(ffprobe) {
            let r = try runTool(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", first.url(for: "nope")], timeout: 15)
            #expect(r.status != 0 && !r.timedOut)
        }
    }
}

extension MediaTests.RTSPOutputTests {
    /// A viewer that connects before the camera sends anything gets the stream once frames flow.
    @Test func viewerConnectingBeforeTheCameraGetsTheStreamLater() throws {
        try #require(toolExists(ffprobe), "ffprobe not installed")
        let rtsp = try RTSPOutput(runtime: testRuntime, configuration: .init(address: "127.0.0.1", port: 0))
        defer { rtsp.stop() }
        let hub = FrameHub()
        let annotate = try AnnotatedStream(name: "early", hub: hub)
        defer { annotate.stop() }
        try rtsp.addCamera(id: "early", hub: hub, annotate: annotate)
        let results = ConcurrentResults()
        let group = DispatchGroup()
        for raw in [false, true] {
            DispatchQueue.global().async(group: group) {
                let r = try? runTool(ffprobe, ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                               "-of", "csv=p=0", rtsp.url(for: "early", raw: raw)], timeout: 60)
                results.append((raw, r))
            }
        }
        Thread.sleep(forTimeInterval: 2)
        let feeder = try TestFeeder(hub: hub)
        feeder.start()
        defer { feeder.stop() }
        group.wait()
        for (raw, r) in results.all {
            let r = try #require(r)
            #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == (raw ? "mjpeg" : "h264"),
                    "\(raw ? "raw" : "h264") after \(r.seconds) s: \(r.stdout) \(r.stderr)")
            #expect(r.seconds > 1.5, "answered before any frame existed?")
        }
    }
}
