public import JPEGKit
public import LiveViewCore

/// One live-view frame as a wire parser delivers it.
///
/// `jpeg` is a slice of the bytes the parser was fed when the JPEG was contiguous there, else a slice
/// of the parser's reused assembly buffer. It is only guaranteed not to be copied while the callback
/// runs: keep it longer and the parser's next write copies its buffer (value semantics, never a
/// dangling reference).
public struct WireFrame: Sendable {
    /// The JPEG bytes, `FF D8` through the `FF D9` that ends the image (padding excluded).
    public var jpeg: ArraySlice<UInt8>
    /// Absolute stream (or file) offset of the JPEG's `FF D8` when its bytes were one contiguous run
    /// of the input; nil when they were split (across datagrams or HTTP chunks).
    public var jpegOffset: Int?
    /// What walking the JPEG learned (size from the first SOFn, subsampling, baseline…).
    public var info: JPEGInfo
    /// Camera presentation time in nanoseconds, when the format carries one.
    public var pts: Int64?
    /// Camera sequence number, when the format carries one.
    public var seq: Int64?
    /// AF areas, in the order the camera lists them, translated into this JPEG's pixels.
    public var af: [AFArea]

    public var width: Int { info.width }
    public var height: Int { info.height }

    public init(jpeg: ArraySlice<UInt8>, jpegOffset: Int?, info: JPEGInfo, pts: Int64? = nil,
                seq: Int64? = nil, af: [AFArea] = []) {
        self.jpeg = jpeg
        self.jpegOffset = jpegOffset
        self.info = info
        self.pts = pts
        self.seq = seq
        self.af = af
    }

    static let empty = WireFrame(
        jpeg: [], jpegOffset: nil,
        info: JPEGInfo(length: 0, width: 0, height: 0, sofMarker: 0, subsampling: .other,
                       usesStandardHuffmanTables: true, components: 0, restartInterval: 0))

    /// Resets the metadata, keeping the AF array's capacity.
    mutating func reset() {
        jpegOffset = nil
        pts = nil
        seq = nil
        af.removeAll(keepingCapacity: true)
    }
}

/// What went wrong, typed. `description` says what was expected.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A magic/start code or sync word was not where the format puts it.
    case badMagic(expected: String)
    /// A declared size above the parser's bound (see `WireLimits`).
    case sizeOverLimit(field: String, declared: Int, limit: Int)
    /// A length/offset field that contradicts the format.
    case badField(String)
    /// The container is whole but its JPEG cannot be walked.
    case badJPEG(JPEGError)
    /// No `FF D8` where the format puts the JPEG.
    case noJPEGAtOffset
    /// The input ended inside a container.
    case truncated(needed: Int, available: Int)
    /// A datagram of a frame is missing (expected packet number, got another).
    case datagramLost(expected: Int, got: Int)

    public var description: String {
        switch self {
        case .badMagic(let e): return "expected \(e)"
        case .sizeOverLimit(let f, let d, let l): return "\(f) \(d) exceeds the limit \(l); resyncing"
        case .badField(let s): return s
        case .badJPEG(let j): return "\(j)"
        case .noJPEGAtOffset: return "expected JPEG SOI FF D8 at the offset the header gives"
        case .truncated(let n, let a): return "input ends inside a container (needs \(n) bytes, has \(a))"
        case .datagramLost(let e, let g): return "expected packet number \(e), got \(g): frame dropped"
        }
    }
}

extension WireError {
    /// The frame-drop reason this problem is counted under (`livegate_frames_dropped_total{reason}`).
    public var dropReason: String {
        switch self {
        case .badJPEG(let j):
            switch j {
            case .truncated: return "jpeg-truncated"
            case .noSOF: return "jpeg-no-scan"
            case .badSOF: return "jpeg-bad-sof"
            case .noSOI: return "jpeg-no-soi"
            case .badMarker, .badSegmentLength, .codec: return "jpeg-malformed"
            }
        case .noJPEGAtOffset: return "jpeg-no-soi"
        case .datagramLost: return "datagram-lost"
        case .truncated: return "container-truncated"
        case .badMagic, .badField, .sizeOverLimit: return "container-malformed"
        }
    }
}

/// A problem at a byte offset of the input.
public struct WireIssue: Error, Sendable, Hashable, CustomStringConvertible {
    /// Absolute offset (stream or file) where the problem was found.
    public var offset: Int
    public var error: WireError
    public init(offset: Int, error: WireError) {
        self.offset = offset
        self.error = error
    }
    public var description: String { "offset \(offset): \(error)" }
}

/// What a parser hands to its callback.
public enum WireEvent: Sendable {
    case frame(WireFrame)
    case issue(WireIssue)
}

/// Counters every parser keeps (exported as metrics by the drivers).
public struct WireStats: Sendable, Hashable {
    /// Frames delivered.
    public var frames = 0
    /// Whole containers whose frame could not be delivered (bad JPEG, lost datagram, bad header).
    public var droppedFrames = 0
    /// Problems reported (each `WireEvent.issue`).
    public var issues = 0
    /// Bytes skipped while resynchronising.
    public var skippedBytes = 0
    /// Frames that waited for their AF information (Sony frame information sent after the JPEG)
    /// and went out without it because none came before the next frame.
    public var afUnmatched = 0
    public init() {}
}

/// Buffer bounds. A declared size above a bound is a typed error followed by a resync; nothing
/// ever allocates more than the bound (plus one header) per parser.
public struct WireLimits: Sendable, Hashable {
    /// Largest container (packet, dataset, object, frame) a stream parser buffers. Default 16 MiB:
    /// the largest real live-view object seen is ~0.5 MB (Canon 1056×704).
    public var maxContainer: Int
    public init(maxContainer: Int = 16 << 20) { self.maxContainer = maxContainer }
    public static let `default` = WireLimits()
}
