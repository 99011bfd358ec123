import CameraKit
import Gateway
import Testing
import TestSupport

@Suite struct CameraSpecTests {
    @Test func parsesSonyURLsAndNames() throws {
        #expect(try CameraSpec.parse("sony://192.168.122.1", index: 0)
            == CameraSpec(id: "cam0", source: .camera(CameraURL(scheme: "sony", host: "192.168.122.1", port: nil))))
        #expect(try CameraSpec.parse("studio=sony://10.0.0.1:10000/", index: 3)
            == CameraSpec(id: "studio", source: .camera(CameraURL(scheme: "sony", host: "10.0.0.1", port: 10000))))
        #expect(CameraURL("bandit://[fe80::1]:81?udp=4002") == CameraURL(scheme: "bandit", host: "fe80::1", port: 81, query: ["udp": "4002"]))
        #expect(try CameraSpec.parse("emulator:sony", index: 1) == CameraSpec(id: "cam1", source: .emulator(vendor: "sony")))
        // Canon's capture target; a camera whose vendor DeviceInfo decides takes it too.
        #expect(PTPEndpoint.parse(url: "canon://h?target=PC")?.captureTarget == .pc)
        #expect(PTPEndpoint.parse(url: "ptpip://h?target=card")?.captureTarget == .card)
        #expect(PTPEndpoint.parse(url: "canon://h")?.captureTarget == nil)
        #expect(PTPEndpoint.parse(url: "canon://h?target=pc")?.description == "ptpip://h:15740?vendor=canon&target=pc")
    }

    @Test func aPasswordInTheURLIsNeverShown() {
        for text in ["sony://admin:hunter2@127.0.0.1:8080", "cam=sony://admin:hunter2@127.0.0.1:99999/x", "nikon://hunter2@host"] {
            do {
                _ = try CameraSpec.parse(text, index: 0)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(!error.description.contains("hunter2"), "\(error.description)")
                #expect(error.description.contains("a user or password in the camera URL is not supported"), "\(error.description)")
            }
        }
    }

    @Test(arguments: ["sony://", "sony://host:0", "sony://host:70000", "sony://host/path", "http://x", "bad name=sony://h",
                      "emulator:unknown", "sony://a b", "nope://host", "sony://host:12ab"])
    func refusesBadSpecs(_ text: String) {
        #expect(throws: CameraSpecError.self) { try CameraSpec.parse(text, index: 0) }
    }

    @Test(arguments: [
        ("sony://host:12ab", "port '12ab' must be a number from 1 to 65535"),
        ("sony://host/live", "unexpected path '/live'"),
        ("nope://host", "unknown scheme 'nope'"),
        ("panasonic://host?lvport=x", "option 'lvport=x' must be a port"),
        ("bandit://host?foo=1", "unknown option 'foo'; known options: udp"),
        ("sony://host?udp=1", "unknown option 'udp'; this camera takes no options"),
        ("ptpip://host?vendor=olympus", "option 'vendor=olympus' must be one of"),
        ("nikon://host?fps=0", "option 'fps=0' must be a number"),
        ("canon://host?target=sd", "option 'target=sd' must be one of: card, pc"),
        ("nikon://host?target=pc", "option 'target' is for Canon EOS cameras (CaptureDestination), not nikon"),
        ("ptpip://host?vendor=fuji&target=pc", "option 'target' is for Canon EOS cameras"),
        ("sony://[::1", "IPv6 host '[::1' lacks its ']'"),
    ])
    func errorsNameTheBadPart(_ text: String, _ expected: String) {
        do {
            _ = try CameraSpec.parse(text, index: 0)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }
}
