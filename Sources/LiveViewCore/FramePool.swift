
/// A bounded pool of reusable frames. `take()` hands out a frame with one owner; its last
/// `release()` brings it back here. When the pool is empty a new frame is allocated (counted), so a
/// burst never blocks ingest; frames beyond `capacity` are freed instead of kept.
public final class FramePool: Sendable {
    private let free: Mutex<[Frame]>
    private let frameCapacity: Int
    /// Number of frames the pool keeps at most.
    public let capacity: Int
    private let allocatedCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)

    public init(capacity: Int = 16, frameBytes: Int = 256 * 1024) {
        self.capacity = capacity
        self.frameCapacity = frameBytes
        var list: [Frame] = []
        list.reserveCapacity(capacity)
        free = Mutex(list)
    }

    /// A frame with one owner and cleared metadata.
    public func take() -> Frame {
        let reused: Frame? = free.withLock { $0.popLast() }
        if let frame = reused {
            frame.resetMetadata()
            return frame
        }
        allocatedCount.wrappingAdd(1, ordering: .relaxed)
        return Frame(capacity: frameCapacity, pool: self)
    }

    func recycle(_ frame: Frame) {
        free.withLock { list in
            if list.count < capacity {
                list.append(frame)
            } else {
                droppedCount.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }

    /// How many frames this pool has ever allocated (a warm pool stops growing).
    public var allocated: Int { allocatedCount.load(ordering: .relaxed) }
    /// Frames waiting for reuse.
    public var idle: Int { free.withLock { $0.count } }
    /// Frames handed out by `take()` whose last owner has not released them yet (for tests and
    /// diagnostics). Exact when no `take()` or last `release()` runs meanwhile; negative when a frame
    /// came back more often than it was taken (an over-release).
    public var outstanding: Int {
        free.withLock { list in
            allocatedCount.load(ordering: .relaxed) - list.count - droppedCount.load(ordering: .relaxed)
        }
    }
}
