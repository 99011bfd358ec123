/// What livegate can do with a vendor's cameras. The API reports it per camera and answers
/// 501 Not Implemented, with the vendor's reason, for what is missing.
public struct CameraCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Live-view frames.
    public static let liveView = CameraCapabilities(rawValue: 1 << 0)
    /// The camera's AF areas in the live view.
    public static let afAreas = CameraCapabilities(rawValue: 1 << 1)
    /// Focus at a point of the image.
    public static let touchAF = CameraCapabilities(rawValue: 1 << 2)
    /// Fire the shutter.
    public static let shutter = CameraCapabilities(rawValue: 1 << 3)
    /// Receive the images the camera sends after a shot.
    public static let transfer = CameraCapabilities(rawValue: 1 << 4)
    /// Browse and download the card.
    public static let files = CameraCapabilities(rawValue: 1 << 5)
    /// Changes the camera announces by itself (property, state).
    public static let events = CameraCapabilities(rawValue: 1 << 6)

    /// Every capability with its API name, in a stable order.
    public static let named: [(name: String, capability: CameraCapabilities)] = [
        ("liveView", .liveView), ("afAreas", .afAreas), ("touchAF", .touchAF), ("shutter", .shutter),
        ("transfer", .transfer), ("files", .files), ("events", .events),
    ]

    /// `{"liveView": true, …}` for every capability.
    public var byName: [(String, Bool)] { Self.named.map { ($0.name, contains($0.capability)) } }
}
