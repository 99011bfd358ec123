import Foundation

/// How one common property maps onto one vendor's property code and values (ptp.md §3).
public struct PTPPropertyMapping: Sendable {
    public var name: PropertyName
    public var code: UInt16
    /// PTP datatype used when writing (0x0004 u16, 0x0006 u32, 0x0003 i16 …).
    public var dataType: UInt16
    /// Vendor value → common value (nil: no common equivalent).
    public var toCommon: @Sendable (Int64) -> PropertyValue?
}

/// The common vocabulary ↔ PTP vendor values.
public enum PTPVocabulary {
    // MARK: Value conversions shared by vendors

    /// Standard 0x5005 WhiteBalance values plus the Nikon/Sony 0x80xx extensions.
    static func standardWhiteBalance(_ v: Int64) -> PropertyValue? {
        switch v {
        case 2: return .text("auto")
        case 4: return .text("daylight")
        case 5: return .text("fluorescent")
        case 6: return .text("tungsten")
        case 7: return .text("flash")
        case 0x8010: return .text("cloudy")
        case 0x8011: return .text("shade")
        case 0x8013, 1: return .text("custom")
        case 0x8012: return .text("color-temperature")
        default: return nil
        }
    }

    /// Canon 0xD109 WhiteBalance (u8): 0 auto, 1 daylight, 2 cloudy, 3 tungsten, 4 fluorescent,
    /// 5 flash, 6 manual, 8 shade, 9 colour temperature.
    static func canonWhiteBalance(_ v: Int64) -> PropertyValue? {
        switch v {
        case 0: return .text("auto")
        case 1: return .text("daylight")
        case 2: return .text("cloudy")
        case 3: return .text("tungsten")
        case 4: return .text("fluorescent")
        case 5: return .text("flash")
        case 6: return .text("custom")
        case 8: return .text("shade")
        case 9: return .text("color-temperature")
        default: return nil
        }
    }

    /// Aperture text: one decimal below f/10 ("2.8", "8.0"), whole numbers above ("11").
    public static func apertureText(_ f: Double) -> String {
        if f < 10 { return String(format: "%.1f", f) }
        return String(Int(f.rounded()))
    }

    static let standardApertures: [Double] = [
        1.0, 1.1, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.5, 2.8, 3.2, 3.5, 4.0, 4.5, 5.0, 5.6, 6.3, 6.7, 7.1, 8.0, 9.0, 9.5,
        10, 11, 13, 14, 16, 18, 19, 20, 22, 25, 27, 29, 32, 36, 38, 40, 45, 51, 57, 64,
    ]

    static func nearest(_ v: Double, in list: [Double]) -> Double {
        list.min { abs(log2($0 / v)) < abs(log2($1 / v)) } ?? v
    }

    /// Shutter text from a fraction: "1/250", "1/2.5"-free: whole seconds `2"`, fractions of seconds `0.5"`.
    public static func shutterText(numerator n: UInt32, denominator d: UInt32) -> String {
        guard d > 0 else { return "bulb" }
        if n == 1 && d > 1 { return "1/\(d)" }
        let s = Double(n) / Double(d)
        if s == s.rounded() { return "\(Int(s))\"" }
        return String(format: "%.1f\"", s)
    }

    static let standardShutter: [(Double, String)] = {
        let longs: [Double] = [30, 25, 20, 15, 13, 10, 8, 6, 5, 4, 3.2, 2.5, 2, 1.6, 1.3, 1, 0.8, 0.6, 0.5, 0.4, 0.3]
        let dens: [Int] = [4, 5, 6, 8, 10, 13, 15, 20, 25, 30, 40, 50, 60, 80, 100, 125, 160, 200, 250, 320, 400, 500,
                           640, 800, 1000, 1250, 1600, 2000, 2500, 3200, 4000, 5000, 6400, 8000, 10000, 12800, 16000]
        var out: [(Double, String)] = longs.map { s in
            (s, s == s.rounded() ? "\(Int(s))\"" : String(format: "%.1f\"", s))
        }
        out += dens.map { (1 / Double($0), "1/\($0)") }
        return out
    }()

    /// Shutter text for a duration in seconds (nearest standard third-stop value).
    public static func shutterText(seconds s: Double) -> String {
        standardShutter.min { abs(log2($0.0 / s)) < abs(log2($1.0 / s)) }?.1 ?? "\(s)\""
    }

    static let standardISO: [Double] = [
        50, 64, 80, 100, 125, 160, 200, 250, 320, 400, 500, 640, 800, 1000, 1250, 1600, 2000, 2500, 3200, 4000, 5000,
        6400, 8000, 10000, 12800, 16000, 20000, 25600, 32000, 40000, 51200, 64000, 80000, 102400,
    ]

    /// EV from a fraction-of-stops value, snapping 0.33/0.67 to thirds.
    static func ev(_ v: Double) -> PropertyValue { .number((v * 10).rounded() / 10) }

    /// Canon 1/8-EV steps (u8 signed): +3 → 1/3, +4 → 1/2, +5 → 2/3 of a stop.
    static func canonEV(_ raw: Int64) -> Double {
        let s = Int(Int8(truncatingIfNeeded: raw))
        let sign = s < 0 ? -1.0 : 1.0
        let a = abs(s)
        let frac: Double
        switch a % 8 {
        case 0: frac = 0
        case 3: frac = 1.0 / 3
        case 4: frac = 0.5
        case 5: frac = 2.0 / 3
        default: frac = Double(a % 8) / 8
        }
        return sign * (Double(a / 8) + frac)
    }

    // MARK: Vendor tables

    /// Nikon: standard 0x5005 / 0x500F / 0x5007 / 0x5010 plus 0xD100 ExposureTime (n<<16|d).
    /// Focus mode uses the standard 0x500A FocusMode with Nikon's 0x8010 AF-S / 0x8011 AF-C /
    /// 0x8012 AF-A values (PTP standard + libgphoto2 naming; not in the notes, UNCONFIRMED).
    public static let nikon: [PTPPropertyMapping] = [
        PTPPropertyMapping(name: .whiteBalance, code: 0x5005, dataType: 0x0004, toCommon: standardWhiteBalance),
        PTPPropertyMapping(name: .iso, code: 0x500F, dataType: 0x0004) { v in
            v == 0xFFFF ? .text("auto") : .number(Double(v))
        },
        PTPPropertyMapping(name: .shutterSpeed, code: 0xD100, dataType: 0x0006) { v in
            let u = UInt32(truncatingIfNeeded: v)
            if u >= 0xFFFF_FFFD { return .text("bulb") }
            return .text(shutterText(numerator: u >> 16, denominator: u & 0xFFFF))
        },
        PTPPropertyMapping(name: .aperture, code: 0x5007, dataType: 0x0004) { v in .text(apertureText(Double(v) / 100)) },
        PTPPropertyMapping(name: .exposureCompensation, code: 0x5010, dataType: 0x0003) { v in ev(Double(v) / 1000) },
        PTPPropertyMapping(name: .focusMode, code: 0x500A, dataType: 0x0004) { v in
            switch v {
            case 1: return .text("mf")
            case 0x8010: return .text("af-s")
            case 0x8011: return .text("af-c")
            case 0x8012: return .text("af-a")
            default: return nil
            }
        },
    ]

    /// Sony PTP: 0x5005 WB, 0x5007 F×100, 0x5010 EV×1000, 0xD20D shutter (n<<16|d), 0xD21E ISO
    /// (0x00FFFFFF auto). Focus mode: no code in the notes → not supported.
    public static let sony: [PTPPropertyMapping] = [
        PTPPropertyMapping(name: .whiteBalance, code: 0x5005, dataType: 0x0004, toCommon: standardWhiteBalance),
        PTPPropertyMapping(name: .iso, code: 0xD21E, dataType: 0x0006) { v in
            let iso = v & 0x00FF_FFFF
            return iso == 0x00FF_FFFF ? .text("auto") : .number(Double(iso))
        },
        PTPPropertyMapping(name: .shutterSpeed, code: 0xD20D, dataType: 0x0006) { v in
            let u = UInt32(truncatingIfNeeded: v)
            if u == 0 { return .text("bulb") }
            return .text(shutterText(numerator: u >> 16, denominator: u & 0xFFFF))
        },
        PTPPropertyMapping(name: .aperture, code: 0x5007, dataType: 0x0004) { v in .text(apertureText(Double(v) / 100)) },
        PTPPropertyMapping(name: .exposureCompensation, code: 0x5010, dataType: 0x0003) { v in ev(Double(v) / 1000) },
    ]

    /// Canon EOS: vendor 0xD1xx codes, written with SetDevicePropValueEx (0x9110), read from GetEvent.
    /// Focus mode values (0 one-shot, 1 AI focus, 2 AI servo, 3 MF) are libgphoto2's naming (UNCONFIRMED).
    public static let canon: [PTPPropertyMapping] = [
        PTPPropertyMapping(name: .whiteBalance, code: 0xD109, dataType: 0x0006, toCommon: canonWhiteBalance),
        PTPPropertyMapping(name: .iso, code: 0xD103, dataType: 0x0006) { v in
            if v == 0 { return .text("auto") }
            return .number(nearest(100 * pow(2, Double(v - 0x48) / 8), in: standardISO))
        },
        PTPPropertyMapping(name: .shutterSpeed, code: 0xD102, dataType: 0x0006) { v in
            if v == 0 { return .text("auto") }
            if v == 0x0C || v == 0x04 { return .text("bulb") }
            return .text(shutterText(seconds: pow(2, Double(0x38 - v) / 8)))
        },
        PTPPropertyMapping(name: .aperture, code: 0xD101, dataType: 0x0006) { v in
            guard v >= 8 else { return nil }
            return .text(apertureText(nearest(pow(2, Double(v - 8) / 16), in: standardApertures)))
        },
        PTPPropertyMapping(name: .exposureCompensation, code: 0xD104, dataType: 0x0006) { v in ev(canonEV(v)) },
        PTPPropertyMapping(name: .focusMode, code: 0xD108, dataType: 0x0006) { v in
            switch v {
            case 0: return .text("af-s")
            case 1: return .text("ai-focus")
            case 2: return .text("af-c")
            case 3: return .text("mf")
            default: return nil
            }
        },
    ]

    /// True when `offered` (a camera value in common form) is what the user asked for.
    public static func matches(_ offered: PropertyValue, _ requested: PropertyValue, name: PropertyName) -> Bool {
        func num(_ v: PropertyValue) -> Double? {
            switch v {
            case .number(let d): return d
            case .text(let t): return Double(t.replacingOccurrences(of: "f/", with: ""))
            }
        }
        switch name {
        case .exposureCompensation:
            if let a = num(offered), let b = num(requested) { return CommonValues.sameEV(a, b) }
            return false
        case .aperture:
            if let a = num(offered), let b = num(requested) { return abs(a - b) < 0.05 }
            return false
        case .iso:
            if let a = num(offered), let b = num(requested) { return a == b }
            return offered.description.lowercased() == requested.description.lowercased()
        case .shutterSpeed, .whiteBalance, .focusMode:
            return offered.description.lowercased() == requested.description.lowercased()
        }
    }

    /// Builds a property from the vendor's current value and offered values.
    static func property(_ m: PTPPropertyMapping, current: Int64?, offered: [Int64], writable: Bool) -> CameraProperty {
        var choices: [PropertyValue] = []
        for v in offered {
            if let c = m.toCommon(v), !choices.contains(c) { choices.append(c) }
        }
        let value = current.flatMap(m.toCommon)
        // PTP cameras name their values with numbers only: the display is the vocabulary's words
        // with their unit, and a value outside the vocabulary says so (in decimal, never as hex).
        let display = words(m.name, value) ?? current.map { "camera value \($0) (not in the vocabulary)" }
        return CameraProperty(name: m.name, value: value, displayText: display, choices: choices,
                              writable: writable && !choices.isEmpty)
    }

    /// A common value in words with its unit: "ISO 400", "1/250 s", "f/5.6", "+0.7 EV", "tungsten".
    public static func words(_ name: PropertyName, _ value: PropertyValue?) -> String? {
        guard let value else { return nil }
        let t = value.description
        switch name {
        case .iso: return "ISO \(t)"
        case .shutterSpeed: return t.hasSuffix("\"") || t == "bulb" ? t : "\(t) s"
        case .aperture: return "f/\(t)"
        case .exposureCompensation:
            guard case .number(let d) = value else { return "\(t) EV" }
            return abs(d) < 0.05 ? "0 EV" : String(format: "%+.1f EV", d)
        case .whiteBalance, .focusMode: return t
        }
    }

    /// The vendor value among `offered` matching `value`, or `invalidValue` with the valid choices.
    static func resolve(_ m: PTPPropertyMapping, _ value: PropertyValue, offered: [Int64]) throws -> Int64 {
        for v in offered {
            if let c = m.toCommon(v), matches(c, value, name: m.name) { return v }
        }
        var valid: [String] = []
        for v in offered {
            if let c = m.toCommon(v)?.description, !valid.contains(c) { valid.append(c) }
        }
        throw CameraControlError.invalidValue(property: m.name, value: value.description, valid: valid)
    }
}
