/// Maps the common property vocabulary to the Bandit's settings (bandit.md §2.4).
///
/// The Bandit has no ISO, shutter, aperture, exposure compensation, focus mode or touch-AF in its
/// settings object; its only white balance control is `camera.white_balance_mode`, with `auto` and
/// five Kelvin presets. Common presets map to the nearest Kelvin preset:
///
/// | common | Bandit | typical light |
/// |---|---|---|
/// | auto | auto | |
/// | tungsten | 3000K | incandescent ≈ 2800–3200 K |
/// | fluorescent | 4000K | cool-white tube ≈ 4000 K |
/// | daylight | 5000K | ≈ 5200–5500 K |
/// | flash (alias) | 5000K | ≈ 5500 K |
/// | shade | 7500K | ≈ 7000–8000 K |
/// | cloudy (alias) | 7500K | ≈ 6500 K, warmer correction direction |
/// | "2000K" | 2000K | candle light, no common preset |
///
/// Reading back, a Kelvin preset shows as its canonical common name (3000K → tungsten, 5000K →
/// daylight, 7500K → shade, 4000K → fluorescent); 2000K stays "2000K". Any preset may also be set by
/// its Kelvin text ("3000K").
public enum BanditVocabulary {
    /// The white-balance values the camera offers (bandit.md §2.4).
    public static let whiteBalanceModes = ["auto", "7500K", "5000K", "4000K", "3000K", "2000K"]

    /// Canonical common name for each Bandit mode.
    static let canonical: [(bandit: String, common: String)] = [
        ("auto", WhiteBalancePreset.auto.rawValue),
        ("5000K", WhiteBalancePreset.daylight.rawValue),
        ("7500K", WhiteBalancePreset.shade.rawValue),
        ("3000K", WhiteBalancePreset.tungsten.rawValue),
        ("4000K", WhiteBalancePreset.fluorescent.rawValue),
        ("2000K", "2000K"),
    ]

    /// Extra common names accepted when setting.
    static let aliases: [String: String] = [
        WhiteBalancePreset.cloudy.rawValue: "7500K",
        WhiteBalancePreset.flash.rawValue: "5000K",
    ]

    /// Bandit `white_balance_mode` → common value.
    public static func commonWhiteBalance(_ bandit: String) -> String {
        canonical.first { $0.bandit.lowercased() == bandit.lowercased() }?.common ?? bandit
    }

    /// Common value (preset name or Kelvin text, any case) → Bandit `white_balance_mode`; nil when the
    /// camera has no such preset.
    public static func banditWhiteBalance(_ common: String) -> String? {
        let v = common.lowercased()
        if let hit = canonical.first(where: { $0.common.lowercased() == v }) { return hit.bandit }
        if let alias = aliases[v] { return alias }
        return whiteBalanceModes.first { $0.lowercased() == v }
    }

    /// The choices shown by the control API, in the common vocabulary.
    public static var whiteBalanceChoices: [PropertyValue] { canonical.map { .text($0.common) } }

    /// Every spelling `banditWhiteBalance` accepts (for error messages).
    public static var acceptedWhiteBalance: [String] {
        canonical.map(\.common) + aliases.keys.sorted() + whiteBalanceModes.filter { $0 != "auto" }
    }
}
