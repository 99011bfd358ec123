import JPEGKit
import Foundation
import LiveViewCore
import MediaKit
import Testing
import TestSupport

@Suite("Annotated stream (one decode, overlay, fan-out)", .tags(.sanitized))
struct AnnotatedStreamTests {
    final class Received: @unchecked Sendable {
        let lock = NSLock()
        var items: [(seq: UInt64?, edgeLuma: UInt8, width: Int)] = []
        func add(_ x: (UInt64?, UInt8, Int)) { lock.lock(); items.append(x); lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return items.count }
        var all: [(seq: UInt64?, edgeLuma: UInt8, width: Int)] { lock.lock(); defer { lock.unlock() }; return items }
    }

    @Test func decodesOnceForAllSubscribersAndTogglesOverlay() async throws {
        let hub = FrameHub()
        let stream = try AnnotatedStream(name: "unit", hub: hub, overlay: true)
        defer { stream.stop() }
        let pattern = try TestPattern(width: 320, height: 240)
        let box = PixelRect(x: 100, y: 60, width: 80, height: 60)
        func publish(_ n: Int) throws {
            let f = Frame(copying: [UInt8]())
            try pattern.render(frameNumber: n, into: f)
            f.sequence = UInt64(n)
            f.arrivalNanos = MonotonicClock.nanos()
            f.afAreas = [AFArea(pixels: box, camera: CameraRect(x: 0, y: 0, width: 1, height: 1), kind: .af, state: .focused)]
            hub.publish(f)
        }
        func waitFor(_ r: Received, _ n: Int) async {
            await waitUntil(timeout: 5) { r.count >= n }
        }
        // Nobody subscribed: nothing is decoded.
        try publish(0)
        await pause(0.1)
        #expect(stream.stats(camera: "c").framesOut == 0)

        let a = Received(), b = Received()
        let sa = stream.subscribe { p in a.add((p.sequence, p.luma(x: box.x, y: box.y + 30), p.width)) }
        // The first subscriber attaches the stream to the hub, which hands over its newest frame.
        await waitFor(a, 1)
        #expect(stream.isRunning)
        #expect(a.all.first?.seq == 0, "the newest frame comes first: \(a.all.map(\.seq))")
        let sb = stream.subscribe { p in b.add((p.sequence, p.luma(x: box.x, y: box.y + 30), p.width)) }
        let before = stream.stats(camera: "c").framesOut
        try publish(1)
        await waitUntil(timeout: 5) { a.all.last?.seq == 1 && b.all.last?.seq == 1 }
        #expect(a.all.last?.seq == 1 && b.all.last?.seq == 1)
        #expect(a.all.last?.width == 320)
        #expect(a.all.last?.edgeLuma == YUVColor.green.y, "overlay not drawn")
        #expect(stream.stats(camera: "c").framesOut == before + 1, "one decode for two subscribers")

        stream.overlayEnabled = false
        let countBefore = a.count
        try publish(2)
        await waitFor(a, countBefore + 1)
        #expect(a.all.last?.seq == 2)
        #expect(a.all.last?.edgeLuma != YUVColor.green.y, "overlay drawn while off")

        stream.unsubscribe(sb)
        let bCount = b.count
        try publish(3)
        await waitUntil(timeout: 5) { a.all.last?.seq == 3 }
        await pause(0.05)
        #expect(b.count == bCount)
        stream.unsubscribe(sa)
        #expect(stream.stats(camera: "c").clients == 0)
    }

    /// The picture branch is attached to the hub only while someone subscribes (plus the linger).
    @Test func attachesToTheHubOnlyWhileSubscribed() async throws {
        let hub = FrameHub()
        let stream = try AnnotatedStream(name: "lazy", hub: hub, overlay: true, linger: .milliseconds(200))
        defer { stream.stop() }
        #expect(hub.consumerCount == 0 && !stream.isRunning)
        let s = stream.subscribe { _ in }
        #expect(hub.consumerCount == 1 && stream.isRunning)
        stream.unsubscribe(s)
        #expect(hub.consumerCount == 1, "detached before the linger")
        let gone = await waitUntil(timeout: 5) { hub.consumerCount == 0 }
        #expect(gone && !stream.isRunning)
        // A subscriber that comes back within the linger keeps the same attachment.
        let s2 = stream.subscribe { _ in }
        stream.unsubscribe(s2)
        let s3 = stream.subscribe { _ in }
        await pause(0.4)
        #expect(hub.consumerCount == 1 && stream.isRunning)
        stream.unsubscribe(s3)
    }

    /// A frame the camera says is held on its side (rotation 90): subscribers get the picture turned
    /// upright, its AF areas turned with it, and the overlay drawn where the turned area is.
    @Test func turnsThePictureTheCameraAsksFor() async throws {
        let hub = FrameHub()
        let stream = try AnnotatedStream(name: "turn", hub: hub, overlay: true)
        defer { stream.stop() }
        let pattern = try TestPattern(width: 320, height: 240)
        let box = PixelRect(x: 100, y: 60, width: 80, height: 60)
        let turned = box.rotated(clockwise: 90, width: 320, height: 240)
        let got = Received()
        let sub = stream.subscribe { p in
            let edge = p.afAreas.first.map { p.luma(x: $0.pixels.x + $0.pixels.width / 2, y: $0.pixels.y) } ?? 0
            got.add((p.afAreas.first?.pixels == turned ? 1 : 0, edge, p.width * 1000 + p.height))
        }
        defer { stream.unsubscribe(sub) }
        let f = Frame(copying: [UInt8]())
        try pattern.render(frameNumber: 1, into: f)
        f.arrivalNanos = MonotonicClock.nanos()
        f.rotation = 90
        f.afAreas = [AFArea(pixels: box, camera: CameraRect(x: 0, y: 0, width: 1, height: 1), kind: .af, state: .focused)]
        hub.publish(f)
        await waitUntil(timeout: 5) { got.count >= 1 }
        let first = try #require(got.all.first)
        #expect(first.width == 240_320, "picture \(first.width / 1000)×\(first.width % 1000), not 240×320")
        #expect(first.seq == 1, "the AF area was not turned with the picture")
        #expect(first.edgeLuma == YUVColor.green.y, "the overlay is not on the turned area")
    }
}
