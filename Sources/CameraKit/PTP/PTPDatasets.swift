/// Bounds-checked little-endian reader for PTP datasets.
struct PTPReader {
    let b: [UInt8]
    var p = 0

    init(_ bytes: [UInt8], at offset: Int = 0) {
        b = bytes
        p = offset
    }

    var remaining: Int { b.count - p }

    mutating func u8() throws -> UInt8 {
        guard p + 1 <= b.count else { throw PTPTransportError.protocolError("dataset too short") }
        defer { p += 1 }
        return b[p]
    }

    mutating func u16() throws -> UInt16 {
        guard p + 2 <= b.count else { throw PTPTransportError.protocolError("dataset too short") }
        defer { p += 2 }
        return UInt16(b[p]) | UInt16(b[p + 1]) << 8
    }

    mutating func u32() throws -> UInt32 {
        guard p + 4 <= b.count else { throw PTPTransportError.protocolError("dataset too short") }
        defer { p += 4 }
        return UInt32(b[p]) | UInt32(b[p + 1]) << 8 | UInt32(b[p + 2]) << 16 | UInt32(b[p + 3]) << 24
    }

    mutating func u64() throws -> UInt64 {
        let lo = try u32(), hi = try u32()
        return UInt64(hi) << 32 | UInt64(lo)
    }

    /// PTP string: u8 count of UTF-16 units incl. NUL, then the units.
    mutating func string() throws -> String {
        let n = Int(try u8())
        var units: [UInt16] = []
        for _ in 0..<n { units.append(try u16()) }
        if units.last == 0 { units.removeLast() }
        return String(decoding: units, as: UTF16.self)
    }

    mutating func u16Array() throws -> [UInt16] {
        let n = Int(try u32())
        guard n <= remaining / 2 else { throw PTPTransportError.protocolError("array too long") }
        var out: [UInt16] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try u16()) }
        return out
    }

    /// One value of PTP datatype `type` as an integer (strings and arrays are skipped → nil).
    mutating func value(type: UInt16) throws -> Int64? {
        switch type {
        case 0x0001: return Int64(Int8(bitPattern: try u8()))
        case 0x0002: return Int64(try u8())
        case 0x0003: return Int64(Int16(bitPattern: try u16()))
        case 0x0004: return Int64(try u16())
        case 0x0005: return Int64(Int32(bitPattern: try u32()))
        case 0x0006: return Int64(try u32())
        case 0x0007: return Int64(bitPattern: try u64())
        case 0x0008: return Int64(bitPattern: try u64())
        case 0xFFFF: _ = try string(); return nil
        default:
            if type & 0x4000 != 0 {
                let n = Int(try u32())
                let size = PTPDataType.size(type & 0x3FFF)
                guard size > 0, n * size <= remaining else { throw PTPTransportError.protocolError("bad array") }
                p += n * size
                return nil
            }
            throw PTPTransportError.protocolError("unknown datatype 0x\(String(type, radix: 16))")
        }
    }
}

enum PTPDataType {
    static func size(_ t: UInt16) -> Int {
        switch t {
        case 1, 2: return 1
        case 3, 4: return 2
        case 5, 6: return 4
        case 7, 8: return 8
        case 9, 10: return 16
        default: return 0
        }
    }

    /// Little-endian bytes of `v` as datatype `t`.
    static func encode(_ v: Int64, type t: UInt16) -> [UInt8] {
        let n = max(size(t), 1)
        var out: [UInt8] = []
        let u = UInt64(bitPattern: v)
        for i in 0..<min(n, 8) { out.append(UInt8(truncatingIfNeeded: u >> (8 * UInt64(i)))) }
        return out
    }
}

/// DeviceInfo (0x1001) as far as a driver needs it (ptp.md §1.5).
public struct PTPDeviceInfo: Sendable, Hashable {
    public var standardVersion: UInt16 = 0
    public var vendorExtensionID: UInt32 = 0
    public var vendorExtensionDesc = ""
    public var operations: [UInt16] = []
    public var events: [UInt16] = []
    public var properties: [UInt16] = []
    public var manufacturer = ""
    public var model = ""
    public var deviceVersion = ""
    public var serialNumber = ""

    public init() {}

    /// Parses the dataset; an empty or short dataset (X-T4) gives what could be read.
    public static func parse(_ data: [UInt8]) -> PTPDeviceInfo {
        var d = PTPDeviceInfo()
        var r = PTPReader(data)
        do {
            d.standardVersion = try r.u16()
            d.vendorExtensionID = try r.u32()
            _ = try r.u16()
            d.vendorExtensionDesc = try r.string()
            _ = try r.u16()
            d.operations = try r.u16Array()
            d.events = try r.u16Array()
            d.properties = try r.u16Array()
            _ = try r.u16Array()
            _ = try r.u16Array()
            d.manufacturer = try r.string()
            d.model = try r.string()
            d.deviceVersion = try r.string()
            d.serialNumber = try r.string()
        } catch {}
        return d
    }
}

/// A device property description (GetDevicePropDesc 0x1014, or one of Sony's 0x9209 entries).
struct PTPPropDesc: Sendable {
    enum Form: Sendable {
        case none
        case range(min: Int64, max: Int64, step: Int64)
        case enumeration([Int64])
    }
    var code: UInt16
    var dataType: UInt16
    var writable: Bool
    var enabled = true
    var current: Int64?
    var form: Form

    /// The values the camera offers (a range is expanded, at most 400 values).
    var offered: [Int64] {
        switch form {
        case .none: return current.map { [$0] } ?? []
        case .enumeration(let v): return v
        case .range(let lo, let hi, let step):
            guard step > 0, hi >= lo else { return [lo] }
            return Self.walk(from: lo, through: hi, by: step, limit: 400)
        }
    }

    /// `lo`, `lo + step` … up to `hi`, at most `limit` values, stopping where the next would
    /// overflow (a camera's range may be anything). `step` must be positive.
    static func walk(from lo: Int64, through hi: Int64, by step: Int64, limit: Int) -> [Int64] {
        var out: [Int64] = []
        var v = lo
        while v <= hi && out.count < limit {
            out.append(v)
            let (next, overflow) = v.addingReportingOverflow(step)
            if overflow { break }
            v = next
        }
        return out
    }

    /// Parses one description at the reader's position; `sony` reads the extra IsEnabled byte.
    static func parse(_ r: inout PTPReader, sony: Bool = false) throws -> PTPPropDesc {
        let code = try r.u16()
        let type = try r.u16()
        let getSet = try r.u8()
        var enabled = true
        if sony { enabled = try r.u8() != 0 }
        _ = try r.value(type: type)
        let current = try r.value(type: type)
        let flag = try r.u8()
        var form = Form.none
        switch flag {
        case 1:
            let lo = try r.value(type: type) ?? 0, hi = try r.value(type: type) ?? 0, st = try r.value(type: type) ?? 0
            form = .range(min: lo, max: hi, step: st)
        case 2:
            let n = Int(try r.u16())
            var vals: [Int64] = []
            for _ in 0..<n { if let v = try r.value(type: type) { vals.append(v) } }
            form = .enumeration(vals)
        default: break
        }
        return PTPPropDesc(code: code, dataType: type, writable: getSet != 0, enabled: enabled, current: current,
                           form: form)
    }

    static func parse(_ data: [UInt8]) throws -> PTPPropDesc {
        var r = PTPReader(data)
        return try parse(&r)
    }
}
