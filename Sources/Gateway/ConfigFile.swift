import Foundation
import MediaKit
import Yams

/// `livegate run --config FILE`: the YAML file (Yams parses it, Codable reads it). Keys are the `run`
/// flags in camelCase; `cameras` is a list of `{name, url, overlay, record, push}`. Every error names
/// the line and the key. Precedence: flags over `LIVEGATE_*` environment variables
/// (`ConfigEnvironment`) over the file over the defaults (the CLI's `Run.settings`).
public struct ConfigFile: Decodable, Sendable, Equatable {
    public var listen: String?
    public var rtspPort: Int?
    public var httpPort: Int?
    public var hls: Bool?
    public var hlsDir: String?
    public var record: String?
    public var captures: String?
    public var segmentSeconds: Int?
    public var overlay: String?
    public var fps: Int?
    public var linger: Int?
    public var logLevel: String?
    public var v4l2: String?
    public var pipewire: String?
    public var token: String?
    public var allowedHosts: [String]?
    public var allowedOrigins: [String]?
    public var cameras: [Camera]?

    public struct Camera: Decodable, Sendable, Equatable {
        public var name: String?
        public var url: String
        public var overlay: String?
        public var record: Bool?
        /// One URL or a list.
        public var push: PushList?

        static let keys = ["name", "url", "overlay", "record", "push"]
    }

    public init() {}

    /// The keys a file may use at the top level.
    public static let keys = ["listen", "rtspPort", "httpPort", "hls", "hlsDir", "record", "captures",
                              "segmentSeconds", "overlay", "fps", "linger", "logLevel", "v4l2", "pipewire", "token", "allowedHosts", "allowedOrigins", "cameras"]

    /// Reads a file; the error names the file, the line and the key.
    public static func load(path: String) throws(ConfigError) -> ConfigFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read (permission? not UTF-8?)" : "does not exist"
            throw ConfigError(file: path, line: nil, message: "the config file \(reason)")
        }
        return try parse(text, file: path)
    }

    /// Parses the text of a config file (`file` only names it in errors).
    public static func parse(_ text: String, file: String = "config") throws(ConfigError) -> ConfigFile {
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: text) else { return ConfigFile() }
            root = node
        } catch let error as YamlError {
            throw ConfigError(file: file, line: Self.line(of: error), message: "not valid YAML: \(Self.problem(of: error))")
        } catch {
            throw ConfigError(file: file, line: nil, message: "not valid YAML: \(error)")
        }
        guard let top = root.mapping else {
            throw ConfigError(file: file, line: root.mark?.line, message: "the file must be a mapping of keys (listen:, cameras: …)")
        }
        try checkKeys(top, allowed: keys, file: file, context: "")
        if let cams = top["cameras"] {
            guard let list = cams.sequence else {
                throw ConfigError(file: file, line: cams.mark?.line, message: "'cameras' must be a list of {name, url}")
            }
            for (i, item) in list.enumerated() {
                guard let m = item.mapping else {
                    throw ConfigError(file: file, line: item.mark?.line,
                                      message: "cameras[\(i)] must be a mapping like {name: left, url: \"sony://10.0.0.5\"}")
                }
                try checkKeys(m, allowed: Camera.keys, file: file, context: "cameras[\(i)].")
                if m["url"] == nil {
                    throw ConfigError(file: file, line: item.mark?.line, message: "cameras[\(i)] has no 'url'")
                }
            }
        }
        let config: ConfigFile
        do {
            config = try YAMLDecoder().decode(ConfigFile.self, from: root)
        } catch let error as DecodingError {
            throw Self.explain(error, root: root, file: file)
        } catch {
            throw ConfigError(file: file, line: nil, message: "\(error)")
        }
        try config.validate(root: root, file: file)
        return config
    }

    /// Unknown keys are errors (a typo would otherwise be ignored silently).
    static func checkKeys(_ m: Node.Mapping, allowed: [String], file: String, context: String) throws(ConfigError) {
        for (key, _) in m {
            guard let k = key.string else {
                throw ConfigError(file: file, line: key.mark?.line, message: "keys must be words")
            }
            if !allowed.contains(k) {
                let hint = allowed.first { $0.lowercased() == k.lowercased().replacingOccurrences(of: "_", with: "").replacingOccurrences(of: "-", with: "") }
                throw ConfigError(file: file, line: key.mark?.line, key: context + k,
                                  message: "unknown key" + (hint.map { "; did you mean '\($0)'?" } ?? "; known keys: \(allowed.joined(separator: ", "))"))
            }
        }
    }

    /// A value livegate refuses: its key (under `cameras[camera]` when `camera` is set) and why.
    public struct Problem: Sendable, Equatable {
        public var key: String
        public var camera: Int?
        public var message: String
    }

    /// The first value livegate refuses. The same rules serve the file, the environment and the
    /// command line (each caller names the key its own way).
    public func problem() -> Problem? {
        func bad(_ key: String, _ message: String, camera: Int? = nil) -> Problem { Problem(key: key, camera: camera, message: message) }
        for (key, port) in [("rtspPort", rtspPort), ("httpPort", httpPort)] {
            if let port, !(1...65535).contains(port) { return bad(key, "must be 1…65535, got \(port)") }
        }
        if let overlay, !["af", "none"].contains(overlay) { return bad("overlay", "must be af or none, got '\(overlay)'") }
        if let fps, !(1...120).contains(fps) { return bad("fps", "must be 1…120, got \(fps)") }
        if let s = segmentSeconds, !(5...86_400).contains(s) { return bad("segmentSeconds", "must be 5…86400, got \(s)") }
        if let l = linger, l < 0 { return bad("linger", "must be 0 or more seconds, got \(l)") }
        if let t = token, t.count < 16 || !t.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ":" }) {
            return bad("token", "must be at least 16 printable characters without spaces or ':' (livegate token makes one)")
        }
        for o in allowedOrigins ?? [] where AccessPolicy.normalizedOrigin(o) == nil {
            return bad("allowedOrigins", "'\(o.prefix(100))' is not an origin: scheme://host[:port] with http or https and no path")
        }
        if let level = logLevel, !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) {
            return bad("logLevel", "must be trace, debug, info, notice, warning, error or critical, got '\(level)'")
        }
        // The node name goes into a GStreamer launch line: nothing that could end or extend it.
        if let n = pipewire, n.isEmpty || !n.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) {
            return bad("pipewire", "may only use letters, digits, '-', '_' and '.'")
        }
        for (i, c) in (cameras ?? []).enumerated() {
            if let o = c.overlay, !["af", "none"].contains(o) { return bad("overlay", "must be af or none, got '\(o)'", camera: i) }
            if let n = c.name, !CameraSpec.isValidID(n) {
                return bad("name", "'\(n)' may only use letters, digits, '-' and '_'", camera: i)
            }
            do { _ = try CameraSpec.parse(c.url, index: i) } catch { return bad("url", "\(error)", camera: i) }
            for u in c.push?.urls ?? [] {
                do { _ = try PushOutput.check(u) } catch { return bad("push", "\(error)", camera: i) }
            }
        }
        return nil
    }

    /// These settings with every value `other` sets put over them (the layers: file, environment, flags).
    public func overridden(by other: ConfigFile) -> ConfigFile {
        var c = self
        func take<T>(_ key: WritableKeyPath<ConfigFile, T?>) {
            if let v = other[keyPath: key] { c[keyPath: key] = v }
        }
        take(\.listen); take(\.rtspPort); take(\.httpPort); take(\.hls); take(\.hlsDir); take(\.record)
        take(\.captures); take(\.segmentSeconds); take(\.overlay); take(\.fps); take(\.linger); take(\.logLevel)
        take(\.v4l2); take(\.pipewire); take(\.token); take(\.allowedHosts); take(\.allowedOrigins); take(\.cameras)
        return c
    }

    /// The `run` flag of a key: `rtspPort` → `--rtsp-port`.
    public static func flag(_ key: String) -> String {
        "--" + key.map { $0.isUppercase ? "-" + $0.lowercased() : String($0) }.joined()
    }

    /// Values Codable accepted but livegate does not, with the line they are on.
    func validate(root: Node, file: String) throws(ConfigError) {
        guard let p = problem() else { return }
        var node: Node? = root
        if let camera = p.camera { node = root["cameras"]?.sequence.flatMap { camera < $0.count ? $0[camera] : nil } }
        let line = node?.mapping?.first { $0.key.string == p.key }?.value.mark?.line
        throw ConfigError(file: file, line: line, key: p.camera.map { "cameras[\($0)].\(p.key)" } ?? p.key, message: p.message)
    }

    /// The cameras of the file as specs (ids default to cam0, cam1 … by position).
    public func cameraSpecs() throws(CameraSpecError) -> [CameraSpec] {
        try (cameras ?? []).enumerated().map { (i, c) throws(CameraSpecError) -> CameraSpec in
            var spec = try CameraSpec.parse(c.url, index: i)
            if let n = c.name { spec.id = n }
            spec.overlay = c.overlay.map { $0 == "af" }
            spec.record = c.record
            spec.push = c.push?.urls ?? []
            return spec
        }
    }

    static func explain(_ error: DecodingError, root: Node, file: String) -> ConfigError {
        let (path, message): ([any CodingKey], String) = {
            switch error {
            case .typeMismatch(let type, let ctx): return (ctx.codingPath, "must be \(describe(type))")
            case .valueNotFound(let type, let ctx): return (ctx.codingPath, "must be \(describe(type)), found nothing")
            case .keyNotFound(let key, let ctx): return (ctx.codingPath + [key], "is missing")
            case .dataCorrupted(let ctx): return (ctx.codingPath, "must be \(ctx.debugDescription.lowercased().contains("int") ? "a whole number" : "valid"): \(ctx.debugDescription)")
            @unknown default: return ([], "\(error)")
            }
        }()
        var node: Node? = root
        var names: [String] = []
        for key in path {
            if let i = key.intValue, let seq = node?.sequence {
                node = i < seq.count ? seq[i] : nil
                names.append("[\(i)]")
            } else {
                node = node?.mapping?.first { $0.key.string == key.stringValue }?.value
                names.append((names.isEmpty ? "" : ".") + key.stringValue)
            }
        }
        return ConfigError(file: file, line: node?.mark?.line, key: names.joined(), message: message)
    }

    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: return "a whole number"
        case is Bool.Type: return "true or false"
        case is String.Type: return "a string"
        case is [Camera].Type: return "a list of cameras"
        default: return "a \(type)"
        }
    }

    /// The line where the broken construct starts (libyaml's context mark: the `[` that is never
    /// closed), else where the parser gave up.
    static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(let ctx, _, let mark, _), .parser(let ctx, _, let mark, _), .composer(let ctx, _, let mark, _):
            return ctx?.mark.line ?? mark.line
        default: return nil
        }
    }

    static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(let ctx, let problem, let mark, _), .parser(let ctx, let problem, let mark, _), .composer(let ctx, let problem, let mark, _):
            var text = [ctx.map { "\($0.text)" }, problem].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ", ")
            if let ctx, ctx.mark.line != mark.line { text += " (noticed at line \(mark.line), column \(mark.column))" }
            return text
        default: return "\(error)"
        }
    }
}

/// A config file that cannot be used: `FILE:LINE: KEY: message`.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Equatable {
    public var file: String
    public var line: Int?
    public var key: String?
    public var message: String

    public init(file: String, line: Int?, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var s = file
        if let line { s += ":\(line)" }
        s += ": "
        if let key { s += "\(key): " }
        return s + message
    }
}

/// The environment's share of the settings: `LIVEGATE_<KEY>` for each file key in upper snake case
/// (`LIVEGATE_HTTP_PORT`, `LIVEGATE_RECORD`…), `LIVEGATE_CAMERAS` as a comma-separated list of
/// `[NAME=]URL`, `LIVEGATE_CONFIG` naming the file.
public enum ConfigEnvironment {
    /// The variable name for a file key.
    public static func variable(_ key: String) -> String {
        var out = "LIVEGATE_"
        for c in key {
            if c.isUppercase { out += "_" }
            out += c.uppercased()
        }
        return out
    }

    /// The file's values overridden by the environment's; an unusable value names its variable.
    public static func apply(_ env: [String: String], to file: ConfigFile) throws(ConfigError) -> ConfigFile {
        var c = ConfigFile()
        func text(_ key: String) -> String? {
            guard let v = env[variable(key)], !v.isEmpty else { return nil }
            return v
        }
        func int(_ key: String) throws(ConfigError) -> Int? {
            guard let v = text(key) else { return nil }
            guard let n = Int(v) else { throw ConfigError(file: "environment", line: nil, key: variable(key), message: "must be a whole number, got '\(v)'") }
            return n
        }
        func bool(_ key: String) throws(ConfigError) -> Bool? {
            guard let v = text(key)?.lowercased() else { return nil }
            switch v {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: throw ConfigError(file: "environment", line: nil, key: variable(key), message: "must be true or false, got '\(v)'")
            }
        }
        if let v = text("listen") { c.listen = v }
        if let v = try int("rtspPort") { c.rtspPort = v }
        if let v = try int("httpPort") { c.httpPort = v }
        if let v = try bool("hls") { c.hls = v }
        if let v = text("hlsDir") { c.hlsDir = v }
        if let v = text("record") { c.record = v }
        if let v = text("captures") { c.captures = v }
        if let v = try int("segmentSeconds") { c.segmentSeconds = v }
        if let v = text("overlay") { c.overlay = v }
        if let v = try int("fps") { c.fps = v }
        if let v = try int("linger") { c.linger = v }
        if let v = text("logLevel") { c.logLevel = v }
        if let v = text("v4l2") { c.v4l2 = v }
        if let v = text("pipewire") { c.pipewire = v }
        if let v = text("token") { c.token = v }
        // A comma-separated list, each item trimmed.
        func list(_ key: String) -> [String]? {
            text(key).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        }
        if let v = list("allowedHosts") { c.allowedHosts = v }
        if let v = list("allowedOrigins") { c.allowedOrigins = v }
        if let v = list("cameras") {
            c.cameras = v.map { s in
                if let eq = s.firstIndex(of: "="), !s[..<eq].contains(":") {
                    return ConfigFile.Camera(name: String(s[..<eq]), url: String(s[s.index(after: eq)...]))
                }
                return ConfigFile.Camera(name: nil, url: s)
            }
        }
        // The same rules as the file's, naming the variable.
        if let p = c.problem() {
            throw ConfigError(file: "environment", line: nil, key: variable(p.camera == nil ? p.key : "cameras"), message: p.message)
        }
        return file.overridden(by: c)
    }
}

extension ConfigFile.Camera {
    init(name: String?, url: String) {
        self.name = name
        self.url = url
    }
}

/// `push:` as one URL or a list of them.
public struct PushList: Decodable, Sendable, Equatable {
    public var urls: [String]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let one = try? c.decode(String.self) {
            urls = [one]
        } else {
            urls = try c.decode([String].self)
        }
    }
}
