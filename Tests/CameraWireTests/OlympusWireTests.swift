import JPEGKit
import Testing
import TestSupport
import LiveViewCore
@testable import CameraWire

@Suite struct OlympusWireTests {
    /// Runs datagrams through a reassembler: frames (with metadata), issues, stats.
    struct Run {
        var frames: [FrameRecord] = []
        var metadata: [OlympusRTP.Metadata] = []
        var issues: [WireIssue] = []
        var stats = WireStats()
        var droppedPackets = 0
    }

    static func run(_ datagrams: [[UInt8]], liveViewSize: OlympusLiveViewSize? = nil, finish: Bool = true) -> Run {
        var r = OlympusLiveViewReassembler(liveViewSize: liveViewSize)
        var out = Run()
        for (i, d) in datagrams.enumerated() {
            r.ingestWithMetadata(d[...], offset: i * 10_000) { ev in
                switch ev {
                case .frame(let f, let m):
                    out.frames.append(FrameRecord(f))
                    out.metadata.append(m)
                case .issue(let i): out.issues.append(i)
                }
            }
        }
        if finish { r.finish { if case .issue(let i) = $0 { out.issues.append(i) } } }
        out.stats = r.stats
        out.droppedPackets = r.droppedPackets
        return out
    }

    /// Full metadata like the emulator sends, with an AF frame and faces inside a w×h image.
    static func metadata(_ rng: inout SplitMix64, width: Int, height: Int) -> OlympusRTP.Metadata {
        var m = OlympusRTP.Metadata()
        func box() -> (UInt32, UInt32, UInt32, UInt32) {
            let w = UInt32.random(in: 1...UInt32(max(1, width / 2)), using: &rng)
            let h = UInt32.random(in: 1...UInt32(max(1, height / 2)), using: &rng)
            return (UInt32.random(in: 0...UInt32(width) - w, using: &rng), UInt32.random(in: 0...UInt32(height) - h, using: &rng), w, h)
        }
        let b = box()
        m.afFrame = OlympusRTP.AFFrame(colour: UInt32.random(in: 0...3, using: &rng), x: b.0, y: b.1, width: b.2, height: b.3)
        m.mediaInfo = 0b101
        m.rotation = [1, 3, 6, 8].randomElement(using: &rng)
        m.maxTakeNumber = 9999
        m.shutter = .init(slowest: .init(60, 1), fastest: .init(1, 4000), current: .init(1, 250))
        m.aperture = .init(maximum: 220, minimum: 35, current: 56)
        m.exposureCompensation = .init(maximum: 50, minimum: -50, current: -7)
        m.iso = .init(current: 400, auto: true, extendedWarning: false)
        m.exposureWarning = 0x0001_0000
        m.focusSystemRaw = 1
        m.zoom = .init(wide: 14, current: 25, tele: 42)
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            let f = box()
            m.faces.append(.init(x: UInt16(f.0), y: UInt16(f.1), width: UInt16(f.2), height: UInt16(f.3)))
        }
        return m
    }

    /// AF areas a frame with `m` must carry in a w×h JPEG whose live-view space is the JPEG itself.
    static func identityAF(_ m: OlympusRTP.Metadata) -> [AFArea] {
        var out: [AFArea] = []
        if let a = m.afFrame, a.width > 0, a.height > 0 {
            out.append(AFArea(pixels: PixelRect(x: Int(a.x), y: Int(a.y), width: Int(a.width), height: Int(a.height)),
                              camera: CameraRect(x: Double(a.x), y: Double(a.y), width: Double(a.width), height: Double(a.height)),
                              kind: .af, state: a.state))
        }
        for f in m.faces {
            out.append(AFArea(pixels: PixelRect(x: Int(f.x), y: Int(f.y), width: Int(f.width), height: Int(f.height)),
                              camera: CameraRect(x: Double(f.x), y: Double(f.y), width: Double(f.width), height: Double(f.height)),
                              kind: .face, state: .normal))
        }
        return out
    }

    /// `n` frames with random JPEGs and metadata, packetized from sequence `seq`, frame numbers from `ts`.
    static func stream(_ rng: inout SplitMix64, frames n: Int, seq: UInt16, ts: UInt32, chunk: Int? = nil)
        -> (packets: [[UInt8]], perFrame: [[[UInt8]]], expected: [FrameRecord], metadata: [OlympusRTP.Metadata])
    {
        var p = OlympusRTPPacketizer(ssrc: 0xCAFE_F00D, firstSequence: seq, chunk: chunk ?? 300)
        var all: [[UInt8]] = [], per: [[[UInt8]]] = [], expected: [FrameRecord] = [], metas: [OlympusRTP.Metadata] = []
        var frameNumber = ts
        var cycles: Int64 = 0
        for _ in 0..<n {
            let j = Gen.jpeg(&rng)
            let info = try! JPEGScanner.scan(j)
            var m = metadata(&rng, width: info.width, height: info.height)
            if chunk == nil { p.chunk = Int.random(in: 40...2000, using: &rng) }
            let packets = p.packets(jpeg: j, frameNumber: frameNumber, metadata: m)
            m.frameSize = UInt32(j.count)
            all += packets
            per.append(packets)
            metas.append(m)
            expected.append(Gen.record(j, offset: nil, seq: cycles << 32 | Int64(frameNumber), af: identityAF(m)))
            frameNumber &+= 1
            if frameNumber == 0 { cycles += 1 }
        }
        return (all, per, expected, metas)
    }

    // MARK: Round trip

    @Test func serializerToParserRoundTripWithSequenceAndTimestampWrap() {
        var rng = SplitMix64(seed: 0x01_1E)
        let s = Self.stream(&rng, frames: 40, seq: 65_500, ts: UInt32.max - 5)
        #expect(s.packets.count > 60, "the stream must wrap the 16-bit sequence number")
        let r = Self.run(s.packets)
        #expect(r.frames == s.expected)
        #expect(r.metadata == s.metadata)
        #expect(r.issues.isEmpty, "\(r.issues)")
        #expect(r.stats.frames == 40 && r.stats.droppedFrames == 0 && r.stats.issues == 0)
        #expect(r.frames.contains { $0.seq! >= 1 << 32 } && r.frames.contains { $0.seq! == Int64(UInt32.max) })
        // Extension TLVs in the documented order on the first packet of a frame.
        let first = s.perFrame[0][0]
        var ids: [UInt16] = []
        var p = 16
        let end = 16 + 4 * (Int(first[14]) << 8 | Int(first[15]))
        while p < end {
            ids.append(UInt16(first[p]) << 8 | UInt16(first[p + 1]))
            p += 4 + 4 * (Int(first[p + 2]) << 8 | Int(first[p + 3]))
        }
        #expect(Array(ids.prefix(12)) == [1, 2, 3, 4, 5, 8, 9, 10, 12, 16, 17, 18])
        #expect(ids.dropFirst(12) == ArraySlice((0..<s.metadata[0].faces.count).map { UInt16(108 + $0) }))
    }

    @Test func workedExampleFirstPacketIsByteExact() throws {
        // olympus.md §6.4: frame 7, sequence 0x0123, SSRC 0x11223344, 40000-byte JPEG starting FF D8 FF E0,
        // AF success at (284,204) 72x72, orientation 1.
        var rng = SplitMix64(seed: 64)
        let body = SyntheticJPEG.make(width: 640, height: 480, entropyBytes: 30_000, rng: &rng, fakeMarkersInComment: false)
        var j: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]
        let pad = 40_000 - j.count - (body.count - 2) - 4
        try #require(pad >= 0)
        j += [0xFF, 0xFE]
        j.putBE16(UInt16(pad + 2))
        j += [UInt8](repeating: 0x20, count: pad)
        j += body.dropFirst(2)
        try #require(j.count == 40_000)
        var m = OlympusRTP.Metadata()
        m.afFrame = .init(colour: 1, x: 284, y: 204, width: 72, height: 72)
        m.rotation = 1
        var p = OlympusRTPPacketizer(ssrc: 0x1122_3344, firstSequence: 0x0123)
        let packets = p.packets(jpeg: j, frameNumber: 7, metadata: m)
        let expected: [UInt8] = [
            0x90, 0x60, 0x01, 0x23, 0x00, 0x00, 0x00, 0x07, 0x11, 0x22, 0x33, 0x44,
            0x00, 0x01, 0x00, 0x0a,
            0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x9c, 0x40,
            0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x1c, 0x00, 0x00, 0x00, 0xcc,
            0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x48,
            0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
            0xff, 0xd8, 0xff, 0xe0,
        ]
        #expect(Array(packets[0].prefix(expected.count)) == expected)
        #expect(packets[0].count == 56 + 1400)
        let last = try #require(packets.last)
        #expect(Array(last.prefix(8)) == [0x80, 0xe0, 0x01, UInt8(0x23 + packets.count - 1), 0, 0, 0, 7])
        #expect(Array(last.suffix(2)) == [0xff, 0xd9])
        #expect(packets.count == (40_000 + 1399) / 1400)
        // And it parses back: AF box exact in the 640x480 JPEG.
        let r = Self.run(packets)
        try #require(r.frames.count == 1)
        #expect(r.frames[0].jpeg == j && r.frames[0].seq == 7 && r.frames[0].width == 640)
        #expect(r.frames[0].af.map(\.pixels) == [PixelRect(x: 284, y: 204, width: 72, height: 72)])
        #expect(r.frames[0].af.first?.state == .focused)
        #expect(r.metadata[0].rotation == 1 && r.metadata[0].frameSize == 40_000)
        // The parser reads the header as written.
        guard case .success(let pk) = OlympusRTP.parsePacket(packets[0][...]) else { Issue.record("no parse"); return }
        #expect(pk.header == OlympusRTP.Header(marker: false, hasExtension: true, sequence: 0x0123, timestamp: 7, ssrc: 0x1122_3344))
        #expect(pk.extensionRange == 16..<56 && pk.payloadRange == 56..<packets[0].count)
    }

    @Test func afBoxesScaleWhenTheLiveViewSpaceDiffersFromTheJPEG() throws {
        var rng = SplitMix64(seed: 65)
        let j = SyntheticJPEG.make(width: 1280, height: 960, entropyBytes: 500, rng: &rng)
        var m = OlympusRTP.Metadata()
        m.afFrame = .init(colour: 2, x: 100, y: 50, width: 72, height: 72)
        m.faces = [.init(x: 10, y: 20, width: 30, height: 40)]
        var p = OlympusRTPPacketizer(ssrc: 1)
        let r = Self.run(p.packets(jpeg: j, frameNumber: 0, metadata: m), liveViewSize: .vga)
        try #require(r.frames.count == 1)
        #expect(r.frames[0].af.map(\.pixels) == [PixelRect(x: 200, y: 100, width: 144, height: 144),
                                                  PixelRect(x: 20, y: 40, width: 60, height: 80)])
        #expect(r.frames[0].af.map(\.kind) == [.af, .face] && r.frames[0].af[0].state == .notFocused)
        #expect(r.frames[0].af[0].camera == CameraRect(x: 100, y: 50, width: 72, height: 72))
        // An AF TLV with colour 0 and zeros gives no box.
        m.afFrame = .init(colour: 0, x: 0, y: 0, width: 0, height: 0)
        m.faces = []
        #expect(Self.run(p.packets(jpeg: j, frameNumber: 1, metadata: m)).frames.first?.af == [])
        #expect(OlympusLiveViewSize("0640x0480") == .vga && OlympusLiveViewSize.vga.description == "0640x0480")
        #expect(OlympusLiveViewSize("640x") == nil && OlympusLiveViewSize("0x480") == nil)
    }

    @Test func singlePacketFrameWithXAndMTogether() throws {
        var rng = SplitMix64(seed: 66)
        let j = Gen.jpeg(&rng, small: true)
        var p = OlympusRTPPacketizer(ssrc: 9, firstSequence: 65_535, chunk: 65_000)
        let a = p.packets(jpeg: j, frameNumber: 41, metadata: .init())
        let b = p.packets(jpeg: j, frameNumber: 42, metadata: .init())
        try #require(a.count == 1 && a[0][0] == 0x90 && a[0][1] == 0xE0)
        let r = Self.run(a + b)
        #expect(r.frames.map(\.seq) == [41, 42] && r.frames.allSatisfy { $0.jpeg == j })
        #expect(r.stats.droppedFrames == 0 && r.issues.isEmpty)
    }

    @Test func newSSRCStartsANewSession() {
        var rng = SplitMix64(seed: 74)
        let a = Self.stream(&rng, frames: 3, seq: 10, ts: 500, chunk: 300)
        var p = OlympusRTPPacketizer(ssrc: 0x0BAD_CAFE, firstSequence: 0, chunk: 300)
        let j = a.expected[0].jpeg
        var cut = a.perFrame[2]
        cut.removeLast()                                    // session 1 ends inside frame 502
        let b = p.packets(jpeg: j, frameNumber: 0, metadata: .init()) + p.packets(jpeg: j, frameNumber: 1, metadata: .init())
        let r = Self.run(a.perFrame[0] + a.perFrame[1] + cut + b)
        #expect(r.frames.map(\.seq) == [500, 501, 0, 1])
        #expect(r.stats.droppedFrames == 1 && r.issues.count == 1 && r.issues[0].description.contains("SSRC changed"))
    }

    // MARK: Malformed input

    @Test func truncatedHeaderAndWrongPayloadTypeAreCountedDrops() {
        var rng = SplitMix64(seed: 67)
        let s = Self.stream(&rng, frames: 3, seq: 10, ts: 0)
        var wrongPT = s.perFrame[1][0]
        wrongPT[1] = (wrongPT[1] & 0x80) | 97
        var packets = s.packets
        packets.insert([0x80, 0x60, 0x00], at: 0)               // truncated RTP header
        packets.insert([0x40] + [UInt8](repeating: 0, count: 20), at: 1)  // RTP version 1
        packets.insert(wrongPT, at: packets.count)              // a stray packet with PT 97 after the stream
        let r = Self.run(packets)
        #expect(r.frames == s.expected)
        #expect(r.droppedPackets == 3 && r.stats.issues == 3 && r.stats.droppedFrames == 0)
        #expect(r.issues.contains { $0.error == .truncated(needed: 12, available: 3) })
        #expect(r.issues.contains { $0.description.contains("payload type 97") })
    }

    @Test func missingEndMarkerDropsTheFrame() {
        var rng = SplitMix64(seed: 68)
        let s = Self.stream(&rng, frames: 4, seq: 100, ts: 500, chunk: 200)
        var per = s.perFrame
        let lastIndex = per[1].count - 1
        per[1][lastIndex][1] &= 0x7F    // M=0 on frame 1's last packet
        let r = Self.run(per.flatMap { $0 })
        #expect(r.frames == [s.expected[0], s.expected[2], s.expected[3]])
        #expect(r.stats.droppedFrames == 1 && r.stats.issues == 1)
        #expect(r.issues[0].description.contains("no end-of-frame marker"))
        // Missing at the end of the input: `finish` drops it.
        var tail = s.perFrame[3]
        tail[tail.count - 1][1] &= 0x7F
        let t = Self.run(tail)
        #expect(t.frames.isEmpty && t.stats.droppedFrames == 1)
    }

    @Test func sequenceGapMissingStartAndTimestampChangeDropOnlyTheirFrame() {
        var rng = SplitMix64(seed: 69)
        let s = Self.stream(&rng, frames: 6, seq: 65_530, ts: 1000, chunk: 150)
        var per = s.perFrame
        per[1].remove(at: 1)                       // sequence gap inside frame 1
        per[3].removeFirst()                       // frame 3 has no start packet
        // Frame 4's second packet claims another frame number.
        per[4][1][7] ^= 0x01
        let r = Self.run(per.flatMap { $0 })
        #expect(r.frames == [s.expected[0], s.expected[2], s.expected[5]])
        #expect(r.stats.droppedFrames == 3, "\(r.issues)")
        #expect(r.issues.contains { if case .datagramLost = $0.error { true } else { false } })
        #expect(r.issues.contains { $0.description.contains("start packet (X=1) missing") })
        #expect(r.issues.contains { $0.description.contains("timestamp changed") })
        // A frame lost entirely shows as a jump in the frame number.
        var whole = s.perFrame
        whole.remove(at: 2)
        let w = Self.run(whole.flatMap { $0 })
        #expect(w.frames.count == 5 && w.stats.droppedFrames == 1 && w.issues.isEmpty)
    }

    @Test func absurdExtensionAndTLVLengthsDropTheFrameWithoutTrapping() {
        var rng = SplitMix64(seed: 70)
        let s = Self.stream(&rng, frames: 3, seq: 0, ts: 0, chunk: 500)
        // Extension length 0xFFFF words: far beyond the datagram.
        var a = s.perFrame
        a[1][0][14] = 0xFF; a[1][0][15] = 0xFF
        let ra = Self.run(a.flatMap { $0 })
        #expect(ra.frames == [s.expected[0], s.expected[2]])
        #expect(ra.stats.droppedFrames == 1 && ra.stats.issues == 1)
        #expect(ra.issues[0].description.contains("runs past the datagram"))
        // First TLV (framesize) claims 0x7FFF words.
        var b = s.perFrame
        b[1][0][18] = 0x7F; b[1][0][19] = 0xFF
        let rb = Self.run(b.flatMap { $0 })
        #expect(rb.frames == [s.expected[0], s.expected[2]])
        #expect(rb.stats.droppedFrames == 1 && rb.issues[0].description.contains("TLV id 1"))
        // framesize disagreeing with the bytes received.
        var p = OlympusRTPPacketizer(ssrc: 5, chunk: 500)
        var m = OlympusRTP.Metadata()
        m.frameSize = UInt32(s.expected[0].jpeg.count + 1)
        let rc = Self.run(p.packets(jpeg: s.expected[0].jpeg, frameNumber: 0, metadata: m))
        #expect(rc.frames.isEmpty && rc.stats.droppedFrames == 1 && rc.issues[0].description.contains("framesize"))
        // Unknown TLV ids are skipped by their length.
        var d = s.perFrame[0]
        d[0][16] = 0x12; d[0][17] = 0x34            // id 1 → 0x1234
        let rd = Self.run(d)
        #expect(rd.frames.count == 1 && rd.metadata[0].frameSize == nil && rd.metadata[0].afFrame != nil)
    }

    @Test func garbagePayloadsNeverGiveAFrame() {
        var rng = SplitMix64(seed: 71)
        // A frame whose bytes are not a JPEG, one that does not end FF D9, one truncated JPEG.
        var p = OlympusRTPPacketizer(ssrc: 7, chunk: 64)
        let junk = Gen.junk(500, &rng)
        let j = Gen.jpeg(&rng, small: true)
        var noEOI = j
        noEOI[noEOI.count - 1] = 0x00
        var packets = p.packets(jpeg: junk, frameNumber: 0, metadata: .init())
        packets += p.packets(jpeg: noEOI, frameNumber: 1, metadata: .init())
        packets += p.packets(jpeg: [0xFF, 0xD8, 0x00, 0x00, 0xFF, 0xD9], frameNumber: 2, metadata: .init())
        packets += p.packets(jpeg: j, frameNumber: 3, metadata: .init())
        let r = Self.run(packets)
        #expect(r.frames.map(\.seq) == [3])
        #expect(r.stats.droppedFrames == 3)
        // Random datagrams: no trap, never a frame.
        var rr = OlympusLiveViewReassembler()
        var frames = 0
        for _ in 0..<3000 {
            var d = Gen.junk(Int.random(in: 0...80, using: &rng), &rng)
            if d.count >= 2 && Bool.random(using: &rng) { d[0] = [0x80, 0x90, 0xB0, 0x9F].randomElement(using: &rng)!; d[1] = 0x60 | (d[1] & 0x80) }
            rr.ingest(d[...]) { if case .frame = $0 { frames += 1 } }
        }
        #expect(frames == 0 && rr.stats.issues > 0)
    }

    @Test func everyTruncationAndByteFlipGivesOnlyTrueFrames() {
        var rng = SplitMix64(seed: 72)
        let s = Self.stream(&rng, frames: 3, seq: 200, ts: 9, chunk: 120)
        let valid = Set(s.expected.map(\.jpeg))
        for i in s.packets.indices {
            for cut in stride(from: 0, to: s.packets[i].count, by: 3) {
                var t = s.packets
                t[i] = Array(t[i][0..<cut])
                for f in Self.run(t).frames { #expect(valid.contains(f.jpeg)) }
            }
        }
        for _ in 0..<400 {
            var t = s.packets
            // Headers and extensions only: a flipped JPEG byte is undetectable (RTP has no checksum).
            let i = Int.random(in: t.indices, using: &rng)
            let headerEnd = t[i][0] & 0x10 != 0 ? 16 + 4 * (Int(t[i][14]) << 8 | Int(t[i][15])) : 12
            let k = Int.random(in: 0..<headerEnd, using: &rng)
            t[i][k] ^= UInt8.random(in: 1...255, using: &rng)
            let r = Self.run(t)
            #expect(r.frames.count <= 3)
            for f in r.frames { #expect(valid.contains(f.jpeg)) }
        }
    }

    // MARK: Inspect

    @Test func inspectorGuessesAndParsesAPcap() {
        var rng = SplitMix64(seed: 73)
        let s = Self.stream(&rng, frames: 5, seq: 1, ts: 0)
        var w = PcapWriter()
        for (i, d) in s.packets.enumerated() {
            w.appendUDP(d, source: PcapWriter.ipv4(192, 168, 0, 10), sourcePort: 65_000,
                        destination: PcapWriter.ipv4(192, 168, 0, 2), destinationPort: 40_000, timestampNs: Int64(i) * 1000)
        }
        #expect(WireFormat.guess(w.bytes) == .olympusRTP)
        #expect(WireFormat.olympusRTP.isPcap)
        var lines: [String] = []
        let summary = Inspector.run(format: .olympusRTP, input: w.bytes, emit: { lines.append($0) }, diagnostic: { _ in })
        #expect(summary.frames == 5 && summary.issues == 0 && lines.count == 5)
        #expect(lines[2].contains("\"seq\": 2") && lines[2].contains("\"pts\": null"))
    }
}
