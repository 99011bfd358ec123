import Synchronization

/// One producer, many consumers. Each paced consumer has its own `FramePacer` (latest wins), so a
/// slow viewer never stalls ingest or the others; lossless consumers (the recorder) have a
/// `BoundedFrameQueue` whose overflows are counted.
public final class FrameHub: Sendable {
    private struct Consumers {
        var pacers: [FramePacer] = []
        var queues: [BoundedFrameQueue] = []
    }

    private let consumers = Locked(Consumers())
    private let publishedCount = Atomic<Int>(0)
    private let lastFrame = Locked<Frame?>(nil)

    public init() {}

    deinit {
        lastFrame.withLock { $0?.release() }
    }

    /// Adds a paced consumer. It first receives the newest frame already published, if any, so a
    /// late joiner has a picture at once.
    public func attach(_ pacer: FramePacer) {
        consumers.withLock { $0.pacers.append(pacer) }
        if let f = latest() { pacer.publish(f) }
    }

    /// Removes a paced consumer.
    public func detach(_ pacer: FramePacer) {
        consumers.withLock { c in c.pacers.removeAll { $0 === pacer } }
    }

    /// Adds a lossless consumer.
    public func attach(_ queue: BoundedFrameQueue) {
        consumers.withLock { $0.queues.append(queue) }
    }

    /// Removes a lossless consumer.
    public func detach(_ queue: BoundedFrameQueue) {
        consumers.withLock { c in c.queues.removeAll { $0 === queue } }
    }

    /// Publishes a frame to every consumer; takes over the caller's ownership of `frame`.
    public func publish(_ frame: Frame) {
        publishedCount.wrappingAdd(1, ordering: .relaxed)
        let (pacers, queues) = consumers.withLock { ($0.pacers, $0.queues) }
        for q in queues {
            frame.retain()
            q.push(frame)
        }
        for p in pacers {
            frame.retain()
            p.publish(frame)
        }
        // Keep the newest frame for late joiners (and the slate while the camera is away).
        let old = lastFrame.withLock { slot -> Frame? in
            let o = slot
            slot = frame
            return o
        }
        old?.release()
    }

    /// The newest published frame with one owner for the caller, if any.
    public func latest() -> Frame? {
        lastFrame.withLock { slot -> Frame? in
            slot?.retain()
            return slot
        }
    }

    /// Frames published so far.
    public var published: Int { publishedCount.load(ordering: .relaxed) }
    /// Number of attached consumers.
    public var consumerCount: Int { consumers.withLock { $0.pacers.count + $0.queues.count } }
}
