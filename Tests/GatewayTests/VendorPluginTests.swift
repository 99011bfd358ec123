import CameraKit
import Foundation
import Gateway
import Logging
import NIOPosix
import Testing
import TestSupport
import Vendors

/// The vendor plug-ins: one list, no clashes, every emulator reachable through its own URL, and the
/// API's capabilities and 501 answers taken from the plug-in.
@Suite(.serialized, .tags(.integration)) struct VendorPluginTests {
    @Test func theListHasNoClashes() {
        let names = Vendors.all.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
        let schemes = Vendors.all.flatMap(\.schemes)
        #expect(Set(schemes).count == schemes.count, "\(schemes)")
        let formats = Vendors.wireFormats.map(\.rawValue)
        #expect(Set(formats).count == formats.count, "\(formats)")
        for v in Vendors.all {
            #expect(v.capabilities.contains(.liveView), "\(v.name)")
            #expect(v.urlSyntax.hasPrefix(v.schemes[0] + "://"), "\(v.name): \(v.urlSyntax)")
        }
    }

    /// Each emulator's own URL parses back to the plug-in that made it, and its driver can be made.
    @Test func everyEmulatorRoundTripsThroughItsPlugIn() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        for name in Vendors.emulatorNames {
            let request = EmulatorRequest(host: "127.0.0.1", port: 0, fps: 5, width: 320, height: 240, group: group)
            let emu = try #require(try Vendors.makeEmulator(named: name, request))
            _ = try await emu.start()
            let (url, vendor) = try Vendors.parse(emu.cameraURL)
            // PTP emulators give `ptpip://…?vendor=NAME`: the generic plug-in with the dialect forced.
            #expect(vendor.name == name || url.query["vendor"] == name, "\(emu.cameraURL) → \(vendor.name)")
            let driver = try vendor.makeDriver(url, context: DriverContext(group: group, cameraIndex: 0, logger: Logger(label: "t")))
            #expect(driver.state != .streaming)
            await emu.stop()
        }
        #expect(Vendors.emulatorNames.count >= 7)
    }

    @Test(.enabled(if: Locations.program("curl") != nil, "needs curl"))
    func touchAFOnAVendorWithoutItIs501WithTheReason() async throws {
        let gateway = try await startGateway(camera: "emulator:bandit", label: "vendors") { $0.emulatorFPS = 5 }
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let summary = try await runProcessAsync(Locations.program("curl")!, ["-s", "\(base)/api/v1/cameras/cam0"], timeout: 10)
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(summary.output.utf8)) as? [String: Any])
        let caps = try #require(obj["capabilities"] as? [String: Bool], "\(summary.output)")
        #expect(caps["liveView"] == true && caps["touchAF"] == false && caps["shutter"] == true, "\(caps)")
        #expect(obj["properties"] as? [String] == ["whiteBalance"])
        let focus = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"x": 10, "y": 10}"#,
                                                   "\(base)/api/v1/cameras/cam0/focus"], timeout: 10)
        #expect(focus.output.hasSuffix("\n501"), "\(focus.output)")
        #expect(focus.output.contains("fixed-focus"), "\(focus.output)")
        #expect(await waitUntil(timeout: 15) { gateway.cameras.first?.driver.state == .streaming })
        let capture = try await runProcessAsync(Locations.program("curl")!, ["-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "\(base)/api/v1/cameras/cam0/capture"],
                                     timeout: 10)
        // The Bandit has a shutter in image mode only; the emulator starts in video mode.
        #expect(capture.output.hasSuffix("\n409") && capture.output.contains("video mode"), "\(capture.output)")
        server.cancel()
        await gateway.stop()

        // A generic PTP/IP camera's shutter before it connects: URLFormTests (503, not 501).
    }
}
