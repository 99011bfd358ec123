public import LiveViewCore

/// A colour in full-range BT.601 YCbCr (the JPEG colour space).
public struct YUVColor: Sendable, Hashable {
    /// Luma.
    public var y: UInt8
    /// Cb.
    public var u: UInt8
    /// Cr.
    public var v: UInt8

    /// A colour from its components.
    public init(y: UInt8, u: UInt8, v: UInt8) {
        self.y = y
        self.u = u
        self.v = v
    }

    /// From 8-bit RGB (JFIF equations).
    public init(r: Int, g: Int, b: Int) {
        func c(_ x: Double) -> UInt8 { UInt8(max(0, min(255, x.rounded()))) }
        let (r, g, b) = (Double(r), Double(g), Double(b))
        y = c(0.299 * r + 0.587 * g + 0.114 * b)
        u = c(128 - 0.168736 * r - 0.331264 * g + 0.5 * b)
        v = c(128 + 0.5 * r - 0.418688 * g - 0.081312 * b)
    }

    /// Named colours used by the overlay, the test pattern and the slate.
    public static let green = YUVColor(r: 0, g: 255, b: 0)
    public static let white = YUVColor(r: 255, g: 255, b: 255)
    public static let yellow = YUVColor(r: 255, g: 255, b: 0)
    public static let red = YUVColor(r: 255, g: 0, b: 0)
    public static let cyan = YUVColor(r: 0, g: 255, b: 255)
    public static let black = YUVColor(r: 0, g: 0, b: 0)
    public static let grey = YUVColor(r: 96, g: 96, b: 96)
}

/// Draws AF areas as rectangle outlines into I420 pictures, clamped to the picture.
///
/// Colours: focused or locked → green; focusing → yellow; not focused → red; face/eye areas
/// otherwise → cyan; everything else (normal, main, sub, selected, unknown…) → white.
public struct AFOverlay: Sendable {
    /// Outline thickness in pixels; nil picks 2 px below 1280 px picture width, 3 px from there on.
    public var thickness: Int?

    /// An overlay with the given outline thickness (nil: automatic).
    public init(thickness: Int? = nil) {
        self.thickness = thickness
    }

    /// The colour an area is drawn in.
    public static func color(for area: AFArea) -> YUVColor {
        switch area.state {
        case .focused, .locked: return .green
        case .focusing: return .yellow
        case .notFocused: return .red
        default:
            switch area.kind {
            case .face, .eye: return .cyan
            default: return .white
            }
        }
    }

    /// Draws every area of `areas` (skipping invalid ones).
    public func draw(_ areas: [AFArea], into picture: I420Picture) {
        for a in areas where a.kind != .invalid && a.state != .invalid {
            drawRect(a.pixels, color: Self.color(for: a), into: picture)
        }
    }

    /// Draws one rectangle outline. Parts outside the picture are clipped; a rectangle entirely
    /// outside or without area draws nothing.
    public func drawRect(_ r: PixelRect, color: YUVColor, into picture: I420Picture) {
        let w = picture.width, h = picture.height
        let t = max(1, thickness ?? (w >= 1280 ? 3 : 2))
        guard r.width > 0, r.height > 0 else { return }
        let x0 = r.x, y0 = r.y, x1 = r.x + r.width, y1 = r.y + r.height  // exclusive
        guard x1 > 0, y1 > 0, x0 < w, y0 < h else { return }
        let tx = min(t, r.width), ty = min(t, r.height)
        // top, bottom, left, right bands (each clipped by fillRect)
        fillRect(x: x0, y: y0, w: r.width, h: ty, color: color, picture)
        fillRect(x: x0, y: y1 - ty, w: r.width, h: ty, color: color, picture)
        fillRect(x: x0, y: y0, w: tx, h: r.height, color: color, picture)
        fillRect(x: x1 - tx, y: y0, w: tx, h: r.height, color: color, picture)
    }

    /// Fills a rectangle (clipped) in all three planes.
    public func fillRect(x: Int, y: Int, w: Int, h: Int, color: YUVColor, _ p: I420Picture) {
        let l = p.layout
        let cx0 = max(0, x), cy0 = max(0, y)
        let cx1 = min(l.width, x + w), cy1 = min(l.height, y + h)
        guard cx1 > cx0, cy1 > cy0 else { return }
        let yp = p.y
        for row in cy0..<cy1 {
            (yp + row * l.yStride + cx0).update(repeating: color.y, count: cx1 - cx0)
        }
        // Chroma covers 2×2 luma pixels; take every chroma sample the rectangle touches.
        let ux0 = cx0 / 2, uy0 = cy0 / 2
        let ux1 = min(l.chromaWidth, (cx1 + 1) / 2), uy1 = min(l.chromaHeight, (cy1 + 1) / 2)
        guard ux1 > ux0, uy1 > uy0 else { return }
        let up = p.u, vp = p.v
        for row in uy0..<uy1 {
            (up + row * l.chromaStride + ux0).update(repeating: color.u, count: ux1 - ux0)
            (vp + row * l.chromaStride + ux0).update(repeating: color.v, count: ux1 - ux0)
        }
    }
}
