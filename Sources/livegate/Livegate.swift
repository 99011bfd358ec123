import ArgumentParser

/// The `livegate` command: `run` (the default), `emulate`, `inspect`, `get`, `set`, `capture`, `files`, `download`, `events`, `bench`.
@main
struct Livegate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "livegate",
        abstract: "Live-view streaming gateway: camera live view → RTSP, HLS, virtual webcam and recordings.",
        discussion: """
            With no subcommand, `livegate` runs the gateway on an emulated camera and prints the URLs to open.
            """,
        version: "0.1.0",
        subcommands: [Run.self, Emulate.self, Inspect.self, Discover.self, Get.self, SetCommand.self, Capture.self, Files.self, Download.self, Events.self, TokenCommand.self, Bench.self],
        defaultSubcommand: Run.self)
}
