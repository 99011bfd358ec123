import JPEGKit
public import LiveViewCore

/// Panasonic LUMIX live-view datagrams (panasonic.md §2.2–2.3, big-endian): 32-byte basic header
/// (u16 totalSize, u16 version, i32 seqNo, …, i32 pts at 18, u16 N at 30), N-byte extended header,
/// then the whole JPEG at 32 + N, ending the datagram.
public enum PanasonicDatagram {
    /// One AF/overlay rectangle on the 0..1000 grid.
    public struct Box: Sendable, Hashable {
        public var x1: UInt16, y1: UInt16, x2: UInt16, y2: UInt16
        public var type: UInt16
        public init(x1: UInt16, y1: UInt16, x2: UInt16, y2: UInt16, type: UInt16) {
            self.x1 = x1; self.y1 = y1; self.x2 = x2; self.y2 = y2; self.type = type
        }
        public var cameraRect: CameraRect {
            CameraRect(x: Double(x1), y: Double(y1), width: Double(Int(x2) - Int(x1)), height: Double(Int(y2) - Int(y1)))
        }
    }

    /// Box type → kind/state (conformance README table).
    public static func kindState(_ t: UInt16) -> (AFKind, AFState) {
        switch t {
        case 0x0001: return (.af, .selected)
        case 0x0002: return (.face, .main)
        case 0xFF01: return (.face, .sub)
        case 0xFF09: return (.eye, .normal)
        case 0x0003: return (.tracking, .locked)
        case 0xFF03: return (.tracking, .unlocked)
        case 0x0005...0x0008: return (.mfAssist, .normal)
        case 0xFF02: return (.box, .normal)
        case 0xFF04: return (.cross, .normal)
        default: return (.unknown, .unknown)
        }
    }

    /// Ex-header types whose AF list starts at byte 47/48.
    public static func hasBoxes(exType: UInt16) -> Bool { exType == 1 || exType == 5 || exType == 6 || exType == 8 }

    /// Appends one datagram: basic header, an ex header of type `exType` with `boxes` (12-byte entries,
    /// byte 46 = 0xFF, byte 42 = orientation 1) padded to `exHeaderSize` (≥ 16 + 12·boxes), then the JPEG.
    public static func append(jpeg: some Collection<UInt8>, seq: Int32, pts: Int32 = 0, exType: UInt16 = 1,
                              boxes: [Box] = [], exHeaderSize: Int? = nil, to out: inout [UInt8]) {
        let n = max(exHeaderSize ?? 16 + 12 * boxes.count, 16 + 12 * boxes.count)
        let total = 32 + n + jpeg.count
        out.putBE16(UInt16(truncatingIfNeeded: total))
        out.putBE16(1)
        out.putBE32(UInt32(bitPattern: seq))
        out.putZeros(10)
        out.putBE32(UInt32(bitPattern: pts))
        out.putZeros(8)
        out.putBE16(UInt16(n))
        var ex = [UInt8](repeating: 0, count: n)
        ex.setBE16(exType, at: 0)
        ex[42 - 32] = 1
        ex[46 - 32] = 0xFF
        ex[47 - 32] = UInt8(boxes.count)
        for (i, bx) in boxes.enumerated() {
            let p = 16 + 12 * i
            ex.setBE16(bx.x1, at: p); ex.setBE16(bx.y1, at: p + 2); ex.setBE16(bx.x2, at: p + 4)
            ex.setBE16(bx.y2, at: p + 6); ex.setBE16(bx.type, at: p + 10)
        }
        out += ex
        out.append(contentsOf: jpeg)
    }
}

/// Parses Panasonic live-view datagrams (one whole frame each). Datagrams failing the checks
/// (≥ 32 bytes, JPEG at 32 + N inside the datagram starting `FF D8` and walkable) yield an issue
/// and no frame. `seq` = seqNo, `pts` = nil (units UNCONFIRMED). Nothing is buffered: frames are
/// slices of the datagram.
public struct PanasonicLiveViewParser: Sendable {
    var frame = WireFrame.empty
    public private(set) var stats = WireStats()

    public init() {
        frame.af.reserveCapacity(8)
    }

    /// Feeds one UDP payload; `offset` is its absolute (file) offset, or nil when unknown
    /// (then `jpegOffset` is nil too).
    public mutating func ingest(_ d: ArraySlice<UInt8>, offset: Int?, _ emit: (WireEvent) -> Void) {
        let b = d.startIndex
        let at = offset ?? 0
        guard d.count >= 34 else { return fail(.truncated(needed: 34, available: d.count), at, emit) }
        let n = Int(d.be16(b + 30))
        let js = 32 + n
        guard JPEGScanner.hasSOI(d, at: b + js) else {
            return fail(.noJPEGAtOffset, at + min(js, d.count), emit)
        }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(d[(b + js)...]) } catch {
            return fail(.badJPEG(error), at + js, emit)
        }
        frame.reset()
        frame.jpeg = d[(b + js)..<(b + js + info.length)]
        frame.jpegOffset = offset.map { $0 + js }
        frame.info = info
        frame.seq = Int64(Int32(bitPattern: d.be32(b + 4)))
        if n >= 16 && PanasonicDatagram.hasBoxes(exType: d.be16(b + 32)) {
            let count = Int(d[b + 47])
            let size = d[b + 46] == 0xFF ? 12 : 16
            let fit = (js - 48) / size
            for i in 0..<min(count, max(fit, 0)) {
                let p = b + 48 + size * i
                let box = PanasonicDatagram.Box(x1: d.be16(p), y1: d.be16(p + 2), x2: d.be16(p + 4), y2: d.be16(p + 6),
                                                type: d.be16(p + 10))
                let (k, s) = PanasonicDatagram.kindState(box.type)
                frame.af.append(AFArea(camera: box.cameraRect, in: .panasonic, imageWidth: info.width,
                                       imageHeight: info.height, kind: k, state: s))
            }
        }
        stats.frames += 1
        emit(.frame(frame))
        frame.jpeg = []  // do not keep the caller's datagram buffer referenced (its reuse would copy it)
    }

    private mutating func fail(_ e: WireError, _ at: Int, _ emit: (WireEvent) -> Void) {
        stats.issues += 1
        stats.droppedFrames += 1
        emit(.issue(WireIssue(offset: at, error: e)))
    }
}
