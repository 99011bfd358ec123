import Foundation

/// Where the shared fixtures and conformance captures live: `$LIVEGATE_SHARED`, else `../shared`
/// beside the repository (as `make test` expects it).
public enum BenchPaths {
    public static var shared: String {
        if let s = ProcessInfo.processInfo.environment["LIVEGATE_SHARED"], !s.isEmpty { return s }
        // …/<repo>/Benchmarks/Sources/BenchSupport/Paths.swift → …/shared
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return repo.deletingLastPathComponent().appendingPathComponent("shared").path
    }

    public static func read(_ relative: String) throws -> [UInt8] {
        let path = shared + "/" + relative
        guard let d = FileManager.default.contents(atPath: path) else {
            throw BenchError("cannot read \(path) (set LIVEGATE_SHARED to the shared/ folder)")
        }
        return [UInt8](d)
    }
}

public struct BenchError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}
