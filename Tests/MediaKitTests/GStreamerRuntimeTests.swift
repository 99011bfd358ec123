import Dispatch
import Logging
@testable import MediaKit
import Testing
import TestSupport

/// The runtime's main loop stops with the runtime, and a loop that does not stop in time is left to
/// end on its own: its own thread frees it then, never the shutdown under a running loop.
@Suite struct GStreamerRuntimeTests {
    @Test func aShutdownThatStopsWaitingLeavesTheLoopToEndAndFreeItself() throws {
        var logger = Logger(label: "runtime")
        logger.logLevel = .critical
        let runtime = try GStreamerRuntime(logger: logger)
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        runtime.invoke {
            entered.signal()
            release.wait()  // the loop is busy until the test says so
        }
        #expect(entered.wait(timeout: .now() + 5) == .success, "the loop did not run the work")
        let start = ContinuousClock.now
        #expect(runtime.shutdown(wait: .milliseconds(200)) == false, "a busy loop cannot have stopped")
        #expect(ContinuousClock.now - start < .seconds(3), "the shutdown waited past its limit")
        #expect(!runtime.waitForLoopEnd(timeout: .milliseconds(100)), "the loop ended while still busy")
        release.signal()
        #expect(runtime.waitForLoopEnd(timeout: .seconds(5)), "the loop did not end once its work returned")
        #expect(runtime.shutdown(), "a second shutdown is a no-op")
    }

    @Test func anIdleLoopStopsAtOnce() throws {
        let runtime = try GStreamerRuntime()
        #expect(runtime.shutdown(wait: .seconds(5)))
        #expect(runtime.waitForLoopEnd(timeout: .milliseconds(10)))
    }
}
