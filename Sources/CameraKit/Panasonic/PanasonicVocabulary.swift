/// Maps the common property vocabulary to Panasonic `cam.cgi` setting values and back
/// (panasonic.md §3.2: `whitebalance`, `iso`, `shtrspeed`, `focal`, `exposure`, `focusmode`).
public enum PanasonicVocabulary {
    /// The `setsetting`/`getsetting` type of each common property.
    public static func settingType(_ name: PropertyName) -> String {
        switch name {
        case .whiteBalance: return "whitebalance"
        case .iso: return "iso"
        case .shutterSpeed: return "shtrspeed"
        case .aperture: return "focal"
        case .exposureCompensation: return "exposure"
        case .focusMode: return "focusmode"
        }
    }

    // MARK: White balance

    static let whiteBalance: [(WhiteBalancePreset, String)] = [
        (.auto, "auto"), (.daylight, "daylight"), (.cloudy, "cloudy"), (.shade, "shade"),
        (.tungsten, "halogen"), (.flash, "flash"), (.fluorescent, "fluorescent"), (.custom, "white_set1"),
    ]

    /// Panasonic white balance → common value (unknown Panasonic values pass through verbatim).
    public static func commonWhiteBalance(_ pana: String) -> String {
        whiteBalance.first { $0.1 == pana }?.0.rawValue ?? pana
    }

    /// Common white balance → the Panasonic value among `offered`, or nil.
    public static func panasonicWhiteBalance(_ common: String, offered: [String]) -> String? {
        let v = common.lowercased()
        if let preset = WhiteBalancePreset(rawValue: v), let pana = whiteBalance.first(where: { $0.0 == preset })?.1,
           offered.contains(pana) {
            return pana
        }
        return offered.first { $0 == v && WhiteBalancePreset(rawValue: commonWhiteBalance($0)) == nil }
    }

    // MARK: Focus mode

    public static func commonFocusMode(_ pana: String) -> String {
        switch pana {
        case "afs": return FocusModeValue.afS.rawValue
        case "afc": return FocusModeValue.afC.rawValue
        case "aff": return "af-f"
        case "mf": return FocusModeValue.mf.rawValue
        default: return pana
        }
    }

    public static func panasonicFocusMode(_ common: String) -> String {
        switch common.lowercased() {
        case "af-s", "afs": return "afs"
        case "af-c", "afc": return "afc"
        case "af-f", "aff": return "aff"
        case "mf": return "mf"
        default: return common.lowercased()
        }
    }

    // MARK: ISO

    public static func commonISO(_ pana: String) -> PropertyValue {
        if let n = Double(pana) { return .number(n) }
        return .text(pana.lowercased())
    }

    public static func panasonicISO(_ common: PropertyValue) -> String {
        switch common {
        case .number: return common.description
        case .text(let t): return t.lowercased()
        }
    }

    // MARK: Exposure compensation (EV in thirds: "-5/3", "1", "0")

    /// Panasonic EV text → EV, nil when unparseable.
    public static func ev(_ pana: String) -> Double? {
        let parts = pana.split(separator: "/")
        if parts.count == 2, let n = Double(parts[0]), let d = Double(parts[1]), d != 0 { return n / d }
        if parts.count == 1 { return Double(parts[0]) }
        return nil
    }

    /// EV rounded to one decimal, as the common vocabulary shows it.
    public static func commonEV(_ ev: Double) -> PropertyValue { .number((ev * 10).rounded() / 10) }

    /// EV → Panasonic thirds text.
    public static func panasonicEV(_ ev: Double) -> String {
        let thirds = Int((ev * 3).rounded())
        if thirds % 3 == 0 { return String(thirds / 3) }
        return "\(thirds)/3"
    }

    // MARK: n/256 values (APEX-like: shutter 1/t = 2^(n/256), aperture f = 2^(n/512))

    /// Parses "n/256" (S5 reads negative numerators back as unsigned 16-bit).
    public static func numerator(_ pana: String) -> Int? {
        let parts = pana.split(separator: "/")
        guard parts.count == 2, var n = Int(parts[0]), parts[1] == "256" else { return nil }
        if n > 32767 && n <= 65535 { n -= 65536 }
        return n
    }

    /// Shutter names per third of a stop k (1/t = 2^(k/3)), k = -18 (60 s) … 45 (1/32000).
    static let shutterNames: [Int: String] = {
        let slow = ["1\"", "1.3\"", "1.6\"", "2\"", "2.5\"", "3.2\"", "4\"", "5\"", "6\"", "8\"", "10\"", "13\"",
                    "15\"", "20\"", "25\"", "30\"", "40\"", "50\"", "60\""]
        let fast = ["0.8\"", "0.6\"", "0.5\"", "0.4\"", "1/3", "1/4", "1/5", "1/6", "1/8", "1/10", "1/13", "1/15",
                    "1/20", "1/25", "1/30", "1/40", "1/50", "1/60", "1/80", "1/100", "1/125", "1/160", "1/200",
                    "1/250", "1/320", "1/400", "1/500", "1/640", "1/800", "1/1000", "1/1250", "1/1600", "1/2000",
                    "1/2500", "1/3200", "1/4000", "1/5000", "1/6400", "1/8000", "1/10000", "1/13000", "1/16000",
                    "1/20000", "1/25000", "1/32000"]
        var m: [Int: String] = [:]
        for (i, s) in slow.enumerated() { m[-i] = s }
        for (i, s) in fast.enumerated() { m[i + 1] = s }
        return m
    }()
    public static let shutterRange = -18...45
    public static let bulbNumerator = 16384

    /// "n/256" for a shutter third-stop index.
    public static func shutterValue(thirds k: Int) -> String { "\(Int((256.0 * Double(k) / 3).rounded()))/256" }

    /// Panasonic shutter → common text ("1/250", "2\"", "bulb"); nil when unparseable.
    public static func commonShutter(_ pana: String) -> String? {
        guard let n = numerator(pana) else { return nil }
        if n == bulbNumerator { return "bulb" }
        let k = Int((3.0 * Double(n) / 256).rounded())
        return shutterNames[k]
    }

    /// Common shutter text → third-stop index.
    public static func shutterThirds(_ common: String) -> Int? {
        shutterNames.first { $0.value == common }?.key
    }

    /// Aperture names per third of a stop from f/1.0 (f = 2^(k/6)).
    public static let apertureNames = [
        "1.0", "1.1", "1.2", "1.4", "1.6", "1.8", "2.0", "2.2", "2.5", "2.8", "3.2", "3.5", "4.0", "4.5", "5.0",
        "5.6", "6.3", "7.1", "8.0", "9.0", "10", "11", "13", "14", "16", "18", "20", "22", "25", "29", "32", "36",
        "40", "45", "51", "57", "64",
    ]
    /// The "no electronic aperture / not in rec mode" sentinel.
    public static let noAperture = 32767

    public static func apertureValue(thirds k: Int) -> String { "\(Int((256.0 * Double(k) / 3).rounded()))/256" }

    /// Panasonic aperture → common text ("2.8"); nil for the sentinel or out-of-table values.
    public static func commonAperture(_ pana: String) -> String? {
        guard let n = numerator(pana), n != noAperture, n >= 0 else { return nil }
        let k = Int((3.0 * Double(n) / 256).rounded())
        return k < apertureNames.count ? apertureNames[k] : nil
    }

    /// Common aperture ("5.6", "f/5.6", "4") → third-stop index.
    public static func apertureThirds(_ common: String) -> Int? {
        var t = common.lowercased()
        if t.hasPrefix("f/") { t.removeFirst(2) } else if t.hasPrefix("f") { t.removeFirst() }
        if let i = apertureNames.firstIndex(of: t) { return i }
        guard let d = Double(t) else { return nil }
        return apertureNames.firstIndex { Double($0) == d }
    }

    // MARK: Offered values

    /// What the camera offers, from `getinfo&type=allmenu` and `getinfo&type=lens` (defaults when the
    /// camera does not list a setting: the GH4's lists).
    public struct Offered: Sendable, Hashable {
        public var whiteBalance: [String]
        public var iso: [String]
        public var exposure: [String]
        public var focusMode: [String]
        /// Shutter third-stop indices, slowest first.
        public var shutterThirds: ClosedRange<Int>
        /// Aperture third-stop indices, widest first.
        public var apertureThirds: ClosedRange<Int>

        public static let defaults = Offered(
            whiteBalance: ["auto", "daylight", "cloudy", "shade", "halogen", "flash", "white_set1", "white_set2",
                           "white_set3", "white_set4", "color_temp"],
            iso: ["auto", "100", "125", "160", "200", "250", "320", "400", "500", "640", "800", "1000", "1250", "1600",
                  "2000", "2500", "3200", "4000", "5000", "6400", "8000", "10000", "12800", "16000", "20000", "25600"],
            exposure: (-15...15).map { PanasonicVocabulary.panasonicEV(Double($0) / 3) },
            focusMode: ["afs", "aff", "afc", "mf"],
            shutterThirds: -18...36,
            apertureThirds: 3...27)

        public init(whiteBalance: [String], iso: [String], exposure: [String], focusMode: [String],
                    shutterThirds: ClosedRange<Int>, apertureThirds: ClosedRange<Int>) {
            self.whiteBalance = whiteBalance
            self.iso = iso
            self.exposure = exposure
            self.focusMode = focusMode
            self.shutterThirds = shutterThirds
            self.apertureThirds = apertureThirds
        }

        /// Takes the lists an allmenu reply gives; keeps the defaults for the others.
        public mutating func apply(menu: [String: [String]]) {
            if let v = menu["whitebalance"], !v.isEmpty { whiteBalance = v }
            if let v = menu["iso"], !v.isEmpty { iso = v }
            if let v = menu["exposure"], !v.isEmpty { exposure = v }
            if let v = menu["focusmode"], !v.isEmpty { focusMode = v }
        }

        /// Takes the ranges of a `getinfo&type=lens` CSV (`ok,maxF,minF,fastest,slowest,…`).
        public mutating func apply(lens fields: [String]) {
            guard fields.count >= 5, fields[0] == "ok" else { return }
            let closed = PanasonicVocabulary.numerator(fields[1])
            let open = PanasonicVocabulary.numerator(fields[2])
            let fastest = PanasonicVocabulary.numerator(fields[3])
            let slowest = PanasonicVocabulary.numerator(fields[4])
            let maxIndex = PanasonicVocabulary.apertureNames.count - 1
            func thirds(_ n: Int) -> Int { Int((3.0 * Double(n) / 256).rounded()) }
            var lo = apertureThirds.lowerBound, hi = apertureThirds.upperBound
            if let c = closed, c != noAperture { hi = min(max(thirds(c), 0), maxIndex) }
            if let o = open, o != noAperture { lo = min(max(thirds(o), 0), maxIndex) }
            if lo <= hi { apertureThirds = lo...hi }
            var slo = shutterThirds.lowerBound, shi = shutterThirds.upperBound
            if let f = fastest { shi = min(max(thirds(f), shutterRange.lowerBound), shutterRange.upperBound) }
            if let s = slowest { slo = min(max(thirds(s), shutterRange.lowerBound), shutterRange.upperBound) }
            if slo <= shi { shutterThirds = slo...shi }
        }
    }
}
