import CameraEmulators
import CameraWire
import Foundation
import Testing
import TestSupport

/// `livegate inspect` on Olympus live view, through the real binary: frames rebuilt from a pcap and
/// from an RFC 4571 datagram dump are the camera's JPEGs; a damaged input is reported, not crashed on.
@Suite struct InspectCLITests {
    /// Ten frames of the test pattern as the camera packetizes them, and the JPEGs.
    func datagrams() throws -> (packets: [[UInt8]], jpegs: [[UInt8]]) {
        let source = try TestPatternSource(width: 320, height: 240)
        var packetizer = OlympusRTPPacketizer(ssrc: 0x1122_3344, firstSequence: 65530, chunk: 1400)
        var packets: [[UInt8]] = []
        var jpegs: [[UInt8]] = []
        for n in 0..<10 {
            let jpeg = source.frame(index: n).jpeg
            var meta = OlympusRTP.Metadata()
            meta.afFrame = OlympusRTP.AFFrame(colour: 1, x: 10, y: 20, width: 72, height: 72)
            packets += packetizer.packets(jpeg: jpeg, frameNumber: UInt32(n), metadata: meta)
            jpegs.append(jpeg)
        }
        return (packets, jpegs)
    }

    func inspect(_ bytes: [UInt8], format: String = "auto") async throws -> (status: Int32, output: String) {
        let dir = try temporaryDirectory("livegate-inspect")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("capture.bin")
        try Data(bytes).write(to: file)
        return try await runProcessAsync(livegateBinary()!, ["inspect", "--format", format, file.path], timeout: 60)
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func olympusFramesFromAPcapAndFromADatagramDump() async throws {
        let (packets, jpegs) = try datagrams()
        var pcap = PcapWriter()
        for (i, p) in packets.enumerated() {
            pcap.appendUDP(p, source: 0xC0A8_000A, sourcePort: 5555, destination: 0xC0A8_0002, destinationPort: 40000,
                           timestampNs: 1_700_000_000_000_000_000 + Int64(i) * 1_000_000)
        }
        for input in [pcap.bytes, DatagramDump.write(packets)] {
            let r = try await inspect(input)
            #expect(r.status == 0, "\(r.output)")
            #expect(r.output.contains("format guessed as olympus-rtp"), "\(r.output.prefix(300))")
            let lines = r.output.split(separator: "\n").filter { $0.hasPrefix("{") }
            #expect(lines.count == jpegs.count, "\(r.output.prefix(600))")
            for (line, jpeg) in zip(lines, jpegs) {
                #expect(line.contains("\"jpegSHA256\": \"\(SHA256.hex(jpeg))\""))
                #expect(line.contains("\"x\": 10, \"y\": 20, \"w\": 72, \"h\": 72"), "\(line)")
            }
        }
    }

    @Test(.enabled(if: livegateBinary() != nil, "needs the livegate binary built by swift build"))
    func damagedInputIsReportedWithoutACrash() async throws {
        let (packets, jpegs) = try datagrams()
        // One packet of the third frame lost: that frame is dropped whole, the others come through.
        var lossy = packets
        let third = packets.indices.filter { OlympusRTP.looksLikeFirstPacket(packets[$0][...]) }[2]
        lossy.remove(at: third + 1)
        let r = try await inspect(DatagramDump.write(lossy), format: "olympus-rtp")
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.split(separator: "\n").filter { $0.hasPrefix("{") }.count == jpegs.count - 1, "\(r.output.prefix(800))")
        // Not a pcap and not a dump: a clear diagnostic.
        let junk = try await inspect([0x00, 0x10, 0x01], format: "olympus-rtp")
        #expect(junk.output.contains("not a pcap file nor an RFC 4571 datagram dump"), "\(junk.output)")
    }
}
