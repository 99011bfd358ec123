import Foundation
import JPEGKit
import LiveViewCore
@testable import MediaKit
import Testing
import TestSupport

extension MediaTests {
    @Suite("HLS output (hlssink2)")
    struct HLSOutputTests {
        /// Nothing runs before a request; the first playlist request starts HLS (and the shared
        /// encoder) and is answered once the playlist exists; segments last 1 s ± 10 %; HLS stops
        /// after the linger without requests, and the encoder with it.
        @Test func startsOnRequestSplitsAtTheGridAndStopsWhenUnwatched() async throws {
            try #require(GStreamerRuntime.hasElement("hlssink2") && GStreamerRuntime.hasElement("x264enc"), "hlssink2/x264enc missing")
            let root = try makeTempDir("hls")
            defer { try? FileManager.default.removeItem(atPath: root) }
            let hub = FrameHub()
            let graph = try makeGraph("cam1", hub: hub)
            var config = HLSOutput.Configuration(root: root)
            config.linger = .seconds(2)
            let hls = HLSOutput(runtime: testRuntime, configuration: config)
            try hls.addCamera(graph)
            let feeder = try TestFeeder(hub: hub)
            feeder.start()
            defer {
                feeder.stop()
                hls.stop()
                graph.stop()
            }
            await pause(0.5)
            #expect(!hls.isRunning(camera: "cam1") && graph.runningEncoders == 0 && hub.consumerCount == 0,
                    "HLS or the encoder ran before anyone asked")
            #expect(await hls.request(camera: "nope", playlist: true) == .unknownCamera)
            let t0 = Date()
            let first = await hls.request(camera: "cam1", playlist: true)
            #expect(first == .ready, "first playlist not there after \(Date().timeIntervalSince(t0)) s")
            #expect(graph.runningEncoders == 1)
            // A player keeps asking (as players do, every target duration); wait for 5 listed segments.
            let playlist = hls.playlistPath(for: "cam1")
            var segments: [String] = []
            await waitUntilAsync(timeout: 30, poll: .milliseconds(500)) {
                _ = await hls.request(camera: "cam1", playlist: true)
                let text = (try? String(contentsOfFile: playlist, encoding: .utf8)) ?? ""
                segments = text.split(separator: "\n").filter { $0.hasSuffix(".ts") }.map(String.init)
                return segments.count >= 5
            }
            #expect(segments.count >= 5, "playlist segments: \(segments)")
            let text = try String(contentsOfFile: playlist, encoding: .utf8)
            #expect(text.contains("#EXT-X-TARGETDURATION:1"))
            let durations = text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
                .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",")[0]) }
            #expect(durations.count >= 5, "\(text)")
            for d in durations.dropLast() { #expect(abs(d - 1) <= 0.1, "segment of \(d) s in \(durations)") }
            let r = try await runTool(ffprobe, ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", playlist])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("h264,768,432"), "ffprobe: \(r.stdout) \(r.stderr)")
            // Every segment starts with a key frame that has a PTS.
            let seg = root + "/cam1/" + (text.split(separator: "\n").filter { $0.hasSuffix(".ts") }.first.map(String.init) ?? "")
            let p = try await runTool(ffprobe, ["-v", "error", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                                                "-read_intervals", "%+#3", seg])
            let firstPacket = p.stdout.split(separator: "\n").first.map(String.init) ?? ""
            #expect(firstPacket.contains("K") && !firstPacket.hasPrefix("N/A"), "first packet of \(seg): \(firstPacket)")
            // No requests: HLS stops after the linger (2 s), then the encoder after the graph's (1 s).
            let stopped = await waitUntil(timeout: 15) { !hls.isRunning(camera: "cam1") && graph.runningEncoders == 0 }
            #expect(stopped, "HLS \(hls.isRunning(camera: "cam1")), encoders \(graph.runningEncoders)")
            let idle = await waitUntil(timeout: 10) { hub.consumerCount == 0 }
            #expect(idle, "hub still has \(hub.consumerCount) consumers")
            #expect(!FileManager.default.fileExists(atPath: playlist), "a stopped HLS leaves no stale playlist")
            // Once its reaper has ended (what a shutdown waits for), nothing stops HLS behind the
            // stop's back any more.
            #expect(await hls.request(camera: "cam1", playlist: true) == .ready)
            await hls.endReaper()
            await pause(3.5)
            #expect(hls.isRunning(camera: "cam1"), "the reaper still ran after endReaper")
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
            #expect(hub.consumerCount == 1, "the webcam's subscription attaches the picture branch")
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

        /// A 320×180 webcam at 30 fps into `sink`.
        func smallWebcam(sink: String, reopen: Bool = false) throws -> VirtualWebcamOutput {
            var config = VirtualWebcamOutput.Configuration(device: "/dev/video-not-used")
            config.width = 320
            config.height = 180
            config.sink = sink
            config.reopenAfterError = reopen
            return try VirtualWebcamOutput(runtime: testRuntime, configuration: config)
        }

        /// The ticker reads the clock, then takes the lock; a picture stored in between (on the
        /// camera's thread) is newer than that reading. Driven in that order on purpose: it must
        /// be shown, not crash the gateway (a plain `now - storedAt` traps on UInt64).
        @Test func aPictureNewerThanTheTickersClockReadingIsShown() throws {
            let webcam = try smallWebcam(sink: "fakesink")
            let now = MonotonicClock.nanos()
            while MonotonicClock.nanos() == now {}
            webcam.received(I420Picture(width: 320, height: 180))  // stored after `now`
            let shown = try #require(webcam.pictureToShow(now: now), "a picture stored after the clock reading is fresh")
            shown.release()
            #expect(!webcam.isShowingSlate)
            #expect(VirtualWebcamOutput.isFresh(pictureAt: now + 1_000_000_000, now: now, offlineAfter: 0))
            #expect(!VirtualWebcamOutput.isFresh(pictureAt: now, now: now + 3_000_000_000, offlineAfter: 2_000_000_000))
            #expect(MonotonicClock.elapsed(from: now + 5, to: now) == 0)
            #expect(MonotonicClock.elapsed(from: now, to: now + 5) == 5)
            webcam.stop()
        }

        /// A GStreamer error stops the sink's pipeline: where reopening is on (PipeWire) a fresh one
        /// is opened and frames flow on; stopping afterwards is clean.
        @Test func thePipelineIsOpenedAgainAfterAnError() async throws {
            let webcam = try smallWebcam(sink: "identity error-after=20 ! fakesink sync=false", reopen: true)
            try webcam.start()
            #expect(await waitUntil(timeout: 10) { webcam.restarts >= 2 }, "restarts \(webcam.restarts)")
            let pushed = webcam.stats(camera: "cam").framesOut
            #expect(await waitUntil(timeout: 5) { webcam.stats(camera: "cam").framesOut > pushed + 5 }, "no frames after the restart")
            webcam.stop()
        }

        /// A sink that fails on the first picture (as v4l2sink does on caps the device does not
        /// offer: not-negotiated) is one clear error at start, not a silent stop.
        @Test func aSinkThatFailsOnTheFirstPictureFailsToStartWithTheReason() throws {
            let webcam = try smallWebcam(sink: "identity error-after=1 ! fakesink")
            do {
                try webcam.start()
                Issue.record("a sink refusing YUY2 started")
            } catch let e as VirtualWebcamOutput.Refused {
                #expect("\(e)".contains("refused YUY2 320x180"), "\(e)")
            }
            webcam.stop()
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
