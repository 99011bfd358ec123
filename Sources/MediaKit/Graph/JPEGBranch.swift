import JPEGKit
import LiveViewCore
import Logging

/// The JPEG branch of a camera's media graph: the camera's own bytes, never decoded, for every
/// consumer that carries JPEG (RTSP `/raw` sessions, MJPEG over HTTP). While it has consumers a
/// paced hub consumer wraps each frame zero-copy into every consumer's appsrc, on the publisher's
/// thread. A JPEG that RFC 2435 cannot carry (progressive, 4:4:4, custom Huffman tables, > 2040 px)
/// goes to the branch's own thread, is re-encoded once (baseline 4:2:0) and counted. With no consumer the branch is not
/// attached to the hub at all.
public final class JPEGBranch: Sendable {
    let id: String
    private let hub: FrameHub
    private let logger: Logger
    private let sinks = SinkList()
    private let viewers = ViewerList()
    private let viewerTotals = Mutex((delivered: 0, skipped: 0))
    private let running = Mutex<(pacer: FramePacer, worker: FrameWorker)?>(nil)
    private let reencodeQuality: Int
    /// The camera's nominal frame rate (the raw mount's caps and SDP).
    private let fps: Int
    let counters = Counters()
    private let gate: DemandGate

    final class Counters: Sendable {
        let delivered = Atomic<Int>(0)
        let out = Atomic<Int>(0)
        let reencoded = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let notReady = Atomic<Int>(0)
        let replaced = Atomic<Int>(0)
    }

    init(id: String, hub: FrameHub, linger: Duration, fps: Int, reencodeQuality: Int = 85, logger: Logger) {
        self.id = id
        self.fps = fps
        self.hub = hub
        self.logger = logger
        self.reencodeQuality = reencodeQuality
        gate = DemandGate(name: "jpeg-\(id)", linger: linger)
        gate.bind(start: { [weak self] in self?.start() }, stop: { [weak self] in self?.stop() })
    }

    /// Adds an appsrc that takes the camera's JPEGs (from the newest frame on).
    func add(_ source: AppSource) {
        sinks.add(source)
        gate.acquire()
    }

    /// A viewer of the camera's JPEGs exactly as they came (MJPEG over HTTP; also the ones RTP/JPEG
    /// cannot carry, and the offline slate while the camera is away). Starts the branch when it is
    /// the first consumer; `cancel()` it when the viewer leaves.
    public func subscribe() -> JPEGSubscription {
        let sub = JPEGSubscription { [weak self] s in self?.unsubscribe(s) }
        viewers.list.withLock { $0.append(sub) }
        gate.acquire()
        return sub
    }

    private func unsubscribe(_ s: JPEGSubscription) {
        let removed = viewers.list.withLock { v -> Bool in
            guard let i = v.firstIndex(where: { $0 === s }) else { return false }
            v.remove(at: i)
            return true
        }
        guard removed else { return }
        let c = s.counts
        viewerTotals.withLock { $0.delivered += c.delivered; $0.skipped += c.skipped }
        gate.release()
    }

    /// Number of MJPEG viewers.
    public var viewerCount: Int { viewers.list.withLock { $0.count } }

    /// Removes the appsrcs of `owner`.
    func remove(owner: UInt) {
        for _ in 0..<sinks.remove(owner: owner) { gate.release() }
    }

    /// Stops at once (shutdown).
    func shutdown() {
        gate.shutdown()
        sinks.removeAll()
        for v in viewers.list.withLock({ $0 }) { v.cancel() }
    }

    /// True while the branch takes frames from the hub.
    public var isRunning: Bool { gate.isRunning }
    /// Number of consumers (RTSP appsrcs and MJPEG viewers).
    public var consumerCount: Int { sinks.count + viewerCount }
    /// The consumers' appsrcs (for the no-media watchdog).
    var sources: [AppSource] { sinks.current() }

    private func start() {
        let sinks = self.sinks
        let viewers = self.viewers
        let counters = self.counters
        let id = self.id
        let fps = self.fps
        let log = logger
        let reencoder: Reencoder
        do {
            reencoder = try Reencoder(quality: reencodeQuality)
        } catch {
            logger.error("JPEG branch cannot start", metadata: ["camera": "\(id)", "error": "\(error)"])
            return
        }
        // Pushing into an appsrc only queues (non-blocking), so a frame RTP/JPEG can carry goes out
        // on the publisher's thread, without a thread hop; only a frame that must be re-encoded goes
        // to the branch's own thread, so a slow re-encode never holds up ingest.
        let worker = FrameWorker(name: "jpeg-\(id)") { frame in
            do {
                let f = try reencoder.reencode(frame)
                counters.reencoded.wrappingAdd(1, ordering: .relaxed)
                JPEGBranch.push(f, width: f.width, height: f.height, fps: fps, arrival: frame.arrivalNanos,
                                to: sinks.current(), counters: counters)
                f.release()
            } catch {
                if counters.errors.wrappingAdd(1, ordering: .relaxed).newValue % 100 == 1 {
                    log.warning("cannot re-encode JPEG for RTP", metadata: ["camera": "\(id)", "error": "\(error)"])
                }
            }
        }
        let pacer = FramePacer(name: "jpeg-\(id)") { frame, completion in
            counters.delivered.wrappingAdd(1, ordering: .relaxed)
            // MJPEG viewers take every frame as it came (iterated under the lock: no array per frame).
            viewers.list.withLock { for v in $0 { v.deliver(frame) } }
            if sinks.count == 0 {
                frame.release()
                completion()
            } else if let size = JPEGBranch.carriableSize(frame) {
                JPEGBranch.push(frame, width: size.width, height: size.height, fps: fps, arrival: frame.arrivalNanos,
                                to: sinks.current(), counters: counters)
                frame.release()
                completion()
            } else {
                worker.deliver(frame, completion)
            }
        }
        worker.start()
        running.withLock { $0 = (pacer, worker) }
        hub.attach(pacer)
    }

    /// The frame's size when RTP/JPEG carries its bytes unchanged: from what the driver learnt
    /// walking the JPEG (no second walk per frame), else from the headers.
    private static func carriableSize(_ frame: Frame) -> (width: Int, height: Int)? {
        if let ok = frame.rtpCompatible, frame.width > 0, frame.height > 0 {
            return ok ? (frame.width, frame.height) : nil
        }
        guard let info = try? JPEGScanner.headers(frame.bytes), info.rtpCompatibility == .compatible else { return nil }
        return (info.width, info.height)
    }

    /// Wraps `frame` zero-copy into every consumer's appsrc, stamped in each one's running time, with
    /// caps that carry its size (set only when the size changes).
    private static func push(_ frame: Frame, width: Int, height: Int, fps: Int, arrival: UInt64, to targets: [AppSource],
                             counters: Counters) {
        for s in targets {
            s.ensureJPEGCaps(width: width, height: height, fps: fps)
            guard let pts = s.runningTime(arrivalNanos: arrival) else {
                counters.notReady.wrappingAdd(1, ordering: .relaxed)
                continue
            }
            if s.push(frame: frame, pts: pts, duration: nil) { counters.out.wrappingAdd(1, ordering: .relaxed) }
        }
    }

    private func stop() {
        guard let r = running.withLock({ v -> (pacer: FramePacer, worker: FrameWorker)? in let o = v; v = nil; return o }) else { return }
        hub.detach(r.pacer)
        r.worker.stop()
        counters.replaced.wrappingAdd(r.pacer.replaced, ordering: .relaxed)
    }

    /// The branch's counters.
    public func outputStats() -> OutputStats {
        var r = OutputStats(output: "rtsp-raw", camera: id)
        let live = running.withLock { $0 }
        r.framesIn = counters.delivered.load(ordering: .relaxed)
        r.framesOut = counters.out.load(ordering: .relaxed)
        r.dropped = counters.replaced.load(ordering: .relaxed) + (live?.pacer.replaced ?? 0)
        r.reencoded = counters.reencoded.load(ordering: .relaxed)
        r.errors = counters.errors.load(ordering: .relaxed)
        r.clients = sinks.count
        return r
    }

    /// The MJPEG viewers' counters ("mjpeg"): frames handed out and frames skipped by slow viewers.
    public func viewerStats() -> OutputStats {
        var r = OutputStats(output: "mjpeg", camera: id)
        let live = viewers.list.withLock { list in list.map { $0.counts } }
        let done = viewerTotals.withLock { $0 }
        r.framesOut = done.delivered + live.reduce(0) { $0 + $1.delivered }
        r.dropped = done.skipped + live.reduce(0) { $0 + $1.skipped }
        r.clients = live.count
        return r
    }
}

/// The MJPEG viewers of a JPEG branch (shared with its pacer's closure).
final class ViewerList: Sendable {
    let list = Mutex<[JPEGSubscription]>([])
}
