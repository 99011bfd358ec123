import JPEGKit
/// Fujifilm live-view frames as pushed on TCP port 55742 (ptp.md §2.4): `u32 LE length` (counting
/// itself) + 14-byte header (meaning UNCONFIRMED) + JPEG.
public enum FujiLiveViewFrame {
    public static let headerSize = 18

    /// Appends one frame; `header` is the 14 opaque bytes (the vcam sample has 12 zeros + `01 8A`).
    public static func append(jpeg: some Collection<UInt8>, header: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x8A],
                              to out: inout [UInt8]) {
        precondition(header.count == 14, "Fuji LV header is 14 bytes")
        out.putLE32(UInt32(18 + jpeg.count))
        out.append(contentsOf: header)
        out.append(contentsOf: jpeg)
    }
}

struct FujiLiveViewFormat: StreamContainerFormat {
    let bufferBound: Int
    var resyncing = false
    var focus: FujiFocusPoint?

    init(limits: WireLimits) { bufferBound = limits.maxContainer }

    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        guard w.count >= 20 else { return .needMore(20) }
        let len = Int(w.le32(b))
        guard len >= 20, JPEGScanner.hasSOI(w, at: b + 18) else {
            if resyncing { return .skip(1) }
            resyncing = true
            return .damaged(1, WireIssue(offset: offset, error: .badMagic(
                expected: "a frame length ≥ 20 and JPEG SOI FF D8 at +18")), frameLost: false)
        }
        guard len <= bufferBound else {
            if resyncing { return .skip(1) }
            resyncing = true
            return .damaged(1, WireIssue(offset: offset, error: .sizeOverLimit(
                field: "fuji-lv frame length", declared: len, limit: bufferBound)), frameLost: false)
        }
        guard w.count >= len else { return .needMore(len) }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(w[(b + 18)..<(b + len)]) } catch {
            if resyncing { return .skip(1) }
            return .damaged(len, WireIssue(offset: offset + 18, error: .badJPEG(error)), frameLost: true)
        }
        resyncing = false
        frame.reset()
        frame.jpeg = w[(b + 18)..<(b + 18 + info.length)]
        frame.jpegOffset = offset + 18
        frame.info = info
        if let focus { frame.af.append(focus.area(imageWidth: info.width, imageHeight: info.height)) }
        return .frame(len)
    }
}

/// Incremental parser for the Fujifilm port-55742 live-view stream (`fuji-lv`).
/// Resyncs on a plausible length followed by `FF D8` at +18. Buffer bound: one frame,
/// at most `limits.maxContainer` bytes.
public struct FujiLiveViewParser: Sendable {
    var framer: StreamFramer<FujiLiveViewFormat>

    public init(limits: WireLimits = .default) {
        framer = StreamFramer(format: FujiLiveViewFormat(limits: limits))
    }

    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) { framer.feed(chunk, emit) }
    public mutating func feed(_ chunk: [UInt8], _ emit: (WireEvent) -> Void) { framer.feed(chunk[...], emit) }
    public mutating func finish(_ emit: (WireEvent) -> Void) { framer.finish(emit) }
    public var stats: WireStats { framer.stats }

    /// The body's focus point (its state list, not the stream, carries it): every frame from now on
    /// has it as its AF area; nil for none.
    public var focusPoint: FujiFocusPoint? {
        get { framer.format.focus }
        set { framer.format.focus = newValue }
    }
}
