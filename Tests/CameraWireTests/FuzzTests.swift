import JPEGKit
import Foundation
import Testing
import TestSupport
import LiveViewCore
@testable import CameraWire

/// Hostile input: deterministic mutation loops (seeded PRNG) over generated streams and the copied
/// fixtures. Iterations per format: `LIVEGATE_FUZZ_ITERATIONS` (default 6 000, small inputs so a
/// debug build stays fast; run ≥ 10⁶ in release with `swift test -c release`).
@Suite struct FuzzTests {
    static let iterations: Int = {
        if let s = ProcessInfo.processInfo.environment["LIVEGATE_FUZZ_ITERATIONS"], let n = Int(s), n >= 0 { return n }
        return 6_000
    }()

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            if b.isEmpty { b = [0xFF]; continue }
            let i = Int.random(in: 0..<b.count, using: &rng)
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: b[i] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1: b[i] = [0x00, 0xFF, 0xD8, 0xD9, 0xDA, 0x7F, 0x80, 0x0D, 0x0A].randomElement(using: &rng)!
            case 2: b.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: i)
            case 3: b.removeSubrange(i..<min(b.count, i + Int.random(in: 1...16, using: &rng)))
            case 4, 5:
                // Length-field corruption: a u32/u16 in either byte order at a random or header offset.
                let at = Bool.random(using: &rng) ? i : min(b.count - 1, 4 * Int.random(in: 0...8, using: &rng))
                let v: UInt32 = [0, 1, 7, 8, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, UInt32(b.count), UInt32(b.count) + 1,
                                 UInt32.random(in: 0...UInt32.max, using: &rng)].randomElement(using: &rng)!
                let le = Bool.random(using: &rng)
                for k in 0..<(Bool.random(using: &rng) ? 4 : 2) where at + k < b.count {
                    b[at + k] = UInt8(truncatingIfNeeded: le ? v >> (8 * UInt32(k)) : v >> (24 - 8 * UInt32(k)))
                }
            case 6: b.removeLast(Int.random(in: 0...min(b.count, 64), using: &rng))
            default:
                let n = min(Int.random(in: 1...64, using: &rng), b.count - i)
                b.insert(contentsOf: b[i..<(i + n)], at: Int.random(in: 0...b.count, using: &rng))
            }
        }
        return b
    }

    static func checkFrame(_ f: WireFrame) -> Bool {
        guard f.jpeg.count >= 4, f.jpeg.first == 0xFF, f.jpeg[f.jpeg.startIndex + 1] == 0xD8,
              f.jpeg[f.jpeg.endIndex - 2] == 0xFF, f.jpeg.last == 0xD9, f.jpeg.count == f.info.length,
              let again = try? JPEGScanner.scan(f.jpeg), again == f.info else { return false }
        return true
    }

    /// Up to three sorted cut points inside `count` bytes (at least `least` of them).
    static func cuts(_ count: Int, _ rng: inout SplitMix64, least: Int = 0) -> [Int] {
        (0..<Int.random(in: least...3, using: &rng)).map { _ in Int.random(in: 0...count, using: &rng) }.sorted()
    }

    /// `input` cut at `cuts` (sorted): consecutive slices, with the input's indices, covering all of it.
    static func pieces(_ input: [UInt8], at cuts: [Int]) -> [ArraySlice<UInt8>] {
        var start = 0
        return (cuts + [input.count]).map { c in
            defer { start = c }
            return input[start..<c]
        }
    }

    @Test(arguments: Gen.streamFormats)
    func streamFormats(format: WireFormat) {
        var rng = SplitMix64(seed: 0xF022 &+ UInt64(format.rawValue.count) &* 31)
        let limits = WireLimits(maxContainer: 64 << 10)
        var seeds: [[UInt8]] = (0..<16).map { _ in Gen.stream(format, &rng, small: true).input }
        switch format {
        case .nikonLV: seeds.append(Fixtures.bytes("nikon_zr_getliveviewimageex_sweep-00.bin"))
        case .fujiLV: seeds.append(Fixtures.bytes("fuji_lv_port55742_frame_vcam.bin"))
        case .sonyPTP: seeds.append(Array(Fixtures.bytes("rocc-liveview-a9ii-multipleimages.bin").prefix(24300)))
        default: break
        }
        var bad = 0, frames = 0
        for it in 0..<Self.iterations {
            // Real fixtures are large: use them for 1 in 50 iterations.
            let seed = it % 50 == 0 && seeds.count > 16 ? seeds[16] : seeds[it % 16]
            let input = Self.mutate(seed, &rng)
            var p = AnyStreamParser(format, limits: limits)
            var got: [FrameRecord] = []
            var maxBuffered = 0
            let cuts = Self.cuts(input.count, &rng)
            for piece in Self.pieces(input, at: cuts) {
                p.feed(piece) { ev in
                    if case .frame(let f) = ev {
                        if !Self.checkFrame(f) { bad += 1 }
                        got.append(FrameRecord(f))
                    }
                }
                maxBuffered = max(maxBuffered, p.buffered)
            }
            p.finish { if case .frame = $0 { bad += 1 } }
            if maxBuffered > limits.maxContainer + 64 { bad += 1 }
            // Same frames however the hostile input is split.
            if !cuts.isEmpty && AnyStreamParser.run(format, input, limits: limits).frames != got { bad += 1 }
            frames += got.count
            if bad > 0 { Issue.record("\(format) iteration \(it): invariant broken"); break }
        }
        #expect(bad == 0)
        print("fuzz \(format.rawValue): \(Self.iterations) mutated inputs, \(frames) frames, no invariant broken")
        if Self.iterations >= 1000 { #expect(frames > 0) }
    }

    static func pcap(_ format: WireFormat, _ rng: inout SplitMix64) -> [UInt8] {
        var w = PcapWriter()
        var t: Int64 = 1_700_000_000_000_000_000
        var number = UInt16.random(in: 0...UInt16.max, using: &rng)
        if format == .olympusRTP {
            let seq = UInt16.random(in: 0...UInt16.max, using: &rng), ts = UInt32.random(in: 0...1000, using: &rng)
            for d in OlympusWireTests.stream(&rng, frames: 3, seq: seq, ts: ts, chunk: 200).packets {
                w.appendUDP(d, source: 1, sourcePort: 1, destination: 2, destinationPort: 40000, timestampNs: t)
                t += 1000
            }
            return w.bytes
        }
        for _ in 0..<3 {
            let j = Gen.jpeg(&rng, small: true)
            if format == .banditUDP {
                let dg = BanditDatagram.frame(jpeg: j, firstPacketNumber: number, ptsSeconds: 0.25, chunk: 200)
                number &+= UInt16(dg.count)
                for d in dg {
                    w.appendUDP(d, source: 1, sourcePort: 1, destination: 2, destinationPort: 4001, timestampNs: t)
                    t += 1000
                }
            } else {
                var d: [UInt8] = []
                let b = PanasonicDatagram.Box(x1: 100, y1: 100, x2: 200, y2: 300, type: 2)
                PanasonicDatagram.append(jpeg: j, seq: 5, boxes: [b, b], to: &d)
                w.appendUDP(d, source: 1, sourcePort: 1, destination: 2, destinationPort: 49152, timestampNs: t)
            }
        }
        return w.bytes
    }

    @Test(arguments: [WireFormat.banditUDP, .panasonicUDP, .olympusRTP])
    func datagramFormats(format: WireFormat) {
        var rng = SplitMix64(seed: 0xDA7A &+ UInt64(format.rawValue.count))
        let seeds = (0..<8).map { _ in Self.pcap(format, &rng) }
        var bad = 0, lines = 0
        for it in 0..<Self.iterations {
            var input = Self.mutate(seeds[it % 8], &rng)
            if it % 3 == 0 { input.replaceSubrange(0..<min(24, input.count), with: seeds[0][0..<24]) }  // keep the magic
            Inspector.run(format: format, input: input, emit: { line in
                lines += 1
                if !line.hasPrefix("{\"index\": ") { bad += 1 }
            }, diagnostic: { _ in })
            if bad > 0 { Issue.record("\(format) iteration \(it)"); break }
        }
        #expect(bad == 0)
        if Self.iterations >= 1000 { #expect(lines > 0) }
        // Direct datagram-level mutation with frame checks.
        var r = BanditViewfinderReassembler()
        var p = PanasonicLiveViewParser()
        var o = OlympusLiveViewReassembler()
        var checked = 0
        let check = { (f: WireFrame) in
            checked += 1
            if !Self.checkFrame(f) { bad += 1 }
        }
        for _ in 0..<(Self.iterations / 4) {
            // One frame's datagrams; in a quarter of the frames one of them is mutated.
            let j = Gen.jpeg(&rng, small: true)
            var datagrams: [[UInt8]]
            if format == .olympusRTP {
                let seq = UInt16.random(in: 0...UInt16.max, using: &rng)
                datagrams = OlympusWireTests.stream(&rng, frames: 1, seq: seq, ts: 7, chunk: 256).packets
            } else if format == .banditUDP {
                datagrams = BanditDatagram.frame(jpeg: j, firstPacketNumber: 9, ptsSeconds: 1, chunk: 64)
            } else {
                var d: [UInt8] = []
                PanasonicDatagram.append(jpeg: j, seq: 1, boxes: [.init(x1: 1, y1: 2, x2: 3, y2: 4, type: 1)], to: &d)
                datagrams = [d]
            }
            if rng.next() % 4 == 0 {
                let k = Int.random(in: 0..<datagrams.count, using: &rng)
                datagrams[k] = Self.mutate(datagrams[k], &rng)
            }
            for d in datagrams {
                switch format {
                case .olympusRTP: o.ingest(d[...]) { if case .frame(let f) = $0 { check(f) } }
                case .banditUDP: r.ingest(d[...]) { if case .frame(let f) = $0 { check(f) } }
                default: p.ingest(d[...], offset: nil) { if case .frame(let f) = $0 { check(f) } }
                }
            }
        }
        #expect(bad == 0)
        if Self.iterations >= 1000 { #expect(checked > 0, "no frame came through the datagram loop") }
        print("fuzz \(format.rawValue): \(Self.iterations) mutated captures (\(lines) lines out), \(Self.iterations / 4) frames' datagrams (one datagram mutated in a quarter of the frames; \(checked) frames out, each checked), no invariant broken")
    }

    /// The JPEG facts every frame is judged by: whatever the bytes, the scanner answers, and what it
    /// accepts is inside the input.
    @Test func jpegScanner() {
        var rng = SplitMix64(seed: 0x1BE6)
        let seeds = (0..<16).map { _ in Gen.jpeg(&rng, small: true) }
        var bad = 0, accepted = 0
        for it in 0..<Self.iterations {
            let input = Self.mutate(seeds[it % 16], &rng)
            if let info = try? JPEGScanner.scan(input) {
                accepted += 1
                if info.length > input.count || info.width <= 0 || info.height <= 0 { bad += 1 }
            }
            if let n = JPEGScanner.length(input[...]), n > input.count { bad += 1 }
            input.withUnsafeBytes { raw in
                if let size = JPEGScanner.size(of: raw), size.width <= 0 || size.height <= 0 { bad += 1 }
                _ = JPEGScanner.rtpCompatibility(of: raw)
            }
            if bad > 0 { Issue.record("jpeg iteration \(it): invariant broken"); break }
        }
        #expect(bad == 0)
        if Self.iterations >= 1000 { #expect(accepted > 0) }
        print("fuzz jpeg: \(Self.iterations) mutated inputs, \(accepted) accepted, no invariant broken")
    }

    /// The chunked transfer coding of Sony's live-view body: pieces stay inside the input, however
    /// it is split.
    @Test func httpChunked() {
        var rng = SplitMix64(seed: 0xC4C4)
        let seeds: [[UInt8]] = (0..<16).map { _ in
            var out: [UInt8] = []
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                HTTPChunkedDecoder.appendChunk((0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, to: &out)
            }
            HTTPChunkedDecoder.appendLastChunk(to: &out)
            return out
        }
        var bad = 0, data = 0
        /// The data bytes and the issues' offsets of `input` fed in pieces cut at `cuts`.
        func decode(_ input: [UInt8], cuts: [Int]) -> (data: [UInt8], issues: [Int]) {
            var d = HTTPChunkedDecoder()
            var out: [UInt8] = [], issues: [Int] = []
            for chunk in Self.pieces(input, at: cuts) {
                d.decode(chunk, run: { piece, offset in
                    // Each piece is the input's own bytes at the offset it names.
                    if offset != piece.startIndex || piece.startIndex < chunk.startIndex || piece.endIndex > chunk.endIndex { bad += 1 }
                    out += piece
                }, issue: { issues.append($0.offset) })
            }
            return (out, issues)
        }
        for it in 0..<Self.iterations {
            let input = Self.mutate(seeds[it % 16], &rng)
            let whole = decode(input, cuts: [])
            data += whole.data.count
            // However the body is split, the same data and the same problems.
            let cuts = Self.cuts(input.count, &rng, least: 1)
            let split = decode(input, cuts: cuts)
            if split.data != whole.data || split.issues != whole.issues { bad += 1 }
            if bad > 0 { Issue.record("chunked iteration \(it): invariant broken (cuts \(cuts))"); break }
        }
        #expect(bad == 0)
        if Self.iterations >= 1000 { #expect(data > 0) }
        print("fuzz http-chunked: \(Self.iterations) mutated inputs, \(data) data bytes, no invariant broken")
    }

    /// PTP/IP framing (every PTP camera's transport): the decoder never holds more than it was fed.
    @Test func ptpipPackets() {
        var rng = SplitMix64(seed: 78)
        let base = PTPIPTests.all.flatMap(\.bytes)
        let limits = WireLimits(maxContainer: 4096)
        var bad = 0, packets = 0
        /// The packets of `input` fed in pieces cut at `cuts`, what is left buffered, and the failure.
        func decode(_ input: [UInt8], cuts: [Int]) -> (packets: [[UInt8]], left: Int, failed: WireIssue?) {
            var dec = PTPIPPacketDecoder(limits: limits)
            var out: [[UInt8]] = []
            for piece in Self.pieces(input, at: cuts) { dec.feed(piece) { out.append($0.bytes) } }
            return (out, dec.buffer.count, dec.failed)
        }
        for it in 0..<Self.iterations {
            let input = Self.mutate(base, &rng)
            let whole = decode(input, cuts: [])
            packets += whole.packets.count
            // Until a failure, every byte is in a packet or still buffered.
            if whole.failed == nil && whole.packets.reduce(0, { $0 + $1.count }) + whole.left != input.count { bad += 1 }
            // However the input is split, the same packets and the same failure.
            let cuts = Self.cuts(input.count, &rng, least: 1)
            let split = decode(input, cuts: cuts)
            if split.packets != whole.packets || split.failed != whole.failed { bad += 1 }
            if bad > 0 { Issue.record("ptpip iteration \(it): invariant broken (cuts \(cuts))"); break }
        }
        #expect(bad == 0)
        if Self.iterations >= 1000 { #expect(packets > 0) }
        print("fuzz ptpip: \(Self.iterations) mutated inputs, \(packets) packets, no invariant broken")
    }
}
