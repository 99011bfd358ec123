import JPEGKit
public import LiveViewCore

/// One v1.0 frame-information record of the Sony Camera Remote API liveview stream
/// (sony.md §1.2): corners on 0‥10000 per axis, category, status, additional status.
public struct SonyRemoteFrameRecord: Sendable, Hashable {
    public var x1: UInt16, y1: UInt16, x2: UInt16, y2: UInt16
    public var category: UInt8
    public var status: UInt8
    public var additionalStatus: UInt8

    public init(x1: UInt16, y1: UInt16, x2: UInt16, y2: UInt16, category: UInt8, status: UInt8,
                additionalStatus: UInt8 = 0) {
        self.x1 = x1; self.y1 = y1; self.x2 = x2; self.y2 = y2
        self.category = category; self.status = status; self.additionalStatus = additionalStatus
    }

    /// The camera rectangle on the 0‥10000 grid (width may be negative if the camera sends X2 < X1).
    public var cameraRect: CameraRect {
        CameraRect(x: Double(x1), y: Double(y1), width: Double(Int(x2) - Int(x1)), height: Double(Int(y2) - Int(y1)))
    }

    /// category: 0 invalid, 1 contrast-af, 2 phase-af, 4 face, 5 tracking, else unknown.
    public var kind: AFKind {
        switch category {
        case 0: return .invalid
        case 1: return .contrastAF
        case 2: return .phaseAF
        case 4: return .face
        case 5: return .tracking
        default: return .unknown
        }
    }

    /// status: 0 invalid, 1 normal, 2 main, 3 sub, 4 focused, else unknown.
    public var state: AFState {
        switch status {
        case 0: return .invalid
        case 1: return .normal
        case 2: return .main
        case 3: return .sub
        case 4: return .focused
        default: return .unknown
        }
    }
}

/// Serializer for Camera Remote API liveview packets (sony.md §1.2, big-endian): 8-byte common
/// header + 128-byte payload header + payload + padding. The inverse of `SonyRemoteParser`.
public enum SonyRemotePacket {
    public static let commonHeaderSize = 8
    public static let payloadHeaderSize = 128
    public static let headerSize = 136
    public static let startCode: [UInt8] = [0x24, 0x35, 0x68, 0x79]

    /// Appends a 0x01 (liveview JPEG) packet.
    public static func appendJPEG(_ jpeg: some Collection<UInt8>, seq: UInt16, timestampMs: UInt32,
                                  padding: some Collection<UInt8> = [], to out: inout [UInt8]) {
        appendHeader(type: 0x01, seq: seq, timestamp: timestampMs, size: jpeg.count, padding: padding.count, to: &out)
        out.putZeros(128 - 8)
        out.append(contentsOf: jpeg)
        out.append(contentsOf: padding)
    }

    /// Appends a 0x02 (frame information) packet with `records` (16-byte v1.0 records).
    public static func appendFrameInfo(_ records: [SonyRemoteFrameRecord], seq: UInt16, timestamp: UInt32,
                                       version: (UInt8, UInt8) = (1, 0),
                                       padding: some Collection<UInt8> = [], to out: inout [UInt8]) {
        appendHeader(type: 0x02, seq: seq, timestamp: timestamp, size: records.count * 16, padding: padding.count,
                     to: &out)
        out.append(version.0)
        out.append(version.1)
        out.putBE16(UInt16(truncatingIfNeeded: records.count))
        out.putBE16(16)
        out.putZeros(114)
        for r in records {
            out.putBE16(r.x1); out.putBE16(r.y1); out.putBE16(r.x2); out.putBE16(r.y2)
            out.append(r.category); out.append(r.status); out.append(r.additionalStatus)
            out.putZeros(5)
        }
        out.append(contentsOf: padding)
    }

    /// Appends a packet of any other type with an opaque payload (zeroed payload header).
    public static func appendOther(type: UInt8, payload: some Collection<UInt8>, seq: UInt16, timestamp: UInt32,
                                   to out: inout [UInt8]) {
        appendHeader(type: type, seq: seq, timestamp: timestamp, size: payload.count, padding: 0, to: &out)
        out.putZeros(120)
        out.append(contentsOf: payload)
    }

    static func appendHeader(type: UInt8, seq: UInt16, timestamp: UInt32, size: Int, padding: Int,
                             to out: inout [UInt8]) {
        precondition(size < 1 << 24 && padding < 256, "Sony packet size fields overflow")
        out.append(0xFF)
        out.append(type)
        out.putBE16(seq)
        out.putBE32(timestamp)
        out.append(contentsOf: startCode)
        out.putBE24(UInt32(size))
        out.append(UInt8(padding))
    }
}

struct SonyRemoteFormat: StreamContainerFormat {
    let bufferBound: Int
    /// v1.0 records of the latest 0x02 packet, with its sequence number and timestamp.
    var records: [SonyRemoteFrameRecord] = []
    var recordsKey: (seq: UInt16, ts: UInt32)?
    var resyncing = false

    // Which JPEG a 0x02 packet describes is not written down (sony.md §1.3: order, cadence and
    // whether both types share one counter are UNCONFIRMED). A 0x02 describes the JPEG with its
    // sequence number or its timestamp, whichever order they come in; a camera whose keys never
    // agree, or that sends frame information only now and then, gets the sticky reading: the
    // latest records for every JPEG.
    /// Some 0x02's key equalled a JPEG's: the keys are meant to match.
    var keysMatch = false
    /// 0x02 packets and JPEGs over the recent window (halved every 32 JPEGs).
    var recentInfos = 0
    var recentJPEGs = 0
    /// A JPEG waiting for the 0x02 that follows it (its bytes are in `heldBytes`).
    struct Held {
        var seq: UInt16
        var ts: UInt32
        var info: JPEGInfo
        var offset: Int
    }
    var held: Held?
    /// The held JPEG's bytes. The framer lets go of an emitted frame's slice before the next step,
    /// so one reused buffer is never copied on write.
    var heldBytes: [UInt8] = []
    /// Held JPEGs that went out without their frame information.
    var afUnmatched = 0
    /// The latest JPEG's keys (to notice frame information that follows its JPEG).
    var lastJPEGKey: (seq: UInt16, ts: UInt32)?

    init(limits: WireLimits) {
        bufferBound = min(limits.maxContainer, 136 + 0xFF_FFFF + 255)
        records.reserveCapacity(16)
    }

    /// Frame information arrives with matching keys for at least two thirds of the recent JPEGs:
    /// worth waiting for. The JPEG being looked at is counted already, its information maybe not
    /// yet. (With "nearly every JPEG", 90 %, a camera that left out one in ten fell in and out of
    /// the sticky reading, which gave JPEGs whose information followed them the previous box: 175
    /// of 217 boxes in place against the independent camera, random order.)
    var infoPerFrame: Bool { keysMatch && recentJPEGs >= 2 && recentInfos * 3 >= (recentJPEGs - 1) * 2 }

    func matches(seq: UInt16, ts: UInt32) -> Bool {
        guard let k = recordsKey else { return false }
        return k.seq == seq || k.ts == ts
    }

    /// The current records as the frame's AF areas, in pixels of a `width`×`height` JPEG.
    func appendAreas(to frame: inout WireFrame, width: Int, height: Int) {
        for r in records {
            frame.af.append(AFArea(camera: r.cameraRect, in: .sonyRemote, imageWidth: width, imageHeight: height,
                                   kind: r.kind, state: r.state))
        }
    }

    /// Writes the held JPEG into `frame` with the current records: its own (`matched`) or, when its
    /// information never came, the most recent earlier ones (sticky: the overlay never blinks off
    /// for a frame; counted in `afUnmatched`).
    mutating func release(into frame: inout WireFrame, matched: Bool) -> Bool {
        guard let h = held else { return false }
        held = nil
        frame.reset()
        frame.jpeg = heldBytes[...]
        frame.jpegOffset = h.offset
        frame.info = h.info
        frame.seq = Int64(h.seq)
        frame.pts = Int64(h.ts) * 1_000_000
        if !matched { afUnmatched += 1 }
        appendAreas(to: &frame, width: h.info.width, height: h.info.height)
        return true
    }

    mutating func flush(frame: inout WireFrame) -> Bool { release(into: &frame, matched: false) }

    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep {
        let b = w.startIndex
        if w[b] != 0xFF {
            var k = b + 1
            while k < w.endIndex && w[k] != 0xFF { k += 1 }
            return lose(k - b, offset, "start byte FF")
        }
        guard w.count >= 16 else { return .needMore(16) }
        guard w[b + 8] == 0x24, w[b + 9] == 0x35, w[b + 10] == 0x68, w[b + 11] == 0x79 else {
            return lose(1, offset, "payload-header start code 24 35 68 79 at +8")
        }
        let size = Int(w.be24(b + 12))
        let padding = Int(w[b + 15])
        let total = 136 + size + padding
        guard total <= bufferBound else {
            resyncing = true
            return .damaged(1, WireIssue(offset: offset + 12, error: .sizeOverLimit(
                field: "sony-remote payload size", declared: size, limit: bufferBound - 136 - 255)), frameLost: false)
        }
        guard w.count >= total else { return .needMore(total) }
        resyncing = false
        let type = w[b + 1]
        let seq = w.be16(b + 2)
        let ts = w.be32(b + 4)
        switch type {
        case 0x01:
            // A JPEG still waiting goes first, without frame information (none came for it).
            if held != nil, release(into: &frame, matched: false) { return .heldFrame }
            let region = w[(b + 136)..<(b + 136 + size)]
            let info: JPEGInfo
            do { info = try JPEGScanner.scan(region) } catch {
                return .damaged(total, WireIssue(offset: offset + 136, error: .badJPEG(error)), frameLost: true)
            }
            recentJPEGs += 1
            if recentJPEGs >= 32 {
                recentJPEGs /= 2
                recentInfos /= 2
            }
            let matched = matches(seq: seq, ts: ts)
            if matched { keysMatch = true }
            lastJPEGKey = (seq, ts)
            if !matched && infoPerFrame {
                // Its frame information comes after it: keep the JPEG until then (or the next JPEG).
                heldBytes.removeAll(keepingCapacity: true)
                heldBytes.append(contentsOf: w[(b + 136)..<(b + 136 + info.length)])
                held = Held(seq: seq, ts: ts, info: info, offset: offset + 136)
                return .skip(total)
            }
            frame.reset()
            frame.jpeg = w[(b + 136)..<(b + 136 + info.length)]
            frame.jpegOffset = offset + 136
            frame.info = info
            frame.seq = Int64(seq)
            frame.pts = Int64(ts) * 1_000_000
            // Its own records, or the sticky reading: the most recent earlier ones.
            if !matched && keysMatch { afUnmatched += 1 }
            appendAreas(to: &frame, width: info.width, height: info.height)
            return .frame(total)
        case 0x02:
            if w[b + 16] == 1 && w[b + 17] == 0 {
                // A held JPEG this does not describe goes first, with the records from before this
                // packet (its own never came): the packet is stepped again once it is out.
                if let h = held, h.seq != seq && h.ts != ts, release(into: &frame, matched: false) { return .heldFrame }
                let count = Int(w.be16(b + 18))
                let recSize = Int(w.be16(b + 20))
                records.removeAll(keepingCapacity: true)
                recordsKey = (seq, ts)
                recentInfos += 1
                if recSize >= 11 {
                    let n = min(count, size / recSize)
                    var p = b + 136
                    for _ in 0..<n {
                        records.append(SonyRemoteFrameRecord(
                            x1: w.be16(p), y1: w.be16(p + 2), x2: w.be16(p + 4), y2: w.be16(p + 6),
                            category: w[p + 8], status: w[p + 9], additionalStatus: w[p + 10]))
                        p += recSize
                    }
                }
                if let h = held, h.seq == seq || h.ts == ts {
                    keysMatch = true
                    // The JPEG this describes was waiting: out it goes with its areas; the packet
                    // is consumed by the `.frame` step.
                    if release(into: &frame, matched: true) { return .frame(total) }
                }
                if held == nil, let last = lastJPEGKey, last.seq == seq || last.ts == ts {
                    keysMatch = true  // information after its JPEG: from now on JPEGs wait for it
                }
            }
            return .skip(total)
        default:
            return .skip(total)
        }
    }

    private mutating func lose(_ n: Int, _ offset: Int, _ expected: String) -> FramingStep {
        if resyncing { return .skip(n) }
        resyncing = true
        return .damaged(n, WireIssue(offset: offset, error: .badMagic(expected: expected)), frameLost: false)
    }
}

/// Incremental parser for the Sony Camera Remote API liveview body (`sony-remote`).
///
/// Feed any chunking of the HTTP body; frames come out identical. A v1.0 frame-information packet
/// describes the JPEG with its sequence number or timestamp, before or after it: once the camera
/// is seen to send one for most JPEGs (two thirds) with matching keys, a JPEG whose information has not come yet waits
/// for it until the next JPEG (then goes out without AF, counted in `afUnmatched`). A camera whose
/// keys never match, or that sends information only now and then, gets the latest records on
/// every JPEG (sticky; zero records clear them).
/// Resyncs on `FF` + start code `24 35 68 79` at +8 after damage. Buffer bound: one packet,
/// at most `min(limits.maxContainer, 136 + 2²⁴ − 1 + 255)` bytes.
public struct SonyRemoteParser: Sendable {
    var framer: StreamFramer<SonyRemoteFormat>

    public init(limits: WireLimits = .default) {
        framer = StreamFramer(format: SonyRemoteFormat(limits: limits))
    }

    /// Feeds the next bytes of the stream; `emit` gets frames and issues in stream order.
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) { framer.feed(chunk, emit) }
    public mutating func feed(_ chunk: [UInt8], _ emit: (WireEvent) -> Void) { framer.feed(chunk[...], emit) }
    /// End of stream: reports an incomplete trailing packet.
    public mutating func finish(_ emit: (WireEvent) -> Void) { framer.finish(emit) }
    public var stats: WireStats {
        var s = framer.stats
        s.afUnmatched = framer.format.afUnmatched
        return s
    }
}
