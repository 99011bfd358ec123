public import JPEGKit
public import LiveViewCore
public import Logging

/// The picture branch of a camera's media graph: the one decode per camera frame that every
/// raw-video consumer shares (the shared H.264 encoder, the virtual webcam). A hub consumer
/// (`FramePacer`, latest wins) whose own thread decodes the camera's JPEG to I420 with
/// libjpeg-turbo, turns it upright when the camera says it is held otherwise (`Frame.rotation`),
/// draws the AF areas when the overlay is on, and hands the picture to every
/// subscriber. It is attached to the hub only while someone subscribes (the first subscriber
/// attaches it, and it detaches `linger` after the last one leaves): nothing is decoded, and no frame
/// is even handed over, while nobody watches.
///
/// Subscribers run on the stream's thread and must be quick; to keep the picture beyond the call
/// they `retain()` it (and `release()` it later), e.g. by wrapping it in a GStreamer buffer.
public final class AnnotatedStream: Sendable {
    /// A subscription handle; pass it to `unsubscribe`.
    public struct Subscription: Sendable, Hashable {
        let id: Int
    }

    /// Name used for the thread and in logs (usually the camera id).
    public let name: String
    private let pacer: FramePacer
    private let worker: FrameWorker
    private let nextID = Atomic<Int>(1)
    private let counters = Counters()
    private let logger: Logger
    private let subscribersBox: SubscribersBox
    private let overlayFlag: OverlayFlagBox
    private let gate = Mutex<DemandGate?>(nil)
    private let linger: Duration

    final class Counters: Sendable {
        let decoded = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let decodeNanos = Atomic<Int>(0)
    }

    /// Creates the stream and starts its thread; it takes frames from `hub` when given (or after
    /// `attach(to:)`).
    public init(name: String, hub: FrameHub? = nil, overlay: Bool = true, linger: Duration = .seconds(10),
                logger: Logger = Logger(label: "livegate.annotate")) throws {
        self.name = name
        self.logger = logger
        self.linger = linger
        let decoder = try JPEGDecoder()
        let pool = I420PicturePool(capacity: 8)
        let state = DecodeState(decoder: decoder, pool: pool)
        // The worker captures the pieces it needs, not self.
        let counters = self.counters
        let overlayFlag = OverlayFlagBox()
        let subscribersBox = SubscribersBox()
        let log = logger
        let worker = FrameWorker(name: "annotate-\(name)") { frame in
            let handlers = subscribersBox.current()
            guard !handlers.isEmpty else { return }
            let start = MonotonicClock.nanos()
            let pic = state.pool.take(width: max(frame.width, 16), height: max(frame.height, 16))
            do {
                try state.decoder.withLock { try $0.decode(frame.bytes, into: pic) }
            } catch {
                pic.release()
                if counters.errors.wrappingAdd(1, ordering: .relaxed).newValue % 100 == 1 {
                    log.warning("JPEG decode failed", metadata: ["stream": "\(name)", "error": "\(error)"])
                }
                return
            }
            pic.copyMetadata(from: frame)
            var picture = pic
            if frame.rotation != 0 {
                // The camera is held on its side or upside down: turn the picture (and its AF areas).
                let turned = frame.rotation == 180 ? state.pool.take(width: pic.width, height: pic.height)
                    : state.pool.take(width: pic.height, height: pic.width)
                turned.rotate(from: pic, clockwise: frame.rotation)
                pic.release()
                picture = turned
            }
            if overlayFlag.on.load(ordering: .relaxed), !picture.afAreas.isEmpty {
                AFOverlay().draw(picture.afAreas, into: picture)
            }
            counters.decodeNanos.wrappingAdd(Int(MonotonicClock.nanos() - start), ordering: .relaxed)
            counters.decoded.wrappingAdd(1, ordering: .relaxed)
            for h in handlers { h.1(picture) }
            picture.release()
        }
        self.worker = worker
        pacer = FramePacer(name: "annotate-\(name)") { frame, completion in worker.deliver(frame, completion) }
        self.subscribersBox = subscribersBox
        self.overlayFlag = overlayFlag
        overlayFlag.on.store(overlay, ordering: .relaxed)
        worker.start()
        if let hub { attach(to: hub) }
    }


    /// Takes frames from a camera's hub (at most one at a time) while someone subscribes.
    public func attach(to hub: FrameHub) {
        let pacer = self.pacer
        let newGate = DemandGate(name: "picture-\(name)", linger: linger,
                                 start: { hub.attach(pacer) }, stop: { hub.detach(pacer) })
        let (old, subscribers) = gate.withLock { g -> (DemandGate?, Int) in
            let o = g
            g = newGate
            return (o, subscribersBox.count)
        }
        old?.shutdown()
        for _ in 0..<subscribers { newGate.acquire() }
    }

    /// Disconnects from the hub at once.
    public func detach() {
        let old = gate.withLock { g -> DemandGate? in
            let o = g
            g = nil
            return o
        }
        old?.shutdown()
    }

    /// True while the stream takes frames from its hub (someone subscribes, or the linger runs).
    public var isRunning: Bool { gate.withLock { $0 }?.isRunning ?? false }

    /// Detaches and stops the decoding thread.
    public func stop() {
        detach()
        worker.stop()
    }

    /// Draw the AF areas (can be switched at any time).
    public var overlayEnabled: Bool {
        get { overlayFlag.on.load(ordering: .relaxed) }
        set { overlayFlag.on.store(newValue, ordering: .relaxed) }
    }

    /// Adds a subscriber; it is called on the stream's thread with every decoded picture.
    public func subscribe(_ handler: @escaping @Sendable (I420Picture) -> Void) -> Subscription {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let g = gate.withLock { g in
            subscribersBox.add(id, handler)
            return g
        }
        g?.acquire()
        return Subscription(id: id)
    }

    /// Removes a subscriber (the stream stops taking frames `linger` after the last one, or at once
    /// with `lingering: false`: a subscriber that lingered itself, the encoder after its linger).
    public func unsubscribe(_ s: Subscription, lingering: Bool = true) {
        let (removed, g) = gate.withLock { g in (subscribersBox.remove(s.id), g) }
        if removed { g?.release(lingering: lingering) }
    }

    /// Counters: framesIn = frames handed over by the hub, framesOut = pictures decoded,
    /// dropped = frames replaced while decoding, errors = decode failures.
    public func stats(camera: String) -> OutputStats {
        var s = OutputStats(output: "annotate", camera: camera)
        s.framesIn = pacer.delivered
        s.framesOut = counters.decoded.load(ordering: .relaxed)
        s.dropped = pacer.replaced
        s.errors = counters.errors.load(ordering: .relaxed)
        s.clients = subscribersBox.count
        return s
    }

    /// Mean decode (+ overlay) time per picture in milliseconds.
    public var meanDecodeMilliseconds: Double {
        let n = counters.decoded.load(ordering: .relaxed)
        return n == 0 ? 0 : Double(counters.decodeNanos.load(ordering: .relaxed)) / Double(n) / 1e6
    }
}

/// The decoder and picture pool, used only on the stream's thread.
final class DecodeState: Sendable {
    let decoder: Mutex<JPEGDecoder>
    let pool: I420PicturePool
    init(decoder: consuming sending JPEGDecoder, pool: I420PicturePool) {
        self.decoder = Mutex(decoder)
        self.pool = pool
    }
}

final class OverlayFlagBox: Sendable {
    let on = Atomic<Bool>(true)
}

final class SubscribersBox: Sendable {
    private let list = Mutex<[(Int, @Sendable (I420Picture) -> Void)]>([])
    func add(_ id: Int, _ h: @escaping @Sendable (I420Picture) -> Void) { list.withLock { $0.append((id, h)) } }
    func remove(_ id: Int) -> Bool {
        list.withLock { l in
            let before = l.count
            l.removeAll { $0.0 == id }
            return l.count != before
        }
    }
    func current() -> [(Int, @Sendable (I420Picture) -> Void)] { list.withLock { $0 } }
    var count: Int { list.withLock { $0.count } }
}
