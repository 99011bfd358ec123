/// A `--camera [NAME=]URL` argument.
public struct CameraSpec: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        /// Sony Camera Remote API at `http://host:port/sony/camera`.
        case sony(host: String, port: Int)
        /// An emulated camera started in-process on a free loopback port.
        case emulator(vendor: String)
    }

    public var id: String
    public var source: Source

    public init(id: String, source: Source) {
        self.id = id
        self.source = source
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
            let vendor = String(lower.dropFirst("emulator:".count))
            guard vendor == "sony" else { throw .unsupported(url, "emulated vendors: sony") }
            return CameraSpec(id: id, source: .emulator(vendor: vendor))
        }
        if lower.hasPrefix("sony://") {
            var rest = String(url.dropFirst("sony://".count))
            if rest.hasSuffix("/") { rest.removeLast() }
            guard !rest.isEmpty, !rest.contains("/") else { throw .badURL(url, "expected sony://HOST[:PORT]") }
            guard let (host, port) = splitHostPort(rest, defaultPort: 8080) else {
                throw .badURL(url, "expected sony://HOST[:PORT] with a port from 1 to 65535")
            }
            return CameraSpec(id: id, source: .sony(host: host, port: port))
        }
        if let scheme = url.split(separator: ":").first, ["bandit", "panasonic", "ptpip"].contains(scheme.lowercased()) {
            throw .unsupported(url, "\(scheme):// cameras are not supported yet; supported: sony://HOST[:PORT], emulator:sony")
        }
        throw .badURL(url, "expected sony://HOST[:PORT] or emulator:sony")
    }

    /// Camera ids are used in RTSP paths, file names and URLs: letters, digits, '-' and '_'.
    public static func isValidID(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 64 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    static func splitHostPort(_ s: String, defaultPort: Int) -> (String, Int)? {
        var host = s
        var port = defaultPort
        if let colon = s.lastIndex(of: ":"), !s.hasSuffix("]") {
            host = String(s[..<colon])
            guard let p = Int(s[s.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "@" }) else { return nil }
        return (host, port)
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
