import ArgumentParser
import Gateway

/// `livegate token`: a new random token for `--token` / `LIVEGATE_TOKEN` / `token:`.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a new random access token (32 random bytes, base64url).",
        discussion: """
            Use it as LIVEGATE_TOKEN=… (or token: in the config file) for `livegate run --listen 0.0.0.0`. Clients send \
            it as `Authorization: Bearer TOKEN` or `?token=TOKEN`; RTSP players as user `livegate` with the token as \
            password (rtsp://livegate:TOKEN@HOST:8554/cam0); the page is opened once as http://HOST:8080/?token=TOKEN.
            """)

    func run() throws {
        print(AccessPolicy.generateToken())
    }
}
