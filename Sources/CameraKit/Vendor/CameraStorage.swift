/// What a camera says about its card: whether one is in, full, write-protected, in error or
/// being written, and how many more pictures fit. Each field is nil when the camera does not say.
public struct CameraStorage: Sendable, Hashable {
    public var mounted: Bool?
    public var full: Bool?
    public var writeProtected: Bool?
    public var error: Bool?
    public var writing: Bool?
    public var remainingShots: Int?

    public init(mounted: Bool? = nil, full: Bool? = nil, writeProtected: Bool? = nil, error: Bool? = nil,
                writing: Bool? = nil, remainingShots: Int? = nil) {
        self.mounted = mounted
        self.full = full
        self.writeProtected = writeProtected
        self.error = error
        self.writing = writing
        self.remainingShots = remainingShots
    }
}

/// A driver that knows the state of the camera's card (as the camera last reported it).
public protocol StorageReporting: Sendable {
    var storage: CameraStorage? { get }
}
