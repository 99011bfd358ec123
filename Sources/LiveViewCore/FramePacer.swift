
/// Frame pacing with completion handlers: a consumer gets the next frame only after it has called
/// the completion of the last one. Frames published meanwhile wait in a single-slot mailbox where the
/// newest replaces the older (counted, never queued).
///
/// `deliver` runs on the thread that publishes the frame or calls the completion; a consumer with
/// slow work hands the frame to its own thread and calls the completion from there.
public final class FramePacer: Sendable {
    /// Called with a frame the consumer now owns (it must `release()` it) and the completion to call
    /// when it is ready for the next one.
    public typealias Delivery = @Sendable (Frame, PacerCompletion) -> Void

    public let name: String
    private let mailbox = FrameMailbox()
    private let busy = Atomic<Bool>(false)
    private let generation = Atomic<UInt64>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let staleCompletions = Atomic<Int>(0)
    private let deliver: Delivery

    public init(name: String, deliver: @escaping Delivery) {
        self.name = name
        self.deliver = deliver
    }

    /// Offers a frame (the pacer takes over one owner of it).
    public func publish(_ frame: Frame) {
        mailbox.put(frame)
        pump()
    }

    /// Called through `PacerCompletion`.
    func complete(generation g: UInt64) {
        // Only the completion of the frame in flight frees the consumer; a second call is ignored.
        guard busy.load(ordering: .acquiring), generation.load(ordering: .acquiring) == g else {
            staleCompletions.wrappingAdd(1, ordering: .relaxed)
            return
        }
        generation.wrappingAdd(1, ordering: .acquiringAndReleasing)
        // Sequentially consistent on both sides (here and in the mailbox) so that a frame put while
        // this consumer was busy is always seen by one of the two pumps (no lost wake-up).
        _ = busy.exchange(false, ordering: .sequentiallyConsistent)
        pump()
    }

    private func pump() {
        while !mailbox.isEmpty {
            guard busy.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else {
                return
            }
            guard let frame = mailbox.take() else {
                // Someone else took it between the check and the claim; give the claim back and look again.
                busy.store(false, ordering: .releasing)
                continue
            }
            deliveredCount.wrappingAdd(1, ordering: .relaxed)
            let token = PacerCompletion(pacer: self, generation: generation.load(ordering: .acquiring))
            deliver(frame, token)
            return
        }
    }

    /// Frames handed to the consumer.
    public var delivered: Int { deliveredCount.load(ordering: .relaxed) }
    /// Frames replaced in the mailbox because the consumer was still busy.
    public var replaced: Int { mailbox.replaced }
    /// Completions called twice or too late (ignored).
    public var ignoredCompletions: Int { staleCompletions.load(ordering: .relaxed) }
    /// True while the consumer holds a frame it has not completed.
    public var isBusy: Bool { busy.load(ordering: .relaxed) }
}

/// The completion a consumer calls once when it is done with a frame and ready for the next.
/// A value type: handing it around allocates nothing.
public struct PacerCompletion: Sendable {
    let pacer: FramePacer
    let generation: UInt64

    /// Signals readiness for the next frame. Calling it more than once has no further effect.
    public func callAsFunction() {
        pacer.complete(generation: generation)
    }
}
