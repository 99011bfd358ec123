import LiveViewCore
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

@Suite(.tags(.sanitized)) struct FramePoolTests {
    @Test func poolReusesFramesAfterWarmUp() {
        let pool = FramePool(capacity: 4, frameBytes: 64)
        for i in 0..<100 {
            let f = pool.take()
            f.setJPEG([UInt8](repeating: UInt8(i & 0xFF), count: 32))
            f.sequence = UInt64(i)
            f.release()
        }
        #expect(pool.allocated == 1)
        let f = pool.take()
        #expect(f.sequence == nil)
        #expect(f.count == 0)
        #expect(f.afAreas.isEmpty)
        f.release()
    }

    @Test func retainKeepsFrameOutOfPool() {
        let pool = FramePool(capacity: 4, frameBytes: 64)
        let f = pool.take()
        f.retain()
        f.release()
        #expect(pool.idle == 0)
        f.release()
        #expect(pool.idle == 1)
    }

    @Test func storageGrowsForLargeJPEG() {
        let pool = FramePool(capacity: 2, frameBytes: 16)
        let f = pool.take()
        let big = [UInt8](repeating: 7, count: 1000)
        f.setJPEG(big)
        #expect(f.count == 1000)
        #expect(Array(f.bytes) == big)
        f.release()
    }
}

@Suite(.tags(.sanitized)) struct FrameMailboxTests {
    @Test func latestWinsAndReplacedIsCounted() {
        let pool = FramePool(capacity: 8, frameBytes: 16)
        let box = FrameMailbox()
        for i in 0..<5 {
            let f = pool.take()
            f.sequence = UInt64(i)
            box.put(f)
        }
        #expect(box.replaced == 4)
        let got = box.take()
        #expect(got?.sequence == 4)
        #expect(box.take() == nil)
        got?.release()
        // Replaced frames went straight back to the pool and were reused: no frame leaked.
        #expect(pool.allocated == 2)
        #expect(pool.idle == pool.allocated)
    }
}

/// Collects what a consumer saw, from any thread.
final class Seen: Sendable {
    let sequences = Mutex<[UInt64]>([])
    let pending = Mutex<[PacerCompletion]>([])
    func add(_ s: UInt64) { sequences.withLock { $0.append(s) } }
    var all: [UInt64] { sequences.withLock { $0 } }
}

@Suite(.tags(.sanitized)) struct FramePacerTests {
    @Test func nextFrameOnlyAfterCompletion() {
        let pool = FramePool(capacity: 8, frameBytes: 16)
        let seen = Seen()
        let pacer = FramePacer(name: "t") { frame, done in
            seen.add(frame.sequence ?? 999)
            frame.release()
            seen.pending.withLock { $0.append(done) }
        }
        for i in 0..<4 {
            let f = pool.take()
            f.sequence = UInt64(i)
            pacer.publish(f)
        }
        // The first frame went out; 1 and 2 were replaced by 3 while the consumer was busy.
        #expect(seen.all == [0])
        #expect(pacer.replaced == 2)
        #expect(pacer.isBusy)
        let first = seen.pending.withLock { $0.removeFirst() }
        first()
        #expect(seen.all == [0, 3])
        // A second call of an old completion is ignored and does not free the consumer.
        first()
        #expect(pacer.ignoredCompletions == 1)
        #expect(pacer.isBusy)
        let second = seen.pending.withLock { $0.removeFirst() }
        second()
        #expect(!pacer.isBusy)
        #expect(pacer.delivered == 2)
        #expect(pool.idle == pool.allocated)
    }

    @Test func synchronousCompletionDeliversEveryFrame() {
        let pool = FramePool(capacity: 4, frameBytes: 16)
        let seen = Seen()
        let pacer = FramePacer(name: "sync") { frame, done in
            seen.add(frame.sequence ?? 0)
            frame.release()
            done()
        }
        for i in 0..<50 {
            let f = pool.take()
            f.sequence = UInt64(i)
            pacer.publish(f)
        }
        #expect(seen.all == Array(0..<50))
        #expect(pacer.replaced == 0)
    }
}

@Suite(.tags(.sanitized)) struct FrameHubTests {
    @Test func fansOutToPacersAndQueues() {
        let pool = FramePool(capacity: 16, frameBytes: 16)
        let hub = FrameHub()
        let a = Seen()
        let b = Seen()
        let pa = FramePacer(name: "a") { f, done in a.add(f.sequence!); f.release(); done() }
        let pb = FramePacer(name: "b") { f, done in b.add(f.sequence!); f.release(); b.pending.withLock { $0.append(done) } }
        let q = BoundedFrameQueue(capacity: 3)
        hub.attach(pa)
        hub.attach(pb)
        hub.attach(q)
        for i in 0..<5 {
            let f = pool.take()
            f.sequence = UInt64(i)
            hub.publish(f)
        }
        #expect(a.all == [0, 1, 2, 3, 4])
        #expect(b.all == [0])
        #expect(pb.replaced == 3)
        #expect(q.count == 3)
        #expect(q.overflows == 2)
        #expect(q.pop()?.sequence == 0)
        #expect(hub.latest()?.sequence == 4)
    }

    @Test func lateJoinerGetsNewestFrame() {
        let pool = FramePool(capacity: 4, frameBytes: 16)
        let hub = FrameHub()
        let f = pool.take()
        f.sequence = 42
        hub.publish(f)
        let seen = Seen()
        hub.attach(FramePacer(name: "late") { f, done in seen.add(f.sequence!); f.release(); done() })
        #expect(seen.all == [42])
    }
}

/// Real threads: one producer, several consumers completing from their own threads at different
/// speeds. Checks ordering, no frame leaked, no frame lost from the lossless lane under its bound.
@Suite(.tags(.sanitized)) struct FrameHubStressTests {
    final class Consumer: @unchecked Sendable {
        let seen = Seen()
        let lastSeq = Atomic<Int>(-1)
        let outOfOrder = Atomic<Int>(0)
        let inbox = Mutex<(Frame, PacerCompletion)?>(nil)
        let stop = Atomic<Bool>(false)
        let spinNanos: UInt64
        init(spinNanos: UInt64) { self.spinNanos = spinNanos }
    }

    @Test(arguments: [0, 20_000, 300_000])
    func producerAndConsumersOnRealThreads(spin: Int) async throws {
        let pool = FramePool(capacity: 64, frameBytes: 32)
        let hub = FrameHub()
        let consumers = (0..<3).map { i in Consumer(spinNanos: UInt64(spin * (i + 1))) }
        var pacers: [FramePacer] = []
        for c in consumers {
            let p = FramePacer(name: "c") { f, done in c.inbox.withLock { $0 = (f, done) } }
            pacers.append(p)
            hub.attach(p)
        }
        let queue = BoundedFrameQueue(capacity: 4096)
        hub.attach(queue)
        let total = 20_000
        var threads: [pthread_t] = []
        for c in consumers {
            threads.append(startThread {
                while true {
                    let item = c.inbox.withLock { v -> (Frame, PacerCompletion)? in let x = v; v = nil; return x }
                    if let (f, done) = item {
                        let s = Int(f.sequence!)
                        if s <= c.lastSeq.load(ordering: .relaxed) { c.outOfOrder.wrappingAdd(1, ordering: .relaxed) }
                        c.lastSeq.store(s, ordering: .relaxed)
                        let until = MonotonicClock.nanos() + c.spinNanos
                        while MonotonicClock.nanos() < until {}
                        f.release()
                        done()
                    } else if c.stop.load(ordering: .acquiring) {
                        return
                    } else {
                        sched_yield()
                    }
                }
            })
        }
        let recorded = Atomic<Int>(0)
        let recorderStop = Atomic<Bool>(false)
        let recordedOutOfOrder = Atomic<Int>(0)
        threads.append(startThread {
            var next: UInt64 = 0
            while true {
                if let f = queue.pop() {
                    recorded.wrappingAdd(1, ordering: .relaxed)
                    if f.sequence! < next { recordedOutOfOrder.wrappingAdd(1, ordering: .relaxed) }
                    next = f.sequence! + 1
                    f.release()
                } else if recorderStop.load(ordering: .acquiring) && queue.count == 0 {
                    return
                } else {
                    sched_yield()
                }
            }
        })
        for i in 0..<total {
            let f = pool.take()
            f.sequence = UInt64(i)
            hub.publish(f)
            if i % 64 == 0 { sched_yield() }
        }
        // Let each consumer catch up with the last frame.
        let deadline = MonotonicClock.nanos() + 10_000_000_000
        while consumers.contains(where: { $0.lastSeq.load(ordering: .relaxed) != total - 1 }) && MonotonicClock.nanos() < deadline {
            sched_yield()
        }
        for c in consumers { c.stop.store(true, ordering: .releasing) }
        recorderStop.store(true, ordering: .releasing)
        for t in threads { pthread_join(t, nil) }
        for c in consumers {
            #expect(c.lastSeq.load(ordering: .relaxed) == total - 1, "every consumer ends on the newest frame")
            #expect(c.outOfOrder.load(ordering: .relaxed) == 0)
        }
        for p in pacers {
            #expect(p.delivered + p.replaced == total + 0, "each frame is either delivered or replaced")
        }
        #expect(recorded.load(ordering: .relaxed) + queue.overflows == total)
        #expect(recordedOutOfOrder.load(ordering: .relaxed) == 0)
        for p in pacers { hub.detach(p) }
        hub.detach(queue)
        // Only the hub's "latest" frame is still out of the pool.
        #expect(pool.idle == min(pool.allocated - 1, pool.capacity))
    }
}

/// Starts a joinable POSIX thread running `body`.
func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: @unchecked Sendable { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    var t = pthread_t()
    let arg = Unmanaged.passRetained(Box(body)).toOpaque()
    let rc = pthread_create(&t, nil, { p in
        let box = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
        box.body()
        return nil
    }, arg)
    precondition(rc == 0)
    return t
}
