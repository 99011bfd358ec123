internal import CTurboJPEG

/// Why a byte run is not a walkable JPEG.
public enum JPEGError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The run does not start with `FF D8`.
    case noSOI
    /// The data ended before `FF D9` at `offset` (relative to the SOI).
    case truncated(offset: Int)
    /// A byte other than `FF` where a marker was expected, or a marker not allowed there.
    case badMarker(offset: Int, marker: UInt8)
    /// A segment length below 2 or running past the data.
    case badSegmentLength(offset: Int)
    /// EOI reached without an SOFn frame header (or without a scan).
    case noSOF
    /// A malformed SOFn header.
    case badSOF(offset: Int)
    /// libjpeg-turbo refused to decode or encode (its message).
    case codec(String)

    public var description: String {
        switch self {
        case .noSOI: return "JPEG: expected SOI FF D8"
        case .truncated(let o): return "JPEG: data ends at +\(o) before EOI FF D9"
        case .badMarker(let o, let m): return "JPEG: expected a marker at +\(o), found \(hex2(m))"
        case .badSegmentLength(let o): return "JPEG: bad segment length at +\(o)"
        case .noSOF: return "JPEG: EOI without an SOFn header and scan"
        case .badSOF(let o): return "JPEG: malformed SOF header at +\(o)"
        case .codec(let m): return m
        }
    }
}

@inline(__always) func hex2(_ b: UInt8) -> String {
    let d: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
    return String([d[Int(b >> 4)], d[Int(b & 15)]])
}

/// Chroma subsampling of a JPEG. The scanner tells 4:2:0 and 4:2:2 from the SOF's sampling
/// factors (all RTP/JPEG cares about) and calls the rest `other`; libjpeg-turbo's header read
/// (`JPEGDecoder.header`) names the others too.
public enum JPEGSubsampling: String, Sendable, Hashable {
    /// Chroma halved in both directions (e.g. Y 2×2, Cb/Cr 1×1 — RFC 2435 type 1).
    case yuv420 = "4:2:0"
    /// Chroma halved horizontally only (e.g. Y 2×1, Cb/Cr 1×1 — RFC 2435 type 0; or Y 2×2, Cb/Cr 1×2).
    case yuv422 = "4:2:2"
    /// Full-resolution chroma.
    case yuv444 = "4:4:4"
    /// Chroma halved vertically only.
    case yuv440 = "4:4:0"
    /// Chroma quartered horizontally.
    case yuv411 = "4:1:1"
    /// One component.
    case gray = "gray"
    /// Anything else (odd factors, CMYK…), or not determined.
    case other
}

/// What an RTP/JPEG (RFC 2435) payloader can carry as is. RFC 2435 knows only baseline sequential
/// JPEGs with three components in 4:2:2 or 4:2:0 (luma 2×1 or 2×2, chroma 1×1), the standard
/// Huffman tables of ITU-T T.81 Annex K, and sizes up to 2040 pixels (8-pixel units in one byte).
public enum RTPJPEGCompatibility: Equatable, Sendable {
    case compatible
    case notBaseline
    case unsupportedSampling
    case customHuffmanTables
    case tooLarge
    case malformed
}

/// What a walk from SOI to EOI learned about one JPEG.
public struct JPEGInfo: Sendable, Hashable {
    public static func == (a: JPEGInfo, b: JPEGInfo) -> Bool {
        a.length == b.length && a.width == b.width && a.height == b.height && a.sofMarker == b.sofMarker
            && a.subsampling == b.subsampling && a.usesStandardHuffmanTables == b.usesStandardHuffmanTables
            && a.components == b.components && a.restartInterval == b.restartInterval
            && a.samplingFactors == b.samplingFactors && a.precision == b.precision
    }

    public func hash(into h: inout Hasher) {
        h.combine(length); h.combine(width); h.combine(height); h.combine(sofMarker)
    }

    /// Bytes from `FF D8` through the `FF D9` that ends the image, inclusive (for a headers-only
    /// scan: through the end of the first SOS header).
    public var length: Int
    /// Bits per sample from the SOF (8 for baseline).
    public var precision: Int
    /// Width and height from the first SOFn.
    public var width: Int
    public var height: Int
    /// The first SOFn marker (0xC0 baseline, 0xC1 extended, 0xC2 progressive…).
    public var sofMarker: UInt8
    public var subsampling: JPEGSubsampling
    /// Every DHT table matches the standard table of ITU T.81 Annex K.3 for its class/id,
    /// or there is no DHT at all (decoders then use those tables).
    public var usesStandardHuffmanTables: Bool
    /// Number of components in the frame.
    public var components: Int
    /// The restart interval from DRI (0 = none).
    public var restartInterval: Int

    /// Sampling factors (H << 4 | V) of components 1, 2, 3 (zeros unless 3 components).
    public var samplingFactors: (y: UInt8, cb: UInt8, cr: UInt8)

    /// The RFC 2435 type this image can be sent as: 0 (Y 2×1, Cb/Cr 1×1), 1 (Y 2×2, Cb/Cr 1×1),
    /// nil otherwise (the receiver assumes exactly those factors).
    public var rtpJPEGType: UInt8? {
        guard components == 3, samplingFactors.cb == 0x11, samplingFactors.cr == 0x11 else { return nil }
        switch samplingFactors.y {
        case 0x21: return 0
        case 0x22: return 1
        default: return nil
        }
    }

    /// Baseline sequential DCT (SOF0).
    public var isBaseline: Bool { sofMarker == 0xC0 }

    /// True when RFC 2435 RTP/JPEG can carry this image without in-band tables beyond
    /// quantization: baseline, 3 components, 4:2:0 or 4:2:2, standard Huffman tables.
    public var isRTPJPEGCompatible: Bool { rtpCompatibility == .compatible }

    /// Whether RFC 2435 can carry this image unchanged, and if not, why.
    public var rtpCompatibility: RTPJPEGCompatibility {
        guard isBaseline, precision == 8 else { return .notBaseline }
        guard width > 0, height > 0, width <= 2040, height <= 2040 else { return .tooLarge }
        guard rtpJPEGType != nil else { return .unsupportedSampling }
        guard usesStandardHuffmanTables else { return .customHuffmanTables }
        return .compatible
    }

    public init(length: Int, width: Int, height: Int, sofMarker: UInt8, subsampling: JPEGSubsampling,
                usesStandardHuffmanTables: Bool, components: Int, restartInterval: Int,
                samplingFactors: (y: UInt8, cb: UInt8, cr: UInt8) = (0, 0, 0), precision: Int = 8) {
        self.samplingFactors = samplingFactors
        self.precision = precision
        self.length = length
        self.width = width
        self.height = height
        self.sofMarker = sofMarker
        self.subsampling = subsampling
        self.usesStandardHuffmanTables = usesStandardHuffmanTables
        self.components = components
        self.restartInterval = restartInterval
    }
}

/// Walks a JPEG from its SOI through marker segments and entropy-coded data to the EOI.
///
/// It never searches for `FF D9`: segments are skipped by their length fields, and inside
/// entropy-coded data `FF 00` (stuffing), `FF D0`…`FF D7` (restart markers) and fill bytes
/// (`FF FF …`) are stepped over; any other marker ends the scan. Bytes after the EOI are ignored.
public enum JPEGScanner {
    /// Walks `bytes` (which must start with `FF D8`); returns the JPEG's length and header facts.
    public static func scan(_ bytes: ArraySlice<UInt8>) throws(JPEGError) -> JPEGInfo {
        let r: Result<JPEGInfo, JPEGError> = bytes.withUnsafeBufferPointer { p in walk(p) }
        return try r.get()
    }

    /// Same as `scan(_:)` for an array.
    public static func scan(_ bytes: [UInt8]) throws(JPEGError) -> JPEGInfo {
        try scan(bytes[...])
    }

    /// Same as `scan(_:)` for raw memory (a frame's bytes).
    public static func scan(_ bytes: UnsafeRawBufferPointer) throws(JPEGError) -> JPEGInfo {
        try walk(bytes.assumingMemoryBound(to: UInt8.self)).get()
    }

    /// Only the header segments, up to and including the first SOS header: size, SOF, sampling,
    /// Huffman tables and restart interval without walking the entropy-coded data. `length` is
    /// then the end of that SOS header.
    public static func headers(_ bytes: UnsafeRawBufferPointer) throws(JPEGError) -> JPEGInfo {
        try walk(bytes.assumingMemoryBound(to: UInt8.self), headersOnly: true).get()
    }

    /// True when `bytes` holds a JPEG start-of-image marker (`FF D8`) at `index`.
    @inlinable
    public static func hasSOI<C: RandomAccessCollection>(_ bytes: C, at index: C.Index) -> Bool where C.Element == UInt8 {
        guard index >= bytes.startIndex, index < bytes.endIndex else { return false }
        let next = bytes.index(after: index)
        return next < bytes.endIndex && bytes[index] == 0xFF && bytes[next] == 0xD8
    }

    /// Only the length (SOI through EOI), or nil when the bytes are not a walkable JPEG.
    public static func length(_ bytes: ArraySlice<UInt8>) -> Int? {
        try? scan(bytes).length
    }

    /// Width and height from the SOF, or nil when the headers cannot be read.
    public static func size(of bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard let info = try? headers(bytes) else { return nil }
        return (info.width, info.height)
    }

    /// Whether RFC 2435 can carry this JPEG unchanged (reads the headers only).
    public static func rtpCompatibility(of bytes: UnsafeRawBufferPointer) -> RTPJPEGCompatibility {
        guard let info = try? headers(bytes) else { return .malformed }
        return info.rtpCompatibility
    }

    /// Where the entropy-coded data that starts at `from` ends: the position of the `FF` of the
    /// first marker that is neither stuffing (`FF 00`) nor a restart marker (`FF D0`…`FF D7`),
    /// fill bytes (`FF FF …`) stepped over; nil when the bytes end first.
    ///
    /// A 35 KB camera frame holds a hundred or more stuffed `FF 00`: the search for an `FF` that is
    /// not followed by `00` runs in C, 16 bytes at a time (`lg_jpeg_next_marker_candidate`), and
    /// only its candidates (restart markers, fill bytes, the end of the scan) are looked at here.
    static func entropyEnd(_ p: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        let n = p.count
        guard let base = p.baseAddress, from < n else { return nil }
        var k = from
        while true {
            k = Int(lg_jpeg_next_marker_candidate(base, k, n))
            guard k < n else { return nil }
            var q = k + 1
            while q < n && p[q] == 0xFF { q += 1 }
            guard q < n else { return nil }
            let c = p[q]
            if c == 0x00 || (c >= 0xD0 && c <= 0xD7) {
                k = q + 1
                continue
            }
            return q - 1   // the FF right before the marker code
        }
    }

    static func walk(_ p: UnsafeBufferPointer<UInt8>, headersOnly: Bool = false) -> Result<JPEGInfo, JPEGError> {
        let n = p.count
        guard n >= 2 else { return .failure(n == 0 || p[0] == 0xFF ? .truncated(offset: n) : .noSOI) }
        guard p[0] == 0xFF, p[1] == 0xD8 else { return .failure(.noSOI) }
        var i = 2
        var sof: UInt8 = 0
        var width = 0, height = 0, comps = 0
        var sub = JPEGSubsampling.other
        var standard = true
        var sawScan = false
        var dri = 0
        var precision = 8
        var factors: (UInt8, UInt8, UInt8) = (0, 0, 0)
        while true {
            guard i < n else { return .failure(.truncated(offset: i)) }
            guard p[i] == 0xFF else { return .failure(.badMarker(offset: i, marker: p[i])) }
            // Fill bytes: any number of FF before the marker code.
            var j = i + 1
            while j < n && p[j] == 0xFF { j += 1 }
            guard j < n else { return .failure(.truncated(offset: j)) }
            let m = p[j]
            let segStart = j + 1
            switch m {
            case 0xD9:
                guard sof != 0, sawScan else { return .failure(.noSOF) }
                return .success(JPEGInfo(length: segStart, width: width, height: height, sofMarker: sof,
                                         subsampling: sub, usesStandardHuffmanTables: standard,
                                         components: comps, restartInterval: dri,
                                         samplingFactors: factors, precision: precision))
            case 0x00, 0xD8:
                return .failure(.badMarker(offset: j, marker: m))
            case 0x01, 0xD0...0xD7:
                i = segStart
                continue
            default:
                break
            }
            guard segStart + 2 <= n else { return .failure(.truncated(offset: n)) }
            let len = Int(p[segStart]) << 8 | Int(p[segStart + 1])
            guard len >= 2 else { return .failure(.badSegmentLength(offset: segStart)) }
            let end = segStart + len
            guard end <= n else { return .failure(.truncated(offset: n)) }
            let body = segStart + 2
            switch m {
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                if sof == 0 {
                    guard len >= 8 else { return .failure(.badSOF(offset: j)) }
                    let nf = Int(p[body + 5])
                    guard len >= 8 + 3 * nf else { return .failure(.badSOF(offset: j)) }
                    height = Int(p[body + 1]) << 8 | Int(p[body + 2])
                    width = Int(p[body + 3]) << 8 | Int(p[body + 4])
                    // A picture no decoder can lay out: no size, no component, or a component
                    // sampled 0 or more than 4 times per block.
                    guard width > 0, height > 0, nf >= 1 else { return .failure(.badSOF(offset: j)) }
                    for k in 0..<nf {
                        let f = p[body + 7 + 3 * k]
                        guard (1...4).contains(f >> 4), (1...4).contains(f & 15) else { return .failure(.badSOF(offset: j)) }
                    }
                    comps = nf
                    precision = Int(p[body])
                    sof = m
                    if nf == 3 {
                        let y = p[body + 7], cb = p[body + 10], cr = p[body + 13]
                        factors = (y, cb, cr)
                        let yh = Int(y >> 4), yv = Int(y & 15), ch = Int(cb >> 4), cv = Int(cb & 15)
                        if cb == cr && ch > 0 && cv > 0 {
                            if yh == 2 * ch && yv == 2 * cv { sub = .yuv420 } else if yh == 2 * ch && yv == cv { sub = .yuv422 }
                        }
                    }
                }
            case 0xC4:
                if standard && !StandardHuffman.matches(p, from: body, to: end) { standard = false }
            case 0xDD:
                if len >= 4 { dri = Int(p[body]) << 8 | Int(p[body + 1]) }
            default:
                break
            }
            i = end
            if m == 0xDA {
                guard sof != 0 else { return .failure(.noSOF) }
                sawScan = true
                if headersOnly {
                    return .success(JPEGInfo(length: end, width: width, height: height, sofMarker: sof,
                                             subsampling: sub, usesStandardHuffmanTables: standard,
                                             components: comps, restartInterval: dri,
                                             samplingFactors: factors, precision: precision))
                }
                // Entropy-coded data up to the next marker that is not stuffing or RSTn.
                switch entropyEnd(p, from: i) {
                case .some(let at): i = at
                case .none: return .failure(.truncated(offset: n))
                }
            }
        }
    }
}
