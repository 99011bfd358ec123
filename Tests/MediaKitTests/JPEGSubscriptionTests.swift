import Foundation
import LiveViewCore
import MediaKit
import Testing
import TestSupport

extension MediaTests {
    /// MJPEG viewers of the JPEG branch: the camera's frames untouched, latest wins for a slow
    /// viewer, the slate while the camera is away, nothing left behind when a viewer leaves.
    @Suite("JPEG branch viewers (MJPEG)")
    struct JPEGSubscriptionTests {
        /// Every frame a viewer reads is byte for byte a frame the camera published; a viewer that
        /// does not read skips frames instead of queueing them; leaving stops the branch.
        @Test func viewersGetTheCameraBytesAndSkipWhenSlow() async throws {
            let hub = FrameHub()
            let graph = try makeGraph("mjpeg", hub: hub)
            defer { graph.stop() }
            let published = HashSink()
            hub.attach(published.queue)
            let feeder = try TestFeeder(hub: hub)
            feeder.start()
            defer { feeder.stop() }
            #expect(!graph.jpeg.isRunning)
            let sub = graph.jpeg.subscribe()
            #expect(graph.jpeg.isRunning && graph.isWatched)
            var seen: [[UInt8]] = []
            for _ in 0..<10 {
                let f = try #require(await sub.next())
                seen.append(Array(f.bytes))
                f.release()
            }
            // A slow viewer: nothing read for half a second, then one frame — the newest, not a backlog.
            await pause(0.5)
            let before = sub.counts
            #expect(before.skipped > 0, "a viewer that did not read got a queue: \(before)")
            let newest = try #require(await sub.next())
            seen.append(Array(newest.bytes))
            newest.release()
            let known = published.hashes()
            #expect(seen.allSatisfy { known.contains($0.hashValue) }, "a part that the camera never sent")
            #expect(seen.allSatisfy { $0.starts(with: [0xFF, 0xD8]) })
            sub.cancel()
            #expect(await sub.next() == nil, "a cancelled viewer still reads")
            #expect(graph.jpeg.viewerCount == 0)
            let stopped = await waitUntil(timeout: 5) { !graph.jpeg.isRunning }
            #expect(stopped, "the JPEG branch runs on without viewers")
            #expect(graph.jpeg.viewerStats().framesOut >= 11)
        }

        /// While the camera is away a viewer gets the offline slate, and the live frames again once
        /// it is back, on the same subscription.
        @Test func aViewerSeesTheSlateWhileTheCameraIsAway() async throws {
            let hub = FrameHub()
            let presence = PresenceBox(CameraPresence(state: "connecting"))
            let graph = try makeGraph("mjpeg-away", hub: hub, presence: presence) { $0.nominalWidth = 320; $0.nominalHeight = 240 }
            defer { graph.stop() }
            let sub = graph.jpeg.subscribe()
            defer { sub.cancel() }
            let first = try #require(await sub.next())
            #expect(first.isSlate)
            first.release()
            presence.set(CameraPresence(state: "streaming"))
            let feeder = try TestFeeder(hub: hub)
            feeder.start()
            defer { feeder.stop() }
            var live = false
            for _ in 0..<60 {
                guard let f = await sub.next() else { break }
                live = !f.isSlate
                f.release()
                if live { break }
            }
            #expect(live, "the viewer never got the live picture back")
        }

        /// A task reading a viewer that is cancelled gets nil and frees the viewer.
        @Test func cancellingTheReaderEndsTheViewer() async throws {
            let hub = FrameHub()
            let graph = try makeGraph("mjpeg-cancel", hub: hub) { $0.stallAfter = .seconds(60) }
            defer { graph.stop() }
            let sub = graph.jpeg.subscribe()
            let reader = Task { await sub.next() }
            await pause(0.2)
            reader.cancel()
            let got = await reader.value
            #expect(got == nil)
            #expect(graph.jpeg.viewerCount == 0)
        }
    }
}

/// Hashes of every frame a hub published (lossless lane).
final class HashSink: Sendable {
    let queue = BoundedFrameQueue(capacity: 4096)
    func hashes() -> Set<Int> {
        var out = Set<Int>()
        while let f = queue.pop() {
            out.insert(Array(f.bytes).hashValue)
            f.release()
        }
        return out
    }
}
