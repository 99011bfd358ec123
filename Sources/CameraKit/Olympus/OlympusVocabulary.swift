public import CameraWire

/// Maps the common property vocabulary to Olympus OI.Share property values and back
/// (olympus.md §4.3: `wbvalue`, `isospeedvalue`, `shutspeedvalue`, `focalvalue`, `expcomp`).
///
/// White balance (`wbvalue` codes = maker-note WhiteBalance2 numbers):
///
/// | common | code | Kelvin text also accepted |
/// |---|---|---|
/// | auto | 0 | |
/// | daylight | 18 | 5300K |
/// | shade | 16 | 7500K |
/// | cloudy | 17 | 6000K |
/// | tungsten | 20 | 3000K |
/// | fluorescent | 35 | 4000K |
/// | flash | 23 | 5500K |
/// | custom | 512 | |
/// | onetouch1…4 | 256…259 | |
///
/// Code 64 has no known meaning (UNCONFIRMED: underwater?) and shows as `wb64`; 21 (3600K) shows
/// as `3600K`. Reading back, a code shows as its preset name.
public enum OlympusVocabulary {
    /// The OI.Share property behind each common one (focus mode has none: it is read from TLV 17).
    public static func propertyName(_ name: PropertyName) -> String? {
        switch name {
        case .whiteBalance: return "wbvalue"
        case .iso: return "isospeedvalue"
        case .shutterSpeed: return "shutspeedvalue"
        case .aperture: return "focalvalue"
        case .exposureCompensation: return "expcomp"
        case .focusMode: return nil
        }
    }

    // MARK: White balance

    static let whiteBalance: [(code: String, common: String, kelvin: String?)] = [
        ("0", WhiteBalancePreset.auto.rawValue, nil),
        ("18", WhiteBalancePreset.daylight.rawValue, "5300K"),
        ("16", WhiteBalancePreset.shade.rawValue, "7500K"),
        ("17", WhiteBalancePreset.cloudy.rawValue, "6000K"),
        ("20", WhiteBalancePreset.tungsten.rawValue, "3000K"),
        ("35", WhiteBalancePreset.fluorescent.rawValue, "4000K"),
        ("23", WhiteBalancePreset.flash.rawValue, "5500K"),
        ("512", WhiteBalancePreset.custom.rawValue, nil),
        ("256", "onetouch1", nil), ("257", "onetouch2", nil), ("258", "onetouch3", nil), ("259", "onetouch4", nil),
        ("21", "3600K", "3600K"),
    ]

    /// `wbvalue` code → common value (unknown codes: `wb<code>`).
    public static func commonWhiteBalance(_ code: String) -> String {
        whiteBalance.first { $0.code == code }?.common ?? "wb\(code)"
    }

    /// Common value (preset name, Kelvin text like `3000K`, or `wb<code>`) → the code among `offered`.
    public static func whiteBalanceCode(_ common: String, offered: [String]) -> String? {
        let v = common.lowercased()
        let code = whiteBalance.first { $0.common.lowercased() == v || $0.kelvin?.lowercased() == v }?.code
            ?? (v.hasPrefix("wb") ? String(v.dropFirst(2)) : nil)
        guard let code, offered.contains(code) else { return nil }
        return code
    }

    // MARK: ISO

    /// `Auto` → `auto`, `Low` → `low`, numbers → numbers.
    public static func commonISO(_ v: String) -> PropertyValue {
        if let n = Double(v) { return .number(n) }
        return .text(v.lowercased())
    }

    public static func isoValue(_ common: PropertyValue, offered: [String]) -> String? {
        let wanted = common.description.lowercased()
        return offered.first { $0.lowercased() == wanted || (Double($0) != nil && Double($0) == Double(wanted)) }
    }

    // MARK: Shutter speed

    /// `60"` → `60"` (seconds, the common spelling), `250` → `1/250`, `1.3` → `1/1.3`; the live
    /// modes (`livecomp`, `livetime`, `livebulb`) pass through.
    public static func commonShutter(_ v: String) -> String {
        if v.hasSuffix("\"") || Double(v) == nil { return v }
        return "1/\(v)"
    }

    /// The camera's value for a common shutter speed (`1/250`, `2"` or `2s`, a live mode). A bare
    /// number is refused (nil): the camera's own `2` means 1/2 s, a user's `2` most likely 2 s.
    public static func shutterValue(_ common: String, offered: [String]) -> String? {
        var t = common.olympusTrimmed()
        if t.hasSuffix("s"), Double(t.dropLast()) != nil { t = String(t.dropLast()) + "\"" }
        return offered.first { commonShutter($0) == t || (Double(t) == nil && $0 == t) }
    }

    // MARK: Aperture

    /// F-number text as the camera writes it (`5.6`, `11`).
    public static func commonAperture(_ v: String) -> String { v }

    /// `5.6`, `f/5.6`, `F5.6`, `5.60` → the offered spelling.
    public static func apertureValue(_ common: String, offered: [String]) -> String? {
        var t = common.lowercased()
        if t.hasPrefix("f/") { t.removeFirst(2) } else if t.hasPrefix("f") { t.removeFirst() }
        if let exact = offered.first(where: { $0 == t }) { return exact }
        guard let d = Double(t) else { return nil }
        return offered.first { Double($0).map { abs($0 - d) < 0.001 } ?? false }
    }

    // MARK: Exposure compensation

    /// `+0.3` → 0.3, `-1.7` → -1.7, `0.0` → 0.
    public static func commonEV(_ v: String) -> PropertyValue? {
        let t = v.hasPrefix("+") ? String(v.dropFirst()) : v
        return Double(t).map { .number(($0 * 10).rounded() / 10) }
    }

    public static func evValue(_ common: PropertyValue, offered: [String]) -> String? {
        let wanted: Double?
        switch common {
        case .number(let d): wanted = d
        case .text(let t): wanted = Double(t.hasPrefix("+") ? String(t.dropFirst()) : t)
        }
        guard let w = wanted else { return nil }
        return offered.first { v in
            guard case .number(let d)? = commonEV(v) else { return false }
            return CommonValues.sameEV(d, w)
        }
    }

    // MARK: Focus mode (TLV 17, read-only)

    public static func commonFocusMode(_ system: OlympusRTP.FocusSystem) -> String {
        switch system {
        case .singleAF: return FocusModeValue.afS.rawValue
        case .continuousAF: return FocusModeValue.afC.rawValue
        case .manual: return FocusModeValue.mf.rawValue
        }
    }
}

extension String {
    fileprivate func olympusTrimmed() -> String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
