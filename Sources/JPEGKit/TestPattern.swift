public import LiveViewCore

#if canImport(Glibc)
import Glibc
#endif

/// Renders the emulators' live-view frames: a JPEG (default 768×432) with a static background, a
/// large 7-segment frame counter in the top-left corner and a "subject" target that moves along a
/// Lissajous path. `afBox(frameNumber:)` is where the target is, for the emulator to report as its AF
/// area. The background is rendered once and every buffer is reused, so a frame costs one memcpy, a
/// few rectangles and one libjpeg-turbo encode (about 1–2 ms at 768×432).
public final class TestPattern {
    /// Frame size in pixels.
    public let width: Int
    public let height: Int
    private let background: I420Picture
    private let work: I420Picture
    private let encoder: JPEGEncoder
    private let painter = AFOverlay(thickness: 2)

    /// Renders the static background once; `quality` is the JPEG quality.
    public init(width: Int = 768, height: Int = 432, quality: Int = 80) throws {
        precondition(width >= 64 && height >= 64, "test pattern too small")
        self.width = width
        self.height = height
        background = I420Picture(width: width, height: height)
        work = I420Picture(width: width, height: height)
        encoder = try JPEGEncoder(quality: quality)
        Self.paintBackground(background)
    }

    /// Where the moving target (the emulated AF area) is in frame `frameNumber`.
    public static func afBox(frameNumber n: Int, width: Int, height: Int) -> PixelRect {
        let bw = max(16, width / 6), bh = max(16, height / 5)
        let t = Double(n)
        let ax = Double(width - bw) / 2 - 8, ay = Double(height - bh) / 2 - 8
        let cx = Double(width) / 2 + ax * sin(t * 2 * Double.pi / 150)
        let cy = Double(height) / 2 + ay * sin(t * 2 * Double.pi / 110)
        return PixelRect(x: Int(cx) - bw / 2, y: Int(cy) - bh / 2, width: bw, height: bh)
    }

    /// The AF box for this pattern's size.
    public func afBox(frameNumber n: Int) -> PixelRect { Self.afBox(frameNumber: n, width: width, height: height) }

    /// Renders frame `frameNumber` into a picture owned by the pattern (valid until the next call).
    public func renderPicture(frameNumber n: Int) -> (picture: I420Picture, afBox: PixelRect) {
        work.mutableBytes.baseAddress!.copyMemory(from: background.bytes.baseAddress!, byteCount: background.layout.byteCount)
        let box = afBox(frameNumber: n)
        // The "subject": a filled square with a dark rim in the middle of the AF box.
        let s = min(box.width, box.height) / 2
        let sx = box.x + (box.width - s) / 2, sy = box.y + (box.height - s) / 2
        painter.fillRect(x: sx - 3, y: sy - 3, w: s + 6, h: s + 6, color: .black, work)
        painter.fillRect(x: sx, y: sy, w: s, h: s, color: YUVColor(r: 255, g: 140, b: 0), work)
        drawCounter(n)
        return (work, box)
    }

    /// Renders frame `frameNumber` as a JPEG; the bytes point into the pattern's buffer and stay valid
    /// until the next render — keep the pattern alive while reading them.
    public func render(frameNumber n: Int) throws -> (jpeg: UnsafeRawBufferPointer, afBox: PixelRect) {
        let (pic, box) = renderPicture(frameNumber: n)
        return (try encoder.encode(pic), box)
    }

    /// Renders frame `frameNumber` into `frame` (JPEG bytes, width, height) and returns the AF box.
    @discardableResult
    public func render(frameNumber n: Int, into frame: Frame) throws -> PixelRect {
        let (pic, box) = renderPicture(frameNumber: n)
        try encoder.encode(pic, into: frame)
        return box
    }

    // MARK: drawing

    /// Segment masks for 0…9: bits a b c d e f g (a = top, then clockwise, g = middle).
    static let segments: [UInt8] = [0b1111110, 0b0110000, 0b1101101, 0b1111001, 0b0110011,
                                    0b1011011, 0b1011111, 0b1110000, 0b1111111, 0b1111011]

    /// Digit cell geometry for this picture size.
    var digitHeight: Int { max(20, height / 7) }
    var digitWidth: Int { digitHeight * 9 / 16 }
    var segmentThickness: Int { max(3, digitHeight / 8) }
    /// Number of digits in the counter.
    static let counterDigits = 6
    /// The counter's top-left corner and panel size.
    var counterOrigin: (x: Int, y: Int) { (16, 16) }

    private func drawCounter(_ n: Int) {
        let dh = digitHeight, dw = digitWidth, gap = max(4, dw / 4)
        let (ox, oy) = counterOrigin
        let panelW = Self.counterDigits * (dw + gap) + gap, panelH = dh + 2 * gap
        painter.fillRect(x: ox, y: oy, w: panelW, h: panelH, color: .black, work)
        var value = max(0, n) % 1_000_000
        var digits = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            let d = raw.bindMemory(to: Int.self)
            for i in stride(from: Self.counterDigits - 1, through: 0, by: -1) {
                d[i] = value % 10
                value /= 10
            }
            for i in 0..<Self.counterDigits {
                drawDigit(d[i], x: ox + gap + i * (dw + gap), y: oy + gap)
            }
        }
    }

    /// Draws one 7-segment digit with its top-left corner at (x, y), luma only (white on black).
    func drawDigit(_ digit: Int, x: Int, y: Int) {
        let mask = Self.segments[digit]
        let w = digitWidth, h = digitHeight, t = segmentThickness
        let half = h / 2
        let white = YUVColor(y: 235, u: 128, v: 128)
        func seg(_ bit: Int, _ rx: Int, _ ry: Int, _ rw: Int, _ rh: Int) {
            if mask & (1 << (6 - bit)) != 0 { painter.fillRect(x: x + rx, y: y + ry, w: rw, h: rh, color: white, work) }
        }
        seg(0, 0, 0, w, t)                        // a
        seg(1, w - t, 0, t, half)                 // b
        seg(2, w - t, half, t, h - half)          // c
        seg(3, 0, h - t, w, t)                    // d
        seg(4, 0, half, t, h - half)              // e
        seg(5, 0, 0, t, half)                     // f
        seg(6, 0, half - t / 2, w, t)             // g
    }

    /// Reads the counter back from a decoded picture (tests): samples each segment's centre.
    public static func readCounter(from p: I420Picture, patternWidth: Int, patternHeight: Int) -> Int? {
        let dh = max(20, patternHeight / 7), dw = dh * 9 / 16, gap = max(4, dw / 4), t = max(3, dh / 8)
        let half = dh / 2
        var value = 0
        for i in 0..<counterDigits {
            let x = 16 + gap + i * (dw + gap), y = 16 + gap
            let probes = [(dw / 2, t / 2), (dw - t / 2 - 1, half / 2), (dw - t / 2 - 1, half + (dh - half) / 2),
                          (dw / 2, dh - t / 2 - 1), (t / 2, half + (dh - half) / 2), (t / 2, half / 2), (dw / 2, half)]
            var mask: UInt8 = 0
            for (bit, (px, py)) in probes.enumerated() {
                let xx = x + px, yy = y + py
                guard xx < p.width, yy < p.height else { return nil }
                // Above the overlay's green (luma ≈ 150), which crosses the counter with an AF box.
                if p.luma(x: xx, y: yy) > 192 { mask |= 1 << (6 - bit) }
            }
            guard let d = segments.firstIndex(of: mask) else { return nil }
            value = value * 10 + d
        }
        return value
    }

    private static func paintBackground(_ p: I420Picture) {
        let l = p.layout
        // Luma: a soft diagonal gradient with a 32-px grid.
        for row in 0..<l.height {
            let line = p.y + row * l.yStride
            for x in 0..<l.width {
                var v = 60 + (x + row) * 120 / (l.width + l.height)
                if x % 32 == 0 || row % 32 == 0 { v += 40 }
                line[x] = UInt8(min(235, v))
            }
        }
        // Chroma: four tinted quadrants.
        let tints: [(UInt8, UInt8)] = [(110, 150), (150, 110), (100, 100), (150, 150)]
        for row in 0..<l.chromaHeight {
            for x in 0..<l.chromaWidth {
                let q = (x >= l.chromaWidth / 2 ? 1 : 0) + (row >= l.chromaHeight / 2 ? 2 : 0)
                p.u[row * l.chromaStride + x] = tints[q].0
                p.v[row * l.chromaStride + x] = tints[q].1
            }
        }
    }
}
