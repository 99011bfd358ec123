
/// A bounded first-in-first-out queue of frames for consumers that must not lose frames silently
/// (the recorder). When full, a push is refused and counted as an overflow; the caller decides what to
/// log. Pushing never allocates after creation (a fixed ring).
public final class BoundedFrameQueue: Sendable {
    private struct Ring {
        var slots: [Frame?]
        var head = 0
        var count = 0
    }

    private let ring: Mutex<Ring>
    private let overflowCount = Atomic<Int>(0)
    private let wake: @Sendable () -> Void
    /// The most frames that can wait.
    public let capacity: Int

    /// `wake` is called after every accepted push (e.g. to signal the consumer's thread).
    public init(capacity: Int, wake: @escaping @Sendable () -> Void = {}) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.wake = wake
        ring = Mutex(Ring(slots: Array(repeating: nil, count: capacity)))
    }

    deinit {
        while let f = pop() { f.release() }
    }

    /// Adds a frame (the queue takes over one owner). Returns false, releases the frame and counts an
    /// overflow when the queue is full.
    @discardableResult
    public func push(_ frame: Frame) -> Bool {
        let accepted = ring.withLock { r -> Bool in
            guard r.count < capacity else { return false }
            r.slots[(r.head + r.count) % capacity] = frame
            r.count += 1
            return true
        }
        if accepted {
            wake()
        } else {
            overflowCount.wrappingAdd(1, ordering: .relaxed)
            frame.release()
        }
        return accepted
    }

    /// The oldest frame, if any; the caller owns it.
    public func pop() -> Frame? {
        ring.withLock { r -> Frame? in
            guard r.count > 0 else { return nil }
            let f = r.slots[r.head]
            r.slots[r.head] = nil
            r.head = (r.head + 1) % capacity
            r.count -= 1
            return f
        }
    }

    /// Frames waiting.
    public var count: Int { ring.withLock { $0.count } }
    /// Frames refused because the queue was full.
    public var overflows: Int { overflowCount.load(ordering: .relaxed) }
}
