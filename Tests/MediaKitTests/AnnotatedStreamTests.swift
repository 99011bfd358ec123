import Foundation
import LiveViewCore
import MediaKit
import Synchronization
import Testing

@Suite("Annotated stream (one decode, overlay, fan-out)")
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
        let sb = stream.subscribe { p in b.add((p.sequence, p.luma(x: box.x, y: box.y + 30), p.width)) }
        try publish(1)
        await waitFor(a, 1); await waitFor(b, 1)
        #expect(a.all.first?.seq == 1 && b.all.first?.seq == 1)
        #expect(a.all.first?.width == 320)
        #expect(a.all.first?.edgeLuma == YUVColor.green.y, "overlay not drawn")
        #expect(stream.stats(camera: "c").framesOut == 1, "one decode for two subscribers")

        stream.overlayEnabled = false
        try publish(2)
        await waitFor(a, 2)
        #expect(a.all.last?.seq == 2)
        #expect(a.all.last?.edgeLuma != YUVColor.green.y, "overlay drawn while off")

        stream.unsubscribe(sb)
        try publish(3)
        await waitFor(a, 3)
        await pause(0.05)
        #expect(b.count == 2)
        stream.unsubscribe(sa)
        #expect(stream.stats(camera: "c").clients == 0)
    }
}
