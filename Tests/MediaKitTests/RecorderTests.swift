import JPEGKit
import Foundation
import LiveViewCore
import MediaKit
import Testing
import TestSupport

/// Packet timestamps (seconds) of the video stream of a media file.
func packetTimes(_ path: String) async throws -> [Double] {
    let r = try await runTool(ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                  "-of", "csv=p=0", path], timeout: 30)
    guard r.status == 0 else { throw MediaError("ffprobe \(path): \(r.stderr)") }
    return r.stdout.split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
}

/// The sidecar lines as JSON objects.
func sidecarLines(_ mkv: String) throws -> [[String: Any]] {
    let path = String(mkv.dropLast(4)) + ".af.jsonl"
    let text = try String(contentsOfFile: path, encoding: .utf8)
    return try text.split(separator: "\n").map {
        try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
    }
}

extension MediaTests {
    @Suite("Recorder (matroskamux, camera PTS, byte-exact JPEGs, rotation, sidecar, SIGKILL)")
    struct RecorderTests {
        @Test func keepsCameraPTSBytesAndRotates() async throws {
            try #require(toolExists(ffprobe) && toolExists(ffmpeg), "ffmpeg/ffprobe not installed")
            let dir = try makeTempDir("rec")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let recorder = Recorder(configuration: .init(cameraID: "cam1", directory: dir, segmentDuration: .seconds(1),
                                                         queueCapacity: 200), runtime: testRuntime)
            let hub = FrameHub()
            try recorder.start(hub: hub)
            let pattern = try TestPattern(width: 320, height: 240)
            let pool = FramePool(capacity: 8)
            var published: [Data] = []
            let base = MonotonicClock.nanos()
            let ptsStart: Int64 = 123_456_000_000
            let interval: Int64 = 33_333_333
            for n in 0..<75 {
                if n == 10 {
                    // An offline slate frame between live ones: live viewers see it, the recording does not.
                    let slate = pool.take()
                    try pattern.render(frameNumber: 999, into: slate)
                    slate.isSlate = true
                    slate.arrivalNanos = base + UInt64(n) * UInt64(interval)
                    hub.publish(slate)
                }
                let f = pool.take()
                let box = try pattern.render(frameNumber: n, into: f)
                f.sequence = UInt64(1000 + n)
                f.cameraPTS = ptsStart + Int64(n) * interval
                f.timeBase = .camera
                f.arrivalNanos = base + UInt64(n) * UInt64(interval)
                f.afAreas = [AFArea(pixels: box, camera: CameraRect(x: 1, y: 2, width: 3, height: 4), kind: .face, state: .focused)]
                published.append(Data(f.bytes))
                hub.publish(f)
            }
            recorder.stop()
            let segments = recorder.segmentPaths
            #expect(segments.count == 3, "segments: \(segments)")
            let stats = recorder.stats()
            #expect(stats.framesOut == 75 && stats.overflows == 0 && stats.errors == 0, "\(stats)")
            for s in segments {
                let name = URL(fileURLWithPath: s).lastPathComponent
                #expect(name.range(of: #"^cam1-\d{8}T\d{6}Z(-\d+)?\.mkv$"#, options: .regularExpression) != nil, "\(name)")
            }

            // The track carries the nominal frame rate (Matroska DefaultDuration): players show 30 fps.
            let rate = try await runTool(ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                   "stream=r_frame_rate", "-of", "csv=p=0", segments[0]], timeout: 30)
            #expect(rate.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "30/1", "r_frame_rate \(rate.stdout) \(rate.stderr)")
            var index = 0
            for seg in segments {
                let times = try await packetTimes(seg)
                let lines = try sidecarLines(seg)
                #expect(times.count == lines.count, "\(seg): \(times.count) packets, \(lines.count) sidecar lines")
                // Camera PTS kept (Matroska stores milliseconds).
                for (k, t) in times.enumerated() {
                    let expected = Double(ptsStart + Int64(index + k) * interval) / 1e9
                    #expect(abs(t - expected) < 0.0015, "packet \(index + k): \(t) vs \(expected)")
                }
                for (k, line) in lines.enumerated() {
                    #expect((line["pts"] as? NSNumber)?.int64Value == ptsStart + Int64(index + k) * interval)
                    #expect((line["seq"] as? NSNumber)?.intValue == 1000 + index + k)
                    #expect(line["timeBase"] as? String == "camera")
                    let af = try #require(line["af"] as? [[String: Any]])
                    let box = TestPattern.afBox(frameNumber: index + k, width: 320, height: 240)
                    #expect(af.count == 1)
                    #expect((af.first?["x"] as? NSNumber)?.intValue == box.x)
                    #expect((af.first?["w"] as? NSNumber)?.intValue == box.width)
                    #expect(af.first?["kind"] as? String == "face" && af.first?["state"] as? String == "focused")
                }
                // JPEG bytes identical: extract with ffmpeg -c copy and compare.
                let out = dir + "/x-\(index)"
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                let r = try await runTool(ffmpeg, ["-nostdin", "-v", "error", "-i", seg, "-c", "copy", "-f", "image2", out + "/frame%d.jpg"])
                #expect(r.status == 0, "\(r.stderr)")
                for k in 0..<times.count {
                    let data = try Data(contentsOf: URL(fileURLWithPath: out + "/frame\(k + 1).jpg"))
                    #expect(data == published[index + k], "frame \(index + k) differs (\(data.count) vs \(published[index + k].count) bytes)")
                }
                index += times.count
            }
            #expect(index == 75)
        }

        @Test func arrivalClockWhenNoCameraPTS() async throws {
            try #require(toolExists(ffprobe), "ffprobe not installed")
            let dir = try makeTempDir("rec-arrival")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let recorder = Recorder(configuration: .init(cameraID: "cam2", directory: dir), runtime: testRuntime)
            try recorder.start()
            let pattern = try TestPattern(width: 160, height: 120)
            var arrivals: [UInt64] = []
            for n in 0..<10 {
                let f = Frame(copying: [UInt8]())
                try pattern.render(frameNumber: n, into: f)
                f.arrivalNanos = 5_000_000_000 + UInt64(n) * 40_000_000
                f.cameraPTS = 77  // ignored: timeBase is .arrival
                arrivals.append(f.arrivalNanos)
                recorder.queue.push(f)
            }
            recorder.stop()
            let seg = try #require(recorder.segmentPaths.first)
            let times = try await packetTimes(seg)
            #expect(times.count == 10)
            for (t, a) in zip(times, arrivals) { #expect(abs(t - Double(a) / 1e9) < 0.0015) }
            let lines = try sidecarLines(seg)
            #expect(lines.first?["timeBase"] as? String == "arrival")
            #expect(lines.first?["seq"] is NSNull)
            #expect((lines.first?["af"] as? [Any])?.isEmpty == true)
        }

        @Test func overflowIsCounted() throws {
            let dir = try makeTempDir("rec-overflow")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            // Not started: nothing drains the queue, so the third push overflows.
            let recorder = Recorder(configuration: .init(cameraID: "cam3", directory: dir, queueCapacity: 2), runtime: testRuntime)
            let hub = FrameHub()
            hub.attach(recorder.queue)
            for _ in 0..<3 { hub.publish(Frame(copying: [0xFF, 0xD8, 0xFF, 0xD9])) }
            #expect(recorder.stats().overflows == 1)
            hub.detach(recorder.queue)
        }

        /// Records in a child process (this test binary, re-run on `recorderChildProcess`) and kills it
        /// with SIGKILL: the open segment must stay readable up to its last few frames.
        @Test func survivesSIGKILL() async throws {
            try #require(toolExists(ffprobe), "ffprobe not installed")
            let dir = try makeTempDir("rec-kill")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            var env = ProcessInfo.processInfo.environment
            env["LIVEGATE_RECORDER_CHILD_DIR"] = dir
            let child = Process()
            child.executableURL = URL(fileURLWithPath: exe)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "recorderChildProcess"]
            child.environment = env
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()
            defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
            // Wait until about 2 s of frames are in the sidecar.
            var mkv: String?
            await waitUntil(timeout: 30) {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
                guard let m = files.first(where: { $0.hasSuffix(".mkv") }) else { return false }
                mkv = dir + "/" + m
                return ((try? sidecarLines(mkv!))?.count ?? 0) >= 60
            }
            let file = try #require(mkv, "child never started recording")
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            #expect(child.terminationReason == .uncaughtSignal)
            let lines = try sidecarLines(file)
            let times = try await packetTimes(file)
            print("SIGKILL: \(times.count) frames readable of \(lines.count) recorded")
            #expect(lines.count >= 60)
            #expect(times.count >= lines.count - 10, "only \(times.count) of \(lines.count) frames readable after SIGKILL")
            let r = try await runTool(ffmpeg, ["-nostdin", "-v", "error", "-i", file, "-f", "null", "-"])
            #expect(r.status == 0)
        }

        /// Not a test on its own: the child half of `survivesSIGKILL` (a recorded skip unless that
        /// test starts it).
        @Test(.enabled(if: ProcessInfo.processInfo.environment["LIVEGATE_RECORDER_CHILD_DIR"] != nil,
                       "the child half of survivesSIGKILL; runs only when that test starts it"))
        func recorderChildProcess() throws {
            let dir = try #require(ProcessInfo.processInfo.environment["LIVEGATE_RECORDER_CHILD_DIR"])
            let hub = FrameHub()
            let recorder = Recorder(configuration: .init(cameraID: "killed", directory: dir), runtime: testRuntime)
            try recorder.start(hub: hub)
            let feeder = try TestFeeder(hub: hub, width: 640, height: 360, fps: 30)
            feeder.start()
            Thread.sleep(forTimeInterval: 60)  // killed long before
            feeder.stop()
            recorder.stop()
        }
    }
}
