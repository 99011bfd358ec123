import JPEGKit
import Foundation
import Testing
import TestSupport
import LiveViewCore
@testable import CameraWire

/// Deterministic PRNG (SplitMix64) so every mutation/fuzz run is reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Fixtures {
    /// A fixture copied into Tests/CameraWireTests/Fixtures.
    static func bytes(_ name: String) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
              let d = try? Data(contentsOf: url) else {
            Issue.record("missing fixture \(name)")
            return []
        }
        return [UInt8](d)
    }

    /// The shared kit (`Locations.shared`: `<repo root>/../shared`; the team's reference kit), or nil when it is not there.
    static let sharedDirectory: URL? =
        Locations.sharedHas("conformance/cases.tsv") ? URL(fileURLWithPath: Locations.shared) : nil

    static var sharedAvailable: Bool {
        if sharedDirectory == nil {
            print("note: ../shared (reference kit) not found next to the repository — shared-kit tests skipped")
            return false
        }
        return true
    }

    static func shared(_ path: String) -> [UInt8]? {
        guard let dir = sharedDirectory, let d = try? Data(contentsOf: dir.appendingPathComponent(path)) else { return nil }
        return [UInt8](d)
    }
}

/// A comparable digest of one frame.
struct FrameRecord: Hashable, CustomStringConvertible {
    var jpeg: [UInt8]
    var offset: Int?
    var width: Int, height: Int
    var pts: Int64?, seq: Int64?
    var af: [AFArea]

    init(_ f: WireFrame) {
        jpeg = Array(f.jpeg); offset = f.jpegOffset; width = f.width; height = f.height
        pts = f.pts; seq = f.seq; af = f.af
    }

    var description: String { "frame(\(jpeg.count) B @\(offset.map(String.init) ?? "nil") \(width)x\(height) seq \(seq.map(String.init) ?? "nil") af \(af.count))" }
}

/// Any of the byte-stream parsers behind one switch (tests only).
struct AnyStreamParser {
    enum P { case sonyRemote(SonyRemoteParser), sonyPTP(SonyPTPParser), nikon(NikonLiveViewParser),
             canon(CanonEVFParser), fuji(FujiLiveViewParser) }
    var p: P
    var limits: WireLimits

    init(_ f: WireFormat, limits: WireLimits = .default) {
        self.limits = limits
        switch f {
        case .sonyRemote: p = .sonyRemote(SonyRemoteParser(limits: limits))
        case .sonyPTP: p = .sonyPTP(SonyPTPParser(limits: limits))
        case .nikonLV: p = .nikon(NikonLiveViewParser(limits: limits))
        case .canonEVF: p = .canon(CanonEVFParser(limits: limits))
        case .fujiLV: p = .fuji(FujiLiveViewParser(limits: limits))
        default: fatalError("not a stream format")
        }
    }

    mutating func feed(_ c: ArraySlice<UInt8>, _ e: (WireEvent) -> Void) {
        switch p {
        case .sonyRemote(var x): x.feed(c, e); p = .sonyRemote(x)
        case .sonyPTP(var x): x.feed(c, e); p = .sonyPTP(x)
        case .nikon(var x): x.feed(c, e); p = .nikon(x)
        case .canon(var x): x.feed(c, e); p = .canon(x)
        case .fuji(var x): x.feed(c, e); p = .fuji(x)
        }
    }

    mutating func finish(_ e: (WireEvent) -> Void) {
        switch p {
        case .sonyRemote(var x): x.finish(e); p = .sonyRemote(x)
        case .sonyPTP(var x): x.finish(e); p = .sonyPTP(x)
        case .nikon(var x): x.finish(e); p = .nikon(x)
        case .canon(var x): x.finish(e); p = .canon(x)
        case .fuji(var x): x.finish(e); p = .fuji(x)
        }
    }

    var stats: WireStats {
        switch p {
        case .sonyRemote(let x): return x.stats
        case .sonyPTP(let x): return x.stats
        case .nikon(let x): return x.stats
        case .canon(let x): return x.stats
        case .fuji(let x): return x.stats
        }
    }

    /// Bytes held in the internal buffer (must stay within the bound).
    var buffered: Int {
        switch p {
        case .sonyRemote(let x): return x.framer.buffer.count
        case .sonyPTP(let x): return x.framer.buffer.count + x.probe.count
        case .nikon(let x): return x.framer.buffer.count
        case .canon(let x): return x.framer.buffer.count
        case .fuji(let x): return x.framer.buffer.count
        }
    }

    /// Parses `input` cut at `cuts` (sorted offsets); returns the frames and issues.
    static func run(_ f: WireFormat, _ input: [UInt8], cuts: [Int] = [], limits: WireLimits = .default)
        -> (frames: [FrameRecord], issues: [WireIssue], stats: WireStats)
    {
        var p = AnyStreamParser(f, limits: limits)
        var frames: [FrameRecord] = []
        var issues: [WireIssue] = []
        let sink: (WireEvent) -> Void = { ev in
            switch ev {
            case .frame(let fr): frames.append(FrameRecord(fr))
            case .issue(let i): issues.append(i)
            }
        }
        var start = 0
        for c in cuts + [input.count] where c >= start && c <= input.count {
            p.feed(input[start..<c], sink)
            start = c
        }
        p.finish(sink)
        return (frames, issues, p.stats)
    }
}

/// Synthetic but walkable JPEGs: SOI, optional COM holding fake FF D9/FF D8, DQT, SOF0, standard DHT,
/// optional DRI, SOS, random entropy-coded bytes with FF 00 stuffing, RSTn and fill bytes, EOI.
enum SyntheticJPEG {
    static func make(width: Int, height: Int, entropyBytes: Int, rng: inout SplitMix64,
                     subsampling: JPEGSubsampling = .yuv422, restartEvery: Int = 0, fakeMarkersInComment: Bool = true,
                     fillBeforeEOI: Int = 0) -> [UInt8] {
        var j: [UInt8] = [0xFF, 0xD8]
        if fakeMarkersInComment { j += [0xFF, 0xFE, 0x00, 0x08, 0xFF, 0xD9, 0xFF, 0xD8, 0x00, 0x00] }
        j += [0xFF, 0xDB, 0x00, 0x43, 0x00]
        for _ in 0..<64 { j.append(UInt8.random(in: 1...50, using: &rng)) }
        let y: UInt8 = subsampling == .yuv420 ? 0x22 : subsampling == .yuv422 ? 0x21 : 0x11
        j += [0xFF, 0xC0, 0x00, 0x11, 0x08]
        j.putBE16(UInt16(height)); j.putBE16(UInt16(width))
        j += [0x03, 0x01, y, 0x00, 0x02, 0x11, 0x00, 0x03, 0x11, 0x00]
        j += StandardHuffman.segment()
        if restartEvery > 0 { j += [0xFF, 0xDD, 0x00, 0x04]; j.putBE16(UInt16(restartEvery)) }
        j += [0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3F, 0x00]
        var rst: UInt8 = 0
        for i in 0..<entropyBytes {
            let b = UInt8.random(in: 0...255, using: &rng)
            j.append(b)
            if b == 0xFF { j.append(0x00) }
            if restartEvery > 0 && i % 97 == 96 { j += [0xFF, 0xD0 + rst]; rst = (rst + 1) & 7 }
        }
        for _ in 0..<fillBeforeEOI { j.append(0xFF) }
        j += [0xFF, 0xD9]
        return j
    }
}

extension WireFormat {
    /// The formats of this module, in the vendor plug-ins' order (the CLI gets its list from `Vendors`).
    static let known: [WireFormat] = [.sonyRemote, .panasonicUDP, .banditUDP, .nikonLV, .canonEVF, .sonyPTP, .fujiLV, .olympusRTP]

    init?(rawValue: String) {
        guard let f = Self.known.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = f
    }

    static func guess(_ bytes: [UInt8]) -> WireFormat? { guess(bytes, among: known) }
}
