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

/// A small JPEG marker walker: reads the SOF, DHT and SOS headers without decoding anything.
public enum JPEGInspector {
    /// Size from the SOF marker, or nil when there is none.
    public static func size(of jpeg: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        var result: (Int, Int)?
        walk(jpeg) { marker, body in
            if isSOF(marker), body.count >= 5 {
                result = (Int(body[3]) << 8 | Int(body[4]), Int(body[1]) << 8 | Int(body[2]))
                return false
            }
            return true
        }
        return result
    }

    /// Whether RFC 2435 can carry this JPEG unchanged.
    public static func rtpCompatibility(of jpeg: UnsafeRawBufferPointer) -> RTPJPEGCompatibility {
        guard jpeg.count > 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return .malformed }
        var verdict: RTPJPEGCompatibility?
        var sawSOF = false, sawSOS = false
        let reference = StandardHuffman.tables
        let ok = walk(jpeg) { marker, body in
            switch marker {
            case 0xC0:
                sawSOF = true
                guard body.count >= 6 else { verdict = .malformed; return false }
                let h = Int(body[1]) << 8 | Int(body[2]), w = Int(body[3]) << 8 | Int(body[4])
                if body[0] != 8 { verdict = .notBaseline; return false }
                if w > 2040 || h > 2040 || w == 0 || h == 0 { verdict = .tooLarge; return false }
                let n = Int(body[5])
                guard n == 3, body.count >= 6 + 3 * n else { verdict = .unsupportedSampling; return false }
                let y = body[7], cb = body[10], cr = body[13]
                if !(y == 0x21 || y == 0x22) || cb != 0x11 || cr != 0x11 { verdict = .unsupportedSampling; return false }
            case 0xC1...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                sawSOF = true
                verdict = .notBaseline
                return false
            case 0xC4:
                var i = 0
                while i < body.count {
                    guard i + 17 <= body.count else { verdict = .malformed; return false }
                    let tc = Int(body[i] >> 4), th = Int(body[i] & 0x0F)
                    var total = 0
                    for k in 1...16 { total += Int(body[i + k]) }
                    guard i + 17 + total <= body.count else { verdict = .malformed; return false }
                    guard tc <= 1, th <= 1 else { verdict = .customHuffmanTables; return false }
                    let ref = reference[tc * 2 + th]
                    if ref.count != 16 + total { verdict = .customHuffmanTables; return false }
                    for k in 0..<(16 + total) where body[i + 1 + k] != ref[k] {
                        verdict = .customHuffmanTables
                        return false
                    }
                    i += 17 + total
                }
            case 0xDA:
                sawSOS = true
                return false
            default:
                break
            }
            return true
        }
        if let verdict { return verdict }
        guard ok, sawSOF, sawSOS else { return .malformed }
        return .compatible
    }

    static func isSOF(_ m: UInt8) -> Bool {
        (0xC0...0xCF).contains(m) && m != 0xC4 && m != 0xC8 && m != 0xCC
    }

    /// Calls `visit(marker, segmentBody)` for every marker segment up to SOS (inclusive) or until
    /// `visit` returns false. Returns false when the marker structure is broken.
    @discardableResult
    static func walk(_ b: UnsafeRawBufferPointer, _ visit: (UInt8, UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard b.count >= 4, b[0] == 0xFF, b[1] == 0xD8 else { return false }
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return false }
            var m = b[i + 1]
            while m == 0xFF, i + 2 < b.count { i += 1; m = b[i + 1] }  // fill bytes
            if m == 0xD8 || m == 0x01 || (0xD0...0xD7).contains(m) { i += 2; continue }
            if m == 0xD9 { return true }
            let len = Int(b[i + 2]) << 8 | Int(b[i + 3])
            guard len >= 2, i + 2 + len <= b.count else { return false }
            let body = UnsafeRawBufferPointer(rebasing: b[(i + 4)..<(i + 2 + len)])
            if !visit(m, body) { return true }
            if m == 0xDA { return true }
            i += 2 + len
        }
        return false
    }
}

/// The standard Huffman tables (T.81 Annex K.3) as DHT bodies (16 counts + values), indexed
/// class*2+id: DC luma, DC chroma, AC luma, AC chroma. They are taken once from a JPEG that
/// libjpeg-turbo encodes without optimisation, which writes exactly these tables.
enum StandardHuffman {
    static let tables: [[UInt8]] = {
        var result: [[UInt8]] = [[], [], [], []]
        guard let enc = try? JPEGEncoder(quality: 75) else { return result }
        let pic = I420Picture(width: 16, height: 16)
        guard let jpeg = try? enc.encode(pic) else { return result }
        // `jpeg` points into the encoder's buffer: keep the encoder alive while reading it.
        _ = withExtendedLifetime(enc) { JPEGInspector.walk(jpeg) { marker, body in
            guard marker == 0xC4 else { return true }
            var i = 0
            while i + 17 <= body.count {
                let tc = Int(body[i] >> 4), th = Int(body[i] & 0x0F)
                var total = 0
                for k in 1...16 { total += Int(body[i + k]) }
                if tc <= 1, th <= 1 {
                    result[tc * 2 + th] = Array(body[(i + 1)..<(i + 17 + total)])
                }
                i += 17 + total
            }
            return true
        } }
        return result
    }()
}
