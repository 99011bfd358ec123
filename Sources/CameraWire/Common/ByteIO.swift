// Bounds-checked integer loads and stores used by every wire format. Callers check the range
// first; the loads below trap only on programmer error, never on hostile input.

extension Collection where Element == UInt8, Index == Int {
    @inlinable @inline(__always)
    func u8(_ i: Int) -> UInt8 { self[i] }

    @inlinable @inline(__always)
    func be16(_ i: Int) -> UInt16 { UInt16(self[i]) << 8 | UInt16(self[i + 1]) }

    @inlinable @inline(__always)
    func le16(_ i: Int) -> UInt16 { UInt16(self[i + 1]) << 8 | UInt16(self[i]) }

    @inlinable @inline(__always)
    func be24(_ i: Int) -> UInt32 { UInt32(self[i]) << 16 | UInt32(self[i + 1]) << 8 | UInt32(self[i + 2]) }

    @inlinable @inline(__always)
    func be32(_ i: Int) -> UInt32 {
        UInt32(self[i]) << 24 | UInt32(self[i + 1]) << 16 | UInt32(self[i + 2]) << 8 | UInt32(self[i + 3])
    }

    @inlinable @inline(__always)
    func le32(_ i: Int) -> UInt32 {
        UInt32(self[i + 3]) << 24 | UInt32(self[i + 2]) << 16 | UInt32(self[i + 1]) << 8 | UInt32(self[i])
    }

    @inlinable @inline(__always)
    func le64(_ i: Int) -> UInt64 { UInt64(le32(i + 4)) << 32 | UInt64(le32(i)) }
}

extension Array where Element == UInt8 {
    @inlinable mutating func putBE16(_ v: UInt16) { append(UInt8(v >> 8)); append(UInt8(truncatingIfNeeded: v)) }
    @inlinable mutating func putLE16(_ v: UInt16) { append(UInt8(truncatingIfNeeded: v)); append(UInt8(v >> 8)) }
    @inlinable mutating func putBE24(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }
    @inlinable mutating func putBE32(_ v: UInt32) { putBE16(UInt16(v >> 16)); putBE16(UInt16(truncatingIfNeeded: v)) }
    @inlinable mutating func putLE32(_ v: UInt32) { putLE16(UInt16(truncatingIfNeeded: v)); putLE16(UInt16(v >> 16)) }
    @inlinable mutating func putLE64(_ v: UInt64) { putLE32(UInt32(truncatingIfNeeded: v)); putLE32(UInt32(v >> 32)) }
    @inlinable mutating func putZeros(_ n: Int) { append(contentsOf: repeatElement(0, count: Swift.max(n, 0))) }

    @inlinable mutating func setBE16(_ v: UInt16, at i: Int) { self[i] = UInt8(v >> 8); self[i + 1] = UInt8(truncatingIfNeeded: v) }
    @inlinable mutating func setBE32(_ v: UInt32, at i: Int) {
        setBE16(UInt16(v >> 16), at: i); setBE16(UInt16(truncatingIfNeeded: v), at: i + 2)
    }
    @inlinable mutating func setLE32(_ v: UInt32, at i: Int) {
        self[i] = UInt8(truncatingIfNeeded: v); self[i + 1] = UInt8(truncatingIfNeeded: v >> 8)
        self[i + 2] = UInt8(truncatingIfNeeded: v >> 16); self[i + 3] = UInt8(truncatingIfNeeded: v >> 24)
    }
}
