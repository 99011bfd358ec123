/// One emulated frame: a JPEG and where the moving AF box is, as fractions (0…1) of the image.
public struct EmulatedFrame: Sendable {
    public var jpeg: [UInt8]
    public var width: Int
    public var height: Int
    /// AF box corners as fractions of the image: x1, y1, x2, y2.
    public var afBox: (x1: Double, y1: Double, x2: Double, y2: Double)
    /// True when the box is reported as focused.
    public var focused: Bool

    public init(jpeg: [UInt8], width: Int, height: Int, afBox: (x1: Double, y1: Double, x2: Double, y2: Double), focused: Bool) {
        self.jpeg = jpeg
        self.width = width
        self.height = height
        self.afBox = afBox
        self.focused = focused
    }
}

/// Makes the emulators' pictures. The real one draws a test pattern with libjpeg-turbo.
public protocol EmulatorFrameSource: AnyObject, Sendable {
    /// Frame number `index` (0, 1, 2 …).
    func frame(index: Int) -> EmulatedFrame
    /// Moves the AF box centre to a point given as fractions of the image (touch-AF).
    func focus(atX x: Double, y: Double)
}
