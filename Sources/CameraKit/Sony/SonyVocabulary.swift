/// Maps the common property vocabulary to Sony Camera Remote API values and back.
public enum SonyVocabulary {
    static let whiteBalance: [(WhiteBalancePreset, String)] = [
        (.auto, "Auto WB"), (.daylight, "Daylight"), (.shade, "Shade"), (.cloudy, "Cloudy"),
        (.tungsten, "Incandescent"), (.fluorescent, "Fluorescent: Cool White (0)"), (.flash, "Flash"),
        (.custom, "Custom"),
    ]

    /// Sony white-balance mode → common value ("5500K" for a colour temperature).
    public static func commonWhiteBalance(mode: String, temperature: Int?) -> String {
        if mode == "Color Temperature", let t = temperature, t > 0 { return "\(t)K" }
        if mode.hasPrefix("Fluorescent") { return WhiteBalancePreset.fluorescent.rawValue }
        if mode.hasPrefix("Custom") { return WhiteBalancePreset.custom.rawValue }
        return whiteBalance.first { $0.1 == mode }?.0.rawValue ?? mode
    }

    /// The Kelvin of a "5500K" value, nil for a preset.
    public static func kelvin(_ value: String) -> Int? {
        let v = value.lowercased()
        guard v.hasSuffix("k") else { return nil }
        return Int(v.dropLast())
    }

    /// Common white balance → `setWhiteBalance` params, given the modes the camera offers.
    public static func whiteBalanceParams(_ value: String, offered: [String]) -> [Any]? {
        let v = value.lowercased()
        if let t = kelvin(v), offered.contains("Color Temperature") {
            return ["Color Temperature", true, t]
        }
        guard let preset = WhiteBalancePreset(rawValue: v) else { return nil }
        // Prefer the camera's own spelling among the offered modes (several fluorescent variants).
        let candidates = offered.filter { commonWhiteBalance(mode: $0, temperature: nil) == preset.rawValue }
        guard let mode = candidates.first(where: { $0 == whiteBalance.first { $0.0 == preset }?.1 }) ?? candidates.first
        else { return nil }
        return [mode, false, -1]
    }

    /// Sony focus mode ↔ common.
    public static func commonFocusMode(_ sony: String) -> String {
        switch sony.uppercased() {
        case "AF-S": return "af-s"
        case "AF-C": return "af-c"
        case "MF": return "mf"
        case "DMF": return "dmf"
        default: return sony.lowercased()
        }
    }

    public static func sonyFocusMode(_ common: String) -> String { common.uppercased() }

    /// Sony ISO ("AUTO", "400") → common (`auto` or a number).
    public static func commonISO(_ sony: String) -> PropertyValue {
        if let n = Double(sony) { return .number(n) }
        return .text(sony.lowercased())
    }

    public static func sonyISO(_ common: PropertyValue) -> String {
        switch common {
        case .number: return common.description
        case .text(let t): return Double(t) != nil ? t : t.uppercased()
        }
    }

    /// Exposure-compensation index × step → EV. Step index 1 = 1/3 EV, 2 = 1/2 EV.
    public static func ev(index: Int, stepIndex: Int) -> Double {
        Double(index) * (stepIndex == 2 ? 0.5 : 1.0 / 3.0)
    }

    /// All EV values in `min...max` (indices) for a step.
    public static func evChoices(min: Int, max: Int, stepIndex: Int) -> [(index: Int, ev: Double)] {
        guard min <= max else { return [] }
        return (min...max).map { ($0, ev(index: $0, stepIndex: stepIndex)) }
    }
}
