
/// One producer, many consumers. Each paced consumer has its own `FramePacer` (latest wins), so a
/// slow viewer never stalls ingest or the others; lossless consumers (the recorder) have a
/// `BoundedFrameQueue` whose overflows are counted.
///
/// `publish` takes no lock and never waits: it reads an immutable snapshot of the consumers and
/// swaps the newest frame in with one atomic exchange. `attach`, `detach` and `latest()` are rare
/// (a client connects, a status page asks for the picture size) and serialize among themselves on a
/// `Synchronization.Mutex`.
///
/// How the consumer snapshot is read without a lock and without a use-after-free:
///
/// - The consumers live in an immutable `ConsumerSet` (a final class holding two arrays). `current`
///   is an `Atomic<Unmanaged<ConsumerSet>>` that owns one strong reference to it. `attach`/`detach`
///   build a new set from the current one and swap it in with an atomic exchange.
/// - A reader (`publish`, the counts) increments `readers` before it loads `current` and
///   decrements it when it is done with the set; both are sequentially consistent, like the writer's
///   exchange and its load of `readers` that follows.
/// - A swapped-out set is *retired*, not released: it may still be in a reader's hands. After each
///   swap the writer loads `readers`; if it sees zero, it releases every set retired so far (and only
///   then, and outside the mutex, so a consumer's deinit may call back into the hub). Otherwise the
///   retired sets wait for the next `attach`/`detach` that sees no reader, or for `deinit`.
///
/// Why zero readers is enough: a reader that got a retired set incremented `readers` before its load
/// of `current`, which came before the writer's exchange, which came before the writer's load of
/// `readers` (one total order, all four are sequentially consistent). So that load comes after the
/// reader's increment in `readers`' modification order, and it can only see zero if the reader's
/// decrement came before it as well. The decrement (a release) heads a release sequence of
/// read-modify-writes that the writer's load (an acquire) reads from, so all of the reader's accesses
/// to the set happen before the release of the set. Between two writers everything goes through
/// atomics too (`current` and `retired` are handed on by release/acquire), so the mutex provides
/// only mutual exclusion: correctness, and ThreadSanitizer, do not depend on seeing through it
/// (TSan on Linux does not see the handoff of a contended `Mutex`, whose slow path is a futex in
/// the uninstrumented runtime).
///
/// Cost: a retired set (and the consumers it references) lives until an `attach`/`detach` finds no
/// `publish` in flight — at 30 fps a publish is in flight a tiny fraction of the time, so in practice
/// the next one — and at the latest until the hub is deinitialized. The number waiting is bounded
/// by the number of `attach`/`detach` calls. A `publish` that started before a `detach` may still
/// hand that consumer one more frame (as before).
public final class FrameHub: Sendable {
    /// An immutable consumer list; never changed after it is published in `current`.
    private final class ConsumerSet: Sendable {
        let pacers: [FramePacer]
        let queues: [BoundedFrameQueue]

        init(pacers: [FramePacer] = [], queues: [BoundedFrameQueue] = []) {
            self.pacers = pacers
            self.queues = queues
        }
    }

    /// Consumer sets swapped out but maybe still being read; immutable, handed from writer to writer.
    private final class RetiredSets: Sendable {
        let sets: [ConsumerSet]
        init(_ sets: [ConsumerSet]) { self.sets = sets }
    }

    /// The consumers; owns one strong reference to the set.
    private let current: Atomic<Unmanaged<ConsumerSet>>
    /// Readers of `current` in flight (publish, counts).
    private let readers = Atomic<Int>(0)
    /// Sets swapped out of `current` and not released yet; owns one strong reference.
    private let retired = Atomic<Unmanaged<RetiredSets>?>(nil)
    /// Serializes attach, detach and latest(); guards no plain data (see the type's comment).
    private let slowPath = Mutex<Void>(())

    private let publishedCount = Atomic<Int>(0)
    /// The newest published frame: one `Frame` owner and one strong reference, like `FrameMailbox`.
    private let newest = Atomic<Unmanaged<Frame>?>(nil)

    public init() {
        current = Atomic(Unmanaged.passRetained(ConsumerSet()))
    }

    deinit {
        // No reader or writer can be running: they all hold a reference to the hub.
        current.load(ordering: .acquiring).release()
        retired.load(ordering: .acquiring)?.release()
        newest.load(ordering: .acquiring)?.takeRetainedValue().release()
    }

    /// Adds a paced consumer. It first receives the newest frame already published, if any, so a
    /// late joiner has a picture at once.
    public func attach(_ pacer: FramePacer) {
        replaceConsumers { pacers, _ in pacers.append(pacer) }
        if let f = latest() { pacer.publish(f) }
    }

    /// Removes a paced consumer.
    public func detach(_ pacer: FramePacer) {
        replaceConsumers { pacers, _ in pacers.removeAll { $0 === pacer } }
    }

    /// Adds a lossless consumer.
    public func attach(_ queue: BoundedFrameQueue) {
        replaceConsumers { _, queues in queues.append(queue) }
    }

    /// Removes a lossless consumer.
    public func detach(_ queue: BoundedFrameQueue) {
        replaceConsumers { _, queues in queues.removeAll { $0 === queue } }
    }

    /// Publishes a frame to every consumer; takes over the caller's ownership of `frame`.
    /// Takes no lock (the consumers' own `push`/`publish` are theirs).
    public func publish(_ frame: Frame) {
        publishedCount.wrappingAdd(1, ordering: .relaxed)
        withConsumers { set in
            for q in set.queues {
                frame.retain()
                q.push(frame)
            }
            for p in set.pacers {
                frame.retain()
                p.publish(frame)
            }
        }
        // Keep the newest frame for late joiners (and the slate while the camera is away). The
        // caller's owner moves into the slot; the frame it replaces loses the slot's owner.
        let old = newest.exchange(Unmanaged.passRetained(frame), ordering: .acquiringAndReleasing)
        old?.takeRetainedValue().release()
    }

    /// The newest published frame with one owner for the caller, if any (nil only before the first
    /// `publish`).
    ///
    /// Lock-free with respect to `publish`: it takes the slot's frame out with an exchange (so no
    /// publish can release it meanwhile), adds the caller's owner, and puts the slot's owner back
    /// with a compare-exchange against nil. If a publish stored a newer frame in between, the put-back
    /// fails and the taken owner is released instead; the caller gets the frame that was newest when
    /// the call took it. Calls of `latest()` serialize among themselves so that none of them sees the
    /// slot empty while another has borrowed it (and so that only a publish can fill the slot in
    /// between, which makes the compare-exchange free of ABA).
    public func latest() -> Frame? {
        slowPath.withLock { _ -> Frame? in
            guard let taken = newest.exchange(nil, ordering: .acquiringAndReleasing) else { return nil }
            // `taken` is the slot's owner (one Frame owner, one strong reference), ours for now.
            let frame = taken.takeUnretainedValue()
            frame.retain()  // the caller's owner
            let putBack = newest.compareExchange(expected: nil, desired: taken, ordering: .acquiringAndReleasing)
            if !putBack.exchanged {
                // A newer frame is in the slot: drop the slot's old owner. The caller's owner keeps
                // the frame out of the pool, so this never recycles it.
                taken.takeRetainedValue().release()
            }
            return frame
        }
    }

    /// Frames published so far.
    public var published: Int { publishedCount.load(ordering: .relaxed) }
    /// Number of attached consumers.
    public var consumerCount: Int { withConsumers { $0.pacers.count + $0.queues.count } }
    /// Number of attached paced consumers.
    public var pacerCount: Int { withConsumers { $0.pacers.count } }
    /// Number of attached lossless consumers.
    public var queueCount: Int { withConsumers { $0.queues.count } }

    /// Runs `body` with the current consumer set, kept alive by the `readers` count alone: no lock,
    /// and no retain of the set either (it must not escape `body`).
    @inline(__always)
    private func withConsumers<R>(_ body: (ConsumerSet) -> R) -> R {
        readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer { readers.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
        return current.load(ordering: .sequentiallyConsistent)._withUnsafeGuaranteedRef(body)
    }

    /// Swaps in a changed copy of the consumer set and retires the old one; releases the retired
    /// sets when no reader is in flight.
    private func replaceConsumers(_ change: (inout [FramePacer], inout [BoundedFrameQueue]) -> Void) {
        let released: RetiredSets? = slowPath.withLock { _ -> RetiredSets? in
            // Only writers replace `current`, and they hold the mutex, so it cannot be retired under us.
            let old = current.load(ordering: .acquiring).takeUnretainedValue()
            var pacers = old.pacers
            var queues = old.queues
            change(&pacers, &queues)
            let new = Unmanaged.passRetained(ConsumerSet(pacers: pacers, queues: queues))
            let swappedOut = current.exchange(new, ordering: .sequentiallyConsistent).takeRetainedValue()
            let earlier = retired.exchange(nil, ordering: .acquiring)?.takeRetainedValue()
            let all = RetiredSets((earlier?.sets ?? []) + [swappedOut])
            if readers.load(ordering: .sequentiallyConsistent) == 0 {
                return all
            }
            retired.store(Unmanaged.passRetained(all), ordering: .releasing)
            return nil
        }
        // The retired sets (and consumers nobody else holds) are released here, outside the mutex.
        _ = released
    }
}
