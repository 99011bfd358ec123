/// Little-endian dataset writers for the PTP emulators (ptp.md §1.5, §3).
extension Array where Element == UInt8 {
    mutating func ptpU16(_ v: UInt16) { append(UInt8(truncatingIfNeeded: v)); append(UInt8(v >> 8)) }
    mutating func ptpU32(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 24))
    }
    mutating func ptpU64(_ v: UInt64) { ptpU32(UInt32(truncatingIfNeeded: v)); ptpU32(UInt32(v >> 32)) }

    /// PTP string: u8 count incl. NUL + UTF-16LE; empty string = one zero byte.
    mutating func ptpString(_ s: String) {
        let units = [UInt16](s.utf16)
        if units.isEmpty {
            append(0)
            return
        }
        append(UInt8(Swift.min(units.count + 1, 255)))
        for u in units.prefix(254) { ptpU16(u) }
        ptpU16(0)
    }

    mutating func ptpU16Array(_ a: [UInt16]) {
        ptpU32(UInt32(a.count))
        for v in a { ptpU16(v) }
    }

    /// A value of PTP datatype `t` (integers only).
    mutating func ptpValue(_ v: Int64, type t: UInt16) {
        let u = UInt64(bitPattern: v)
        let n: Int
        switch t {
        case 1, 2: n = 1
        case 3, 4: n = 2
        case 5, 6: n = 4
        default: n = 8
        }
        for i in 0..<n { append(UInt8(truncatingIfNeeded: u >> (8 * UInt64(i)))) }
    }
}

func ptpReadLE32(_ b: [UInt8], _ i: Int) -> UInt32 {
    guard i + 4 <= b.count else { return 0 }
    return UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}

/// Reads a value of datatype `t` from the start of `b` (nil when too short).
func ptpReadValue(_ b: [UInt8], type t: UInt16) -> Int64? {
    let n: Int
    switch t {
    case 1, 2: n = 1
    case 3, 4: n = 2
    case 5, 6: n = 4
    default: n = 8
    }
    guard b.count >= n else { return nil }
    var u: UInt64 = 0
    for i in 0..<n { u |= UInt64(b[i]) << (8 * UInt64(i)) }
    switch t {
    case 1: return Int64(Int8(truncatingIfNeeded: u))
    case 3: return Int64(Int16(truncatingIfNeeded: u))
    case 5: return Int64(Int32(truncatingIfNeeded: u))
    default: return Int64(bitPattern: u)
    }
}

/// One emulated device property.
struct PTPEmulatedProperty: Sendable {
    var code: UInt16
    var type: UInt16
    var value: Int64
    var allowed: [Int64]
    var writable = true
    /// A range form (min, max, step) instead of the enumeration.
    var range: (min: Int64, max: Int64, step: Int64)?
    /// SetDevicePropValue is refused (AccessDenied): the value moves only by step operations.
    var stepsOnly = false

    /// GetDevicePropDesc dataset; `sony` adds the IsEnabled byte after GetSet.
    func desc(sony: Bool = false) -> [UInt8] {
        var b: [UInt8] = []
        b.ptpU16(code)
        b.ptpU16(type)
        b.append(writable ? 1 : 0)
        if sony { b.append(1) }
        b.ptpValue(allowed.first ?? value, type: type)
        b.ptpValue(value, type: type)
        if let range {
            b.append(1)
            b.ptpValue(range.min, type: type)
            b.ptpValue(range.max, type: type)
            b.ptpValue(range.step, type: type)
        } else if allowed.isEmpty {
            b.append(0)
        } else {
            b.append(2)
            b.ptpU16(UInt16(allowed.count))
            for v in allowed { b.ptpValue(v, type: type) }
        }
        return b
    }
}

/// The DeviceInfo an emulated camera reports.
struct PTPEmulatedDeviceInfo {
    var vendorExtensionID: UInt32
    var vendorExtensionDesc: String
    var operations: [UInt16]
    var events: [UInt16]
    var properties: [UInt16]
    var manufacturer: String
    var model: String
    var version: String
    var serial: String

    var bytes: [UInt8] {
        var b: [UInt8] = []
        b.ptpU16(100)
        b.ptpU32(vendorExtensionID)
        b.ptpU16(100)
        b.ptpString(vendorExtensionDesc)
        b.ptpU16(0)
        b.ptpU16Array(operations)
        b.ptpU16Array(events)
        b.ptpU16Array(properties)
        b.ptpU16Array([0x3801])
        b.ptpU16Array([0x3801])
        b.ptpString(manufacturer)
        b.ptpString(model)
        b.ptpString(version)
        b.ptpString(serial)
        return b
    }
}
