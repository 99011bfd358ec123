public import Foundation

/// Where tests find the repository, the shared kit beside it and the programs they drive; nothing
/// here is an absolute path of this machine.
public enum Locations {
    /// The package root (this file is Tests/TestSupport/Locations.swift).
    public static let repository: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared kit: `$LIVEGATE_SHARED`, or `../shared` beside the package root.
    public static let shared: String = {
        if let env = ProcessInfo.processInfo.environment["LIVEGATE_SHARED"], !env.isEmpty { return env }
        return repository.deletingLastPathComponent().appendingPathComponent("shared").standardized.path
    }()

    /// A path inside the shared kit.
    public static func shared(_ relative: String) -> String { shared + "/" + relative }

    /// True when that file or folder of the shared kit exists.
    public static func sharedHas(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: shared(relative))
    }

    /// A fixture of the shared kit (`fixtures/RELATIVE`) when it exists.
    public static func fixture(_ relative: String) -> String? {
        let path = shared("fixtures/" + relative)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// A program on PATH, then in the system folders that are not on every user's PATH (nginx lives
    /// in /usr/sbin).
    public static func program(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// A python3 that can import `module` (the GStreamer tests need the `gi` bindings, which Debian's
    /// python3-gi gives its own interpreter only): the one on PATH first, then the system's.
    public static func python(importing module: String) -> String? {
        var tried = Set<String>()
        for candidate in [program("python3"), "/usr/bin/python3"].compactMap({ $0 }) where tried.insert(candidate).inserted {
            guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
            if run(candidate, ["-c", "import \(module)"])?.status == 0 { return candidate }
        }
        return nil
    }

    /// nginx's module folder as nginx itself reports it (`nginx -V`: `--modules-path=`), or its
    /// prefix's `modules`.
    public static func nginxModule(_ file: String) -> String? {
        guard let nginx = program("nginx"), let out = run(nginx, ["-V"])?.output else { return nil }
        func option(_ name: String) -> String? {
            guard let r = out.range(of: "--\(name)=") else { return nil }
            return String(out[r.upperBound...].prefix { !$0.isWhitespace })
        }
        let dirs = [option("modules-path"), option("prefix").map { $0 + "/modules" }].compactMap { $0 }
        return dirs.map { $0 + "/" + file }.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Runs a short program to its end: its exit status and what it wrote (stdout and stderr).
    private static func run(_ path: String, _ args: [String]) -> (status: Int32, output: String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
