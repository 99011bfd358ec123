import JPEGKit
/// TomTom Bandit viewfinder datagrams (bandit.md §3.2, big-endian): 7-byte header
/// {u16 sync 0x55AA, u8 type (0 frame-start, 1 frame-data), u16 packet_number, u16 payload_length},
/// then the payload. A frame-start payload is {u32 jpg_size, float32 pts seconds}.
public enum BanditDatagram {
    public static let sync: UInt16 = 0x55AA
    public static let headerSize = 7
    /// JPEG bytes per data datagram the emulator uses by default (1024-byte datagrams).
    public static let defaultChunk = 1017

    /// Appends a frame-start datagram.
    public static func appendFrameStart(packetNumber: UInt16, jpegSize: Int, ptsSeconds: Float, to out: inout [UInt8]) {
        out.putBE16(sync); out.append(0); out.putBE16(packetNumber); out.putBE16(8)
        out.putBE32(UInt32(jpegSize))
        out.putBE32(ptsSeconds.bitPattern)
    }

    /// Appends a frame-data datagram carrying `payload`.
    public static func appendFrameData(packetNumber: UInt16, payload: some Collection<UInt8>, to out: inout [UInt8]) {
        precondition(payload.count <= 0xFFFF, "Bandit payload too large")
        out.putBE16(sync); out.append(1); out.putBE16(packetNumber); out.putBE16(UInt16(payload.count))
        out.append(contentsOf: payload)
    }

    /// All datagrams of one frame, numbered from `firstPacketNumber` (wrapping), each a separate array.
    public static func frame(jpeg: [UInt8], firstPacketNumber: UInt16, ptsSeconds: Float,
                             chunk: Int = defaultChunk) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var d: [UInt8] = []
        appendFrameStart(packetNumber: firstPacketNumber, jpegSize: jpeg.count, ptsSeconds: ptsSeconds, to: &d)
        out.append(d)
        var n = firstPacketNumber
        var i = 0
        while i < jpeg.count {
            n &+= 1
            d = []
            appendFrameData(packetNumber: n, payload: jpeg[i..<min(i + chunk, jpeg.count)], to: &d)
            out.append(d)
            i += chunk
        }
        return out
    }
}

/// Reassembles Bandit viewfinder frames from datagrams exactly as bandit.md §3.3 describes:
/// malformed datagrams are dropped; a frame-start begins a frame (aborting one in progress);
/// data datagrams must be numbered previous + 1 (mod 65536) or the frame is abandoned (counted
/// in `stats.droppedFrames`, never emitted); a frame completes when `jpg_size` bytes arrived.
///
/// `pts` = round(float32 seconds × 10⁹) ns, `seq` = packet number of the frame-start datagram,
/// `jpegOffset` nil. Buffer bound: one JPEG, `jpg_size` ≤ `limits.maxContainer` (larger is an
/// error and the frame is skipped); the assembly buffer is reused.
public struct BanditViewfinderReassembler: Sendable {
    let limit: Int
    var waiting = true
    var expected: UInt16 = 0
    var need = 0
    var startNumber: UInt16 = 0
    var startOffset = 0
    var pts: Int64 = 0
    var buffer: [UInt8] = []
    var frame = WireFrame.empty
    public private(set) var stats = WireStats()

    public init(limits: WireLimits = .default) {
        limit = limits.maxContainer
    }

    private mutating func report(_ e: WireError, at offset: Int, lost: Bool, _ emit: (WireEvent) -> Void) {
        stats.issues += 1
        if lost { stats.droppedFrames += 1 }
        emit(.issue(WireIssue(offset: offset, error: e)))
    }

    /// Feeds one UDP payload. `offset` locates it for diagnostics (e.g. its file offset in a pcap).
    public mutating func ingest(_ d: ArraySlice<UInt8>, offset: Int = 0, _ emit: (WireEvent) -> Void) {
        let b = d.startIndex
        guard d.count >= 7, d.be16(b) == BanditDatagram.sync else {
            return report(.badMagic(expected: "a Bandit datagram (≥ 7 bytes, sync 55 AA)"), at: offset, lost: false, emit)
        }
        let type = d[b + 2], number = d.be16(b + 3), len = Int(d.be16(b + 5))
        guard d.count == 7 + len else {
            return report(.badField("datagram length \(d.count) ≠ 7 + payload_length \(len)"), at: offset + 5,
                          lost: false, emit)
        }
        switch type {
        case 0:
            guard len >= 8 else {
                return report(.badField("frame-start payload_length \(len) < 8"), at: offset + 5, lost: false, emit)
            }
            if !waiting {
                report(.badField("frame-start while a frame was incomplete: frame \(startNumber) dropped"),
                       at: offset, lost: true, emit)
            }
            let size = Int(d.be32(b + 7))
            guard size <= limit else {
                waiting = true
                return report(.sizeOverLimit(field: "bandit jpg_size", declared: size, limit: limit), at: offset + 7,
                              lost: true, emit)
            }
            let seconds = Float(bitPattern: d.be32(b + 11))
            let ns = Double(seconds) * 1e9
            pts = ns.isFinite && abs(ns) < 9e18 ? Int64(ns.rounded()) : 0
            need = size
            startNumber = number
            startOffset = offset
            expected = number &+ 1
            buffer.removeAll(keepingCapacity: true)
            waiting = false
            if need == 0 { complete(emit) }
        case 1:
            guard !waiting else { return }
            guard number == expected else {
                waiting = true
                return report(.datagramLost(expected: Int(expected), got: Int(number)), at: offset + 3, lost: true, emit)
            }
            expected &+= 1
            buffer.append(contentsOf: d[(b + 7)...])
            if buffer.count >= need { complete(emit) }
        default:
            report(.badField("unknown message_type \(type)"), at: offset + 2, lost: false, emit)
        }
    }

    private mutating func complete(_ emit: (WireEvent) -> Void) {
        waiting = true
        let region = buffer[0..<need]
        guard JPEGScanner.hasSOI(region, at: region.startIndex) else {
            return report(.noJPEGAtOffset, at: startOffset, lost: true, emit)
        }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(region) } catch {
            return report(.badJPEG(error), at: startOffset, lost: true, emit)
        }
        frame.reset()
        frame.jpeg = buffer[0..<info.length]
        frame.info = info
        frame.pts = pts
        frame.seq = Int64(startNumber)
        stats.frames += 1
        emit(.frame(frame))
        frame.jpeg = []  // a slice kept here would make the next frame's write into `buffer` copy it
    }

    /// End of input: a frame still being assembled is dropped and reported.
    public mutating func finish(_ emit: (WireEvent) -> Void) {
        if !waiting {
            waiting = true
            report(.truncated(needed: need, available: buffer.count), at: startOffset, lost: true, emit)
        }
    }
}
