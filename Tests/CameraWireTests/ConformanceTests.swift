import Foundation
import Testing
import TestSupport
import LiveViewCore
@testable import CameraWire

/// The conformance contract on the fixtures copied into this target (always run) and on the whole
/// shared kit (run when `<repo>/../shared` exists).
@Suite struct ConformanceTests {
    func lines(_ format: WireFormat, _ bytes: [UInt8]) -> (out: [String], diag: [String]) {
        var out: [String] = [], diag: [String] = []
        Inspector.run(format: format, input: bytes, emit: { out.append($0) }, diagnostic: { diag.append($0) })
        return (out, diag)
    }

    @Test func nikonZRFixture() {
        let (out, _) = lines(.nikonLV, Fixtures.bytes("nikon_zr_getliveviewimageex_sweep-00.bin"))
        #expect(out == [
            #"{"index": 0, "jpegOffset": 1024, "jpegSize": 15552, "jpegSHA256": "5318b0807e1dcaf926d6943aacdd2a2c273c3b04cdad48577bd1a4afa6ba576f", "width": 1024, "height": 576, "af": [{"x": 487, "y": 261, "w": 50, "h": 54, "kind": "af", "state": "normal"}], "pts": null, "seq": null}"#,
        ])
    }

    @Test func nikonHeaderKeepsCameraRect() {
        var p = NikonLiveViewParser()
        var frames: [WireFrame] = []
        p.feed(Fixtures.bytes("nikon_zr_getliveviewimageex_sweep-00.bin")) { if case .frame(let f) = $0 { frames.append(f) } }
        #expect(frames.count == 1)
        #expect(frames.first?.af.first?.camera == CameraRect(x: 3023 - 146.5, y: 1700 - 158, width: 293, height: 316))
        #expect(p.lastHeader.wholeWidth == 6048 && p.lastHeader.wholeHeight == 3400)
        #expect(p.lastHeader.headerSize == 1024 && p.lastHeader.jpegSize == 15552)
    }

    @Test func fujiFixture() {
        let (out, diag) = lines(.fujiLV, Fixtures.bytes("fuji_lv_port55742_frame_vcam.bin"))
        #expect(out == [
            #"{"index": 0, "jpegOffset": 18, "jpegSize": 9353, "jpegSHA256": "dac7d377ceaea18c02b17afbec660f05b14c4e26c09a38afbe49e598d8da224b", "width": 640, "height": 480, "af": [], "pts": null, "seq": null}"#,
        ])
        #expect(diag.isEmpty)
    }

    @Test func sonyPTPSingleImage() {
        let (out, diag) = lines(.sonyPTP, Fixtures.bytes("rocc-liveview-rx100m7-singleimage.bin"))
        #expect(out == [
            #"{"index": 0, "jpegOffset": 136, "jpegSize": 38769, "jpegSHA256": "5d90364ce3742dd5723c700a8e5d9a149553c8265dae7f5ac3359f93af3020a3", "width": 640, "height": 424, "af": [], "pts": null, "seq": null}"#,
        ])
        // The trailing 136 bytes (start of the next dataset) are reported, not emitted.
        #expect(diag.count == 1 && diag[0].hasPrefix("offset 38920:"))
    }

    @Test func sonyPTPA9IIChunkLines() {
        let (out, _) = lines(.sonyPTP, Fixtures.bytes("rocc-liveview-a9ii-multipleimages.bin"))
        let expected: [(Int, Int, String)] = [
            (150, 24025, "88bb1c7a51922341ea07e19d5905f4eedab29f7fddeda808f49a95f39e9b4dad"),
            (24364, 24065, "21702806aeaa3cca8900ea0b0b4ecfaf6bc2aff40881a761b6a1815a305b87eb"),
            (48708, 24130, "2d5610ba6db3a2ad7716cf66b4db41fc440d94a30b6b186644fe31774857c27b"),
        ]
        #expect(out.count == 3)
        for (i, (o, s, h)) in expected.enumerated() where i < out.count {
            #expect(out[i] == #"{"index": \#(i), "jpegOffset": \#(o), "jpegSize": \#(s), "jpegSHA256": "\#(h)", "width": 640, "height": 424, "af": [], "pts": null, "seq": null}"#)
        }
    }

    @Test func sonyPTPChunkedWrapOfFixture() {
        // Wrap the A9 II bytes as an RFC 9112 chunked body: same JPEGs, offsets null where cut.
        let raw = Fixtures.bytes("rocc-liveview-a9ii-multipleimages.bin")
        var body: [UInt8] = []
        var i = 0
        while i < raw.count { HTTPChunkedDecoder.appendChunk(raw[i..<min(i + 4096, raw.count)], to: &body); i += 4096 }
        HTTPChunkedDecoder.appendLastChunk(to: &body)
        let direct = AnyStreamParser.run(.sonyPTP, raw).frames
        let chunked = AnyStreamParser.run(.sonyPTP, body).frames
        #expect(chunked.count == 3)
        #expect(chunked.map(\.jpeg) == direct.map(\.jpeg))
        #expect(chunked.allSatisfy { $0.offset == nil })
        // A chunk size that holds a whole dataset keeps the file offset of the JPEG.
        var big: [UInt8] = []
        HTTPChunkedDecoder.appendChunk(raw, to: &big)
        let one = AnyStreamParser.run(.sonyPTP, big).frames
        #expect(one.map(\.offset) == [150 + 7, 24364 + 7, 48708 + 7])   // "11CC4\r\n" is 7 bytes
    }

    @Test(.enabled(if: Fixtures.sharedAvailable, "needs <repo>/../shared (the reference kit); skipped when absent"))
    func sharedKitAllCases() throws {
        let dir = try #require(Fixtures.sharedDirectory)
        let tsv = try String(contentsOf: dir.appendingPathComponent("conformance/cases.tsv"), encoding: .utf8)
        var cases = 0
        for line in tsv.split(separator: "\n").dropFirst() {
            let cols = line.split(separator: "\t").map(String.init)
            guard cols.count >= 3, let format = WireFormat(rawValue: cols[0]) else { continue }
            let input = try #require(Fixtures.shared(cols[1]))
            let expected = try String(contentsOf: dir.appendingPathComponent(cols[2]), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            let (out, _) = lines(format, input)
            #expect(out == expected, "case \(cols[2])")
            // --format auto picks the same format.
            #expect(WireFormat.guess(input) == format, "guess for \(cols[1])")
            cases += 1
        }
        #expect(cases >= 15)
    }
}
