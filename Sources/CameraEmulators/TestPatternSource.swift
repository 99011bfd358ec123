import JPEGKit
import LiveViewCore

/// The emulators' picture: MediaKit's libjpeg-turbo test pattern (frame counter, moving subject)
/// with the AF box on the subject, or — for two seconds after a touch-AF — a focused box centred on
/// the touched point.
public final class TestPatternSource: EmulatorFrameSource, Sendable {
    private struct State {
        var pattern: TestPattern
        var touch: (x: Double, y: Double, untilFrame: Int)?
        var lastIndex = 0
    }

    private let state: Mutex<State>
    public let width: Int
    public let height: Int

    public init(width: Int = 768, height: Int = 432) throws {
        self.width = width
        self.height = height
        state = Mutex(State(pattern: try TestPattern(width: width, height: height)))
    }

    public func frame(index: Int) -> EmulatedFrame {
        state.withLock { s in
            s.lastIndex = index
            let jpeg: [UInt8]
            var box: PixelRect
            do {
                let r = try s.pattern.render(frameNumber: index)
                jpeg = Array(r.jpeg)
                box = r.afBox
            } catch {
                jpeg = []
                box = s.pattern.afBox(frameNumber: index)
            }
            var focused = (index / 15) % 4 != 0
            if let t = s.touch, index < t.untilFrame {
                let w = Double(box.width), h = Double(box.height)
                box = PixelRect(x: Int(t.x * Double(width) - w / 2), y: Int(t.y * Double(height) - h / 2),
                                width: box.width, height: box.height)
                focused = true
            }
            let W = Double(width), H = Double(height)
            return EmulatedFrame(
                jpeg: jpeg, width: width, height: height,
                afBox: (max(0, Double(box.x) / W), max(0, Double(box.y) / H),
                        min(1, Double(box.x + box.width) / W), min(1, Double(box.y + box.height) / H)),
                focused: focused)
        }
    }

    public func focus(atX x: Double, y: Double) {
        state.withLock { s in s.touch = (x, y, s.lastIndex + 60) }
    }
}
