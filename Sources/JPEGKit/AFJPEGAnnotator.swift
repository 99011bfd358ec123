public import LiveViewCore

/// The camera's JPEG with its AF areas drawn in, for the MJPEG viewers that ask for it
/// (`/mjpeg/{camera}?overlay=af`): decode (libjpeg-turbo), draw, encode again. Nothing is allocated
/// and nothing runs until a viewer asks, and a frame is annotated once however many viewers ask
/// for it (the newest result is kept). A frame without AF areas, or the slate, goes out as it came.
public final class AFJPEGAnnotator: Sendable {
    private final class Codec {
        let decoder: JPEGDecoder
        let encoder: JPEGEncoder
        let picture = I420Picture(width: 16, height: 16)
        let overlay = AFOverlay()
        init() throws {
            decoder = try JPEGDecoder()
            encoder = try JPEGEncoder(quality: 85)
        }
    }
    private struct State {
        var codec: Codec?
        /// The frame annotated last (arrival time and size identify it; frames are pooled) and its result.
        var lastKey: (arrival: UInt64, count: Int)?
        var last: [UInt8] = []
        var annotated = 0
        var failures = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// The frame's JPEG with its AF areas drawn; nil when it has none to draw (send the frame as it
    /// is) or when it cannot be decoded (counted in `counts.failures`; the viewer gets it untouched).
    public func annotate(_ frame: Frame) -> [UInt8]? {
        guard !frame.isSlate, frame.afAreas.contains(where: { $0.kind != .invalid && $0.state != .invalid }) else { return nil }
        return state.withLock { s -> [UInt8]? in
            let key = (arrival: frame.arrivalNanos, count: frame.count)
            if let k = s.lastKey, k == key { return s.last }
            do {
                if s.codec == nil { s.codec = try Codec() }
                let c = s.codec!
                try c.decoder.decode(frame.bytes, into: c.picture)
                c.overlay.draw(frame.afAreas, into: c.picture)
                let out = try c.encoder.encode(c.picture)
                s.last = Array(out)
                s.lastKey = key
                s.annotated += 1
                return s.last
            } catch {
                s.failures += 1
                return nil
            }
        }
    }

    /// Frames annotated, and frames that could not be (sent untouched).
    public var counts: (annotated: Int, failures: Int) { state.withLock { ($0.annotated, $0.failures) } }
}
