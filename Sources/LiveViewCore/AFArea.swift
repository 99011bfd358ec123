/// What kind of area a camera reports. The raw value is the name `livegate inspect`, the recorder's
/// sidecar and the control API print.
public enum AFKind: String, Sendable, Hashable, CaseIterable {
    case invalid
    case unknown
    case af
    case contrastAF = "contrast-af"
    case phaseAF = "phase-af"
    case face
    case eye
    case subject
    case tracking
    case mfAssist = "mf-assist"
    case box
    case cross
}

/// The state a camera reports for an AF area (focused, main, sub…). Raw values as printed.
public enum AFState: String, Sendable, Hashable, CaseIterable {
    case invalid
    case unknown
    case normal
    case main
    case sub
    case focused
    case focusing
    case notFocused = "not-focused"
    case selected
    case locked
    case unlocked
}

/// An axis-aligned rectangle in some camera's own coordinate space (floating point, top-left origin).
public struct CameraRect: Sendable, Hashable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// An integer rectangle in pixels of one JPEG (origin top-left).
public struct PixelRect: Sendable, Hashable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

extension PixelRect {
    /// This rectangle of a `width`×`height` picture, in the pixels of that picture turned by
    /// `degrees` clockwise (0, 90, 180, 270; anything else leaves it as it is).
    public func rotated(clockwise degrees: Int, width w: Int, height h: Int) -> PixelRect {
        switch degrees {
        case 90: return PixelRect(x: h - (y + height), y: x, width: height, height: width)
        case 180: return PixelRect(x: w - (x + width), y: h - (y + height), width: width, height: height)
        case 270: return PixelRect(x: y, y: w - (x + width), width: height, height: width)
        default: return self
        }
    }
}

/// One AF area: where it is in the JPEG's pixels, what it is, and the camera's own rectangle beside it.
public struct AFArea: Sendable, Hashable {
    public var pixels: PixelRect
    public var camera: CameraRect
    public var kind: AFKind
    public var state: AFState

    public init(pixels: PixelRect, camera: CameraRect, kind: AFKind, state: AFState) {
        self.pixels = pixels
        self.camera = camera
        self.kind = kind
        self.state = state
    }
}
