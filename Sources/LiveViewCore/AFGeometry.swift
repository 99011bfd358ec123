/// A camera's AF coordinate space: the rectangle of camera units that maps onto the whole JPEG.
///
/// Translation is per axis (anisotropic): `px = (cx - originX) * imageWidth / width`. Sony's Remote API
/// uses 0‥10000 on both axes, Panasonic a 1000×1000 grid, Nikon the pixels of a larger "whole" image,
/// so one type serves every vendor.
public struct AFCoordinateSpace: Sendable, Hashable {
    public var originX: Double
    public var originY: Double
    public var width: Double
    public var height: Double

    public init(originX: Double = 0, originY: Double = 0, width: Double, height: Double) {
        self.originX = originX
        self.originY = originY
        self.width = width
        self.height = height
    }

    /// Sony Camera Remote API frame information: 0‥10000 on each axis.
    public static let sonyRemote = AFCoordinateSpace(width: 10000, height: 10000)
    /// Panasonic LUMIX focus areas: a 1000×1000 grid whatever the image's aspect.
    public static let panasonic = AFCoordinateSpace(width: 1000, height: 1000)

    /// Rounds to the nearest integer, halves away from zero (the same rule everywhere).
    @inlinable
    public static func roundToPixel(_ v: Double) -> Int {
        guard v.isFinite else { return 0 }
        let r = v.rounded(.toNearestOrAwayFromZero)
        if r > Double(Int32.max) { return Int(Int32.max) }
        if r < Double(Int32.min) { return Int(Int32.min) }
        return Int(r)
    }

    /// Translates a camera rectangle into pixels of an image `imageWidth`×`imageHeight`, unclamped
    /// (what `livegate inspect` prints). A space with a zero or non-finite extent gives a zero rect.
    @inlinable
    public func toPixels(_ r: CameraRect, imageWidth: Int, imageHeight: Int) -> PixelRect {
        guard width > 0, height > 0, width.isFinite, height.isFinite else {
            return PixelRect(x: 0, y: 0, width: 0, height: 0)
        }
        let sx = Double(imageWidth) / width
        let sy = Double(imageHeight) / height
        return PixelRect(
            x: Self.roundToPixel((r.x - originX) * sx),
            y: Self.roundToPixel((r.y - originY) * sy),
            width: Self.roundToPixel(r.width * sx),
            height: Self.roundToPixel(r.height * sy))
    }

    /// Translates a point in image pixels back into camera units (touch-AF). The point is clamped to
    /// the image first, so the result always lies inside the space.
    @inlinable
    public func toCamera(x: Double, y: Double, imageWidth: Int, imageHeight: Int) -> (x: Double, y: Double) {
        let w = Double(max(imageWidth, 1))
        let h = Double(max(imageHeight, 1))
        let cx = min(max(x.isFinite ? x : 0, 0), w)
        let cy = min(max(y.isFinite ? y : 0, 0), h)
        return (originX + cx * width / w, originY + cy * height / h)
    }
}

extension PixelRect {
    /// The part of this rectangle inside an image of the given size, or nil when nothing of it is
    /// (degenerate boxes, zero or negative size, or entirely outside).
    public func clamped(toWidth imageWidth: Int, height imageHeight: Int) -> PixelRect? {
        guard width > 0, height > 0, imageWidth > 0, imageHeight > 0 else { return nil }
        let x0 = max(x, 0)
        let y0 = max(y, 0)
        let x1 = min(x &+ width, imageWidth)
        let y1 = min(y &+ height, imageHeight)
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}
