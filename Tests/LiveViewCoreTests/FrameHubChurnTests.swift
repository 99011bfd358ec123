import LiveViewCore
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Real threads: one producer publishes at full rate while two other threads keep attaching and
/// detaching pacers and queues and asking for `latest()`. Checks that every frame comes back to its
/// pool exactly once, that the consumers attached throughout end on the last frame, and that
/// `latest()` never comes back empty or older than before. Run under ThreadSanitizer by
/// `make tsan-tests` with the rest of the suite.
@Suite(.tags(.sanitized)) struct FrameHubChurnTests {
    /// A consumer's frame and completion held until someone completes it, from any thread. Once
    /// closed it releases what it holds and whatever still arrives, and keeps no completion (which
    /// would keep its pacer, and the pacer's closure this inbox, alive).
    final class Inbox: Sendable {
        private let slot = Mutex<(held: (Frame, PacerCompletion)?, closed: Bool)>((nil, false))
        func put(_ f: Frame, _ done: PacerCompletion) {
            let (old, closed) = slot.withLock { s -> ((Frame, PacerCompletion)?, Bool) in
                let o = s.held
                if !s.closed { s.held = (f, done) }
                return (o, s.closed)
            }
            // A pacer delivers its next frame only after the completion, so nothing can be waiting.
            precondition(old == nil, "pacer delivered twice without completion")
            if closed { f.release() }
        }
        /// Releases the held frame and completes it.
        func complete() {
            guard let (f, done) = slot.withLock({ s in let o = s.held; s.held = nil; return o }) else { return }
            f.release()
            done()
        }
        /// Releases the held frame without completing; later deliveries are released at once.
        func close() {
            slot.withLock { s in let o = s.held; s.held = nil; s.closed = true; return o }?.0.release()
        }
    }

    /// The newest sequence number a consumer saw, and whether it ever went backwards.
    final class Tracker: Sendable {
        let last = Atomic<Int>(-1)
        let backwards = Atomic<Int>(0)
        func saw(_ s: Int) {
            let prev = last.exchange(s, ordering: .relaxed)
            if s < prev { backwards.wrappingAdd(1, ordering: .relaxed) }
        }
        var value: Int { last.load(ordering: .relaxed) }
    }

    struct Outcome {
        var syncLast = -1, heldLast = -1, queueLast = -1
        var backwards = 0
        var recorded = 0, overflows = 0
        var latestNil = 0, latestBackwards = 0, latestCalls = 0
        var churnRounds = 0
        var notFresh = 0
        var countsAfterDetach: [Int] = []
    }

    @Test func publishWhileConsumersComeAndGo() throws {
        let total = 200_000
        let pool = FramePool(capacity: 256, frameBytes: 16)
        // Everything but the pool (hub, consumers, threads) is gone when this returns.
        let o = Self.run(pool: pool, total: total)

        #expect(o.syncLast == total - 1, "the synchronous pacer attached throughout saw the last frame")
        #expect(o.heldLast == total - 1, "the pacer completed from other threads saw the last frame")
        #expect(o.queueLast == total - 1, "the queue attached throughout got the last frame")
        #expect(o.backwards == 0)
        #expect(o.recorded + o.overflows == total, "the lossless lane recorded or counted every frame")
        #expect(o.latestNil == 0, "latest() is never empty once a frame was published")
        #expect(o.latestBackwards == 0, "latest() never goes back to an older frame")
        #expect(o.latestCalls > 0)
        #expect(o.churnRounds >= 2, "each churn thread attached and detached at least once")
        #expect(o.notFresh == 0, "take() never handed out a frame that still had owners")
        #expect(o.countsAfterDetach == [0, 0, 0], "consumer, pacer and queue counts after detaching all")

        Self.expectEveryFrameBackOnce(pool)
    }

    /// `latest()` against a producer at full rate with no consumer, so the frame `publish` replaces
    /// in the slot goes straight back to a tiny pool and is taken again at once (or freed when the
    /// pool is full): a `latest()` that picked it up without owning it would see it reset, reused or
    /// freed.
    @Test func latestRacingPublishOwnsWhatItReturns() throws {
        let total = 100_000
        let pool = FramePool(capacity: 2, frameBytes: 16)
        let (bad, calls) = Self.raceLatest(pool: pool, total: total)
        #expect(bad == 0, "latest() returned a frame that was recycled, reused or went backwards")
        #expect(calls > 0)
        Self.expectEveryFrameBackOnce(pool)
    }

    /// Consumer sets swapped as fast as two threads can while a producer publishes at full rate and
    /// the counts are read: a set released while `publish` or a count still reads it is a
    /// use-after-free that ThreadSanitizer reports. Every 500th frame the queue's wake-up (which runs
    /// inside `publish`, between the queues and the pacers) waits until the other threads have
    /// swapped the set a few more times, so `publish` surely goes on reading a set that is no longer
    /// current; and `attach`/`detach` must not wait for a `publish` in flight.
    @Test func consumerSetsSwapUnderReaders() throws {
        let total = 100_000
        let pool = FramePool(capacity: 16, frameBytes: 16)
        let (last, wrongCounts, swaps) = Self.swapSets(pool: pool, total: total)
        #expect(last == total - 1, "the pacer attached throughout saw the last frame")
        #expect(wrongCounts == 0, "a count missed the consumers attached throughout")
        #expect(swaps > 0)
        #expect(pool.outstanding == 0, "frames out of the pool after everyone released")
    }

    /// Every frame came back to the pool exactly once: none is out, none came back twice.
    static func expectEveryFrameBackOnce(_ pool: FramePool, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(pool.outstanding == 0, "frames out of the pool after everyone released", sourceLocation: sourceLocation)
        var frames: [Frame] = []
        for _ in 0..<pool.idle { frames.append(pool.take()) }
        #expect(Set(frames.map(ObjectIdentifier.init)).count == frames.count, "a frame is in the pool twice",
                sourceLocation: sourceLocation)
        for f in frames { f.release() }
    }

    static func swapSets(pool: FramePool, total: Int) -> (last: Int, wrongCounts: Int, swaps: Int) {
        let hub = FrameHub()
        let deadline = MonotonicClock.nanos() + 120_000_000_000
        let seen = Tracker()
        let steady = FramePacer(name: "steady") { f, done in seen.saw(Int(f.sequence!)); f.release(); done() }
        let done = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        let wrongCounts = Atomic<Int>(0)
        let swaps = Atomic<Int>(0)
        let pushes = Atomic<Int>(0)
        let steadyQueue = BoundedFrameQueue(capacity: 1) {
            guard pushes.wrappingAdd(1, ordering: .relaxed).newValue % 500 == 0 else { return }
            let target = swaps.load(ordering: .relaxed) + 16
            while swaps.load(ordering: .relaxed) < target && MonotonicClock.nanos() < deadline { sched_yield() }
        }
        hub.attach(steady)
        hub.attach(steadyQueue)
        var threads: [pthread_t] = []
        for _ in 0..<2 {
            threads.append(startThread {
                started.wrappingAdd(1, ordering: .relaxed)
                repeat {
                    let p = FramePacer(name: "swap") { f, done in f.release(); done() }
                    let q = BoundedFrameQueue(capacity: 1)
                    hub.attach(p)
                    hub.attach(q)
                    if hub.pacerCount < 2 || hub.queueCount < 2 || hub.consumerCount < 4 {
                        wrongCounts.wrappingAdd(1, ordering: .relaxed)
                    }
                    hub.detach(q)
                    hub.detach(p)
                    q.pop()?.release()
                    swaps.wrappingAdd(4, ordering: .relaxed)
                } while !done.load(ordering: .acquiring)
            })
        }
        threads.append(startThread {
            while started.load(ordering: .relaxed) < 2 && MonotonicClock.nanos() < deadline { sched_yield() }
            for i in 0..<total {
                let f = pool.take()
                f.sequence = UInt64(i)
                hub.publish(f)
                steadyQueue.pop()?.release()
            }
            done.store(true, ordering: .releasing)
        })
        for t in threads { pthread_join(t, nil) }
        if hub.pacerCount != 1 || hub.queueCount != 1 { wrongCounts.wrappingAdd(1, ordering: .relaxed) }
        hub.detach(steady)
        hub.detach(steadyQueue)
        steadyQueue.pop()?.release()
        return (seen.value, wrongCounts.load(ordering: .relaxed), swaps.load(ordering: .relaxed))
    }

    static func raceLatest(pool: FramePool, total: Int) -> (bad: Int, calls: Int) {
        let hub = FrameHub()
        let deadline = MonotonicClock.nanos() + 120_000_000_000
        let done = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        let bad = Atomic<Int>(0)
        let calls = Atomic<Int>(0)
        var threads: [pthread_t] = []
        for _ in 0..<2 {
            threads.append(startThread {
                started.wrappingAdd(1, ordering: .relaxed)
                var last: UInt64 = 0
                repeat {
                    guard let f = hub.latest() else { continue }
                    calls.wrappingAdd(1, ordering: .relaxed)
                    // A frame back in the pool has no sequence; one taken again by the producer has
                    // a newer one, maybe still being written.
                    let s1 = f.sequence
                    let owners = f.ownerCount
                    let s2 = f.sequence
                    if s1 == nil || s1 != s2 || s1! < last || owners < 1 { bad.wrappingAdd(1, ordering: .relaxed) }
                    last = s1 ?? last
                    f.release()
                } while !done.load(ordering: .acquiring)
            })
        }
        threads.append(startThread {
            while started.load(ordering: .relaxed) < 2 && MonotonicClock.nanos() < deadline { sched_yield() }
            for i in 0..<total {
                let f = pool.take()
                f.sequence = UInt64(i)
                hub.publish(f)
            }
            done.store(true, ordering: .releasing)
        })
        for t in threads { pthread_join(t, nil) }
        if let f = hub.latest() {
            if f.sequence != UInt64(total - 1) { bad.wrappingAdd(1, ordering: .relaxed) }
            f.release()
        }
        return (bad.load(ordering: .relaxed), calls.load(ordering: .relaxed))
    }

    static func run(pool: FramePool, total: Int) -> Outcome {
        let hub = FrameHub()
        let deadline = MonotonicClock.nanos() + 120_000_000_000

        // Attached for the whole run: a pacer completing at once, a pacer completed by the churn
        // threads, and a queue drained by the first churn thread.
        let syncSeen = Tracker()
        let syncPacer = FramePacer(name: "sync") { f, done in
            syncSeen.saw(Int(f.sequence!))
            f.release()
            done()
        }
        let heldSeen = Tracker()
        let heldInbox = Inbox()
        let heldPacer = FramePacer(name: "held") { f, done in
            heldSeen.saw(Int(f.sequence!))
            heldInbox.put(f, done)
        }
        let queue = BoundedFrameQueue(capacity: 64)
        let queueSeen = Tracker()
        let recorded = Atomic<Int>(0)
        @Sendable func drainQueue() {
            while let f = queue.pop() {
                queueSeen.saw(Int(f.sequence!))
                recorded.wrappingAdd(1, ordering: .relaxed)
                f.release()
            }
        }
        hub.attach(syncPacer)
        hub.attach(heldPacer)
        hub.attach(queue)

        let published = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let churnStarted = Atomic<Int>(0)
        let latestNil = Atomic<Int>(0)
        let latestBackwards = Atomic<Int>(0)
        let latestCalls = Atomic<Int>(0)
        let churnRounds = Atomic<Int>(0)
        let notFresh = Atomic<Int>(0)

        var threads: [pthread_t] = []
        for t in 0..<2 {
            threads.append(startThread {
                churnStarted.wrappingAdd(1, ordering: .relaxed)
                var lastLatest = -1
                var round = 0
                repeat {
                    round += 1
                    let inbox = Inbox()
                    let holds = (round + t) % 2 == 0
                    let pacer = FramePacer(name: "churn") { f, done in
                        if holds {
                            inbox.put(f, done)
                        } else {
                            f.release()
                            done()
                        }
                    }
                    let q = BoundedFrameQueue(capacity: 4)
                    hub.attach(pacer)
                    hub.attach(q)
                    for _ in 0..<3 {
                        let wasPublished = published.load(ordering: .acquiring)
                        latestCalls.wrappingAdd(1, ordering: .relaxed)
                        if let f = hub.latest() {
                            let s = Int(f.sequence!)
                            if s < lastLatest { latestBackwards.wrappingAdd(1, ordering: .relaxed) }
                            lastLatest = s
                            f.release()
                        } else if wasPublished {
                            latestNil.wrappingAdd(1, ordering: .relaxed)
                        }
                        inbox.complete()
                        heldInbox.complete()
                        // One popper, so the queue's order can be checked.
                        if t == 0 { drainQueue() }
                        sched_yield()
                    }
                    hub.detach(pacer)
                    hub.detach(q)
                    // A publish in flight may still hand them a frame; the inbox and their deinit
                    // release it.
                    inbox.close()
                    while let f = q.pop() { f.release() }
                    churnRounds.wrappingAdd(1, ordering: .relaxed)
                } while !stop.load(ordering: .acquiring)
            })
        }

        // The producer: full rate, from the pool. It starts once both churn threads run.
        threads.append(startThread {
            while churnStarted.load(ordering: .relaxed) < 2 && MonotonicClock.nanos() < deadline { sched_yield() }
            for i in 0..<total {
                let f = pool.take()
                if f.ownerCount != 1 { notFresh.wrappingAdd(1, ordering: .relaxed) }
                f.sequence = UInt64(i)
                if i == total - 1 {
                    // Only this thread pushes into the queue, so once it has room the last frame fits.
                    while queue.count == queue.capacity && MonotonicClock.nanos() < deadline { sched_yield() }
                }
                hub.publish(f)
                if i == 0 { published.store(true, ordering: .releasing) }
            }
        })
        pthread_join(threads.removeLast(), nil)

        // Let the consumers attached throughout catch up with the last frame (the churn threads keep
        // completing and draining them).
        while (syncSeen.value != total - 1 || heldSeen.value != total - 1 || queueSeen.value != total - 1)
            && MonotonicClock.nanos() < deadline {
            sched_yield()
        }
        stop.store(true, ordering: .releasing)
        for t in threads { pthread_join(t, nil) }

        hub.detach(syncPacer)
        hub.detach(heldPacer)
        hub.detach(queue)
        drainQueue()
        heldInbox.close()
        if let f = hub.latest() { f.release() }

        var o = Outcome()
        o.syncLast = syncSeen.value
        o.heldLast = heldSeen.value
        o.queueLast = queueSeen.value
        o.backwards = syncSeen.backwards.load(ordering: .relaxed) + heldSeen.backwards.load(ordering: .relaxed)
            + queueSeen.backwards.load(ordering: .relaxed)
        o.recorded = recorded.load(ordering: .relaxed)
        o.overflows = queue.overflows
        o.latestNil = latestNil.load(ordering: .relaxed)
        o.latestBackwards = latestBackwards.load(ordering: .relaxed)
        o.latestCalls = latestCalls.load(ordering: .relaxed)
        o.churnRounds = churnRounds.load(ordering: .relaxed)
        o.notFresh = notFresh.load(ordering: .relaxed)
        o.countsAfterDetach = [hub.consumerCount, hub.pacerCount, hub.queueCount]
        return o
    }
}
