public import LiveViewCore

/// The Fujifilm Wi-Fi state list (ptp.md §2.4): GetDevicePropValue(0xD212) answers `u16 count` then
/// `count × {u16 property code, u32 value}`, the current value of each property the body reports.
public enum FujiStateList {
    public static let property: UInt16 = 0xD212

    /// The entries, in the camera's order; a truncated tail is ignored (the count is capped by the
    /// bytes present).
    public static func parse(_ b: [UInt8]) -> [(code: UInt16, value: UInt32)] {
        guard b.count >= 2 else { return [] }
        let n = min(Int(b.le16(0)), (b.count - 2) / 6)
        var out: [(code: UInt16, value: UInt32)] = []
        out.reserveCapacity(n)
        for i in 0..<n {
            let at = 2 + 6 * i
            out.append((b.le16(at), b.le32(at + 2)))
        }
        return out
    }

    public static func append(_ entries: [(code: UInt16, value: UInt32)], to out: inout [UInt8]) {
        out.putLE16(UInt16(truncatingIfNeeded: entries.count))
        for e in entries {
            out.putLE16(e.code)
            out.putLE32(e.value)
        }
    }
}

/// The focus point a Fujifilm body reports over Wi-Fi in property 0xD17C. Not in ptp.md: public
/// reverse-engineering of an X-T1 reads x in bits 8–15 and y in bits 0–7, both 1-based, on a grid
/// whose size is the property's range maximum read the same way (7 × 7 on the X-T1: maximum
/// 0x10090707); the upper 16 bits are unknown (UNCONFIRMED: perhaps the frame's size). Without a
/// maximum the grid is taken as 7 × 7.
public struct FujiFocusPoint: Sendable, Hashable {
    public static let property: UInt16 = 0xD17C
    public static let defaultGrid = 7

    /// 1-based column and row.
    public var x: Int
    public var y: Int
    public var columns: Int
    public var rows: Int

    /// The bits above the point, kept as the body sent them.
    public var upperBits: UInt32

    /// nil when the point lies outside the grid (0 = none set).
    public init?(value: UInt32, maximum: UInt32? = nil) {
        x = Int((value >> 8) & 0xFF)
        y = Int(value & 0xFF)
        (columns, rows) = Self.grid(maximum: maximum)
        upperBits = value & 0xFFFF_0000
        guard (1...columns).contains(x), (1...rows).contains(y) else { return nil }
    }

    /// The cell under pixel (`px`, `py`) of a `width`×`height` JPEG (the inverse translation, for
    /// touch-AF), with `upperBits` from the body's current value.
    public init(pixelX px: Double, pixelY py: Double, imageWidth width: Int, imageHeight height: Int,
                maximum: UInt32?, upperBits: UInt32) {
        (columns, rows) = Self.grid(maximum: maximum)
        let space = AFCoordinateSpace(width: Double(columns), height: Double(rows))
        let c = space.toCamera(x: px, y: py, imageWidth: width, imageHeight: height)
        x = min(columns, Int(c.x) + 1)
        y = min(rows, Int(c.y) + 1)
        self.upperBits = upperBits & 0xFFFF_0000
    }

    /// Columns and rows from the property's range maximum (7 × 7 without one).
    static func grid(maximum: UInt32?) -> (columns: Int, rows: Int) {
        let mx = maximum.map { Int(($0 >> 8) & 0xFF) } ?? 0
        let my = maximum.map { Int($0 & 0xFF) } ?? 0
        return (mx > 0 ? mx : defaultGrid, my > 0 ? my : defaultGrid)
    }

    /// The property value of this point.
    public var value: UInt32 { upperBits | UInt32(x & 0xFF) << 8 | UInt32(y & 0xFF) }

    /// The property value for a point (upper bits as the X-T1 sends them).
    public static func value(x: Int, y: Int) -> UInt32 {
        0x0302_0000 | UInt32(x & 0xFF) << 8 | UInt32(y & 0xFF)
    }

    /// The grid, as the AF coordinate space.
    public var space: AFCoordinateSpace { AFCoordinateSpace(width: Double(columns), height: Double(rows)) }

    /// The point's cell in grid units.
    public var rect: CameraRect { CameraRect(x: Double(x - 1), y: Double(y - 1), width: 1, height: 1) }

    /// The selected point as an AF area of a `width`×`height` JPEG.
    public func area(imageWidth width: Int, imageHeight height: Int) -> AFArea {
        AFArea(camera: rect, in: space, imageWidth: width, imageHeight: height, kind: .af, state: .selected)
    }
}
