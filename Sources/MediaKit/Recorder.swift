import JPEGKit
internal import CGStreamer
internal import CGStreamerShim
import Dispatch
import Foundation
public import LiveViewCore
public import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Records one camera losslessly: the camera's JPEG bytes, unchanged (no decode), into Matroska
/// segments `DIR/<camera>-<UTC start>.mkv` (e.g. `cam1-20261122T104512Z.mkv`), each with an AF sidecar
/// `DIR/<camera>-<UTC start>.af.jsonl` holding one line per recorded frame:
/// `{"pts": <ns>, "seq": <n|null>, "timeBase": "camera"|"arrival", "af": [{"x","y","w","h","kind","state"}]}`.
///
/// Frames come through a `BoundedFrameQueue` (lossless; when it is full the frame is refused,
/// counted and logged) and are written on the recorder's own thread into a non-live `appsrc block=true`
/// → `matroskamux` → `filesink` pipeline. The PTS is the camera's (`Frame.cameraPTS` when
/// `timeBase == .camera`) or else the arrival clock; Matroska keeps it absolute. A new segment starts
/// when the segment duration has passed (on the arrival clock), the image size changes or the PTS
/// goes backwards. Matroska clusters are written as they fill, so a killed process leaves a readable
/// file up to its last few frames; `stop()` ends the segment cleanly (EOS, cues, duration).
/// A recording segment that started or was finished.
public struct RecordingSegment: Sendable, Hashable {
    public enum Change: String, Sendable, Hashable {
        case started
        case finished
    }
    public var camera: String
    public var change: Change
    /// The segment's MKV file (its AF sidecar is the same name ending `.af.jsonl`).
    public var path: String
    /// Frames written into it (0 when it starts).
    public var frames: Int
    /// False when its end was not clean (EOS timed out: the file plays, its cues may be missing).
    public var clean: Bool = true
}

public final class Recorder: Sendable {
    /// Recorder settings.
    public struct Configuration: Sendable {
        /// The camera id (file name prefix).
        public var cameraID: String
        /// Folder for segments and sidecars (created when missing).
        public var directory: String
        /// Segment length on the arrival clock.
        public var segmentDuration: Duration = .seconds(300)
        /// Frames the lossless queue holds before it overflows.
        public var queueCapacity: Int = 90
        /// Told when a segment starts and when it is finished (on the recorder's thread).
        public var onSegment: (@Sendable (RecordingSegment) -> Void)?
        /// The camera's nominal frame rate, written as the track's frame rate (Matroska
        /// DefaultDuration); each frame still keeps its own camera PTS.
        public var fps: Int = 30

        /// The camera's part of its segments' file names (`<this>-<UTC start>.mkv`).
        var filePrefix: String { cameraID.replacingOccurrences(of: "/", with: "_") }

        /// Settings for one camera.
        public init(cameraID: String, directory: String, segmentDuration: Duration = .seconds(300), queueCapacity: Int = 90) {
            self.cameraID = cameraID
            self.directory = directory
            self.segmentDuration = segmentDuration
            self.queueCapacity = queueCapacity
        }
    }

    /// The lossless lane to attach to the camera's hub (`start(hub:)` does it).
    public let queue: BoundedFrameQueue
    /// The settings in use.
    public let configuration: Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let wake: DispatchSemaphore
    private let finished = DispatchSemaphore(value: 0)
    private let control = Mutex(Control())
    private let counters = Counters()
    private let writer: SegmentWriterBox

    struct Control {
        var running = false
        var stopping = false
        var hub: FrameHub?
    }

    final class Counters: Sendable {
        let written = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let segments = Atomic<Int>(0)
    }

    /// A stopped recorder; `start(hub:)` begins recording.
    public init(configuration: Configuration, runtime: GStreamerRuntime,
                logger: Logger = Logger(label: "livegate.recorder")) {
        self.configuration = configuration
        self.runtime = runtime
        self.logger = logger
        let wake = DispatchSemaphore(value: 0)
        self.wake = wake
        queue = BoundedFrameQueue(capacity: max(1, configuration.queueCapacity)) { wake.signal() }
        writer = SegmentWriterBox(configuration: configuration, runtime: runtime, logger: logger)
    }

    /// Starts the recording thread and, when given, attaches the queue to `hub`.
    public func start(hub: FrameHub? = nil) throws {
        try FileManager.default.createDirectory(atPath: configuration.directory, withIntermediateDirectories: true)
        // What a crash of an earlier run left: sidecar lines for frames its file never got.
        RecordingRepair.trimNewestSidecar(directory: configuration.directory,
                                          camera: configuration.filePrefix, logger: logger)
        let go = control.withLock { c -> Bool in
            guard !c.running else { return false }
            c.running = true
            c.hub = hub
            return true
        }
        guard go else { return }
        let t = Thread { [self] in run() }
        t.name = "recorder-\(configuration.cameraID)"
        t.start()
        hub?.attach(queue)
    }

    /// Detaches from the hub, writes what is queued, ends the open segment with EOS and waits for
    /// it to be finalised (at most `timeout` seconds).
    public func stop(timeout: Double = 10) {
        let (wasRunning, hub) = control.withLock { c -> (Bool, FrameHub?) in
            let r = (c.running && !c.stopping, c.hub)
            c.stopping = true
            c.hub = nil
            return r
        }
        hub?.detach(queue)
        guard wasRunning else { return }
        wake.signal()
        _ = finished.wait(timeout: .now() + timeout)
    }

    private func run() {
        var reportedOverflows = 0
        while true {
            wake.wait()
            while let frame = queue.pop() {
                if frame.isSlate {
                    // The offline slate is for live viewers; a recording holds only the camera's frames.
                    frame.release()
                    continue
                }
                if writer.write(frame) {
                    counters.written.wrappingAdd(1, ordering: .relaxed)
                } else {
                    counters.errors.wrappingAdd(1, ordering: .relaxed)
                }
                frame.release()
            }
            let overflows = queue.overflows
            if overflows != reportedOverflows {
                logger.error("recorder queue overflow: frames were not recorded", metadata: [
                    "camera": "\(configuration.cameraID)", "lost": "\(overflows - reportedOverflows)", "total": "\(overflows)"])
                reportedOverflows = overflows
            }
            if control.withLock({ $0.stopping }) && queue.count == 0 { break }
        }
        writer.close()
        finished.signal()
    }

    /// Paths of the segments started so far (MKV files), oldest first.
    public var segmentPaths: [String] { writer.paths }

    /// Counters: framesIn = frames accepted by the queue or refused, framesOut = frames written,
    /// overflows = frames refused by the full queue, errors = write failures.
    public func stats() -> OutputStats {
        var s = OutputStats(output: "recorder", camera: configuration.cameraID)
        s.framesOut = counters.written.load(ordering: .relaxed)
        s.overflows = queue.overflows
        s.framesIn = s.framesOut + queue.count + s.overflows
        s.errors = counters.errors.load(ordering: .relaxed) + writer.pipelineErrors
        return s
    }
}

/// The open segment (pipeline + sidecar); used only from the recorder's thread, except `paths`.
/// Unchecked because it holds a C pointer (the sidecar's `FILE *`) and the segment's state, both
/// only touched on the recorder's thread; what other threads read is behind `pathList` and atomics.
final class SegmentWriterBox: @unchecked Sendable {
    private let configuration: Recorder.Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private var pipeline: MediaPipeline?
    private var appsrc: AppSource?
    private var sidecar: UnsafeMutablePointer<FILE>?
    private var segmentStartArrival: UInt64 = 0
    private var lastPTS: UInt64 = 0
    private var width = 0, height = 0
    private var framesInSegment = 0
    private var currentPath = ""
    private let pathList = Mutex<[String]>([])
    private let errorCount = Atomic<Int>(0)
    private var line = ""
    private let segmentNanos: UInt64

    init(configuration: Recorder.Configuration, runtime: GStreamerRuntime, logger: Logger) {
        self.configuration = configuration
        segmentNanos = configuration.segmentDuration.nanoseconds
        self.runtime = runtime
        self.logger = logger
        line.reserveCapacity(512)
    }

    var paths: [String] { pathList.withLock { $0 } }
    var pipelineErrors: Int { errorCount.load(ordering: .relaxed) }

    /// Writes one frame; false when it could not be written.
    func write(_ frame: Frame) -> Bool {
        let useCamera = frame.timeBase == .camera && (frame.cameraPTS ?? -1) >= 0
        let pts = useCamera ? UInt64(frame.cameraPTS!) : frame.arrivalNanos
        var w = frame.width, h = frame.height
        if w <= 0 || h <= 0, let size = JPEGScanner.size(of: frame.bytes) { (w, h) = size }
        guard w > 0, h > 0, frame.count > 0 else { return false }
        if pipeline != nil {
            let elapsed = frame.arrivalNanos &- segmentStartArrival
            if (framesInSegment > 0 && elapsed >= segmentNanos) || w != width || h != height || pts < lastPTS {
                close()
            }
        }
        if pipeline == nil {
            do { try open(width: w, height: h, arrival: frame.arrivalNanos) } catch {
                logger.error("cannot start recording segment", metadata: ["camera": "\(configuration.cameraID)", "error": "\(error)"])
                return false
            }
        }
        guard let appsrc else { return false }
        // The camera's bytes, wrapped without a copy; PTS = camera or arrival clock.
        let ok = appsrc.push(frame: frame, pts: pts, duration: nil)
        lastPTS = pts
        framesInSegment += 1
        writeSidecarLine(frame, pts: pts, camera: useCamera)
        if !ok { errorCount.wrappingAdd(1, ordering: .relaxed) }
        return ok
    }

    private func open(width w: Int, height h: Int, arrival: UInt64) throws {
        let stamp = Self.utcStamp(Date())
        let camera = configuration.filePrefix
        var base = "\(configuration.directory)/\(camera)-\(stamp)"
        var n = 2
        while FileManager.default.fileExists(atPath: base + ".mkv") {
            base = "\(configuration.directory)/\(camera)-\(stamp)-\(n)"
            n += 1
        }
        let launch = try PipelineTemplates.render(PipelineTemplates.recorder, [
            "width": "\(w)", "height": "\(h)", "fps": "\(max(1, configuration.fps))",
            "location": PipelineTemplates.escapeQuoted(base + ".mkv"),
        ])
        let p = try MediaPipeline(launch: launch, name: "recorder-\(configuration.cameraID)", runtime: runtime, logger: logger)
        guard let src = p.child("src") else { throw MediaError("recorder pipeline has no appsrc 'src'") }
        try p.play()
        guard let f = fopen(base + ".af.jsonl", "w") else {
            p.stop()
            throw MediaError("cannot create \(base).af.jsonl")
        }
        pipeline = p
        appsrc = AppSource(element: src)
        sidecar = f
        width = w
        height = h
        segmentStartArrival = arrival
        framesInSegment = 0
        pathList.withLock { $0.append(base + ".mkv") }
        currentPath = base + ".mkv"
        logger.info("recording segment started", metadata: ["camera": "\(configuration.cameraID)", "file": "\(base).mkv"])
        configuration.onSegment?(RecordingSegment(camera: configuration.cameraID, change: .started, path: base + ".mkv", frames: 0))
    }

    /// Ends the open segment: EOS through the muxer (writes cues and duration), waits, closes files.
    func close() {
        guard let p = pipeline, let src = appsrc else { return }
        let clean = p.finish(appsrc: src.element, timeout: 10)
        if !clean {
            errorCount.wrappingAdd(1, ordering: .relaxed)
            logger.error("recording segment did not finish cleanly", metadata: ["camera": "\(configuration.cameraID)", "error": "\(p.lastError ?? "EOS timeout")"])
        }
        p.stop()
        pipeline = nil
        appsrc = nil
        if let f = sidecar { fclose(f) }
        sidecar = nil
        configuration.onSegment?(RecordingSegment(camera: configuration.cameraID, change: .finished, path: currentPath,
                                                  frames: framesInSegment, clean: clean))
    }

    private func writeSidecarLine(_ frame: Frame, pts: UInt64, camera: Bool) {
        guard let f = sidecar else { return }
        line.removeAll(keepingCapacity: true)
        line += "{\"pts\": \(pts), \"seq\": "
        if let s = frame.sequence { line += String(s) } else { line += "null" }
        line += ", \"timeBase\": \"\(camera ? "camera" : "arrival")\", \"af\": ["
        for (i, a) in frame.afAreas.enumerated() {
            if i > 0 { line += ", " }
            line += "{\"x\": \(a.pixels.x), \"y\": \(a.pixels.y), \"w\": \(a.pixels.width), \"h\": \(a.pixels.height), "
            line += "\"kind\": \"\(a.kind.rawValue)\", \"state\": \"\(a.state.rawValue)\"}"
        }
        line += "]}\n"
        fputs(line, f)
        fflush(f)
    }

    static func utcStamp(_ d: Date) -> String {
        var t = time_t(d.timeIntervalSince1970)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1, Int(tmv.tm_mday),
                      Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }
}
