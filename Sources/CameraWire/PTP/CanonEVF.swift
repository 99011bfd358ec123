import JPEGKit
public import LiveViewCore

/// Canon EOS GetViewFinderData (0x9153) data: records `{u32 length incl. 8-byte head, u32 type, data}`
/// ended by `{8, 0}` (ptp.md §2.2, little-endian). Type 1 (and 11) records are JPEGs.
public enum CanonEVFData {
    public static let jpegRecordType: UInt32 = 1
    public static let alternateJPEGRecordType: UInt32 = 11
    public static let zoomRecordType: UInt32 = 4
    public static let coordinateSpaceRecordType: UInt32 = 14

    /// Appends one record.
    public static func appendRecord(type: UInt32, data: some Collection<UInt8>, to out: inout [UInt8]) {
        out.putLE32(UInt32(8 + data.count))
        out.putLE32(type)
        out.append(contentsOf: data)
    }

    /// Appends the `{8, 0}` terminator.
    public static func appendTerminator(to out: inout [UInt8]) {
        out.putLE32(8)
        out.putLE32(0)
    }

    /// Appends a whole GetViewFinderData payload: the JPEG record, `extra` records, the terminator.
    public static func append(jpeg: some Collection<UInt8>, extra: [(type: UInt32, data: [UInt8])] = [],
                              to out: inout [UInt8]) {
        appendRecord(type: jpegRecordType, data: jpeg, to: &out)
        for r in extra { appendRecord(type: r.type, data: r.data, to: &out) }
        appendTerminator(to: &out)
    }
}

/// One AF point of Canon's FocusInfoEx property (0xD1D3), in sensor units.
public struct CanonFocusPoint: Sendable, Hashable {
    /// Centre relative to the sensor centre, y pointing **up** (the vcam EOS dump lists its 9-point
    /// diamond top first with y = +743, bottom last with y = −743; the sign is otherwise UNCONFIRMED).
    public var x: Int, y: Int
    public var width: Int, height: Int
    /// Set in the active/selected bitmask.
    public var selected: Bool

    public init(x: Int, y: Int, width: Int, height: Int, selected: Bool) {
        self.x = x; self.y = y; self.width = width; self.height = height; self.selected = selected
    }
}

/// Canon FocusInfoEx (0xD1D3) as far as ptp.md §2.2 defines it: `u32 size, u16 halfsize, u16 version,
/// u16 N, u16 used, u16 sizeX, u16 sizeY, u16 size2X, u16 size2Y`, then N × i16 heights, widths, x, y,
/// then ⌈N/8⌉ bytes of active/selected bitmask.
public struct CanonFocusInfo: Sendable, Hashable {
    public var sensorWidth: Int, sensorHeight: Int
    public var points: [CanonFocusPoint]

    public init(sensorWidth: Int, sensorHeight: Int, points: [CanonFocusPoint]) {
        self.sensorWidth = sensorWidth
        self.sensorHeight = sensorHeight
        self.points = points
    }

    /// Parses the property value; nil when too short or inconsistent.
    public static func parse(_ v: ArraySlice<UInt8>) -> CanonFocusInfo? {
        let b = v.startIndex
        guard v.count >= 20 else { return nil }
        let n = Int(v.le16(b + 8))
        let sx = Int(v.le16(b + 12)), sy = Int(v.le16(b + 14))
        guard n <= 1024, v.count >= 20 + 8 * n + (n + 7) / 8 else { return nil }
        func i16(_ p: Int) -> Int { Int(Int16(bitPattern: v.le16(p))) }
        var pts: [CanonFocusPoint] = []
        pts.reserveCapacity(n)
        let hs = b + 20, ws = hs + 2 * n, xs = ws + 2 * n, ys = xs + 2 * n, mask = ys + 2 * n
        for i in 0..<n {
            let sel = v[mask + i / 8] & (1 << UInt8(i % 8)) != 0
            pts.append(CanonFocusPoint(x: i16(xs + 2 * i), y: i16(ys + 2 * i), width: i16(ws + 2 * i),
                                       height: i16(hs + 2 * i), selected: sel))
        }
        return CanonFocusInfo(sensorWidth: sx, sensorHeight: sy, points: pts)
    }

    /// Serializes (the inverse of `parse`).
    public func serialized() -> [UInt8] {
        let n = points.count
        var out: [UInt8] = []
        let size = 20 + 8 * n + (n + 7) / 8
        out.putLE32(UInt32(size))
        out.putLE16(UInt16(size / 2)); out.putLE16(1)
        out.putLE16(UInt16(n)); out.putLE16(UInt16(n))
        out.putLE16(UInt16(sensorWidth)); out.putLE16(UInt16(sensorHeight))
        out.putLE16(UInt16(sensorWidth)); out.putLE16(UInt16(sensorHeight))
        for p in points { out.putLE16(UInt16(bitPattern: Int16(truncatingIfNeeded: p.height))) }
        for p in points { out.putLE16(UInt16(bitPattern: Int16(truncatingIfNeeded: p.width))) }
        for p in points { out.putLE16(UInt16(bitPattern: Int16(truncatingIfNeeded: p.x))) }
        for p in points { out.putLE16(UInt16(bitPattern: Int16(truncatingIfNeeded: p.y))) }
        var mask = [UInt8](repeating: 0, count: (n + 7) / 8)
        for (i, p) in points.enumerated() where p.selected { mask[i / 8] |= 1 << UInt8(i % 8) }
        out += mask
        return out
    }

    /// The AF areas in pixels of a JPEG showing the whole sensor: kind `af`, state `selected` or `normal`.
    public func areas(imageWidth: Int, imageHeight: Int) -> [AFArea] {
        var out: [AFArea] = []
        appendAreas(to: &out, imageWidth: imageWidth, imageHeight: imageHeight)
        return out
    }

    /// Same as `areas`, appending to a reused array (no allocation once it has capacity).
    public func appendAreas(to out: inout [AFArea], imageWidth: Int, imageHeight: Int) {
        let space = AFCoordinateSpace(width: Double(sensorWidth), height: Double(sensorHeight))
        for p in points {
            let r = CameraRect(x: Double(sensorWidth) / 2 + Double(p.x) - Double(p.width) / 2,
                               y: Double(sensorHeight) / 2 - Double(p.y) - Double(p.height) / 2,
                               width: Double(p.width), height: Double(p.height))
            out.append(AFArea(camera: r, in: space, imageWidth: imageWidth, imageHeight: imageHeight, kind: .af,
                              state: p.selected ? .selected : .normal))
        }
    }

    /// Finds the latest FocusInfoEx in Canon GetEvent (0x9116) data: records `{u32 size, u32 code, …}`
    /// up to `{8, 0}`; 0xC189 PropValueChanged records carry `u32 propcode, value`.
    public static func fromGetEvent(_ data: ArraySlice<UInt8>) -> CanonFocusInfo? {
        var p = data.startIndex
        var found: CanonFocusInfo?
        while p + 8 <= data.endIndex {
            let size = Int(data.le32(p)), code = data.le32(p + 4)
            if size == 8 && code == 0 { break }
            guard size >= 8, p + size <= data.endIndex else { break }
            if code == 0xC189, size >= 12, data.le32(p + 8) == 0xD1D3 {
                if let f = parse(data[(p + 12)..<(p + size)]) { found = f }
            }
            p += size
        }
        return found
    }
}

struct CanonEVFFormat: StreamContainerFormat {
    let bufferBound: Int
    var inList = false
    var resyncing = false
    /// AF from the latest FocusInfoEx the driver handed over.
    var focusInfo: CanonFocusInfo?

    init(limits: WireLimits) { bufferBound = limits.maxContainer }

    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        if resyncing {
            // Look for a JPEG record: {len, 1, FF D8 …}.
            guard w.count >= 10 else { return .needMore(10) }
            let len = Int(w.le32(b)), type = w.le32(b + 4)
            guard (type == 1 || type == 11), len >= 10, len <= bufferBound, JPEGScanner.hasSOI(w, at: b + 8) else {
                return .skip(1)
            }
        }
        if !inList {
            // Between objects: skip zero padding and a USB response container.
            guard w.count >= 4 else { return .needMore(4) }
            if w.le32(b) == 0 { return .skip(4) }
            guard w.count >= 8 else { return .needMore(8) }
            let len = Int(w.le32(b))
            if len >= 12 && len <= 32 && (len - 12) % 4 == 0 && w.le16(b + 4) == 3 {
                return .skip(len)
            }
        }
        guard w.count >= 8 else { return .needMore(8) }
        let len = Int(w.le32(b)), type = w.le32(b + 4)
        if len == 8 && type == 0 {
            inList = false
            return .skip(8)
        }
        guard len >= 8 else { return bad(offset, "a record length ≥ 8") }
        guard len <= bufferBound else {
            if resyncing { return .skip(1) }
            resyncing = true
            inList = false
            return .damaged(1, WireIssue(offset: offset, error: .sizeOverLimit(
                field: "canon-evf record length", declared: len, limit: bufferBound)), frameLost: false)
        }
        guard w.count >= len else { return .needMore(len) }
        inList = true
        resyncing = false
        guard type == 1 || type == 11 else { return .skip(len) }
        let region = w[(b + 8)..<(b + len)]
        guard JPEGScanner.hasSOI(region, at: region.startIndex) else {
            return .damaged(len, WireIssue(offset: offset + 8, error: .noJPEGAtOffset), frameLost: true)
        }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(region) } catch {
            return .damaged(len, WireIssue(offset: offset + 8, error: .badJPEG(error)), frameLost: true)
        }
        frame.reset()
        frame.jpeg = w[(b + 8)..<(b + 8 + info.length)]
        frame.jpegOffset = offset + 8
        frame.info = info
        if let fi = focusInfo {
            fi.appendAreas(to: &frame.af, imageWidth: info.width, imageHeight: info.height)
        }
        return .frame(len)
    }

    private mutating func bad(_ offset: Int, _ expected: String) -> FramingStep {
        if resyncing { return .skip(1) }
        resyncing = true
        inList = false
        return .damaged(1, WireIssue(offset: offset, error: .badMagic(expected: expected)), frameLost: false)
    }
}

/// Incremental parser for Canon EOS GetViewFinderData payloads (`canon-evf`), back to back.
///
/// Between payloads a USB response container (≤ 32 bytes, type 3) and zero padding are skipped.
/// AF comes from `focusInfo` (set it from `CanonFocusInfo.fromGetEvent` on each GetEvent reply;
/// the viewfinder data itself has no AF geometry). Resyncs on the next `{len, 1, FF D8}` JPEG record.
/// Buffer bound: one record, at most `limits.maxContainer` bytes.
public struct CanonEVFParser: Sendable {
    var framer: StreamFramer<CanonEVFFormat>

    public init(limits: WireLimits = .default) {
        framer = StreamFramer(format: CanonEVFFormat(limits: limits))
    }

    /// AF areas applied to later frames (nil = none).
    public var focusInfo: CanonFocusInfo? {
        get { framer.format.focusInfo }
        set { framer.format.focusInfo = newValue }
    }

    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) { framer.feed(chunk, emit) }
    public mutating func feed(_ chunk: [UInt8], _ emit: (WireEvent) -> Void) { framer.feed(chunk[...], emit) }
    public mutating func finish(_ emit: (WireEvent) -> Void) { framer.finish(emit) }
    public var stats: WireStats { framer.stats }
}
