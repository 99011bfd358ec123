import Foundation

/// Fujifilm X properties in the common vocabulary. ptp.md names no Fujifilm codes for them; these
/// readings come from public reverse-engineering of X bodies (USB tethering and the Wi-Fi dialect),
/// which disagree in places: where they do, both readings are decoded.
///
/// | common | code | type | values |
/// |---|---|---|---|
/// | whiteBalance | 0x5005 | u16 | 2 auto, 4 daylight, 6 tungsten, 0x8001–0x8005 fluorescent 1–5, 0x8006 shade; then **either** 0x0008 underwater, 0x8007 colour temperature, 0x8008… custom 1… (current bodies) **or** 0x800A underwater, 0x800B colour temperature, 0x800C custom (X-T1-era Wi-Fi firmware): told apart by the values the camera offers |
/// | (Kelvin) | 0xD017 | u16 | the colour temperature in K (unit UNCONFIRMED: no source shows a value) |
/// | iso | 0xD02A (Wi-Fi) | u32 | low 24 bits = ISO; bit 31 = auto up to that ISO; bit 30 = extended (L/H); 0xFFFFFFFF auto |
/// |     | 0x500F (USB) | i32 | the ISO; −1…−4 = auto presets |
/// | shutterSpeed | 0xD240 (Wi-Fi) | u32 | bit 31 set: 1/N s with N × 1000 in the low 28 bits; clear: milliseconds; 0xFFFFFFFF = set on the body |
/// |              | 0x500D (USB) | u32 | µs of the nominal time (1/125 s = 7812); 64 000 000 + 30·k for 2, 4, 8, 15, 30, 60 min; 0xFFFFFFFF bulb |
/// | aperture | 0x5007 | u16 | f × 100 (f/6.3 is written 640); 0 and 0xFFFF = auto (the sources disagree on which) |
/// | exposureCompensation | 0x5010 | i16 | EV × 1000 in thirds |
/// | focusMode | 0x500A | u16 | 1 mf, 0x8001 af-s, 0x8002 af-c |
///
/// Writes are SetDevicePropValue. Wi-Fi bodies that refuse it for the exposure values are moved a
/// step at a time (`PTPFujiStep`): 0x902C shutter (p1 1 = faster), 0x902D aperture (1 = closes a
/// third of a stop), 0x902E exposure compensation (1 = brighter; direction UNCONFIRMED).
extension PTPVocabulary {
    /// Which of the two white-balance numberings a body uses.
    enum FujiWhiteBalanceTable: Sendable {
        case current, xt1

        /// The X-T1-era list offers 0x800B/0x800C and none of 0x0008/0x8007.
        init(offered: [Int64]) {
            let old = (offered.contains(0x800B) || offered.contains(0x800C))
                && !offered.contains(0x8007) && !offered.contains(0x0008)
            self = old ? .xt1 : .current
        }

        /// The white-balance value that means "use the colour temperature in 0xD017".
        var kelvinMode: Int64 { self == .xt1 ? 0x800B : 0x8007 }
    }

    static let fujiKelvin: UInt16 = 0xD017

    static func fujiWhiteBalance(_ v: Int64, table: FujiWhiteBalanceTable) -> PropertyValue? {
        switch v {
        case 2, 0x8020, 0x8021: return .text("auto")
        case 4: return .text("daylight")
        case 6: return .text("tungsten")
        case 0x8001: return .text("fluorescent")
        case 0x8002...0x8005: return .text("fluorescent\(v - 0x8000)")
        case 0x8006: return .text("shade")
        default: break
        }
        if v == table.kelvinMode { return .text("color-temperature") }
        switch (table, v) {
        case (.current, 0x0008), (.xt1, 0x800A): return .text("underwater")
        case (.current, 0x8008), (.xt1, 0x800C): return .text("custom")
        case (.current, 0x8009...0x800C): return .text("custom\(v - 0x8007)")
        default: return nil
        }
    }

    static func fujiWhiteBalanceMapping(_ table: FujiWhiteBalanceTable) -> PTPPropertyMapping {
        PTPPropertyMapping(name: .whiteBalance, code: 0x5005, dataType: 0x0004) { fujiWhiteBalance($0, table: table) }
    }

    /// The colour temperatures offered as choices: an enumeration as it is, a range at the body's
    /// step or the first multiple of it ≥ 100 K; at most 200, whatever the range says.
    static func fujiKelvinChoices(_ form: PTPPropDesc.Form) -> [Int64] {
        switch form {
        case .enumeration(let v): return Array(v.prefix(200))
        case .range(let lo, let hi, let step):
            let s = step >= 100 ? step : step > 0 ? step * ((99 + step) / step) : 100
            return PTPPropDesc.walk(from: lo, through: hi, by: s, limit: 200)
        case .none: return []
        }
    }

    static func fujiWiFiISO(_ v: Int64) -> PropertyValue? {
        let u = UInt32(truncatingIfNeeded: v)
        if u == 0xFFFF_FFFF || u & 0x8000_0000 != 0 { return .text("auto") }
        let iso = u & 0x00FF_FFFF
        return iso > 0 ? .number(Double(iso)) : nil
    }

    static func fujiUSBISO(_ v: Int64) -> PropertyValue? {
        let s = Int32(truncatingIfNeeded: v)
        if s < 0 { return .text("auto") }
        return s > 0 ? .number(Double(s)) : nil
    }

    /// 0xD240 (Wi-Fi) in seconds; nil for "set on the body" and zero.
    static func fujiWiFiShutterSeconds(_ v: Int64) -> Double? {
        let u = UInt32(truncatingIfNeeded: v)
        guard u != 0xFFFF_FFFF else { return nil }
        let field = Double(u & 0x0FFF_FFFF)
        guard field > 0 else { return nil }
        return u & 0x8000_0000 != 0 ? 1000 / field : field / 1000
    }

    static let fujiLongExposureMinutes = [2, 4, 8, 15, 30, 60]

    /// 0x500D (USB) in seconds (nominal); nil for bulb, zero and unknown codes.
    static func fujiUSBShutterSeconds(_ v: Int64) -> Double? {
        let u = UInt32(truncatingIfNeeded: v)
        guard u != 0xFFFF_FFFF, u > 0 else { return nil }
        guard u > 64_000_000 else { return u == 64_000_000 ? 60 : Double(u) / 1e6 }
        let k = Int(u - 64_000_000)
        guard k % 30 == 0, k / 30 <= fujiLongExposureMinutes.count else { return nil }
        return Double(fujiLongExposureMinutes[k / 30 - 1] * 60)
    }

    /// Shutter text for Fujifilm's nominal times: the standard third-stop names up to 30 s, whole
    /// seconds beyond.
    static func fujiShutterText(seconds s: Double) -> String {
        s > 45 ? "\(Int(s.rounded()))\"" : shutterText(seconds: s)
    }

    static func fujiAperture(_ v: Int64) -> PropertyValue? {
        if v == 0 || v == 0xFFFF { return .text("auto") }
        return .text(apertureText(nearest(Double(v) / 100, in: standardApertures)))
    }

    /// Every Fujifilm mapping, the Wi-Fi code before the USB one where they differ; white balance
    /// with the current numbering (`fujiWhiteBalanceMapping` picks the body's).
    static let fuji: [PTPPropertyMapping] = [
        fujiWhiteBalanceMapping(.current),
        PTPPropertyMapping(name: .iso, code: 0xD02A, dataType: 0x0006, toCommon: fujiWiFiISO),
        PTPPropertyMapping(name: .iso, code: 0x500F, dataType: 0x0005, toCommon: fujiUSBISO),
        PTPPropertyMapping(name: .shutterSpeed, code: 0xD240, dataType: 0x0006) { v in
            if UInt32(truncatingIfNeeded: v) == 0xFFFF_FFFF { return .text("auto") }
            return fujiWiFiShutterSeconds(v).map { .text(fujiShutterText(seconds: $0)) }
        },
        PTPPropertyMapping(name: .shutterSpeed, code: 0x500D, dataType: 0x0006) { v in
            if UInt32(truncatingIfNeeded: v) == 0xFFFF_FFFF { return .text("bulb") }
            return fujiUSBShutterSeconds(v).map { .text(fujiShutterText(seconds: $0)) }
        },
        PTPPropertyMapping(name: .aperture, code: 0x5007, dataType: 0x0004, toCommon: fujiAperture),
        PTPPropertyMapping(name: .exposureCompensation, code: 0x5010, dataType: 0x0003) { v in
            ev(Double(Int16(truncatingIfNeeded: v)) / 1000)
        },
        PTPPropertyMapping(name: .focusMode, code: 0x500A, dataType: 0x0004) { v in
            switch v {
            case 1: return .text("mf")
            case 0x8001: return .text("af-s")
            case 0x8002: return .text("af-c")
            default: return nil
            }
        },
    ]

    /// A size on which to compare two values of an exposure property when stepping: seconds,
    /// f-number, EV; nil when the value has none (auto, bulb).
    static func fujiMagnitude(code: UInt16, _ v: Int64) -> Double? {
        switch code {
        case 0xD240: return fujiWiFiShutterSeconds(v)
        case 0x500D: return fujiUSBShutterSeconds(v)
        case 0x5007: return v == 0 || v == 0xFFFF ? nil : Double(v) / 100
        case 0x5010: return Double(Int16(truncatingIfNeeded: v)) / 1000
        default: return nil
        }
    }
}
