import ArgumentParser
import CameraEmulators
import Foundation
import Gateway
import NIOPosix
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

    func parsedSize() throws -> (Int, Int) {
        let parts = size.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (64...4096).contains(w), (64...4096).contains(h),
              w % 2 == 0, h % 2 == 0 else {
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
                                      group: MultiThreadedEventLoopGroup.singleton)
        guard let emu = try Vendors.makeEmulator(named: vendor, request) else {
            throw ValidationError("no emulator for \(vendor)")
        }
        let bound = try await emu.start()
        print("\(vendor) emulator listening on \(listen):\(bound), \(w)x\(h) at \(fps) fps")
        print("use: livegate run --camera \(emu.cameraURL)")
        fflush(nil)
        let stop = AsyncStream<Void> { cont in
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let src = DispatchSource.makeSignalSource(signal: sig, queue: .main)
                src.setEventHandler { cont.yield() }
                src.resume()
                SignalSources.keep(src)
            }
        }
        for await _ in stop { break }
        await emu.stop()
    }
}

/// Keeps signal sources alive for the process lifetime.
enum SignalSources {
    nonisolated(unsafe) static var all: [any DispatchSourceSignal] = []
    static func keep(_ s: any DispatchSourceSignal) { all.append(s) }
}
