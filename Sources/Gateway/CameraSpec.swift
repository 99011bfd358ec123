public import CameraKit
import Vendors

/// A `--camera [NAME=]URL` argument.
public struct CameraSpec: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// A real camera: `scheme://HOST[:PORT][?key=value&…]`.
        case camera(CameraURL)
        /// An emulated camera started in-process on a free loopback port.
        case emulator(vendor: String)
    }

    public var id: String
    public var source: Source
    /// Draw AF areas on this camera's decoded outputs (nil: the gateway's `overlay`).
    public var overlay: Bool?
    /// Record this camera when the gateway records (nil: yes).
    public var record: Bool?
    /// Media servers this camera's H.264 is pushed to (rtsp://, rtmp://, srt://).
    public var push: [String] = []

    public init(id: String, source: Source, overlay: Bool? = nil, record: Bool? = nil, push: [String] = []) {
        self.id = id
        self.source = source
        self.overlay = overlay
        self.record = record
        self.push = push
    }

    /// Parses `[NAME=]URL`; `index` gives the default id (cam0, cam1 …).
    public static func parse(_ text: String, index: Int) throws(CameraSpecError) -> CameraSpec {
        var id = "cam\(index)"
        var url = text
        if let eq = text.firstIndex(of: "="), !text[..<eq].contains(":") {
            id = String(text[..<eq])
            url = String(text[text.index(after: eq)...])
            guard isValidID(id) else { throw .badID(id) }
        }
        let lower = url.lowercased()
        if lower.hasPrefix("emulator:") {
            let name = String(lower.dropFirst("emulator:".count))
            guard Vendors.emulatorNames.contains(name) else {
                throw .unsupported(url, "emulated vendors: \(Vendors.emulatorNames.joined(separator: ", "))")
            }
            return CameraSpec(id: id, source: .emulator(vendor: name))
        }
        do {
            let (parsed, _) = try Vendors.parse(url)
            return CameraSpec(id: id, source: .camera(parsed))
        } catch {
            throw .badURL(error.url, error.reason)
        }
    }

    /// Camera ids are used in RTSP paths, file names and URLs: letters, digits, '-' and '_'.
    public static func isValidID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }
}

/// Why a `--camera` argument was refused.
public enum CameraSpecError: Error, Sendable, CustomStringConvertible {
    case badID(String)
    case badURL(String, String)
    case unsupported(String, String)

    public var description: String {
        switch self {
        case .badID(let id): return "camera name '\(id)' may only use letters, digits, '-' and '_'"
        case .badURL(let u, let why): return "camera URL '\(u)': \(why)"
        case .unsupported(let u, let why): return "camera URL '\(u)': \(why)"
        }
    }
}
