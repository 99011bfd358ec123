@testable import CameraKit
import Foundation
import LiveViewCore
import Logging
import NIOEmbedded
import Testing
import TestSupport

/// The reconnect loop every driver shares, on a manual clock: each pause is measured to the
/// millisecond without waiting for it.
@Suite(.timeLimit(.minutes(1)), .tags(.integration, .sanitized)) struct DriverLifecycleTests {
    struct Dropped: Error {}

    /// Waits (up to 10 s of real time, for the session task to get there) until `condition` holds.
    func eventually(_ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition()
    }

    @Test func reconnectPausesDoubleFrom250MillisecondsTo2SecondsAndStartAgainAfterASession() async throws {
        let clock = ManualClock()
        let stats = DriverStats()
        let lifecycle = DriverLifecycle(name: "test", logger: Logger(label: "test"), stats: stats, clock: clock)
        let sessions = Collected(0)
        lifecycle.start(session: {
            let n = sessions.withLock { n -> Int in
                n += 1
                return n
            }
            // The fourth session ends without an error (a camera that streamed, then went away).
            if n != 4 { throw Dropped() }
        })
        // The pause after each session: doubling from 250 ms, back to 250 ms after the fourth
        // (no error), and never above maxBackoff (2 s).
        let pauses: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(250),
                                  .milliseconds(500), .seconds(1), .seconds(2), .seconds(2)]
        for (i, pause) in pauses.enumerated() {
            let ran = i + 1
            #expect(await eventually { sessions.withLock { $0 } == ran && clock.sleeping == 1 },
                    "session \(ran) did not end in a pause (sessions \(sessions.withLock { $0 }), sleeping \(clock.sleeping))")
            #expect(lifecycle.state == .reconnecting)
            clock.advance(by: pause - .milliseconds(1))
            #expect(clock.sleeping == 1 && sessions.withLock { $0 } == ran, "pause \(i) ended before \(pause)")
            clock.advance(by: .milliseconds(1))
            #expect(await eventually { sessions.withLock { $0 } == ran + 1 }, "pause \(i) did not end at \(pause)")
        }
        #expect(stats.reconnects == pauses.count)
        #expect(lifecycle.lastError?.contains("Dropped") == true)
        // Stopping during a pause ends it at once.
        #expect(await eventually { clock.sleeping == 1 })
        await lifecycle.stop()
        #expect(lifecycle.state == .stopped)
        #expect(clock.sleeping == 0)
    }

    /// A lifecycle on a manual clock whose every session throws `error`, started; and its count of sessions.
    func started(throwing error: some Error & Sendable) -> (ManualClock, DriverLifecycle, Collected<Int>) {
        let clock = ManualClock()
        let lifecycle = DriverLifecycle(name: "test", logger: Logger(label: "test"), stats: DriverStats(), clock: clock)
        let sessions = Collected(0)
        lifecycle.start(session: {
            sessions.withLock { $0 += 1 }
            throw error
        })
        return (clock, lifecycle, sessions)
    }

    @Test func aFatalErrorEndsTheLoopWithoutAPause() async throws {
        struct Refused: FatalDriverError { var description: String { "the camera refused the connection" } }
        let (clock, lifecycle, sessions) = started(throwing: Refused())
        #expect(await eventually { lifecycle.state == .failed })
        clock.advance(by: .seconds(10))
        try await Task.sleep(for: .milliseconds(50))
        #expect(sessions.withLock { $0 } == 1 && clock.sleeping == 0)
        #expect(lifecycle.lastError == "the camera refused the connection")
        await lifecycle.stop()
    }

    /// A session that throws `CancellationError` while nobody stopped the driver (a cancelled
    /// request inside it) is a drop like any other, not the end of the loop.
    @Test func aCancellationErrorFromASessionThatWasNotStoppedIsADrop() async throws {
        let (clock, lifecycle, sessions) = started(throwing: CancellationError())
        #expect(await eventually { sessions.withLock { $0 } == 1 && clock.sleeping == 1 })
        #expect(lifecycle.state == .reconnecting)
        clock.advance(by: .milliseconds(250))
        #expect(await eventually { sessions.withLock { $0 } == 2 })
        await lifecycle.stop()
        #expect(lifecycle.state == .stopped)
    }

    /// The stall clock every driver's watchdog reads runs on the lifecycle's clock: idle time is
    /// what the clock says since the last frame or sign of life, and a watchdog tick sleeps on it.
    @Test func theStallClockAndTheWatchdogTickRunOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let lifecycle = DriverLifecycle(name: "test", logger: Logger(label: "test"), stats: DriverStats(), clock: clock)
        lifecycle.resetStallClock()
        #expect(lifecycle.idleNanos == 0)
        clock.advance(by: .milliseconds(2_500))
        #expect(lifecycle.idleNanos == 2_500_000_000)
        lifecycle.frameArrived()
        #expect(lifecycle.idleNanos == 0 && lifecycle.state == .streaming)
        clock.advance(by: .milliseconds(700))
        #expect(lifecycle.idleNanos == 700_000_000)
        lifecycle.resetStallClock()  // a datagram: a sign of life that is not a frame
        #expect(lifecycle.idleNanos == 0)

        let ticked = Collected(false)
        let watchdog = Task {
            try await lifecycle.tick(.milliseconds(100))
            ticked.withLock { $0 = true }
        }
        #expect(await eventually { clock.sleeping == 1 })
        clock.advance(by: .milliseconds(99))
        #expect(clock.sleeping == 1 && !ticked.withLock { $0 }, "the tick ended before 100 ms")
        clock.advance(by: .milliseconds(1))
        #expect(await eventually { ticked.withLock { $0 } }, "the tick did not end at 100 ms")
        try await watchdog.value
    }

    /// With the real clock and an event loop, a tick sleeps on the loop's timer (a testing loop
    /// here, whose time moves only when told): it waits while real time passes and ends when the
    /// loop's time reaches its interval; a cancelled tick ends at once with CancellationError.
    @Test func ticksOnAnEventLoopFollowItsTimerAndEndWhenCancelled() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let lifecycle = DriverLifecycle(name: "test", logger: Logger(label: "test"), stats: DriverStats(), loop: loop)
        let ended = Collected(false)
        let tick = Task {
            try await lifecycle.tick(.milliseconds(100))
            ended.withLock { $0 = true }
        }
        // Three times the interval of real time: a tick on Task.sleep would be over.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!ended.withLock { $0 }, "the tick ended while its loop's time stood still")
        let end = ContinuousClock.now + .seconds(10)
        while !ended.withLock({ $0 }), ContinuousClock.now < end {
            await loop.advanceTime(by: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(ended.withLock { $0 }, "the tick did not end when its loop's timer fired")
        try await tick.value
        // Cancelled far from its timer: it ends at once (the loop's time never moves again).
        let long = Task { try await lifecycle.tick(.seconds(60)) }
        try await Task.sleep(for: .milliseconds(50))
        long.cancel()
        let finished = Collected(false)
        Task {
            _ = try? await long.value
            finished.withLock { $0 = true }
        }
        #expect(await eventually { finished.withLock { $0 } }, "a cancelled tick ran on")
        await #expect(throws: CancellationError.self) { try await long.value }
        // Cancelled before it starts: no sleep at all.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await lifecycle.tick(.seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        await loop.shutdownGracefully()
    }
}
