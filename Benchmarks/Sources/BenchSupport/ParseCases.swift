import CameraWire
import Foundation

/// One wire format's benchmark input: what a driver hands its parser in one pass — slices of a byte
/// stream cut like socket reads (stream formats) or UDP payloads (datagram formats) — built from the
/// shared real fixtures / conformance captures, repeated until a pass holds at least `minBytes`.
public struct ParseCase: Sendable {
    public let format: WireFormat
    /// Where the bytes come from (for the report).
    public let source: String
    /// What the parser is fed, in order, in one pass.
    public let units: [ArraySlice<UInt8>]
    /// Bytes in one pass.
    public let bytes: Int
    /// Largest unit (the memcpy baseline's buffer).
    public let maxUnit: Int

    init(format: WireFormat, source: String, units: [ArraySlice<UInt8>]) {
        self.format = format
        self.source = source
        self.units = units
        bytes = units.reduce(0) { $0 + $1.count }
        maxUnit = units.map(\.count).max() ?? 0
    }

    /// Stream input: `base` repeated to ≥ `minBytes`, cut into `chunk`-byte reads.
    static func stream(_ format: WireFormat, _ source: String, base: [UInt8], minBytes: Int, chunk: Int) -> ParseCase {
        var all: [UInt8] = []
        repeat { all += base } while all.count < minBytes
        var units: [ArraySlice<UInt8>] = []
        var i = 0
        while i < all.count {
            units.append(all[i..<min(i + chunk, all.count)])
            i += chunk
        }
        return ParseCase(format: format, source: source, units: units)
    }

    /// Datagram input: the UDP payloads of a pcap to `port`, repeated to ≥ `minBytes`.
    static func datagrams(_ format: WireFormat, _ source: String, pcap: [UInt8], port: UInt16, minBytes: Int) throws -> ParseCase {
        var reader = try PcapReader(pcap)
        var base: [ArraySlice<UInt8>] = []
        while let rec = try reader.next() {
            guard let u = PacketDecoder.udp(linkType: reader.linkType, frame: rec.data), u.destinationPort == port else { continue }
            base.append(u.payload)
        }
        var units: [ArraySlice<UInt8>] = []
        var n = 0
        repeat {
            units += base
            n += base.reduce(0) { $0 + $1.count }
        } while n < minBytes
        return ParseCase(format: format, source: source, units: units)
    }

    /// Every format's case (see Benchmarks/README.md for what each source is).
    public static func all(minBytes: Int = 2 << 20, chunk: Int = 64 * 1024) throws -> [ParseCase] {
        var out: [ParseCase] = []

        // sony-remote: the conformance capture (synthetic, no public capture exists), without its last
        // packet, which the capture cuts in the middle.
        let remote = try BenchPaths.read("conformance/captures/sony-remote-wrap.bin")
        var end = 0
        while end + 16 <= remote.count {
            let size = Int(remote[end + 12]) << 16 | Int(remote[end + 13]) << 8 | Int(remote[end + 14])
            let total = 136 + size + Int(remote[end + 15])
            if end + total > remote.count { break }
            end += total
        }
        out.append(.stream(.sonyRemote, "captures/sony-remote-wrap.bin (whole packets)",
                           base: Array(remote[..<end]), minBytes: minBytes, chunk: chunk))

        // sony-ptp: the real RX100 VII / A9 II JPEGs re-wrapped back to back with SonyPTPDataset
        // (the fixtures end in a partial dataset, so they cannot be repeated as they are).
        var ptp: [UInt8] = []
        for f in ["rocc-liveview-a9ii-multipleimages.bin", "rocc-liveview-rx100m7-multipleimages.bin"] {
            var parser = SonyPTPParser(transfer: .raw)
            var jpegs: [[UInt8]] = []
            parser.feed(try BenchPaths.read("fixtures/sony/" + f)) { ev in
                if case .frame(let wf) = ev { jpegs.append(Array(wf.jpeg)) }
            }
            for j in jpegs {
                SonyPTPDataset.append(jpeg: j, focalFrame: SonyPTPDataset.emptyFocalFrame(), to: &ptp)
            }
        }
        out.append(.stream(.sonyPTP, "fixtures/sony rocc RX100 VII + A9 II JPEGs, re-wrapped as datasets",
                           base: ptp, minBytes: minBytes, chunk: chunk))

        // nikon-lv: the six real Nikon ZR GetLiveViewImageEx objects back to back.
        var nikon: [UInt8] = []
        for n in ["00", "12", "18", "19", "20", "24"] {
            nikon += try BenchPaths.read("fixtures/ptp/nikon_zr_getliveviewimageex_sweep-\(n).bin")
        }
        out.append(.stream(.nikonLV, "fixtures/ptp nikon_zr_getliveviewimageex_sweep-*.bin (6 objects)",
                           base: nikon, minBytes: minBytes, chunk: chunk))

        // canon-evf: the vcam GetViewFinderData data phase and its 20-byte USB response container
        // (the file's 201 bytes of zero fill after it are left out: not a multiple of 4, they would
        // misalign the next object when the file is repeated).
        let canon = try BenchPaths.read("fixtures/ptp/canon_eos_getviewfinderdata_vcam.bin")
        var cend = 0
        while cend + 8 <= canon.count {
            let len = Int(canon[cend]) | Int(canon[cend + 1]) << 8 | Int(canon[cend + 2]) << 16 | Int(canon[cend + 3]) << 24
            let type = Int(canon[cend + 4])
            cend += max(len, 8)
            if len == 8 && type == 0 { break }
        }
        out.append(.stream(.canonEVF, "fixtures/ptp/canon_eos_getviewfinderdata_vcam.bin (records + USB response)",
                           base: Array(canon[..<min(cend + 20, canon.count)]), minBytes: minBytes, chunk: chunk))

        // fuji-lv: the vcam live-view frame (port 55742 framing), repeated.
        let fuji = try BenchPaths.read("fixtures/ptp/fuji_lv_port55742_frame_vcam.bin")
        out.append(.stream(.fujiLV, "fixtures/ptp/fuji_lv_port55742_frame_vcam.bin", base: fuji,
                           minBytes: minBytes, chunk: chunk))

        // Datagram formats: the UDP payloads of the conformance captures (synthetic, with the loss
        // and truncation they were made with).
        out.append(try .datagrams(.banditUDP, "captures/bandit-loss.pcap (UDP payloads to :4001)",
                                  pcap: try BenchPaths.read("conformance/captures/bandit-loss.pcap"), port: 4001,
                                  minBytes: minBytes))
        out.append(try .datagrams(.panasonicUDP, "captures/lumix-af.pcap (UDP payloads to :49152)",
                                  pcap: try BenchPaths.read("conformance/captures/lumix-af.pcap"), port: 49152,
                                  minBytes: minBytes))
        return out
    }
}

/// A format's parser kept across passes (warm buffers), fed one pass at a time.
public final class ParseRunner {
    public let testCase: ParseCase
    public private(set) var frames = 0
    public private(set) var issues = 0
    private var sonyRemote = SonyRemoteParser()
    private var sonyPTP = SonyPTPParser(transfer: .raw)
    private var nikon = NikonLiveViewParser()
    private var canon = CanonEVFParser()
    private var fuji = FujiLiveViewParser()
    private var bandit = BanditViewfinderReassembler()
    private var pana = PanasonicLiveViewParser()
    private var scratch: UnsafeMutableRawBufferPointer

    public init(_ c: ParseCase) {
        testCase = c
        scratch = .allocate(byteCount: max(c.maxUnit, 1), alignment: 64)
    }

    deinit { scratch.deallocate() }

    @inline(__always) private func count(_ ev: WireEvent) {
        switch ev {
        case .frame(let wf): frames += 1; blackHole(wf.jpeg.count &+ wf.af.count)
        case .issue: issues += 1
        }
    }

    /// Parses one pass; returns the frames it delivered.
    @discardableResult
    public func pass() -> Int {
        let before = frames
        switch testCase.format {
        case .sonyRemote: for u in testCase.units { sonyRemote.feed(u) { count($0) } }
        case .sonyPTP: for u in testCase.units { sonyPTP.feed(u) { count($0) } }
        case .nikonLV: for u in testCase.units { nikon.feed(u) { count($0) } }
        case .canonEVF: for u in testCase.units { canon.feed(u) { count($0) } }
        case .fujiLV: for u in testCase.units { fuji.feed(u) { count($0) } }
        case .banditUDP: for u in testCase.units { bandit.ingest(u, offset: 0) { count($0) } }
        case .panasonicUDP: for u in testCase.units { pana.ingest(u, offset: nil) { count($0) } }
        default:
            // Formats without a warm concrete parser here go through the plug-in's parser.
            var p = testCase.format.parser()
            for u in testCase.units { p.feed(u) { count($0) } }
        }
        return frames - before
    }

    /// The baseline: memcpy of the same units into one buffer.
    public func memcpyPass() {
        let dst = scratch.baseAddress!
        for u in testCase.units {
            u.withUnsafeBytes { src in
                if let s = src.baseAddress { memcpy(dst, s, src.count) }
            }
        }
        blackHole(Int(scratch[0]))
    }
}

@inline(never) public func blackHole(_ x: Int) {
    if x == Int.min { print("") }
}
