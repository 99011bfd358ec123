@testable import JPEGKit
import Testing
import TestSupport
@testable import CameraWire

@Suite struct JPEGScannerTests {
    @Test func fujiFixtureJPEG() throws {
        let f = Fixtures.bytes("fuji_lv_port55742_frame_vcam.bin")
        let info = try JPEGScanner.scan(f[18...])
        #expect(info.length == 9353)
        #expect(info.width == 640 && info.height == 480)
        #expect(info.isBaseline)
        #expect(SHA256.hex(f[18..<(18 + info.length)]) == "dac7d377ceaea18c02b17afbec660f05b14c4e26c09a38afbe49e598d8da224b")
    }

    @Test func sonyJPEGHeaderFacts() throws {
        let f = Fixtures.bytes("rocc-liveview-rx100m7-singleimage.bin")
        let info = try JPEGScanner.scan(f[136..<(136 + 38784)])
        #expect(info.length == 38769)
        #expect(info.width == 640 && info.height == 424)
        #expect(info.sofMarker == 0xC0)
        #expect(info.components == 3)
        #expect(info.subsampling == .yuv422)
        // The 15 bytes of padding after the EOI are not part of the JPEG.
        #expect(f[136 + 38767] == 0xFF && f[136 + 38768] == 0xD9)
    }

    /// The headers-only scan (used per frame by the RTP/JPEG branch) reads the same facts as the
    /// full walk without the entropy-coded data, so it answers for a JPEG cut after its SOS header.
    @Test func headersOnlyScanMatchesTheFullWalk() throws {
        let f = Fixtures.bytes("rocc-liveview-rx100m7-singleimage.bin")
        let jpeg = Array(f[136..<(136 + 38769)])
        let full = try JPEGScanner.scan(jpeg)
        let sos = try #require(jpeg.indices.dropLast().first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA })
        let sosEnd = sos + 2 + (Int(jpeg[sos + 2]) << 8 | Int(jpeg[sos + 3]))
        let cut = Array(jpeg[..<(sosEnd + 10)])
        let headers = try cut.withUnsafeBytes { raw throws(JPEGError) in try JPEGScanner.headers(raw) }
        #expect(headers.length == sosEnd)
        #expect(headers.width == full.width && headers.height == full.height && headers.subsampling == full.subsampling)
        #expect(headers.usesStandardHuffmanTables == full.usesStandardHuffmanTables && headers.precision == 8)
        #expect(cut.withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == full.rtpCompatibility)
        #expect(cut.withUnsafeBytes { JPEGScanner.size(of: $0) }! == (640, 424))
        #expect(throws: JPEGError.self) { try JPEGScanner.scan(cut) }
        // No SOS at all: the headers are not complete.
        #expect(Array(jpeg[..<sos]).withUnsafeBytes { JPEGScanner.rtpCompatibility(of: $0) } == .malformed)
    }

    @Test func startOfImageAtAnIndex() {
        let b: [UInt8] = [0x00, 0xFF, 0xD8, 0xFF]
        #expect(JPEGScanner.hasSOI(b, at: 1))
        #expect(!JPEGScanner.hasSOI(b, at: 0) && !JPEGScanner.hasSOI(b, at: 2))
        #expect(!JPEGScanner.hasSOI(b, at: 3) && !JPEGScanner.hasSOI(b, at: 4) && !JPEGScanner.hasSOI(b, at: -1))
        let slice = b[1...]
        #expect(JPEGScanner.hasSOI(slice, at: slice.startIndex))
    }

    /// RFC 2435 verdicts from the SOF alone: size limits and precision.
    @Test func rtpVerdictsFromTheFrameHeader() {
        let ok = JPEGInfo(length: 100, width: 640, height: 480, sofMarker: 0xC0, subsampling: .yuv420,
                          usesStandardHuffmanTables: true, components: 3, restartInterval: 0, samplingFactors: (0x22, 0x11, 0x11))
        #expect(ok.rtpCompatibility == .compatible && ok.rtpJPEGType == 1)
        var wide = ok; wide.width = 2048
        #expect(wide.rtpCompatibility == .tooLarge)
        var twelveBit = ok; twelveBit.precision = 12
        #expect(twelveBit.rtpCompatibility == .notBaseline)
        var progressive = ok; progressive.sofMarker = 0xC2
        #expect(progressive.rtpCompatibility == .notBaseline)
        var custom = ok; custom.usesStandardHuffmanTables = false
        #expect(custom.rtpCompatibility == .customHuffmanTables)
        var f444 = ok; f444.samplingFactors = (0x11, 0x11, 0x11)
        #expect(f444.rtpCompatibility == .unsupportedSampling)
    }

    @Test func standardTablesRecognised() throws {
        // Synthetic JPEG carries exactly the Annex K tables.
        var rng = SplitMix64(seed: 1)
        let j = SyntheticJPEG.make(width: 320, height: 240, entropyBytes: 500, rng: &rng, subsampling: .yuv420)
        let info = try JPEGScanner.scan(j)
        #expect(info.usesStandardHuffmanTables)
        #expect(info.subsampling == .yuv420)
        #expect(info.isRTPJPEGCompatible)
        // Change one AC luminance value: no longer standard.
        var k = j
        let dht = k.firstIndex(of: 0xC4)! + 3 // FF C4 len(2) → first table class/id byte
        k[dht + 17] ^= 0x01 // first DC luminance value 0 → 1
        #expect(try JPEGScanner.scan(k).usesStandardHuffmanTables == false)
        // No DHT at all counts as default (standard) tables.
        var noDHT: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10, 0x03,
                              0x01, 0x21, 0x00, 0x02, 0x11, 0x00, 0x03, 0x11, 0x00]
        noDHT += [0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3F, 0x00, 0x12, 0xFF, 0xD9]
        let n = try JPEGScanner.scan(noDHT)
        #expect(n.usesStandardHuffmanTables && n.subsampling == .yuv422 && n.length == noDHT.count)
    }

    @Test func cameraJPEGsUseStandardTables() throws {
        // Real camera encoders write the Annex K tables: proves our copy of them is right.
        let sony = Fixtures.bytes("rocc-liveview-a9ii-multipleimages.bin")
        let fuji = Fixtures.bytes("fuji_lv_port55742_frame_vcam.bin")
        let nikon = Fixtures.bytes("nikon_zr_getliveviewimageex_sweep-00.bin")
        for (bytes, at, type) in [(sony, 150, UInt8(0)), (fuji, 18, 0), (nikon, 1024, 1)] {
            let info = try JPEGScanner.scan(bytes[at...])
            #expect(info.usesStandardHuffmanTables)
            #expect(info.rtpJPEGType == type)
            #expect(info.isRTPJPEGCompatible)
        }
    }

    @Test func ffmpegCaptureHasOptimisedTablesAnd1x2Chroma() throws {
        // The kit's ffmpeg JPEGs: Y 2×2 with Cb/Cr 1×2 (4:2:2 by ratio) and optimised Huffman tables,
        // so RFC 2435 cannot carry them as they are.
        guard Fixtures.sharedAvailable, let f = Fixtures.shared("conformance/captures/sony-remote-wrap.bin") else { return }
        let info = try JPEGScanner.scan(f[136...])
        #expect(info.length == 18569)
        #expect(info.subsampling == .yuv422)
        #expect(info.samplingFactors.y == 0x22 && info.samplingFactors.cb == 0x12)
        #expect(!info.usesStandardHuffmanTables)
        #expect(info.rtpJPEGType == nil && !info.isRTPJPEGCompatible)
    }

    @Test func stuffingRestartsFillBytesAndFakeMarkers() throws {
        var rng = SplitMix64(seed: 7)
        for fill in [0, 1, 5] {
            let j = SyntheticJPEG.make(width: 64, height: 48, entropyBytes: 4000, rng: &rng, restartEvery: 4,
                                       fillBeforeEOI: fill)
            var padded = j
            padded += [0x00, 0xFF, 0xD9, 0xFF, 0xD9]   // junk after the EOI
            let info = try JPEGScanner.scan(padded)
            #expect(info.length == j.count)
            #expect(info.restartInterval == 4)
            #expect(info.width == 64 && info.height == 48)
        }
    }

    @Test func typedErrors() {
        var rng = SplitMix64(seed: 3)
        let j = SyntheticJPEG.make(width: 8, height: 8, entropyBytes: 100, rng: &rng)
        #expect(throws: JPEGError.noSOI) { try JPEGScanner.scan([0x00, 0xD8, 0xFF, 0xD9]) }
        for cut in [2, 10, j.count / 2, j.count - 1] {
            #expect(throws: JPEGError.self) { try JPEGScanner.scan(j[0..<cut]) }
            do { _ = try JPEGScanner.scan(j[0..<cut]); Issue.record("no error at \(cut)") } catch {
                if case .truncated = error {} else { Issue.record("cut \(cut): \(error)") }
            }
        }
        // EOI straight after SOI: no SOF.
        #expect(throws: JPEGError.noSOF) { try JPEGScanner.scan([0xFF, 0xD8, 0xFF, 0xD9]) }
        // A non-FF byte where a marker must be.
        #expect(throws: JPEGError.badMarker(offset: 2, marker: 0x12)) { try JPEGScanner.scan([0xFF, 0xD8, 0x12, 0x34]) }
        // Segment length 1.
        #expect(throws: JPEGError.badSegmentLength(offset: 4)) {
            try JPEGScanner.scan([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01, 0x00])
        }
    }

    /// An SOF no decoder can lay out (no width, no height, a component sampled 0 or 5 times) is a
    /// bad SOF, and each structural problem is counted under its own drop reason.
    @Test func inconsistentSOFIsRefusedAndProblemsHaveTheirDropReasons() throws {
        var rng = SplitMix64(seed: 5)
        let j = SyntheticJPEG.make(width: 16, height: 8, entropyBytes: 64, rng: &rng)
        _ = try JPEGScanner.scan(j)
        let sof = try #require(j.indices.dropLast().first { j[$0] == 0xFF && (0xC0...0xC2).contains(j[$0 + 1]) })
        // After FF Cn: length(2) precision(1) height(2) width(2) components(1), then id/factors/table each.
        let patches: [(String, [(Int, UInt8)])] = [
            ("height 0", [(sof + 5, 0), (sof + 6, 0)]), ("width 0", [(sof + 7, 0), (sof + 8, 0)]),
            ("no component", [(sof + 9, 0)]), ("sampled 5×", [(sof + 11, 0x51)]), ("sampled 0×", [(sof + 11, 0x02)]),
        ]
        for (what, bytes) in patches {
            var bad = j
            for (offset, value) in bytes { bad[offset] = value }
            #expect(throws: JPEGError.badSOF(offset: sof + 1), "\(what)") { try JPEGScanner.scan(bad) }
        }
        #expect(WireError.badJPEG(.truncated(offset: 9)).dropReason == "jpeg-truncated")
        #expect(WireError.badJPEG(.noSOF).dropReason == "jpeg-no-scan")
        #expect(WireError.badJPEG(.badSOF(offset: 2)).dropReason == "jpeg-bad-sof")
        #expect(WireError.noJPEGAtOffset.dropReason == "jpeg-no-soi")
        #expect(WireError.datagramLost(expected: 3, got: 5).dropReason == "datagram-lost")
        #expect(WireError.sizeOverLimit(field: "size", declared: 9, limit: 1).dropReason == "container-malformed")
    }

    /// The block-wise search for the end of the entropy-coded data finds exactly what a byte-by-byte
    /// reading finds, on data dense in FF, stuffing, restart markers and fill bytes, from every start,
    /// across its 32-byte blocks and at the very end of the bytes.
    @Test func entropyEndAgreesWithAByteByByteReading() {
        func byteByByte(_ b: [UInt8], from: Int) -> Int? {
            var k = from
            let n = b.count
            while true {
                while k < n && b[k] != 0xFF { k += 1 }
                guard k + 1 < n else { return nil }
                var q = k + 1
                while q < n && b[q] == 0xFF { q += 1 }
                guard q < n else { return nil }
                let c = b[q]
                if c == 0x00 || (0xD0...0xD7).contains(c) {
                    k = q + 1
                    continue
                }
                return q - 1
            }
        }
        var rng = SplitMix64(seed: 0xE17)
        var found = 0, ended = 0
        for round in 0..<4000 {
            let n = Int.random(in: 0...(round % 10 == 0 ? 2000 : 200), using: &rng)
            // Mostly stuffing, as a camera's data is; some rounds dense in every kind of FF.
            let dense = round % 3 == 0
            let b: [UInt8] = (0..<n).map { _ in
                let r = Int.random(in: 0..<100, using: &rng)
                if dense {
                    switch r {
                    case 0..<35: return 0xFF
                    case 35..<60: return 0x00
                    case 60..<70: return UInt8.random(in: 0xD0...0xD7, using: &rng)
                    default: return UInt8.random(in: 0...255, using: &rng)
                    }
                }
                return r == 0 ? 0xFF : (r == 1 ? 0x00 : UInt8.random(in: 0...0xFE, using: &rng))
            }
            // Sparse rounds: FF only as stuffing, and one marker somewhere (or none).
            var bytes = b
            if !dense {
                for i in bytes.indices where bytes[i] == 0xFF {
                    if i + 1 < bytes.count { bytes[i + 1] = 0x00 }
                }
                if n > 2, Int.random(in: 0..<4, using: &rng) > 0 {
                    let at = Int.random(in: 0..<(n - 1), using: &rng)
                    bytes[at] = 0xFF
                    bytes[at + 1] = 0xD9
                }
            }
            let starts = n == 0 ? [0] : [0, 1, n / 2, max(0, n - 33), max(0, n - 1), Int.random(in: 0..<n, using: &rng)]
            for from in starts {
                let expected = byteByByte(bytes, from: from)
                let got = bytes.withUnsafeBufferPointer { JPEGScanner.entropyEnd($0, from: from) }
                #expect(got == expected, "round \(round), from \(from), \(n) bytes")
                if expected == nil { ended += 1 } else { found += 1 }
            }
        }
        #expect(found > 1000 && ended > 1000)
    }

    @Test func truncationAtEveryOffsetNeverTraps() {
        let f = Fixtures.bytes("fuji_lv_port55742_frame_vcam.bin")
        let jpeg = f[18...]
        for cut in 0..<jpeg.count {
            #expect((try? JPEGScanner.scan(jpeg.prefix(cut))) == nil)
        }
    }
}

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func vectors(input: String, digest: String) {
        #expect(SHA256.hex(Array(input.utf8)) == digest)
    }

    @Test func millionA() {
        #expect(SHA256.hex(repeatElement(UInt8(ascii: "a"), count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func incrementalEqualsOneShot() {
        var rng = SplitMix64(seed: 9)
        let data = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for split in [0, 1, 55, 56, 63, 64, 65, 999] {
            var s = SHA256()
            s.update(data[0..<split]); s.update(data[split...])
            #expect(s.finalize() == SHA256.hash(data))
        }
    }
}
