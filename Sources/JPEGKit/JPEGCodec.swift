internal import CTurboJPEG
public import LiveViewCore

extension JPEGSubsampling {
    /// libjpeg-turbo's subsampling code.
    init(tj: Int32) {
        switch tj {
        case Int32(TJSAMP_444.rawValue): self = .yuv444
        case Int32(TJSAMP_422.rawValue): self = .yuv422
        case Int32(TJSAMP_420.rawValue): self = .yuv420
        case Int32(TJSAMP_GRAY.rawValue): self = .gray
        case Int32(TJSAMP_440.rawValue): self = .yuv440
        case Int32(TJSAMP_411.rawValue): self = .yuv411
        default: self = .other
        }
    }
}

/// Decodes JPEGs straight to planar I420 with libjpeg-turbo. 4:2:0 sources decode directly into the
/// picture; other subsamplings (4:2:2, 4:4:4, gray, …) decode into a reused scratch buffer and are
/// resampled to 4:2:0. No allocation per frame once warm. Not thread-safe: one decoder per thread.
public final class JPEGDecoder {
    private let handle: tjhandle
    private var scratch: UnsafeMutableRawBufferPointer = .init(start: nil, count: 0)
    /// Use the fast (less accurate) IDCT.
    public var fastDCT: Bool = true

    /// A decoder (one libjpeg-turbo handle).
    public init() throws {
        guard let h = tjInitDecompress() else { throw JPEGError.codec("tjInitDecompress failed") }
        handle = h
    }

    deinit {
        tjDestroy(handle)
        scratch.deallocate()
    }

    /// Width, height and subsampling of a JPEG without decoding it.
    public func header(of jpeg: UnsafeRawBufferPointer) throws -> (width: Int, height: Int, subsampling: JPEGSubsampling) {
        var w: Int32 = 0, h: Int32 = 0, ss: Int32 = 0, cs: Int32 = 0
        let rc = tjDecompressHeader3(handle, jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(jpeg.count), &w, &h, &ss, &cs)
        guard rc == 0 else { throw error("header") }
        return (Int(w), Int(h), JPEGSubsampling(tj: ss))
    }

    /// Decodes `jpeg` into `picture` (resized to the JPEG's size, or to it reduced by `reduction`:
    /// 1, 2, 4 or 8, done by the decoder's DCT scaling) as I420.
    public func decode(_ jpeg: UnsafeRawBufferPointer, into picture: I420Picture, reduction: Int = 1) throws {
        let (fullW, fullH, ss) = try header(of: jpeg)
        guard [1, 2, 4, 8].contains(reduction) else { throw JPEGError.codec("reduction \(reduction) is not 1, 2, 4 or 8") }
        let w = (fullW + reduction - 1) / reduction, h = (fullH + reduction - 1) / reduction
        picture.resize(width: w, height: h)
        let l = picture.layout
        let src = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let flags: Int32 = fastDCT ? Int32(TJFLAG_FASTDCT) : 0
        if ss == .yuv420 {
            let rc = decodePlanes(src, jpeg.count, w, h, flags, (picture.y, picture.u, picture.v),
                                  (l.yStride, l.chromaStride, l.chromaStride))
            guard rc == 0 else { throw error("decode") }
            return
        }
        if ss == .gray {
            let rc = decodePlanes(src, jpeg.count, w, h, flags, (picture.y, nil, nil), (l.yStride, 0, 0))
            guard rc == 0 else { throw error("decode") }
            let chroma = l.byteCount - l.uOffset
            (picture.y + l.uOffset).update(repeating: 128, count: chroma)
            return
        }
        // Other subsamplings: luma straight into the picture, chroma into scratch, then resample.
        let tjss = Int32(subsamplingCode(ss))
        let cw = Int(tjPlaneWidth(1, Int32(w), tjss)), ch = Int(tjPlaneHeight(1, Int32(h), tjss))
        guard cw > 0, ch > 0 else { throw JPEGError.codec("unsupported subsampling \(ss.rawValue)") }
        let need = cw * ch * 2
        if scratch.count < need {
            scratch.deallocate()
            scratch = .allocate(byteCount: need, alignment: 64)
        }
        let su = scratch.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let sv = su + cw * ch
        let rc = decodePlanes(src, jpeg.count, w, h, flags, (picture.y, su, sv), (l.yStride, cw, cw))
        guard rc == 0 else { throw error("decode") }
        Self.resampleChroma(from: su, width: cw, height: ch, to: picture.u, layout: l)
        Self.resampleChroma(from: sv, width: cw, height: ch, to: picture.v, layout: l)
    }

    private func decodePlanes(_ src: UnsafePointer<UInt8>?, _ count: Int, _ w: Int, _ h: Int, _ flags: Int32,
                              _ planes: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?),
                              _ strides: (Int, Int, Int)) -> Int32 {
        withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { p in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3) { s in
                p[0] = planes.0; p[1] = planes.1; p[2] = planes.2
                s[0] = Int32(strides.0); s[1] = Int32(strides.1); s[2] = Int32(strides.2)
                return tjDecompressToYUVPlanes(handle, src, UInt(count), p.baseAddress, Int32(w), s.baseAddress, Int32(h), flags)
            }
        }
    }

    /// Resamples one chroma plane of any size to the I420 chroma size (box average for the
    /// exact 2:1 cases, nearest sample otherwise).
    static func resampleChroma(from src: UnsafeMutablePointer<UInt8>, width sw: Int, height sh: Int,
                               to dst: UnsafeMutablePointer<UInt8>, layout l: I420Layout) {
        let dw = l.chromaWidth, dh = l.chromaHeight
        if sw == dw && sh >= 2 * dh - 1 {
            // 4:2:2 → 4:2:0: average row pairs.
            for row in 0..<dh {
                let a = src + min(2 * row, sh - 1) * sw
                let b = src + min(2 * row + 1, sh - 1) * sw
                let d = dst + row * l.chromaStride
                for x in 0..<dw { d[x] = UInt8((UInt16(a[x]) + UInt16(b[x]) + 1) >> 1) }
            }
            return
        }
        if sw >= 2 * dw - 1 && sh >= 2 * dh - 1 {
            // 4:4:4 → 4:2:0: average 2×2 blocks.
            for row in 0..<dh {
                let a = src + min(2 * row, sh - 1) * sw
                let b = src + min(2 * row + 1, sh - 1) * sw
                let d = dst + row * l.chromaStride
                for x in 0..<dw {
                    let x0 = min(2 * x, sw - 1), x1 = min(2 * x + 1, sw - 1)
                    let s = UInt16(a[x0]) + UInt16(a[x1]) + UInt16(b[x0]) + UInt16(b[x1])
                    d[x] = UInt8((s + 2) >> 2)
                }
            }
            return
        }
        for row in 0..<dh {
            let sr = src + min(row * sh / dh, sh - 1) * sw
            let d = dst + row * l.chromaStride
            for x in 0..<dw { d[x] = sr[min(x * sw / dw, sw - 1)] }
        }
    }

    private func subsamplingCode(_ s: JPEGSubsampling) -> UInt32 {
        switch s {
        case .yuv444: return TJSAMP_444.rawValue
        case .yuv422: return TJSAMP_422.rawValue
        case .yuv420: return TJSAMP_420.rawValue
        case .gray: return TJSAMP_GRAY.rawValue
        case .yuv440: return TJSAMP_440.rawValue
        case .yuv411: return TJSAMP_411.rawValue
        case .other: return UInt32.max
        }
    }

    private func error(_ what: String) -> JPEGError {
        JPEGError.codec("turbojpeg \(what): " + String(cString: tjGetErrorStr2(handle)))
    }
}

/// Encodes I420 pictures as baseline 4:2:0 JPEGs with the standard Huffman tables (what RFC 2435 and
/// every MJPEG receiver accept), into a reused output buffer. Not thread-safe: one encoder per thread.
public final class JPEGEncoder {
    private let handle: tjhandle
    private var out: UnsafeMutablePointer<UInt8>?
    private var outCapacity: Int = 0
    private var outCount: Int = 0
    /// JPEG quality 1…100.
    public var quality: Int

    /// An encoder (one libjpeg-turbo handle) at the given quality.
    public init(quality: Int = 85) throws {
        guard let h = tjInitCompress() else { throw JPEGError.codec("tjInitCompress failed") }
        handle = h
        self.quality = quality
    }

    deinit {
        tjDestroy(handle)
        if let out { tjFree(out) }
    }

    /// Encodes the picture; the returned bytes point into the encoder's buffer and stay valid until the
    /// next call — keep the encoder alive while reading them (`withExtendedLifetime(encoder) { … }`).
    @discardableResult
    public func encode(_ picture: I420Picture) throws -> UnsafeRawBufferPointer {
        let l = picture.layout
        let need = Int(tjBufSize(Int32(l.width), Int32(l.height), Int32(TJSAMP_420.rawValue)))
        if need > outCapacity {
            if let out { tjFree(out) }
            out = tjAlloc(Int32(need))
            guard out != nil else { outCapacity = 0; throw JPEGError.codec("tjAlloc failed") }
            outCapacity = need
        }
        var size = UInt(outCapacity)
        let rc = withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 3) { p in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3) { s in
                p[0] = UnsafePointer(picture.y); p[1] = UnsafePointer(picture.u); p[2] = UnsafePointer(picture.v)
                s[0] = Int32(l.yStride); s[1] = Int32(l.chromaStride); s[2] = Int32(l.chromaStride)
                return tjCompressFromYUVPlanes(handle, p.baseAddress, Int32(l.width), s.baseAddress, Int32(l.height),
                                               Int32(TJSAMP_420.rawValue), &out, &size, Int32(quality),
                                               Int32(TJFLAG_NOREALLOC))
            }
        }
        guard rc == 0 else {
            throw JPEGError.codec("turbojpeg encode: " + String(cString: tjGetErrorStr2(handle)))
        }
        outCount = Int(size)
        return UnsafeRawBufferPointer(start: out, count: outCount)
    }

    /// Encodes the picture into `frame` (bytes, width, height; other metadata untouched).
    public func encode(_ picture: I420Picture, into frame: Frame) throws {
        let bytes = try encode(picture)
        frame.setJPEG(bytes)
        frame.width = picture.width
        frame.height = picture.height
    }
}

/// A screen-sized copy of a picture: decoded with the largest DCT reduction (½, ¼, ⅛) that keeps
/// its longer side at least `longSide` (a smaller picture stays whole), encoded again as 4:2:0.
/// A header claiming more than `maxPixels` is refused before anything is decoded.
public enum JPEGPreview {
    public static let maxPixels = 200_000_000

    public static func make(_ jpeg: [UInt8], longSide: Int = 1280, quality: Int = 85) throws -> [UInt8] {
        let decoder = try JPEGDecoder()
        decoder.fastDCT = false
        let picture = I420Picture(width: 16, height: 16)
        return try jpeg.withUnsafeBytes { raw in
            let (w, h, _) = try decoder.header(of: raw)
            guard w > 0, h > 0, w * h <= maxPixels else {
                throw JPEGError.codec("a picture of \(w)×\(h) pixels is more than livegate makes previews of")
            }
            let long = max(w, h)
            let reduction = [8, 4, 2].first { (long + $0 - 1) / $0 >= longSide } ?? 1
            try decoder.decode(raw, into: picture, reduction: reduction)
            let encoder = try JPEGEncoder(quality: quality)
            let bytes = try encoder.encode(picture)
            return withExtendedLifetime(encoder) { Array(bytes) }
        }
    }
}
