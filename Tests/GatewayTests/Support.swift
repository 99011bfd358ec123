import Foundation
import Testing

/// Runs a program with a deadline; returns exit status and output (stdout + stderr).
func runProcess(_ path: String, _ args: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = out
    p.standardInput = FileHandle.nullDevice
    let collected = OutputBox()
    out.fileHandleForReading.readabilityHandler = { h in collected.append(h.availableData) }
    try p.run()
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(20_000) }
    if p.isRunning {
        p.terminate()
        p.waitUntilExit()
    }
    out.fileHandleForReading.readabilityHandler = nil
    collected.append(out.fileHandleForReading.readDataToEndOfFile())
    return (p.terminationStatus, collected.text)
}

final class OutputBox: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ d: Data) { lock.lock(); data.append(d); lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }
}

/// Finds a program on PATH.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// The repository root (this file is Tests/GatewayTests/Support.swift).
let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The `livegate` binary `swift build` made beside the tests.
func livegateBinary() -> String? {
    for config in ["debug", "release"] {
        let p = repoRoot.appendingPathComponent(".build/\(config)/livegate").path
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

func temporaryDirectory(_ prefix: String) throws -> URL {
    let d = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
    return d
}
