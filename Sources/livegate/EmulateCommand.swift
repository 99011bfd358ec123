import ArgumentParser
import CameraEmulators
import Foundation
import Gateway
import Logging
import NIOPosix
import ServiceLifecycle
import Vendors

/// `livegate emulate sony --port P`: a camera on loopback speaking the vendor's protocol.
struct Emulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an emulated camera on loopback that speaks the vendor's real protocol.",
        discussion: """
            Each emulator serves a test pattern (frame counter, moving AF box) in its vendor's real \
            live-view format and answers its control requests. Vendors: \(Vendors.emulatorNames.joined(separator: ", ")).
            """)

    @Argument(help: ArgumentHelp("Vendor to emulate: \(Vendors.emulatorNames.joined(separator: ", ")).", valueName: "vendor"))
    var vendor: String
    @Option(name: .long, help: "Port to listen on (0 = any free port).") var port: Int = 8080
    @Option(name: .long, help: "Address to listen on.") var listen: String = "127.0.0.1"
    @Option(name: .long, help: "Frames per second.") var fps: Double = 30
    @Option(name: .long, help: "Live-view size WIDTHxHEIGHT.") var size: String = "768x432"
    @Flag(name: .long, help: """
        Behave like a real body, slow and moody: mode switches take 2 s with "busy" answers meanwhile,         the first frame comes 1.5 s after the stream starts, every third property set is refused as busy         once, card listings take 300 ms a page (every emulator).
        """) var moody = false

    func parsedSize() throws -> (Int, Int) {
        guard let (w, h) = evenSize(size, width: 64...4096, height: 64...4096) else {
            throw ValidationError("--size must be WIDTHxHEIGHT with even sides from 64 to 4096, got '\(size)'")
        }
        return (w, h)
    }

    func validate() throws {
        guard Vendors.emulatorNames.contains(vendor) else {
            throw ValidationError("unknown vendor '\(vendor)'; emulated vendors: \(Vendors.emulatorNames.joined(separator: ", "))")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard fps > 0, fps <= 120 else { throw ValidationError("--fps must be in (0, 120]") }
        _ = try parsedSize()
    }

    func run() async throws {
        let (w, h) = try parsedSize()
        let request = EmulatorRequest(host: listen, port: port, fps: fps, width: w, height: h,
                                      group: MultiThreadedEventLoopGroup.singleton, mood: moody ? .moody : .prompt)
        guard let emu = try Vendors.makeEmulator(named: vendor, request) else {
            throw ValidationError("no emulator for \(vendor)")
        }
        let banner = "\(vendor) emulator listening on \(listen):%d, \(w)x\(h) at \(fps) fps\(moody ? ", moody" : "")"
        let logger = Logger(label: "livegate.emulate")
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: EmulatorService(emulator: emu, banner: banner))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// One emulated camera as a service: started, serving until graceful shutdown (SIGINT/SIGTERM), stopped.
struct EmulatorService: Service {
    let emulator: any CameraEmulator
    /// The first line printed once it listens; `%d` is the bound port.
    let banner: String

    func run() async throws {
        let bound = try await emulator.start()
        print(banner.replacingOccurrences(of: "%d", with: "\(bound)"))
        print("use: livegate run --camera \(emulator.cameraURL)")
        fflush(nil)
        try? await gracefulShutdown()
        await emulator.stop()
    }
}

/// `WIDTHxHEIGHT` with both sides even and in their ranges (a picture size flag); nil otherwise.
func evenSize(_ text: String, width: ClosedRange<Int>, height: ClosedRange<Int>) -> (Int, Int)? {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), width.contains(w), height.contains(h),
          w % 2 == 0, h % 2 == 0 else { return nil }
    return (w, h)
}
