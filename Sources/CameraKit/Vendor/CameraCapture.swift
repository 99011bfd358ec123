/// A still (or other file) the camera produced, fetched whole: its name on the camera and its bytes
/// exactly as the camera sent them.
public struct CameraImage: Sendable {
    /// The camera's file name (`DSC01234.JPG`); only the last path component is ever used.
    public var name: String
    public var bytes: [UInt8]
    /// True when the camera triggered it (a shot on the body), false for a shot livegate asked for.
    public var fromBody: Bool

    public init(name: String, bytes: [UInt8], fromBody: Bool) {
        self.name = name
        self.bytes = bytes
        self.fromBody = fromBody
    }
}

/// What a driver reports about an image the camera announced by itself.
public enum CameraImageEvent: Sendable {
    /// Fetched whole: save it.
    case image(CameraImage)
    /// Announced but could not be fetched (after retries): a lost image, to report loudly.
    case lost(name: String, reason: String)
}

/// Where a driver hands the images it fetched by itself (shots taken on the body). The driver
/// awaits it: the image is saved when it returns.
public typealias CameraImageSink = @Sendable (CameraImageEvent) async -> Void

/// Still capture. Vendors without it keep the defaults (not supported).
public protocol StillCapturing: AnyObject, Sendable {
    /// Fires the shutter (after a half-press when `autofocus` and the camera has one) and answers
    /// with the images the shot produced, fetched from the camera. Refusals (wrong mode, card full)
    /// throw `CameraControlError.refused` with the camera's reason; live view resumes by itself.
    func capture(autofocus: Bool) async throws -> [CameraImage]
    /// Installs the sink for images the camera announces by itself. Called before `start`.
    func setImageSink(_ sink: @escaping CameraImageSink)
}

/// Runs `body` up to `attempts` times, waiting 300 ms × attempt between tries (a camera still
/// writing the file, a dropped Wi-Fi packet); throws the last error.
func retrying<T>(attempts: Int = 3, _ body: () async throws -> T) async throws -> T {
    var attempt = 0
    while true {
        do {
            return try await body()
        } catch {
            attempt += 1
            // A stopping driver does not try again (its requests run to their deadline regardless).
            guard attempt < attempts, !Task.isCancelled else { throw error }
            try? await Task.sleep(for: .milliseconds(300 * attempt))
        }
    }
}

/// Names of images already handled (each announced image is fetched once); the oldest are
/// forgotten past `limit`.
struct HandledImages: Sendable {
    private var names: [String] = []
    static let limit = 4096

    /// Marks `name` as handled; false when it already was.
    mutating func claim(_ name: String) -> Bool {
        guard !names.contains(name) else { return false }
        names.append(name)
        if names.count > Self.limit { names.removeFirst(1024) }
        return true
    }
}
