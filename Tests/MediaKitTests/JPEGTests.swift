import JPEGKit
import Foundation
import LiveViewCore
import MediaKit
import Testing
import TestSupport

/// Mean absolute difference of the luma planes of two same-size pictures.
func meanLumaDifference(_ a: I420Picture, _ b: I420Picture) -> Double {
    var sum = 0
    for y in 0..<a.height { for x in 0..<a.width { sum += abs(Int(a.luma(x: x, y: y)) - Int(b.luma(x: x, y: y))) } }
    return Double(sum) / Double(a.width * a.height)
}

/// Makes a JPEG with ffmpeg (for subsamplings and Huffman tables our encoder does not write).
func ffmpegJPEG(pixFmt: String, huffman: String, size: String = "320x240") async throws -> Data? {
    guard toolExists(ffmpeg) else { return nil }
    let path = NSTemporaryDirectory() + "livegate-\(UUID().uuidString.prefix(8)).jpg"
    defer { try? FileManager.default.removeItem(atPath: path) }
    let r = try await runTool(ffmpeg, ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=1", "-frames:v", "1",
                                 "-pix_fmt", pixFmt, "-huffman", huffman, "-q:v", "3", "-y", path])
    guard r.status == 0 else { return nil }
    return try Data(contentsOf: URL(fileURLWithPath: path))
}

/// A real camera frame (baseline 4:2:2, 640×480) in the shared fixtures.
let panasonicFrame = "panasonic/erspicu-GX7-liveview-frame-640x480.jpg"

@Suite("JPEG codec, inspector, overlay and test pattern")
struct JPEGTests {
    /// Turning a picture moves every sample where the turn puts it (luma and both chroma planes,
    /// odd sizes included), four quarter turns give the picture back, and a rectangle drawn before
    /// the turn is where `PixelRect.rotated` says after it.
    @Test func rotationTurnsThePlanesAndTheAFAreasTogether() {
        let (w, h) = (7, 5)
        let src = I420Picture(width: w, height: h)
        let l = src.layout
        for y in 0..<h { for x in 0..<w { src.y[y * l.yStride + x] = UInt8(y * w + x) } }
        for y in 0..<l.chromaHeight { for x in 0..<l.chromaWidth {
            src.u[y * l.chromaStride + x] = UInt8(100 + y * l.chromaWidth + x)
            src.v[y * l.chromaStride + x] = UInt8(200 + y * l.chromaWidth + x)
        } }
        let box = PixelRect(x: 1, y: 2, width: 3, height: 2)
        src.afAreas = [AFArea(pixels: box, camera: CameraRect(x: 0, y: 0, width: 1, height: 1), kind: .af, state: .focused)]
        for degrees in [90, 180, 270] {
            let out = I420Picture(width: 2, height: 2)
            out.rotate(from: src, clockwise: degrees)
            #expect(degrees == 180 ? (out.width == w && out.height == h) : (out.width == h && out.height == w))
            for y in 0..<h { for x in 0..<w {
                // Where sample (x, y) goes: the 1×1 rectangle at (x, y), turned.
                let to = PixelRect(x: x, y: y, width: 1, height: 1).rotated(clockwise: degrees, width: w, height: h)
                #expect(out.luma(x: to.x, y: to.y) == UInt8(y * w + x), "\(degrees)°: sample (\(x),\(y))")
            } }
            let cw = l.chromaWidth, ch = l.chromaHeight
            for y in 0..<ch { for x in 0..<cw {
                let to = PixelRect(x: x, y: y, width: 1, height: 1).rotated(clockwise: degrees, width: cw, height: ch)
                let c = out.layout.chromaStride
                #expect(out.u[to.y * c + to.x] == UInt8(100 + y * cw + x) && out.v[to.y * c + to.x] == UInt8(200 + y * cw + x))
            } }
            #expect(out.afAreas.first?.pixels == box.rotated(clockwise: degrees, width: w, height: h))
        }
        var turning = src
        for _ in 0..<4 {
            let next = I420Picture(width: 2, height: 2)
            next.rotate(from: turning, clockwise: 90)
            turning = next
        }
        #expect(turning.width == w && turning.height == h && meanLumaDifference(turning, src) == 0)
        #expect(turning.afAreas.first?.pixels == box)
        #expect(box.rotated(clockwise: 90, width: w, height: h) == PixelRect(x: 1, y: 1, width: 2, height: 3))
    }

    @Test func layoutMatchesGStreamerI420() {
        let l = I420Layout(width: 641, height: 361)
        #expect(l.yStride == 644)
        #expect(l.chromaWidth == 321 && l.chromaHeight == 181)
        #expect(l.chromaStride == 324)
        #expect(l.uOffset == 644 * 362)
        #expect(l.vOffset == l.uOffset + 324 * 181)
        #expect(l.byteCount == l.vOffset + 324 * 181)
        let even = I420Layout(width: 768, height: 432)
        #expect(even.byteCount == 768 * 432 * 3 / 2)
    }

    @Test func encodeDecodeRoundTrip() throws {
        let pattern = try TestPattern(width: 320, height: 240)
        let (src, _) = pattern.renderPicture(frameNumber: 42)
        let encoder = try JPEGEncoder(quality: 90)
        let jpeg = try withExtendedLifetime(encoder) { Data(try encoder.encode(src)) }
        let decoder = try JPEGDecoder()
        let out = I420Picture(width: 16, height: 16)
        try jpeg.withUnsafeBytes { try decoder.decode($0, into: out) }
        #expect(out.width == 320 && out.height == 240)
        #expect(meanLumaDifference(src, out) < 3.0)
        let header = try jpeg.withUnsafeBytes { try decoder.header(of: $0) }
        #expect(header.subsampling == .yuv420)
        // Baseline 4:2:0 with the standard tables: RTP/JPEG can carry it as is.
        #expect(jpeg.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .compatible)
        // Encoding into a Frame sets bytes and size.
        let frame = Frame(copying: [UInt8]())
        try encoder.encode(src, into: frame)
        #expect(frame.width == 320 && frame.height == 240 && frame.count > 1000)
        #expect(JPEGScanner.size(of: frame.bytes)! == (320, 240))
    }

    @Test(.enabled(if: Locations.fixture(panasonicFrame) != nil,
                   "../shared/fixtures/panasonic/erspicu-GX7-liveview-frame-640x480.jpg is absent"))
    func decodesFixtureAndConvertsSubsampling() throws {
        let path = try #require(Locations.fixture(panasonicFrame))
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let decoder = try JPEGDecoder()
        let header = try data.withUnsafeBytes { try decoder.header(of: $0) }
        #expect(header.width == 640 && header.height == 480 && header.subsampling == .yuv422)
        // A real camera JPEG (baseline 4:2:2, standard tables) goes out on /raw unchanged.
        #expect(data.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .compatible)
        let pic = I420Picture(width: 16, height: 16)
        try data.withUnsafeBytes { try decoder.decode($0, into: pic) }
        #expect(pic.width == 640 && pic.height == 480)
        // 4:2:2 → 4:2:0 must look like the same image: compare with a 4:2:0 re-encode decoded again.
        let re = try JPEGEncoder(quality: 95)
        let jpeg = try withExtendedLifetime(re) { Data(try re.encode(pic)) }
        let back = I420Picture(width: 16, height: 16)
        try jpeg.withUnsafeBytes { try decoder.decode($0, into: back) }
        #expect(meanLumaDifference(pic, back) < 3)
        var chromaDiff = 0
        for y in stride(from: 0, to: 480, by: 7) {
            for x in stride(from: 0, to: 640, by: 7) {
                let a = pic.chroma(x: x, y: y), b = back.chroma(x: x, y: y)
                chromaDiff += abs(Int(a.u) - Int(b.u)) + abs(Int(a.v) - Int(b.v))
            }
        }
        #expect(Double(chromaDiff) / Double((480 / 7 + 1) * (640 / 7 + 1)) < 6)
    }

    /// A Nikon Z live-view object (1024-byte header, then a 1024×576 JPEG) from the shared fixtures.
    @Test(.enabled(if: Locations.fixture("ptp/nikon_zr_getliveviewimageex_sweep-00.bin") != nil,
                   "../shared/fixtures/ptp/nikon_zr_getliveviewimageex_sweep-00.bin is absent"))
    func decodesNikonLiveViewJPEG() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: try #require(Locations.fixture("ptp/nikon_zr_getliveviewimageex_sweep-00.bin"))))
        func be32(_ o: Int) -> Int { data[o..<(o + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let start = be32(8), count = be32(12)
        let jpeg = data[start..<(start + count)]
        #expect(jpeg.prefix(2) == Data([0xFF, 0xD8]))
        try jpeg.withUnsafeBytes { raw in
            #expect(JPEGScanner.size(of: raw)! == (1024, 576))
            #expect(JPEGScanner.rtpCompatibility(of: raw) == .compatible)
            let pic = I420Picture(width: 16, height: 16)
            try JPEGDecoder().decode(raw, into: pic)
            #expect(pic.width == 1024 && pic.height == 576)
        }
    }

    @Test func inspectorFlagsWhatRTPJPEGCannotCarry() async throws {
        // 4:4:4 with standard tables → sampling not supported; decoder still gives I420.
        if let j444 = try await ffmpegJPEG(pixFmt: "yuvj444p", huffman: "default") {
            #expect(j444.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .unsupportedSampling)
            let decoder = try JPEGDecoder()
            let pic = I420Picture(width: 16, height: 16)
            try j444.withUnsafeBytes { try decoder.decode($0, into: pic) }
            #expect(pic.width == 320 && pic.height == 240)
        } else {
            print("SKIPPED 4:4:4 case: ffmpeg unavailable")
        }
        // ffmpeg's optimal Huffman tables are custom tables.
        if let custom = try await ffmpegJPEG(pixFmt: "yuvj420p", huffman: "optimal") {
            #expect(custom.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .customHuffmanTables)
        }
        if let standard = try await ffmpegJPEG(pixFmt: "yuvj420p", huffman: "default") {
            #expect(standard.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .compatible)
        }
        // ffmpeg writes "4:2:2" as luma 2×2 + chroma 1×2, which RFC 2435 does not know.
        if let odd422 = try await ffmpegJPEG(pixFmt: "yuvj422p", huffman: "default") {
            #expect(odd422.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .unsupportedSampling)
        }
        // Progressive (SOF2) and oversize, made by patching our own baseline JPEG's SOF.
        let pic = I420Picture(width: 64, height: 48)
        let encoder = try JPEGEncoder()
        var jpeg = try withExtendedLifetime(encoder) { [UInt8](try encoder.encode(pic)) }
        let sof = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        var progressive = jpeg
        progressive[sof + 1] = 0xC2
        #expect(progressive.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .notBaseline)
        jpeg[sof + 7] = 0x10  // width high byte → 4096 + 64
        #expect(jpeg.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .tooLarge)
        #expect([UInt8]([0, 1, 2, 3, 4]).withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .malformed)
    }

    @Test func overlayDrawsClampedOutlines() {
        let pic = I420Picture(width: 100, height: 80)
        pic.fill(y: 0, u: 128, v: 128)
        let overlay = AFOverlay(thickness: 2)
        let focused = AFArea(pixels: PixelRect(x: 10, y: 20, width: 30, height: 20), camera: CameraRect(x: 0, y: 0, width: 0, height: 0),
                             kind: .af, state: .focused)
        overlay.draw([focused], into: pic)
        let green = YUVColor.green
        #expect(pic.luma(x: 10, y: 20) == green.y)        // top-left corner
        #expect(pic.luma(x: 39, y: 39) == green.y)        // bottom-right corner (inclusive)
        #expect(pic.luma(x: 11, y: 30) == green.y)        // left edge, 2 px thick
        #expect(pic.luma(x: 12, y: 30) == 0)              // inside untouched
        #expect(pic.luma(x: 40, y: 30) == 0)              // outside untouched
        #expect(pic.luma(x: 25, y: 22) == 0)              // below the 2-px top band
        #expect(pic.chroma(x: 10, y: 20) == (green.u, green.v))
        // Colours by state/kind.
        #expect(AFOverlay.color(for: AFArea(pixels: focused.pixels, camera: focused.camera, kind: .af, state: .normal)) == .white)
        #expect(AFOverlay.color(for: AFArea(pixels: focused.pixels, camera: focused.camera, kind: .face, state: .normal)) == .cyan)
        #expect(AFOverlay.color(for: AFArea(pixels: focused.pixels, camera: focused.camera, kind: .af, state: .focusing)) == .yellow)
        // Partly outside: clipped to the picture, no crash; fully outside: nothing drawn.
        let before = Data(pic.bytes)
        overlay.drawRect(PixelRect(x: 200, y: 200, width: 10, height: 10), color: .red, into: pic)
        overlay.drawRect(PixelRect(x: -50, y: -50, width: 40, height: 40), color: .red, into: pic)
        overlay.drawRect(PixelRect(x: 5, y: 5, width: 0, height: 9), color: .red, into: pic)
        #expect(Data(pic.bytes) == before)
        overlay.drawRect(PixelRect(x: 90, y: -5, width: 30, height: 20), color: .white, into: pic)
        #expect(pic.luma(x: 90, y: 0) == 255)             // left edge visible
        #expect(pic.luma(x: 99, y: 13) == 255)            // bottom edge clipped at the right border
        #expect(pic.luma(x: 95, y: 5) == 0)               // inside
    }

    @Test func testPatternShowsCounterAndMovingBox() throws {
        let pattern = try TestPattern()
        #expect(pattern.width == 768 && pattern.height == 432)
        let decoder = try JPEGDecoder()
        let pic = I420Picture(width: 16, height: 16)
        var boxes: [PixelRect] = []
        for n in [0, 7, 123, 98765] {
            let (jpeg, box) = try pattern.render(frameNumber: n)
            try decoder.decode(jpeg, into: pic)
            #expect(TestPattern.readCounter(from: pic, patternWidth: 768, patternHeight: 432) == n)
            #expect(box.x >= 0 && box.y >= 0 && box.x + box.width <= 768 && box.y + box.height <= 432)
            #expect(box == TestPattern.afBox(frameNumber: n, width: 768, height: 432))
            boxes.append(box)
        }
        #expect(Set(boxes).count == boxes.count, "the AF box must move")
        // The subject (orange square) sits in the middle of the box.
        let b = boxes[3]
        let (u, v) = pic.chroma(x: b.x + b.width / 2, y: b.y + b.height / 2)
        _ = u
        #expect(v > 150, "no orange subject in the AF box")
        // Rendering into a reused frame gives a whole JPEG every time (its cost per frame is measured in
        // `make bench`: livegate-bench's emulated cameras render it at 30 fps).
        let frame = Frame(copying: [UInt8]())
        for n in 0..<3 {
            try pattern.render(frameNumber: n, into: frame)
            #expect(Array(frame.bytes.prefix(2)) == [0xFF, 0xD8] && Array(frame.bytes.suffix(2)) == [0xFF, 0xD9], "frame \(n)")
        }
    }

    /// One decoder decodes picture after picture into the same I420 buffer (its cost per frame is
    /// measured in `make bench`: livegate-bench cpu, "decode+overlay mean").
    @Test func decoderIsReusableAt768x432() throws {
        let pattern = try TestPattern()
        let decoder = try JPEGDecoder()
        let pic = I420Picture(width: 768, height: 432)
        for n in [5, 6, 7] {
            let jpeg = try pattern.render(frameNumber: n).jpeg
            try decoder.decode(jpeg, into: pic)
            #expect(TestPattern.readCounter(from: pic, patternWidth: 768, patternHeight: 432) == n)
        }
    }
}

@Suite("Previews of card pictures")
struct JPEGPreviewTests {
    /// A 4000×3000 picture becomes 2000×1500 (the largest DCT reduction that keeps the longer side
    /// ≥ 1280), a 1600×1200 one stays whole, and what is not a JPEG is an error.
    @Test func theLargestReductionThatKeepsTheLongSide() throws {
        let encoder = try JPEGEncoder(quality: 90)
        let decoder = try JPEGDecoder()
        for (w, h, want) in [(4000, 3000, (2000, 1500)), (1600, 1200, (1600, 1200)), (640, 480, (640, 480)), (6000, 4000, (1500, 1000))] {
            let picture = I420Picture(width: w, height: h)
            picture.fill(y: 90, u: 100, v: 160)
            let jpeg = try withExtendedLifetime(encoder) { Array(try encoder.encode(picture)) }
            let preview = try JPEGPreview.make(jpeg)
            let got = try preview.withUnsafeBytes { try decoder.header(of: $0) }
            #expect(got.width == want.0 && got.height == want.1, "\(w)×\(h) → \(got.width)×\(got.height)")
            // The colour survives the round trip.
            let back = I420Picture(width: 16, height: 16)
            try preview.withUnsafeBytes { try decoder.decode($0, into: back) }
            #expect(abs(Int(back.luma(x: got.width / 2, y: got.height / 2)) - 90) <= 3)
        }
        #expect(throws: (any Error).self) { try JPEGPreview.make(Array("not a picture".utf8)) }
        // A small file whose frame header claims 65535×65535 is refused before any decoding.
        let small = I420Picture(width: 64, height: 48)
        small.fill(y: 90, u: 100, v: 160)
        var liar = try withExtendedLifetime(encoder) { Array(try encoder.encode(small)) }
        let sof = try #require((0..<(liar.count - 9)).first { liar[$0] == 0xFF && liar[$0 + 1] == 0xC0 })
        for i in 5...8 { liar[sof + i] = 0xFF }
        #expect(throws: (any Error).self) { try JPEGPreview.make(liar) }
    }
}

@Suite("Pipeline templates")
struct PipelineTemplateTests {
    @Test func embeddedTextEqualsPipelinesFolder() throws {
        let folder = Locations.repository.appendingPathComponent("pipelines")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".pipeline") }
        #expect(Set(files) == Set(PipelineTemplates.all.keys), "pipelines/ and PipelineTemplates.all list different files")
        for (name, text) in PipelineTemplates.all {
            let onDisk = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(onDisk == text, "pipelines/\(name) drifted from PipelineTemplates")
        }
    }

    @Test func renderFillsAndRejectsMissingPlaceholders() throws {
        let s = try PipelineTemplates.render(PipelineTemplates.rtspRaw, ["fps": "25", "mtu": "1400"])
        #expect(s.contains("framerate=25/1") && s.contains("mtu=1400") && !s.contains("{"))
        #expect(throws: MediaError.self) { try PipelineTemplates.render(PipelineTemplates.rtspRaw, ["fps": "25"]) }
        #expect(throws: MediaError.self) { try PipelineTemplates.render(PipelineTemplates.encoder, ["keyint": "30"]) }
        #expect(PipelineTemplates.escapeQuoted(#"a"b\c"#) == #"a\"b\\c"#)
    }
}
