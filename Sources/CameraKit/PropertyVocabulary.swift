/// The names of camera properties, the same for every vendor.
public enum PropertyName: String, Sendable, CaseIterable, Codable {
    case whiteBalance
    case iso
    case shutterSpeed
    case aperture
    case exposureCompensation
    case focusMode
}

/// A property value in the common vocabulary: a string (`"auto"`, `"1/250"`, `"5.6"`, `"af-s"`) or a
/// number (`400`, `-0.7`). JSON gives either; both compare by their canonical text.
public enum PropertyValue: Sendable, Hashable, CustomStringConvertible {
    case text(String)
    case number(Double)

    /// Canonical text: numbers without a trailing `.0`, EV with one decimal.
    public var description: String {
        switch self {
        case .text(let s): return s
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e9 { return String(Int(d)) }
            return String(d)
        }
    }
}

/// One property as the control API shows it.
public struct CameraProperty: Sendable, Hashable {
    public var name: PropertyName
    /// Current value in the common vocabulary (nil when the camera has not said yet).
    public var value: PropertyValue?
    /// What the camera itself calls the current value.
    public var displayText: String?
    /// Values the camera offers now, in the common vocabulary.
    public var choices: [PropertyValue]
    public var writable: Bool

    public init(name: PropertyName, value: PropertyValue?, displayText: String?, choices: [PropertyValue], writable: Bool) {
        self.name = name
        self.value = value
        self.displayText = displayText
        self.choices = choices
        self.writable = writable
    }
}

/// Errors of the control channel, mapped by the API to HTTP statuses.
public enum CameraControlError: Error, Sendable, CustomStringConvertible {
    /// The value is not one the camera offers (HTTP 400; nothing was sent to the camera).
    case invalidValue(property: PropertyName, value: String, valid: [String])
    /// The camera has no such property (HTTP 400... or 404 for an unknown name).
    case notSupported(String)
    /// The camera refused (HTTP 502), with its own code and message.
    case camera(code: Int, message: String)
    /// The camera could not be reached or is not connected (HTTP 503).
    case unavailable(String)
    /// The camera refused an action in its current state (wrong mode, card full…) (HTTP 409).
    case refused(String)
    /// What was asked for is not (or no longer) on the camera: a file, its thumbnail (HTTP 404).
    case notFound(String)

    public var description: String {
        switch self {
        case .invalidValue(let p, let v, let valid):
            return "\(p.rawValue): '\(v)' is not offered by the camera; valid values: \(valid.joined(separator: ", "))"
        case .notSupported(let what): return "not supported: \(what)"
        case .camera(let code, let message): return "camera error \(code): \(message)"
        case .unavailable(let why): return "camera unavailable: \(why)"
        case .refused(let why): return "camera refused: \(why)"
        case .notFound(let what): return "not on the camera: \(what)"
        }
    }
}

/// Common white-balance presets.
public enum WhiteBalancePreset: String, Sendable, CaseIterable {
    case auto, daylight, shade, cloudy, tungsten, fluorescent, flash, custom
}

/// Common focus modes.
public enum FocusModeValue: String, Sendable, CaseIterable {
    case afS = "af-s"
    case afC = "af-c"
    case mf
    case dmf
}

/// Helpers for the common numeric vocabularies.
public enum CommonValues {
    /// EV values compare on a 1/6-stop grid, so "-0.7" matches Sony's -2/3 EV (-0.666…).
    public static func sameEV(_ a: Double, _ b: Double) -> Bool { abs(a - b) < 0.06 }

    /// EV shown with one decimal ("-0.7", "0", "+1.3" → "1.3").
    public static func evText(_ v: Double) -> String {
        let r = (v * 10).rounded() / 10
        if r == r.rounded() { return String(Int(r)) }
        return String(r)
    }

    /// Parses a property value from text as the CLI gives it: numbers become numbers except where
    /// the vocabulary is textual (shutter speed, aperture are strings like "1/250", "5.6").
    public static func parse(_ text: String, for name: PropertyName) -> PropertyValue {
        switch name {
        case .iso, .exposureCompensation:
            if let d = Double(text) { return .number(d) }
            return .text(text.lowercased())
        case .whiteBalance, .focusMode:
            return .text(text.lowercased())
        case .shutterSpeed, .aperture:
            return .text(text)
        }
    }
}
