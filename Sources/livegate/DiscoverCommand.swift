import ArgumentParser
import CameraKit
import Foundation
import NIOPosix
import Vendors

/// `livegate discover`: find cameras on the local network by SSDP.
struct Discover: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find cameras on the local network by SSDP (\(Vendors.ssdpMatchers.map(\.vendor).joined(separator: ", ")), and other UPnP devices).",
        discussion: "Lists each device with a ready-to-use --camera URL when livegate knows its kind.")

    @Option(name: .long, help: "Seconds to wait for answers.") var timeout: Double = 3
    @Option(name: .long, help: ArgumentHelp("Send the searches to HOST:PORT instead of the SSDP multicast group (testing).", visibility: .hidden))
    var target: String?

    func validate() throws {
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        if let target, HTTPURL.splitHostPort(target, defaultPort: 1900) == nil {
            throw ValidationError("--target must be HOST:PORT")
        }
    }

    func run() async throws {
        var discovery = SSDPDiscovery(group: MultiThreadedEventLoopGroup.singleton, matchers: Vendors.ssdpMatchers)
        discovery.timeout = .milliseconds(Int64(timeout * 1000))
        if let target, let (host, port) = HTTPURL.splitHostPort(target, defaultPort: 1900) {
            discovery.targetHost = host
            discovery.targetPort = port
            if host.hasPrefix("127.") || host == "localhost" { discovery.bindHost = "127.0.0.1" }
        }
        let found = try await discovery.discover()
        if found.isEmpty {
            print("no cameras answered within \(timeout) s")
            return
        }
        for d in found {
            let name = d.friendlyName ?? d.modelName ?? "?"
            if let url = d.cameraURL {
                print("\(d.kind)\t\(name)\t--camera \(url)")
            } else {
                print("\(d.kind)\t\(name)\t\(d.location)")
            }
        }
    }
}
