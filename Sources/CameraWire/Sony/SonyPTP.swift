import JPEGKit
public import LiveViewCore
/// Serializer for the Sony PTP "LiveView dataset" (handle 0xFFFFC002; sony.md §4.2, little-endian):
/// 16-byte header {JPEG offset, image size, focal-frame offset, focal-frame size}, focal-frame block
/// at its offset, JPEG at its offset; the image size may include tail padding after the EOI.
public enum SonyPTPDataset {
    /// Builds one dataset: header, `reserved` zero bytes, focal-frame block, JPEG, `padding` bytes.
    /// With `chunkLines`, inserts A9 II-style `CRLF HEX CRLF` lines before the focal block and the
    /// JPEG (not counted by the offsets) — what the A9 II capture shows.
    public static func append(jpeg: some Collection<UInt8>, focalFrame: some Collection<UInt8>,
                              reserved: Int = 0, padding: some Collection<UInt8> = [],
                              chunkLines: Bool = false, to out: inout [UInt8]) {
        let ffOff = focalFrame.isEmpty ? 0 : 16 + reserved
        let jpegOff = 16 + reserved + focalFrame.count
        let imageSize = jpeg.count + padding.count
        out.putLE32(UInt32(jpegOff))
        out.putLE32(UInt32(imageSize))
        out.putLE32(UInt32(ffOff))
        out.putLE32(UInt32(focalFrame.count))
        out.putZeros(reserved)
        if !focalFrame.isEmpty {
            if chunkLines { appendLine(focalFrame.count, &out) }
            out.append(contentsOf: focalFrame)
        }
        if chunkLines { appendLine(imageSize, &out) }
        out.append(contentsOf: jpeg)
        out.append(contentsOf: padding)
    }

    static func appendLine(_ n: Int, _ out: inout [UInt8]) {
        out.append(0x0D); out.append(0x0A)
        out.append(contentsOf: String(n, radix: 16, uppercase: true).utf8)
        out.append(0x0D); out.append(0x0A)
    }

    /// A 120-byte focal-frame block like the real ones (version ×100, zero counts: no AF boxes).
    public static func emptyFocalFrame(version: UInt16 = 100) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 120)
        b[0] = UInt8(truncatingIfNeeded: version); b[1] = UInt8(version >> 8)
        for g in 0..<4 {
            b.setLE32(0xA0000, at: 0x38 + 16 * g)
            b.setLE32(0x78000, at: 0x3C + 16 * g)
        }
        return b
    }
}

/// The focal-frame block of a Sony PTP live-view dataset (ptp.md §2.3; little-endian). The layout is
/// UNCONFIRMED — one source, quoting Sony's PTP reference — and every real block seen so far has
/// zero boxes, so a block whose counts are zero (the fixtures) gives none:
///
///     0x00 u16 version ×100, 6 reserved; 40 reserved
///     0x30 u16 n, 6 reserved; n × 24 reserved
///     sections Focus, then (version ≥ 1.01) Face and Tracking, each:
///       u32 Xden, u32 Yden, u16 count, 6 reserved;
///       count × {u16 type, u16 state, u8 priority, 3 reserved, u32 Xnum, u32 Ynum, u32 height, u32 width}
///
/// An entry's centre is (Xnum/Xden, Ynum/Yden) and its size width/Xden × height/Yden (height before
/// width in the entry). Focus states: 1 not focused, 2 focused, 3 selection, 4 moving, 5 range
/// limit, 6 registration AF, 7 island. A block cut short gives the boxes read so far.
public enum SonyFocalFrame {
    public struct Box: Sendable, Hashable {
        /// Centre and size as fractions of the picture.
        public var centreX: Double, centreY: Double, width: Double, height: Double
        public var state: UInt16
        public init(centreX: Double, centreY: Double, width: Double, height: Double, state: UInt16) {
            self.centreX = centreX; self.centreY = centreY; self.width = width; self.height = height; self.state = state
        }
    }

    /// The grid the emulator writes (the real blocks' Xden/Yden: 0xA0000 × 0x78000).
    public static let gridX: UInt32 = 0xA0000
    public static let gridY: UInt32 = 0x78000

    static func state(_ s: UInt16) -> AFState {
        switch s {
        case 1: return .notFocused
        case 2: return .focused
        case 3: return .selected
        case 4: return .focusing
        default: return .unknown
        }
    }

    /// The AF areas of a block, in pixels of a `width`×`height` JPEG.
    public static func areas(_ b: ArraySlice<UInt8>, imageWidth: Int, imageHeight: Int) -> [AFArea] {
        var out: [AFArea] = []
        let s = b.startIndex
        guard b.count >= 0x38 else { return out }
        let version = b.le16(s)
        let n = Int(b.le16(s + 0x30))
        var p = s + 0x38 + n * 24
        let kinds: [AFKind] = version >= 101 ? [.contrastAF, .face, .tracking] : [.contrastAF]
        for kind in kinds {
            guard p + 16 <= b.endIndex else { return out }
            let xden = Double(b.le32(p)), yden = Double(b.le32(p + 4))
            let count = Int(b.le16(p + 8))
            p += 16
            for _ in 0..<count {
                guard p + 24 <= b.endIndex else { return out }
                let st = b.le16(p + 2)
                let xnum = Double(b.le32(p + 8)), ynum = Double(b.le32(p + 12))
                let h = Double(b.le32(p + 16)), w = Double(b.le32(p + 20))
                p += 24
                guard xden > 0, yden > 0, w > 0, h > 0 else { continue }
                let rect = CameraRect(x: xnum - w / 2, y: ynum - h / 2, width: w, height: h)
                out.append(AFArea(camera: rect, in: AFCoordinateSpace(width: xden, height: yden),
                                  imageWidth: imageWidth, imageHeight: imageHeight, kind: kind, state: state(st)))
            }
        }
        return out
    }

    /// A version-1.00 block with `focus` boxes in the Focus section (what the emulator sends).
    public static func block(focus: [Box]) -> [UInt8] {
        var b = SonyPTPDataset.emptyFocalFrame(version: 100)
        b.setLE32(gridX, at: 0x38)
        b.setLE32(gridY, at: 0x3C)
        b[0x40] = UInt8(truncatingIfNeeded: focus.count)
        b[0x41] = UInt8(truncatingIfNeeded: focus.count >> 8)
        var entries: [UInt8] = []
        for f in focus {
            entries.putLE16(1)  // type: not defined by the notes
            entries.putLE16(f.state)
            entries.append(1)  // priority
            entries.putZeros(3)
            entries.putLE32(UInt32((f.centreX * Double(gridX)).rounded()))
            entries.putLE32(UInt32((f.centreY * Double(gridY)).rounded()))
            entries.putLE32(UInt32((f.height * Double(gridY)).rounded()))
            entries.putLE32(UInt32((f.width * Double(gridX)).rounded()))
        }
        b.insert(contentsOf: entries, at: 0x48)
        return b
    }
}

/// Result of looking for an HTTP chunk-size line `CR LF hex{1,8} CR LF` at a position.
enum ChunkLine {
    case line(length: Int, value: Int)
    case notLine
    case needMore(Int)

    static func at(_ w: ArraySlice<UInt8>, _ p: Int) -> ChunkLine {
        let end = w.endIndex
        guard p < end else { return .needMore(p - w.startIndex + 1) }
        guard w[p] == 0x0D else { return .notLine }
        guard p + 1 < end else { return .needMore(p + 2 - w.startIndex) }
        guard w[p + 1] == 0x0A else { return .notLine }
        var q = p + 2
        var v = 0
        while true {
            guard q < end else { return .needMore(q + 1 - w.startIndex) }
            let c = w[q]
            if let h = HTTPChunkedDecoder.hexValue(c) {
                guard q - (p + 2) < 8 else { return .notLine }
                v = v << 4 | Int(h)
                q += 1
                continue
            }
            guard q > p + 2, c == 0x0D else { return .notLine }
            guard q + 1 < end else { return .needMore(q + 2 - w.startIndex) }
            guard w[q + 1] == 0x0A else { return .notLine }
            return .line(length: q + 2 - p, value: v)
        }
    }
}

struct SonyPTPDatasetFormat: StreamContainerFormat {
    let bufferBound: Int
    var resyncing = false

    init(limits: WireLimits) {
        bufferBound = limits.maxContainer
    }

    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        // Stray CRLF / chunk-size line before a header (A9 II capture).
        if w[b] == 0x0D {
            switch ChunkLine.at(w, b) {
            case .needMore(let n): return .needMore(n)
            case .line(let len, _): return .skip(len)
            case .notLine:
                guard w.count >= 2 else { return .needMore(2) }
                if w[b + 1] == 0x0A { return .skip(2) }
            }
        }
        guard w.count >= 16 else { return .needMore(16) }
        let jpegOff = Int(w.le32(b)), imageSize = Int(w.le32(b + 4))
        let ffOff = Int(w.le32(b + 8)), ffSize = Int(w.le32(b + 12))
        // Parts in offset order: (offset, size, isJPEG).
        var p0 = (jpegOff, imageSize, true), p1 = (ffOff, ffSize, false)
        let hasFF = ffOff != 0 || ffSize != 0
        guard jpegOff >= 16, imageSize > 0, !hasFF || ffOff >= 16 else {
            return bad(offset, "a dataset header (JPEG offset ≥ 16, image size > 0, focal offset 0 or ≥ 16)")
        }
        let logicalEnd = max(jpegOff + imageSize, hasFF ? ffOff + ffSize : 0)
        guard logicalEnd + 32 <= bufferBound else {
            if resyncing { return .skip(1) }
            resyncing = true
            return .damaged(1, WireIssue(offset: offset, error: .sizeOverLimit(
                field: "sony-ptp dataset size", declared: logicalEnd, limit: bufferBound - 32)), frameLost: false)
        }
        if hasFF && ffOff < jpegOff { swap(&p0, &p1) }
        if hasFF && p0.0 + p0.1 > p1.0 {
            return bad(offset, "non-overlapping JPEG and focal-frame parts")
        }
        var shift = 0
        var jpegStart = 0
        var ffStart = 0
        for k in 0..<(hasFF ? 2 : 1) {
            let (off, size, isJPEG) = k == 0 ? p0 : p1
            let at = b + off + shift
            switch ChunkLine.at(w, at) {
            case .needMore(let n): return .needMore(n)
            case .line(let len, let v) where v == size: shift += len
            default: break
            }
            if isJPEG { jpegStart = off + shift } else { ffStart = off + shift }
        }
        let total = logicalEnd + shift
        guard w.count >= total else { return .needMore(total) }
        let region = w[(b + jpegStart)..<(b + jpegStart + imageSize)]
        guard JPEGScanner.hasSOI(region, at: region.startIndex) else {
            if resyncing { return .skip(1) }
            return .damaged(total, WireIssue(offset: offset + jpegStart, error: .noJPEGAtOffset), frameLost: true)
        }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(region) } catch {
            if resyncing { return .skip(1) }
            return .damaged(total, WireIssue(offset: offset + jpegStart, error: .badJPEG(error)), frameLost: true)
        }
        resyncing = false
        frame.reset()
        frame.jpeg = w[(b + jpegStart)..<(b + jpegStart + info.length)]
        frame.jpegOffset = offset + jpegStart
        frame.info = info
        // AF from the focal-frame block (layout UNCONFIRMED, see SonyFocalFrame; real blocks: none).
        if hasFF && ffSize > 0 {
            frame.af.append(contentsOf: SonyFocalFrame.areas(w[(b + ffStart)..<(b + ffStart + ffSize)],
                                                             imageWidth: info.width, imageHeight: info.height))
        }
        return .frame(total)
    }

    private mutating func bad(_ offset: Int, _ expected: String) -> FramingStep {
        if resyncing { return .skip(1) }
        resyncing = true
        return .damaged(1, WireIssue(offset: offset, error: .badMagic(expected: expected)), frameLost: false)
    }
}

/// Incremental parser for Sony PTP live-view datasets as served over HTTP (`sony-ptp`).
///
/// Transfer framing: `.auto` decides from the first bytes — a stream that starts with a chunk-size
/// line (`HEX CRLF`) is an RFC 9112 chunked body and is de-chunked first (JPEGs cut by chunk lines
/// then have `jpegOffset == nil`); otherwise datasets are read back to back, skipping the A9 II's
/// stray `CRLF` / `CRLF HEX CRLF` lines (a chunk line is skipped before a part only when its value
/// equals that part's size). AF is always empty (focal-frame layout UNCONFIRMED).
/// Buffer bound: one dataset, at most `limits.maxContainer` bytes; the mode probe holds ≤ 18 bytes.
public struct SonyPTPParser: Sendable {
    /// How the bytes are framed on the wire.
    public enum Transfer: Sendable { case auto, raw, chunked }

    var framer: StreamFramer<SonyPTPDatasetFormat>
    var transfer: Transfer
    var probe: [UInt8] = []
    var dechunk = HTTPChunkedDecoder()
    /// (decoded offset, input offset, count) of recent de-chunked runs, for `jpegOffset`.
    var spans: [(Int, Int, Int)] = []
    var decodedOffset = 0

    public init(transfer: Transfer = .auto, limits: WireLimits = .default) {
        framer = StreamFramer(format: SonyPTPDatasetFormat(limits: limits))
        self.transfer = transfer
    }

    public var stats: WireStats { framer.stats }

    public mutating func feed(_ chunk: [UInt8], _ emit: (WireEvent) -> Void) { feed(chunk[...], emit) }

    /// Feeds the next bytes of the HTTP body; `emit` gets frames and issues in order.
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        if transfer == .auto {
            // Decide on the first bytes: hex digits then CR (or ';') ⇒ chunked.
            let earlier = probe.count
            var all = chunk
            if earlier > 0 {
                probe.append(contentsOf: chunk.prefix(18))
                all = probe[...]
            }
            var i = all.startIndex
            while i < all.endIndex, HTTPChunkedDecoder.hexValue(all[i]) != nil, i - all.startIndex < 16 { i += 1 }
            if i == all.endIndex && all.count < 18 {
                if earlier == 0 { probe.append(contentsOf: chunk) }
                return
            }
            let digits = i - all.startIndex
            let chunked = digits > 0 && i < all.endIndex && (all[i] == 0x0D || all[i] == 0x3B)
            transfer = chunked ? .chunked : .raw
            if earlier > 0 {
                let p = probe
                probe = []
                feedDecided(p[0..<earlier], emit)
            }
        }
        feedDecided(chunk, emit)
    }

    private mutating func feedDecided(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        guard transfer == .chunked else { framer.feed(chunk, emit); return }
        var dec = dechunk
        dechunk = HTTPChunkedDecoder()
        dec.decode(chunk, run: { run, inputOffset in
            pruneSpans()
            if let last = spans.last, last.0 + last.2 == decodedOffset, last.1 + last.2 == inputOffset {
                spans[spans.count - 1].2 += run.count
            } else {
                spans.append((decodedOffset, inputOffset, run.count))
            }
            decodedOffset += run.count
            let map = spans
            framer.feed(run) { ev in
                switch ev {
                case .frame(var f):
                    f.jpegOffset = f.jpegOffset.flatMap { Self.mapOffset($0, f.jpeg.count, map) }
                    emit(.frame(f))
                case .issue(var i):
                    i.offset = Self.mapPoint(i.offset, map)
                    emit(.issue(i))
                }
            }
        }, issue: { emit(.issue($0)) })
        dechunk = dec
    }

    private mutating func pruneSpans() {
        let keepFrom = framer.consumedOffset
        var k = 0
        while k < spans.count && spans[k].0 + spans[k].2 <= keepFrom { k += 1 }
        if k > 0 { spans.removeFirst(k) }
    }

    static func mapOffset(_ d: Int, _ len: Int, _ spans: [(Int, Int, Int)]) -> Int? {
        for s in spans where d >= s.0 && d < s.0 + s.2 {
            return d + len <= s.0 + s.2 ? s.1 + (d - s.0) : nil
        }
        return nil
    }

    static func mapPoint(_ d: Int, _ spans: [(Int, Int, Int)]) -> Int {
        for s in spans where d >= s.0 && d < s.0 + s.2 { return s.1 + (d - s.0) }
        return d
    }

    /// End of input: reports an incomplete trailing dataset.
    public mutating func finish(_ emit: (WireEvent) -> Void) {
        if !probe.isEmpty {
            let p = probe
            probe = []
            transfer = .raw
            framer.feed(p[...], emit)
        }
        guard transfer == .chunked else { framer.finish(emit); return }
        let map = spans
        framer.finish { ev in
            if case .issue(var i) = ev { i.offset = Self.mapPoint(i.offset, map); emit(.issue(i)) } else { emit(ev) }
        }
    }
}
