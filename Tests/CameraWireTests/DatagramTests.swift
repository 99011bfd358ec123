import JPEGKit
import Testing
import TestSupport
import LiveViewCore
@testable import CameraWire

@Suite struct DatagramTests {
    func bandit(_ datagrams: [[UInt8]]) -> (frames: [FrameRecord], stats: WireStats) {
        var r = BanditViewfinderReassembler()
        var frames: [FrameRecord] = []
        for d in datagrams { r.ingest(d[...]) { if case .frame(let f) = $0 { frames.append(FrameRecord(f)) } } }
        r.finish { _ in }
        return (frames, r.stats)
    }

    @Test func banditRoundTripWrapAndLoss() {
        var rng = SplitMix64(seed: 21)
        var all: [[UInt8]] = []
        var expected: [FrameRecord] = []
        var number: UInt16 = 65500
        var lost = 0
        for i in 0..<30 {
            let j = Gen.jpeg(&rng)
            let pts = Float(i) / 30
            var dg = BanditDatagram.frame(jpeg: j, firstPacketNumber: number, ptsSeconds: pts,
                                          chunk: Int.random(in: 50...1017, using: &rng))
            let start = number
            number &+= UInt16(dg.count)
            if i % 7 == 3 && dg.count > 2 {
                dg.remove(at: Int.random(in: 1..<dg.count, using: &rng))   // a lost datagram: frame dropped
                lost += 1
            } else {
                expected.append(Gen.record(j, offset: nil, pts: Int64((Double(pts) * 1e9).rounded()), seq: Int64(start)))
            }
            all += dg
        }
        let r = bandit(all)
        #expect(r.frames == expected)
        #expect(r.stats.droppedFrames == lost)
        #expect(r.frames.contains { $0.seq! > 65000 } && r.frames.contains { $0.seq! < 1000 })
    }

    @Test func banditMalformedDatagramsDropped() {
        var rng = SplitMix64(seed: 22)
        let j = Gen.jpeg(&rng)
        var dg = BanditDatagram.frame(jpeg: j, firstPacketNumber: 1, ptsSeconds: 0.5)
        dg.insert([0x55, 0xAA, 0x01], at: 1)          // too short
        dg.insert([0x55, 0xAB, 0, 0, 0, 0, 0], at: 1)  // bad sync
        let r = bandit(dg)
        #expect(r.frames.count == 1 && r.frames[0].jpeg == j && r.frames[0].pts == 500_000_000)
        #expect(r.stats.issues == 2)
        // A length field lying about the payload drops that datagram; the frame then misses bytes
        // and the next data datagram's number mismatches → dropped, never emitted.
        var bad = BanditDatagram.frame(jpeg: j, firstPacketNumber: 1, ptsSeconds: 0, chunk: 100)
        bad[2][6] ^= 1
        #expect(bandit(bad).frames.isEmpty)
        // Every truncation of every datagram: never a wrong frame.
        for i in 0..<dg.count {
            for cut in 0..<dg[i].count {
                var t = dg
                t[i] = Array(t[i][0..<cut])
                let f = bandit(t).frames
                #expect(f.isEmpty || f == [Gen.record(j, offset: nil, pts: 500_000_000, seq: 1)])
            }
        }
    }

    @Test func panasonicRoundTripAndTruncation() {
        var rng = SplitMix64(seed: 23)
        var p = PanasonicLiveViewParser()
        for i in 0..<50 {
            let j = Gen.jpeg(&rng, small: true)
            let info = try! JPEGScanner.scan(j)
            let types: [UInt16] = [0x0001, 0x0002, 0xFF01, 0xFF09, 0x0003, 0xFF03, 0x0006, 0xFF02, 0xFF04, 0x1234]
            let boxes = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                let x = UInt16.random(in: 0...900, using: &rng), y = UInt16.random(in: 0...900, using: &rng)
                return PanasonicDatagram.Box(x1: x, y1: y, x2: x + UInt16.random(in: 0...100, using: &rng),
                                             y2: y + UInt16.random(in: 0...100, using: &rng),
                                             type: types.randomElement(using: &rng)!)
            }
            let exType: UInt16 = [1, 5, 6, 8, 2].randomElement(using: &rng)!
            var d: [UInt8] = []
            PanasonicDatagram.append(jpeg: j, seq: Int32(i - 2), exType: exType, boxes: boxes,
                                     exHeaderSize: 16 + 12 * boxes.count + Int.random(in: 0...150, using: &rng), to: &d)
            var got: [FrameRecord] = []
            p.ingest(d[...], offset: 1000) { if case .frame(let f) = $0 { got.append(FrameRecord(f)) } }
            let af = PanasonicDatagram.hasBoxes(exType: exType) ? boxes.map { b -> AFArea in
                let (k, s) = PanasonicDatagram.kindState(b.type)
                return AFArea(camera: b.cameraRect, in: .panasonic, imageWidth: info.width, imageHeight: info.height,
                              kind: k, state: s)
            } : []
            #expect(got == [Gen.record(j, offset: 1000 + d.count - j.count, seq: Int64(i - 2), af: af)])
            if i < 3 {
                for cut in 0..<d.count {
                    var n = 0
                    p.ingest(d[0..<cut], offset: 0) { if case .frame = $0 { n += 1 } }
                    #expect(n == 0)
                }
            }
        }
    }

    @Test func pcapBothByteOrdersAndPrecisions() throws {
        var rng = SplitMix64(seed: 24)
        let j = Gen.jpeg(&rng, small: true)
        var d: [UInt8] = []
        PanasonicDatagram.append(jpeg: j, seq: 7, to: &d)
        for ns in [false, true] {
            var w = PcapWriter(nanosecond: ns)
            w.appendUDP([1, 2, 3], source: PcapWriter.ipv4(10, 0, 0, 1), sourcePort: 1, destination: PcapWriter.ipv4(10, 0, 0, 2),
                        destinationPort: 2, timestampNs: 1_500_000_123_000)
            w.appendUDP(d, source: PcapWriter.ipv4(192, 168, 54, 1), sourcePort: 65415,
                        destination: PcapWriter.ipv4(192, 168, 54, 10), destinationPort: 49152, timestampNs: 1_500_000_124_000)
            for bigEndian in [false, true] {
                var bytes = w.bytes
                if bigEndian { Self.swapPcap(&bytes) }
                var r = try PcapReader(bytes)
                #expect(r.bigEndian == bigEndian && r.nanosecond == ns && r.linkType == 1)
                let a = try #require(try r.next())
                #expect(a.timestampNs == 1_500_000_123_000)
                let u = try #require(PacketDecoder.udp(linkType: r.linkType, frame: a.data))
                #expect(Array(u.payload) == [1, 2, 3] && u.sourcePort == 1 && u.destinationPort == 2)   // padding excluded
                let b = try #require(try r.next())
                let v = try #require(PacketDecoder.udp(linkType: r.linkType, frame: b.data))
                #expect(Array(v.payload) == d)
                #expect(try r.next() == nil)
                var lines: [String] = []
                Inspector.run(format: .panasonicUDP, input: bytes, emit: { lines.append($0) }, diagnostic: { _ in })
                #expect(lines.count == 1 && lines[0].contains("\"seq\": 7"))
                #expect(WireFormat.guess(bytes) == .panasonicUDP)
                // Truncated file: records before the cut still parse, the cut one is an error.
                var t = try PcapReader(Array(bytes.dropLast(5)))
                _ = try t.next()
                #expect(throws: PcapError.self) { _ = try t.next() }
            }
        }
        #expect(throws: PcapError.badMagic) { _ = try PcapReader([UInt8](repeating: 0, count: 24)) }
    }

    /// Rewrites a little-endian classic pcap as big-endian.
    static func swapPcap(_ b: inout [UInt8]) {
        func sw32(_ i: Int) { b.swapAt(i, i + 3); b.swapAt(i + 1, i + 2) }
        func sw16(_ i: Int) { b.swapAt(i, i + 1) }
        sw32(0); sw16(4); sw16(6); sw32(8); sw32(12); sw32(16); sw32(20)
        var o = 24
        while o + 16 <= b.count {
            let incl = Int(b.le32(o + 8))
            for k in 0..<4 { sw32(o + 4 * k) }
            o += 16 + incl
        }
    }
}
