import Foundation

/// The shared folder beside the repository (`../shared` from the package root, or
/// `$LIVEGATE_SHARED`): real camera bytes and conformance captures that tests read in place and
/// skip, with their reason, when it is absent.
enum Shared {
    static let root: String = {
        if let env = ProcessInfo.processInfo.environment["LIVEGATE_SHARED"], !env.isEmpty { return env }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()  // Tests/CameraKitTests
            .deletingLastPathComponent().deletingLastPathComponent()        // the package root
            .deletingLastPathComponent().appendingPathComponent("shared").standardized.path
    }()

    /// A path inside the shared folder.
    static func path(_ relative: String) -> String { root + "/" + relative }

    /// True when that file or folder exists.
    static func has(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }
}
