import ArgumentParser
import Foundation

/// `livegate events [--camera ID]`: the gateway's event stream as JSON Lines.
struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the cameras' events (state, property, af, capture, capture-failed) as JSON Lines until stopped.",
        discussion: "Each line is the event's data with its name under \"event\".")

    @OptionGroup var options: APIOptions
    @Option(name: .long, help: "Only this camera's events.") var camera: String?

    func run() async throws {
        let path = "/api/v1/events" + (camera.map { "?camera=\(escape($0))" } ?? "")
        let client = try options.client()
        var pending = ""
        var event = "message"
        var status = 0
        try await client.stream(path, head: { s, _ in
            status = s
            guard s == 200 else { throw CLIError("HTTP \(s) from \(client.base)\(path)") }
        }, chunk: { buf in
            pending += String(decoding: buf.readableBytesView, as: UTF8.self)
            while let nl = pending.firstIndex(of: "\n") {
                let line = String(pending[..<nl])
                pending.removeSubrange(...nl)
                if line.hasPrefix("event: ") {
                    event = String(line.dropFirst(7))
                } else if line.hasPrefix("data: {") {
                    // The data is one JSON object: the event's name goes in as its first key.
                    let rest = line.dropFirst(7).drop { $0 == " " }
                    let name = String(decoding: (try? JSONEncoder().encode(event)) ?? Data("\"\"".utf8), as: UTF8.self)
                    let out = "{\"event\":\(name)" + (rest.hasPrefix("}") ? "" : ",") + rest + "\n"
                    FileHandle.standardOutput.write(Data(out.utf8))  // unbuffered: each event as it comes
                } else if line.isEmpty {
                    event = "message"
                }
            }
        })
        if status == 200 { throw CLIError("the gateway closed the event stream") }
    }
}
