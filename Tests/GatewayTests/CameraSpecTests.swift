import Gateway
import Testing

@Suite struct CameraSpecTests {
    @Test func parsesSonyURLsAndNames() throws {
        #expect(try CameraSpec.parse("sony://192.168.122.1", index: 0) == CameraSpec(id: "cam0", source: .sony(host: "192.168.122.1", port: 8080)))
        #expect(try CameraSpec.parse("studio=sony://10.0.0.1:10000", index: 3) == CameraSpec(id: "studio", source: .sony(host: "10.0.0.1", port: 10000)))
        #expect(try CameraSpec.parse("emulator:sony", index: 1) == CameraSpec(id: "cam1", source: .emulator(vendor: "sony")))
    }

    @Test(arguments: ["sony://", "sony://host:0", "sony://host:70000", "sony://host/path", "http://x", "bad name=sony://h",
                      "emulator:canon", "sony://a b"])
    func refusesBadSpecs(_ text: String) {
        #expect(throws: CameraSpecError.self) { try CameraSpec.parse(text, index: 0) }
    }
}
