import Foundation
import Testing
import TestSupport

/// Rules about the sources themselves that the compiler does not check.
@Suite struct SourceRulesTests {
    static let root = Locations.repository

    /// Every module takes `Mutex` and `Atomic` from LiveViewCore: a file that imports Synchronization
    /// itself gets the standard Mutex even in ThreadSanitizer builds, whose contended hand-overs the
    /// sanitizer cannot see (LiveViewCore/Mutex.swift), and races it reports there are not real.
    @Test func onlyLiveViewCoreImportsSynchronization() throws {
        var offenders: [String] = []
        var files = 0
        for folder in ["Sources", "Tests"] {
            let base = Self.root.appendingPathComponent(folder)
            guard let walk = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let path as String in walk where path.hasSuffix(".swift") {
                if folder == "Sources" && path.hasPrefix("LiveViewCore/") { continue }
                files += 1
                let text = try String(contentsOf: base.appendingPathComponent(path), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    if let i = words.firstIndex(of: "import"), words.count > i + 1, words[i + 1] == "Synchronization",
                       words[..<i].allSatisfy({ $0.hasPrefix("@") || ["public", "internal", "package"].contains($0) }) {
                        offenders.append("\(folder)/\(path): \(line)")
                    }
                }
            }
        }
        #expect(files > 100, "found only \(files) Swift files under \(Self.root.path)")
        #expect(offenders.isEmpty, "import Mutex/Atomic through LiveViewCore instead: \(offenders)")
    }
}
