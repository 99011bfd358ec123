import JPEGKit
public import LiveViewCore

/// Which Nikon live-view object a stream carries (ptp.md §2.1).
public enum NikonLiveViewLayout: Sendable, Hashable {
    /// Decide per object: 0x9428 when the u32 BE at 8 is a header size with `FF D8` behind it,
    /// else 0x9203 with the first of 384/128/64 that has `FF D8` behind it (D600-family fields for 384).
    case auto
    /// 0x9428 GetLiveViewImageEx, self-describing (header size at 8, JPEG size at 12).
    case ex
    /// 0x9203 GetLiveViewImg, "v1" field layout with a 64, 128 or 384-byte header (D3x/D300/D700/D90/D5000/D3S/D7000/D5100/D4).
    case v1(headerSize: Int)
    /// 0x9203, D800/D800E field layout (384-byte header).
    case d800
    /// 0x9203, D600-family field layout (384-byte header; D610/D810/D750/D850/Z via 0x9203…).
    case d600
}

/// The metadata of one Nikon live-view object header (all big-endian).
public struct NikonLiveViewHeader: Sendable, Hashable {
    /// Offset of the JPEG in the object.
    public var headerSize: Int
    /// JPEG byte count when the header gives it (0x9428), else nil (walk to EOI).
    public var jpegSize: Int?
    /// AF coordinate space ("whole size").
    public var wholeWidth: Int, wholeHeight: Int
    /// Display (zoom) area size and centre in whole-size units; equal to the whole area when not zoomed.
    public var displayWidth: Int, displayHeight: Int, displayCenterX: Int, displayCenterY: Int
    /// 0x9428 byte 839 / 0x9203 rotation byte: 0 none, 1 CCW (−90°), 2 CW (+90°), 3 180°.
    public var rotation: UInt8
    /// Focus driving (0x9428 byte 41 = 1; 0x9203 focus-driving byte = 1).
    public var focusDriving: Bool
    /// 0x9428 byte 42: 0 n/a, 1 not focused, 2 focused.
    public var focusJudgement: UInt8
    /// 0x9428 byte 43: 1 subject detection, 2 auto-area.
    public var afModeState: UInt8
    /// AF boxes in whole-size units: centre and size, in the camera's order (zero entries skipped).
    public var boxes: [(index: Int, cx: Int, cy: Int, w: Int, h: Int)]

    /// The AF space: the display area, as pixels of the LV JPEG map onto it.
    public var coordinateSpace: AFCoordinateSpace {
        let dw = displayWidth > 0 ? displayWidth : wholeWidth
        let dh = displayHeight > 0 ? displayHeight : wholeHeight
        let cx = displayWidth > 0 ? Double(displayCenterX) : Double(wholeWidth) / 2
        let cy = displayHeight > 0 ? Double(displayCenterY) : Double(wholeHeight) / 2
        return AFCoordinateSpace(originX: cx - Double(dw) / 2, originY: cy - Double(dh) / 2,
                                 width: Double(dw), height: Double(dh))
    }

    /// kind: box 0 `af`; with subject detection (byte 43 = 1) box 1 `subject`, box 2 `eye`; others `af`.
    public func kind(ofBox index: Int) -> AFKind {
        if afModeState == 1 && index == 1 { return .subject }
        if afModeState == 1 && index == 2 { return .eye }
        return .af
    }

    /// state: driving → `focusing`, else judgement 2 `focused`, 1 `not-focused`, otherwise `normal`.
    public var state: AFState {
        if focusDriving { return .focusing }
        switch focusJudgement {
        case 2: return .focused
        case 1: return .notFocused
        default: return .normal
        }
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.headerSize == b.headerSize && a.jpegSize == b.jpegSize && a.wholeWidth == b.wholeWidth
            && a.wholeHeight == b.wholeHeight && a.displayWidth == b.displayWidth && a.displayHeight == b.displayHeight
            && a.displayCenterX == b.displayCenterX && a.displayCenterY == b.displayCenterY
            && a.rotation == b.rotation && a.focusDriving == b.focusDriving && a.focusJudgement == b.focusJudgement
            && a.afModeState == b.afModeState && a.boxes.elementsEqual(b.boxes, by: { $0 == $1 })
    }

    public func hash(into h: inout Hasher) {
        h.combine(headerSize); h.combine(wholeWidth); h.combine(wholeHeight); h.combine(boxes.count)
    }

    /// Parses the header of a 0x9428 object (`ex`) or a 0x9203 object (other layouts). Returns nil
    /// when the bytes are too short or inconsistent. `boxes` keeps its capacity when reused.
    static func parse(_ w: ArraySlice<UInt8>, layout: NikonLiveViewLayout, into h: inout NikonLiveViewHeader) -> Bool {
        let b = w.startIndex
        h.boxes.removeAll(keepingCapacity: true)
        switch layout {
        case .auto:
            return false
        case .ex:
            guard w.count >= 48 else { return false }
            let hdr = Int(w.be32(b + 8))
            guard hdr >= 48, hdr <= 1 << 20 else { return false }
            h.headerSize = hdr
            h.jpegSize = Int(w.be32(b + 12))
            h.wholeWidth = Int(w.be16(b + 16)); h.wholeHeight = Int(w.be16(b + 18))
            h.displayWidth = Int(w.be16(b + 20)); h.displayHeight = Int(w.be16(b + 22))
            h.displayCenterX = Int(w.be16(b + 24)); h.displayCenterY = Int(w.be16(b + 26))
            h.focusDriving = w[b + 41] == 1
            h.focusJudgement = w[b + 42]
            h.afModeState = w[b + 43]
            h.rotation = hdr > 839 && w.count > 839 ? w[b + 839] : 0
            let count = min(Int(w[b + 44]), 96, (min(hdr, w.count) - 48) / 8)
            for i in 0..<max(count, 0) {
                let p = b + 48 + 8 * i
                let bw = Int(w.be16(p)), bh = Int(w.be16(p + 2)), cx = Int(w.be16(p + 4)), cy = Int(w.be16(p + 6))
                if bw == 0 && bh == 0 && cx == 0 && cy == 0 { continue }
                h.boxes.append((i, cx, cy, bw, bh))
            }
            return true
        case .v1, .d800, .d600:
            let headerSize: Int
            let sizes: Int, afSize: Int, afCentre: Int, rot: Int, focus: Int
            switch layout {
            case .v1(let s): headerSize = s; sizes = 4; afSize = 16; afCentre = 20; rot = 29; focus = 40
            case .d800: headerSize = 384; sizes = 12; afSize = 16; afCentre = 20; rot = 29; focus = 40
            default: headerSize = 384; sizes = 12; afSize = 24; afCentre = 28; rot = 37; focus = 48
            }
            guard headerSize >= 64, w.count >= headerSize else { return false }
            h.headerSize = headerSize
            h.jpegSize = nil
            h.wholeWidth = Int(w.be16(b + sizes)); h.wholeHeight = Int(w.be16(b + sizes + 2))
            h.displayWidth = 0; h.displayHeight = 0; h.displayCenterX = 0; h.displayCenterY = 0
            h.rotation = w[b + rot]
            h.focusDriving = w[b + focus] == 1
            h.focusJudgement = 0
            h.afModeState = 0
            let bw = Int(w.be16(b + afSize)), bh = Int(w.be16(b + afSize + 2))
            let cx = Int(w.be16(b + afCentre)), cy = Int(w.be16(b + afCentre + 2))
            if !(bw == 0 && bh == 0 && cx == 0 && cy == 0) { h.boxes.append((0, cx, cy, bw, bh)) }
            return true
        }
    }

    static let blank = NikonLiveViewHeader(
        headerSize: 0, jpegSize: nil, wholeWidth: 0, wholeHeight: 0, displayWidth: 0, displayHeight: 0,
        displayCenterX: 0, displayCenterY: 0, rotation: 0, focusDriving: false, focusJudgement: 0, afModeState: 0,
        boxes: [])
}

/// Serializer for Nikon 0x9428 GetLiveViewImageEx objects (the inverse of `NikonLiveViewParser`).
public enum NikonLiveViewObject {
    /// One AF box in whole-size units: size and centre.
    public struct Box: Sendable, Hashable {
        public var w: UInt16, h: UInt16, cx: UInt16, cy: UInt16
        public init(w: UInt16, h: UInt16, cx: UInt16, cy: UInt16) { self.w = w; self.h = h; self.cx = cx; self.cy = cy }
    }

    /// Appends a 0x9428 object: `headerSize` (1024 ZR, 512 first Z bodies) header + JPEG.
    public static func appendEx(jpeg: some Collection<UInt8>, headerSize: Int = 1024, wholeWidth: UInt16 = 6048,
                                wholeHeight: UInt16 = 3400, jpegWidth: UInt16 = 1024, jpegHeight: UInt16 = 576,
                                boxes: [Box], focusDriving: Bool = false, focusJudgement: UInt8 = 0,
                                afModeState: UInt8 = 0, rotation: UInt8 = 0, to out: inout [UInt8]) {
        precondition(headerSize >= 48 + 8 * boxes.count, "header too small for the boxes")
        var h = [UInt8](repeating: 0, count: headerSize)
        h.setBE16(2, at: 0); h.setBE16(1, at: 2)
        h.setBE32(UInt32(headerSize), at: 8)
        h.setBE32(UInt32(jpeg.count), at: 12)
        h.setBE16(wholeWidth, at: 16); h.setBE16(wholeHeight, at: 18)
        h.setBE16(wholeWidth, at: 20); h.setBE16(wholeHeight, at: 22)
        h.setBE16(wholeWidth / 2, at: 24); h.setBE16(wholeHeight / 2, at: 26)
        h.setBE16(jpegWidth, at: 28); h.setBE16(jpegHeight, at: 30)
        h[41] = focusDriving ? 1 : 0
        h[42] = focusJudgement
        h[43] = afModeState
        h[44] = UInt8(boxes.count)
        for (i, bx) in boxes.enumerated() {
            let p = 48 + 8 * i
            h.setBE16(bx.w, at: p); h.setBE16(bx.h, at: p + 2); h.setBE16(bx.cx, at: p + 4); h.setBE16(bx.cy, at: p + 6)
        }
        if headerSize > 839 { h[839] = rotation }
        out.append(contentsOf: h)
        out.append(contentsOf: jpeg)
    }

    /// Appends a 0x9203 object with the given layout's header (zeros except sizes and the AF box) + JPEG.
    public static func appendLegacy(jpeg: some Collection<UInt8>, layout: NikonLiveViewLayout, wholeWidth: UInt16,
                                    wholeHeight: UInt16, box: Box?, to out: inout [UInt8]) {
        let (hs, sizes, afSize, afCentre): (Int, Int, Int, Int)
        switch layout {
        case .v1(let s): (hs, sizes, afSize, afCentre) = (s, 4, 16, 20)
        case .d800: (hs, sizes, afSize, afCentre) = (384, 12, 16, 20)
        default: (hs, sizes, afSize, afCentre) = (384, 12, 24, 28)
        }
        var h = [UInt8](repeating: 0, count: hs)
        h.setBE16(wholeWidth, at: sizes); h.setBE16(wholeHeight, at: sizes + 2)
        if let bx = box {
            h.setBE16(bx.w, at: afSize); h.setBE16(bx.h, at: afSize + 2)
            h.setBE16(bx.cx, at: afCentre); h.setBE16(bx.cy, at: afCentre + 2)
        }
        out.append(contentsOf: h)
        out.append(contentsOf: jpeg)
    }
}

struct NikonLiveViewFormat: StreamContainerFormat {
    let bufferBound: Int
    let layout: NikonLiveViewLayout
    var header = NikonLiveViewHeader.blank
    var resyncing = false

    init(layout: NikonLiveViewLayout, limits: WireLimits) {
        self.layout = layout
        bufferBound = limits.maxContainer
        header.boxes.reserveCapacity(8)
    }

    @inline(__always) static func soi(_ w: ArraySlice<UInt8>, _ at: Int) -> Bool {
        JPEGScanner.hasSOI(w, at: at)
    }

    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        var use = layout
        if case .auto = layout {
            guard w.count >= 48 else { return .needMore(48) }
            let hdr = Int(w.be32(b + 8))
            if hdr >= 48 && hdr <= 1 << 16 {
                guard w.count >= hdr + 2 else { return .needMore(hdr + 2) }
                if Self.soi(w, b + hdr) { use = .ex }
            }
            if case .auto = use {
                guard w.count >= 386 else { return .needMore(386) }
                if Self.soi(w, b + 384) { use = .d600 } else if Self.soi(w, b + 128) { use = .v1(headerSize: 128) }
                else if Self.soi(w, b + 64) { use = .v1(headerSize: 64) }
                else { return bad(offset, "a Nikon live-view header (0x9428 header size at 8, or FF D8 at 64/128/384)") }
            }
        }
        let minHeader: Int
        switch use {
        case .ex: minHeader = 48
        case .v1(let s): minHeader = s
        default: minHeader = 384
        }
        guard w.count >= minHeader else { return .needMore(minHeader) }
        if case .ex = use {
            let hdr = Int(w.be32(b + 8))
            guard hdr >= 48 else { return bad(offset + 8, "0x9428 header size ≥ 48 at +8") }
            let total = hdr + Int(w.be32(b + 12))
            guard total <= bufferBound else {
                if resyncing { return .skip(1) }
                resyncing = true
                return .damaged(1, WireIssue(offset: offset + 8, error: .sizeOverLimit(
                    field: "nikon-lv object size", declared: total, limit: bufferBound)), frameLost: false)
            }
            guard w.count >= total else { return .needMore(total) }
            guard NikonLiveViewHeader.parse(w, layout: .ex, into: &header) else {
                return bad(offset, "a 0x9428 header")
            }
            guard Self.soi(w, b + hdr) else {
                if resyncing { return .skip(1) }
                return .damaged(total, WireIssue(offset: offset + hdr, error: .noJPEGAtOffset), frameLost: true)
            }
            return emitJPEG(w, offset: offset, at: hdr, regionEnd: total, consumed: total, frame: &frame)
        }
        guard NikonLiveViewHeader.parse(w, layout: use, into: &header) else { return bad(offset, "a 0x9203 header") }
        let hdr = header.headerSize
        guard w.count >= hdr + 2 else { return .needMore(hdr + 2) }
        guard Self.soi(w, b + hdr) else { return bad(offset + hdr, "JPEG SOI FF D8 at +\(hdr)") }
        // 0x9203 carries no JPEG size: the object ends at the EOI.
        do {
            let info = try JPEGScanner.scan(w[(b + hdr)...])
            return emitJPEG(w, offset: offset, at: hdr, regionEnd: hdr + info.length, consumed: hdr + info.length,
                            frame: &frame)
        } catch {
            if case .truncated = error {
                let want = w.count + 4096
                if want <= bufferBound { return .needMore(want) }
            }
            if resyncing { return .skip(1) }
            resyncing = true
            return .damaged(1, WireIssue(offset: offset + hdr, error: .badJPEG(error)), frameLost: true)
        }
    }

    private mutating func emitJPEG(_ w: ArraySlice<UInt8>, offset: Int, at: Int, regionEnd: Int, consumed: Int,
                                   frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(w[(b + at)..<(b + regionEnd)]) } catch {
            if resyncing { return .skip(1) }
            return .damaged(consumed, WireIssue(offset: offset + at, error: .badJPEG(error)), frameLost: true)
        }
        resyncing = false
        frame.reset()
        frame.jpeg = w[(b + at)..<(b + at + info.length)]
        frame.jpegOffset = offset + at
        frame.info = info
        let space = header.coordinateSpace
        let state = header.state
        for bx in header.boxes {
            let r = CameraRect(x: Double(bx.cx) - Double(bx.w) / 2, y: Double(bx.cy) - Double(bx.h) / 2,
                               width: Double(bx.w), height: Double(bx.h))
            frame.af.append(AFArea(camera: r, in: space, imageWidth: info.width, imageHeight: info.height,
                                   kind: header.kind(ofBox: bx.index), state: state))
        }
        return .frame(consumed)
    }

    private mutating func bad(_ offset: Int, _ expected: String) -> FramingStep {
        if resyncing { return .skip(1) }
        resyncing = true
        return .damaged(1, WireIssue(offset: offset, error: .badMagic(expected: expected)), frameLost: false)
    }
}

/// Incremental parser for Nikon live-view objects (`nikon-lv`, ptp.md §2.1), back to back.
///
/// A driver usually feeds one data phase at a time; any chunking gives the same frames. AF boxes
/// are translated from the whole-size space through the display (zoom) area into JPEG pixels.
/// Buffer bound: one object, at most `limits.maxContainer` bytes. `lastHeader` exposes the
/// header of the latest frame (rotation, focus state, boxes in camera units).
public struct NikonLiveViewParser: Sendable {
    var framer: StreamFramer<NikonLiveViewFormat>

    public init(layout: NikonLiveViewLayout = .auto, limits: WireLimits = .default) {
        framer = StreamFramer(format: NikonLiveViewFormat(layout: layout, limits: limits))
    }

    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) { framer.feed(chunk, emit) }
    public mutating func feed(_ chunk: [UInt8], _ emit: (WireEvent) -> Void) { framer.feed(chunk[...], emit) }
    public mutating func finish(_ emit: (WireEvent) -> Void) { framer.finish(emit) }
    public var stats: WireStats { framer.stats }
    /// The header of the most recent object parsed.
    public var lastHeader: NikonLiveViewHeader { framer.format.header }
}
