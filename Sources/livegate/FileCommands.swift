import ArgumentParser
import Foundation
import GatewayAPI

/// `livegate files CAMERA`: the card's files.
struct Files: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the files on a camera's card through the control API.")

    @OptionGroup var options: APIOptions
    @Argument(help: "Camera id (cam0, …).") var camera: String
    @Option(name: .long, help: "First file to show (0-based).") var offset = 0
    @Option(name: .long, help: "At most this many files (1…1000).") var limit = 1000

    func run() async throws {
        let page = try await options.client().send(.GET, "/api/v1/cameras/\(escape(camera))/files?offset=\(offset)&limit=\(limit)",
                                                    as: CardFileList.self)
        for f in page.files {
            let size = "\(f.size)".padding(toLength: 12, withPad: " ", startingAt: 0)
            let kind = f.kind.padding(toLength: 6, withPad: " ", startingAt: 0)
            print("\(size)\(kind)\(f.date ?? "-")  \(f.path)")
        }
        print("\(page.files.count) of \(page.total) files")
    }
}

/// `livegate download CAMERA PATH [-o FILE]`: one file from the card, streamed to disk.
struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a file from a camera's card through the control API (progress on stderr).",
        discussion: "The bytes go to FILE.partial and are renamed to FILE once complete and the size checked; an existing FILE is never overwritten.")

    @OptionGroup var options: APIOptions
    @Argument(help: "Camera id (cam0, …).") var camera: String
    @Argument(help: "The file's path on the card, as `livegate files` shows it.") var path: String
    @Option(name: .shortAndLong, help: "Where to save it (default: the file's name, here).") var output: String?

    func run() async throws {
        let name = path.split(separator: "/").last.map(String.init) ?? "download"
        let target = output ?? name
        guard !FileManager.default.fileExists(atPath: target) else { throw CLIError("\(target) exists; not overwriting it") }
        let encoded = path.split(separator: "/").map { escape(String($0)) }.joined(separator: "/")
        let client = try options.client()
        let partial = target + ".partial"
        guard FileManager.default.createFile(atPath: partial, contents: nil), let out = FileHandle(forWritingAtPath: partial) else {
            throw CLIError("cannot write \(partial)")
        }
        var expected = -1, got = 0, lastShown = -1
        var errorBody: [UInt8] = []
        var status = 0
        do {
            try await client.stream("/api/v1/cameras/\(escape(camera))/files/\(encoded)", head: { s, length in
                status = s
                expected = length ?? -1
            }, chunk: { buf in
                guard status == 200 else {
                    if errorBody.count < 4096 { errorBody += buf.readableBytesView.prefix(4096 - errorBody.count) }
                    return
                }
                try out.write(contentsOf: Data(buf.readableBytesView))
                got += buf.readableBytes
                if expected > 0 {
                    let pct = got * 100 / expected
                    if pct != lastShown {
                        lastShown = pct
                        FileHandle.standardError.write(Data("\r\(name): \(pct)% (\(got) of \(expected) bytes)".utf8))
                    }
                }
            })
        } catch {
            try? out.close()
            try? FileManager.default.removeItem(atPath: partial)
            throw CLIError("download failed after \(got) bytes: \(GatewayClient.words(error))")
        }
        try out.synchronize()
        try out.close()
        guard status == 200 else {
            try? FileManager.default.removeItem(atPath: partial)
            throw GatewayClient.failure(status: status, body: Data(errorBody))
        }
        guard expected < 0 || got == expected else {
            try? FileManager.default.removeItem(atPath: partial)
            throw CLIError("the transfer stopped at \(got) of \(expected) bytes; nothing was saved")
        }
        guard link(partial, target) == 0 else {
            try? FileManager.default.removeItem(atPath: partial)
            throw CLIError("cannot save \(target): \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(atPath: partial)
        FileHandle.standardError.write(Data("\n".utf8))
        print("\(target)\t\(got) bytes")
    }
}
