import JPEGKit
import Foundation
import LiveViewCore

/// What the slate says about a camera that is away.
public struct CameraPresence: Sendable, Equatable {
    /// The camera's connection state ("connecting", "streaming", "reconnecting", "failed", "stopped").
    public var state: String
    /// Why it is not streaming (e.g. "connection refused"), when known.
    public var reason: String?

    public init(state: String, reason: String? = nil) {
        self.state = state
        self.reason = reason
    }
}

/// The offline slate of one camera: a JPEG card (camera name, state, reason, the time the state
/// began) rendered once per change of what it says or of the picture size, and published into the
/// camera's hub at a low rate while the camera is away and someone watches. It goes through the same
/// branches as live frames, so every output keeps its caps (the size of the last live frame, or the
/// camera's nominal size when it never streamed) and turns live again without the client reconnecting.
final class SlateSource: Sendable {
    private struct Card {
        var key: Key?
        var jpeg: Frame?
        var since = Date()
    }
    struct Key: Equatable {
        var presence: CameraPresence
        var width: Int
        var height: Int
    }

    private let name: String
    private let card = Mutex(Card())
    private let pool = FramePool(capacity: 4, frameBytes: 64 * 1024)
    private let rendered = Atomic<Int>(0)
    private let published = Atomic<Int>(0)

    init(name: String) {
        self.name = name
    }

    deinit { card.withLock { $0.jpeg?.release() } }

    /// Publishes one slate frame saying `presence` at `width`×`height` into `hub`.
    func publish(_ presence: CameraPresence, width: Int, height: Int, into hub: FrameHub) {
        let key = Key(presence: presence, width: max(64, width), height: max(48, height))
        let frame: Frame? = card.withLock { c in
            if c.key != key || c.jpeg == nil {
                if c.key?.presence != key.presence { c.since = Date() }
                c.jpeg?.release()
                c.jpeg = Self.render(name: name, key: key, since: c.since)
                c.key = key
                rendered.wrappingAdd(1, ordering: .relaxed)
            }
            guard let jpeg = c.jpeg else { return nil }
            let f = pool.take()
            f.setJPEG(jpeg.bytes)
            f.width = jpeg.width
            f.height = jpeg.height
            return f
        }
        guard let frame else { return }
        frame.arrivalNanos = MonotonicClock.nanos()
        frame.isSlate = true
        frame.timeBase = .arrival
        published.wrappingAdd(1, ordering: .relaxed)
        hub.publish(frame)
    }

    /// Slate frames published so far.
    var framesPublished: Int { published.load(ordering: .relaxed) }
    /// Times the card was drawn (once per change).
    var cardsRendered: Int { rendered.load(ordering: .relaxed) }

    /// Draws the card and encodes it as a baseline 4:2:0 JPEG.
    static func render(name: String, key: Key, since: Date) -> Frame? {
        let pic = I420Picture(width: key.width, height: key.height)
        pic.fill(y: 40, u: 128, v: 128)
        let w = key.width, h = key.height
        let band = h / 3
        AFOverlay().fillRect(x: 0, y: (h - band) / 2, w: w, h: band, color: YUVColor(y: 24, u: 150, v: 120), pic)
        let title = "\(name) - \(key.presence.state.uppercased())"
        let reason = key.presence.reason ?? (key.presence.state == "streaming" ? "no frames from the camera" : "camera not streaming")
        let time = "since " + Self.clock(since)
        let margin = max(4, w / 24)
        let titleScale = SlateText.fittingScale(for: title, maxWidth: w - 2 * margin, maxScale: max(1, h / 60))
        let bodyScale = max(1, min(titleScale, max(1, titleScale * 2 / 3)))
        let lines: [(String, Int, UInt8)] = [
            (SlateText.truncated(title, maxWidth: w - 2 * margin, scale: titleScale), titleScale, 235),
            (SlateText.truncated(reason, maxWidth: w - 2 * margin, scale: bodyScale), bodyScale, 200),
            (SlateText.truncated(time, maxWidth: w - 2 * margin, scale: bodyScale), bodyScale, 160),
        ]
        let total = lines.reduce(0) { $0 + SlateText.lineHeight(scale: $1.1) }
        var y = (h - total) / 2
        for (text, scale, value) in lines {
            SlateText.draw(text, x: margin, y: y, scale: scale, value: value,
                           into: pic.y, width: w, height: h, stride: pic.layout.yStride)
            y += SlateText.lineHeight(scale: scale)
        }
        guard let encoder = try? JPEGEncoder(quality: 80) else { return nil }
        let frame = Frame(copying: [UInt8]())
        do {
            try encoder.encode(pic, into: frame)
        } catch {
            return nil
        }
        frame.width = w
        frame.height = h
        return frame
    }

    static func clock(_ d: Date) -> String {
        var t = time_t(d.timeIntervalSince1970)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d UTC", Int(tmv.tm_year) + 1900, Int(tmv.tm_mon) + 1,
                      Int(tmv.tm_mday), Int(tmv.tm_hour), Int(tmv.tm_min), Int(tmv.tm_sec))
    }
}
