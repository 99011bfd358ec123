
/// A lock-free single-slot mailbox: the producer puts the newest frame with one atomic exchange, the
/// consumer takes whatever is there with another. A frame that was still waiting when a newer one
/// arrived is released and counted as replaced — frames are never queued.
public final class FrameMailbox: Sendable {
    private let slot = Atomic<Unmanaged<Frame>?>(nil)
    private let replacedCount = Atomic<Int>(0)

    public init() {}

    deinit {
        if let left = slot.exchange(nil, ordering: .acquiringAndReleasing) {
            left.takeRetainedValue().release()
        }
    }

    /// Puts a frame (the mailbox takes over one owner of it). Returns true when it replaced a frame
    /// that had not been taken yet.
    @discardableResult
    public func put(_ frame: Frame) -> Bool {
        let old = slot.exchange(Unmanaged.passRetained(frame), ordering: .sequentiallyConsistent)
        guard let old else { return false }
        replacedCount.wrappingAdd(1, ordering: .relaxed)
        old.takeRetainedValue().release()
        return true
    }

    /// Takes the waiting frame, if any; the caller now owns it and must `release()` it.
    public func take() -> Frame? {
        slot.exchange(nil, ordering: .sequentiallyConsistent)?.takeRetainedValue()
    }

    /// True when a frame is waiting.
    public var isEmpty: Bool { slot.load(ordering: .sequentiallyConsistent) == nil }

    /// Frames that were replaced before anyone took them.
    public var replaced: Int { replacedCount.load(ordering: .relaxed) }
}
