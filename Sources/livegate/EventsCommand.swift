import ArgumentParser
import CameraKit
import Foundation
import NIOPosix

/// `livegate events [--camera ID]`: the gateway's event stream as JSON Lines.
struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the cameras' events (state, property, af, capture, capture-failed) as JSON Lines until stopped.",
        discussion: "Each line is the event's data with its name under \"event\".")

    @OptionGroup var options: APIOptions
    @Option(name: .long, help: "Only this camera's events.") var camera: String?

    func run() async throws {
        let url = try options.url("/api/v1/events" + (camera.map { "?camera=\(escape($0))" } ?? ""))
        var pending = ""
        var event = "message"
        var status = 0
        try await HTTPClient(group: MultiThreadedEventLoopGroup.singleton).stream(url, headers: options.authHeaders, head: { s, _ in
            status = s
            guard s == 200 else { throw CLIError("HTTP \(s) from \(url)") }
        }, body: { buf in
            pending += String(decoding: buf.readableBytesView, as: UTF8.self)
            while let nl = pending.firstIndex(of: "\n") {
                let line = String(pending[..<nl])
                pending.removeSubrange(...nl)
                if line.hasPrefix("event: ") {
                    event = String(line.dropFirst(7))
                } else if line.hasPrefix("data: "), let data = line.dropFirst(6).data(using: .utf8),
                          var obj = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] {
                    obj["event"] = event
                    if var out = try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys]) {
                        out.append(0x0A)
                        FileHandle.standardOutput.write(out)  // unbuffered: each event as it comes
                    }
                } else if line.isEmpty {
                    event = "message"
                }
            }
        })
        if status == 200 { throw CLIError("the gateway closed the event stream") }
    }
}
