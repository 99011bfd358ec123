import JPEGKit
import LiveViewCore

/// A live-view size as `lvqty` spells it: `0640x0480` (4-digit zero-padded width x height).
public struct OlympusLiveViewSize: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public static let qvga = OlympusLiveViewSize(width: 320, height: 240)
    public static let vga = OlympusLiveViewSize(width: 640, height: 480)

    /// Parses `WWWWxHHHH` (or `640x480`); nil unless both are 1…9999.
    public init?(_ text: some StringProtocol) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (1...9999).contains(w), (1...9999).contains(h)
        else { return nil }
        self.init(width: w, height: h)
    }

    /// The `lvqty` text, `0640x0480`.
    public var description: String { Self.pad4(width) + "x" + Self.pad4(height) }

    /// A non-negative number as at least 4 decimal digits (`0412`).
    public static func pad4(_ v: Int) -> String {
        let s = String(max(0, v))
        return s.count >= 4 ? s : String(repeating: "0", count: 4 - s.count) + s
    }
}

/// What `OlympusLiveViewReassembler.ingestWithMetadata(_:offset:_:)` hands out: a frame with the
/// metadata of its header extension, or a problem.
public enum OlympusLiveViewEvent: Sendable {
    case frame(WireFrame, OlympusRTP.Metadata)
    case issue(WireIssue)
}

/// Reassembles Olympus live-view frames from RTP packets (olympus.md §6.1–6.3): concatenates the
/// payloads from the X=1 packet through the M=1 packet (one packet with both is a whole frame).
///
/// A frame is dropped and counted in `stats.droppedFrames` — never emitted torn — when a sequence
/// number is skipped, the timestamp changes inside it, its start packet is missing (its other
/// packets arrive while waiting; counted once per timestamp), its end marker is missing (the next
/// X=1 arrives first), its extension or a TLV is longer than the packet, the bytes do not start
/// `FF D8` / end `FF D9` or cannot be walked, or they disagree with the framesize TLV. A frame
/// whose packets were all lost shows as a jump in the frame number and is counted too (jumps of
/// 2…1000 only, so a restarted stream is not a mass loss). A new SSRC is a new live-view session:
/// the frame-number history starts afresh (a frame in progress is dropped). Packets that are not Olympus RTP at all
/// (short, not version 2, payload type ≠ 96) are dropped with an issue and counted in
/// `droppedPackets`; they do not disturb the frame being assembled (a lost sequence number will).
///
/// `seq` = the frame number (RTP timestamp) extended to 64 bits across wraps; `pts` = nil (the
/// timestamp is a frame count, not a time: drivers use the arrival clock). AF areas: TLV 2 (when
/// its width and height are non-zero; kind `af`, state from the colour) and faces (kind `face`),
/// translated from live-view pixels — of `liveViewSize` when set, else of the JPEG itself
/// (identity) — into the JPEG's pixels. Buffer bound: one frame ≤ `limits.maxContainer`,
/// reused.
public struct OlympusLiveViewReassembler: Sendable {
    let limit: Int
    /// The coordinate space of TLV 2 and the faces, when it differs from the JPEG's size
    /// (nil: the JPEG's own pixels).
    public var liveViewSize: OlympusLiveViewSize?

    private var assembling = false
    private var timestamp: UInt32 = 0
    private var expectedSequence: UInt16 = 0
    private var startOffset = 0
    private var buffer: [UInt8] = []
    private var metadata = OlympusRTP.Metadata()
    private var scratch = OlympusRTP.Metadata()
    /// Timestamp of the last frame delivered or counted as dropped.
    private var accounted: UInt32?
    /// Extension of the frame number across wraps.
    private var lastDelivered: UInt32?
    private var cycles: Int64 = 0
    private var frame = WireFrame.empty

    public private(set) var stats = WireStats()
    /// Packets that were not Olympus live-view RTP (counted, with an issue each).
    public private(set) var droppedPackets = 0
    /// Packets received (any).
    public private(set) var packets = 0
    /// Frames marked as continuous-shooting previews (TLV 200): not live view, not emitted.
    public private(set) var recViewFrames = 0
    /// The SSRC of the last valid packet.
    public private(set) var ssrc: UInt32?

    public init(limits: WireLimits = .default, liveViewSize: OlympusLiveViewSize? = nil) {
        limit = limits.maxContainer
        self.liveViewSize = liveViewSize
        frame.af.reserveCapacity(10)
        metadata.faces.reserveCapacity(8)
        scratch.faces.reserveCapacity(8)
    }

    /// Feeds one UDP payload; `offset` locates it for diagnostics (e.g. its file offset in a pcap).
    public mutating func ingest(_ d: ArraySlice<UInt8>, offset: Int? = nil, _ emit: (WireEvent) -> Void) {
        ingestWithMetadata(d, offset: offset) { event in
            switch event {
            case .frame(let f, _): emit(.frame(f))
            case .issue(let i): emit(.issue(i))
            }
        }
    }

    /// Feeds one UDP payload and reports frames together with their extension's metadata.
    public mutating func ingestWithMetadata(_ d: ArraySlice<UInt8>, offset: Int? = nil,
                                            _ emit: (OlympusLiveViewEvent) -> Void) {
        packets += 1
        let at = offset ?? 0
        let packet: OlympusRTP.Packet
        switch OlympusRTP.parsePacket(d) {
        case .success(let p): packet = p
        case .failure(let e):
            if case .badField = e, d.count >= 12, d[d.startIndex] & 0x10 != 0,
               d[d.startIndex + 1] & 0x7F == OlympusRTP.payloadType {
                // A start packet whose extension runs past the datagram: that frame is lost.
                return badStart(e, d, at: at, emit)
            }
            droppedPackets += 1
            return report(e, at: at, emit)
        }
        let h = packet.header
        if let old = ssrc, old != h.ssrc {
            // A new live-view session (startliveview again): frame numbers start afresh.
            if assembling {
                dropFrame(.badField("SSRC changed from \(old) to \(h.ssrc) inside frame \(timestamp): new live-view session"),
                          at: at + 8, emit)
            }
            accounted = nil
            lastDelivered = nil
            cycles = 0
        }
        ssrc = h.ssrc
        let payload = d[packet.payloadRange]
        if h.hasExtension {
            if assembling {
                dropFrame(.badField("frame \(timestamp): no end-of-frame marker before the next frame started"), at: startOffset, emit)
            }
            countWholeFramesLost(before: h.timestamp)
            if let ext = packet.extensionRange, packet.extensionProfile == OlympusRTP.extensionProfile {
                if let e = OlympusRTP.decodeTLVs(d, ext, into: &scratch) {
                    accounted = h.timestamp
                    stats.droppedFrames += 1
                    return report(e, at: at + (ext.lowerBound - d.startIndex), emit)
                }
                swap(&metadata, &scratch)
            } else {
                // Another profile: its contents are not ours to read (UNCONFIRMED on real bodies).
                metadata.reset()
            }
            if let size = metadata.frameSize, Int(size) > limit {
                accounted = h.timestamp
                stats.droppedFrames += 1
                return report(.sizeOverLimit(field: "olympus framesize", declared: Int(size), limit: limit), at: at, emit)
            }
            assembling = true
            timestamp = h.timestamp
            expectedSequence = h.sequence &+ 1
            startOffset = at
            buffer.removeAll(keepingCapacity: true)
            buffer.append(contentsOf: payload)
            if h.marker { complete(emit) }
            return
        }
        if assembling {
            if h.sequence != expectedSequence {
                // The packet after the gap is skipped: if it begins a frame whose start was lost,
                // that frame is counted by its later packets or by the next frame number's jump.
                stats.skippedBytes += payload.count
                return dropFrame(.datagramLost(expected: Int(expectedSequence), got: Int(h.sequence)), at: at + 2, emit)
            } else if h.timestamp != timestamp {
                stats.skippedBytes += payload.count
                return dropFrame(.badField("timestamp changed from \(timestamp) to \(h.timestamp) inside a frame"),
                                 at: at + 4, emit)
            } else {
                guard buffer.count + payload.count <= limit else {
                    return dropFrame(.sizeOverLimit(field: "olympus frame", declared: buffer.count + payload.count, limit: limit),
                                     at: at, emit)
                }
                buffer.append(contentsOf: payload)
                expectedSequence = h.sequence &+ 1
                if h.marker { complete(emit) }
                return
            }
        }
        // Waiting for a start: a packet of a frame whose start we never saw (counted once, when its
        // frame number is newer than the last one accounted for; older ones are leftovers).
        stats.skippedBytes += payload.count
        if isNewer(h.timestamp) {
            accounted = h.timestamp
            stats.droppedFrames += 1
            report(.badField("frame \(h.timestamp): start packet (X=1) missing, frame dropped"), at: at, emit)
        }
    }

    /// End of input: a frame still being assembled is dropped and reported.
    public mutating func finish(_ emit: (WireEvent) -> Void) {
        guard assembling else { return }
        assembling = false
        accounted = timestamp
        stats.droppedFrames += 1
        report(.truncated(needed: Int(metadata.frameSize ?? 0), available: buffer.count), at: startOffset) { ev in
            if case .issue(let i) = ev { emit(.issue(i)) }
        }
    }

    /// Forgets a frame in progress and the frame-number history (a new live-view session).
    public mutating func reset() {
        assembling = false
        accounted = nil
        lastDelivered = nil
        cycles = 0
        buffer.removeAll(keepingCapacity: true)
    }

    // MARK: Internals

    /// True when `ts` comes after the last accounted frame number (serial-number arithmetic).
    private func isNewer(_ ts: UInt32) -> Bool {
        guard let last = accounted else { return true }
        let d = ts &- last
        return d != 0 && d < 1 << 31
    }

    /// Frames between the last accounted one and a new start whose packets all went missing.
    private mutating func countWholeFramesLost(before ts: UInt32) {
        guard let last = accounted else { return }
        let jump = ts &- last
        if jump >= 2 && jump <= 1000 { stats.droppedFrames += Int(jump - 1) }
    }

    private mutating func report(_ e: WireError, at offset: Int, _ emit: (OlympusLiveViewEvent) -> Void) {
        stats.issues += 1
        emit(.issue(WireIssue(offset: offset, error: e)))
    }

    private mutating func dropFrame(_ e: WireError, at offset: Int, _ emit: (OlympusLiveViewEvent) -> Void) {
        assembling = false
        accounted = timestamp
        stats.droppedFrames += 1
        report(e, at: offset, emit)
    }

    /// A start packet that cannot be read: a frame in progress has lost its end, this one is lost.
    private mutating func badStart(_ e: WireError, _ d: ArraySlice<UInt8>, at: Int, _ emit: (OlympusLiveViewEvent) -> Void) {
        if assembling {
            dropFrame(.badField("frame \(timestamp): no end-of-frame marker before the next frame started"), at: startOffset, emit)
        }
        let ts = d.be32(d.startIndex + 4)
        ssrc = d.be32(d.startIndex + 8)
        countWholeFramesLost(before: ts)
        accounted = ts
        stats.droppedFrames += 1
        report(e, at: at, emit)
    }

    private mutating func complete(_ emit: (OlympusLiveViewEvent) -> Void) {
        assembling = false
        accounted = timestamp
        if metadata.frameSize == 0 && buffer.isEmpty { return }  // extension only, no picture
        guard JPEGScanner.hasSOI(buffer, at: 0) else {
            stats.droppedFrames += 1
            return report(.noJPEGAtOffset, at: startOffset, emit)
        }
        guard buffer.count >= 4, buffer[buffer.count - 2] == 0xFF, buffer[buffer.count - 1] == 0xD9 else {
            stats.droppedFrames += 1
            return report(.badField("frame \(timestamp) does not end FF D9: frame dropped"), at: startOffset, emit)
        }
        if let size = metadata.frameSize, Int(size) != buffer.count {
            stats.droppedFrames += 1
            return report(.badField("framesize \(size) ≠ \(buffer.count) bytes received: frame dropped"), at: startOffset, emit)
        }
        let info: JPEGInfo
        do { info = try JPEGScanner.scan(buffer[...]) } catch {
            stats.droppedFrames += 1
            return report(.badJPEG(error), at: startOffset, emit)
        }
        if metadata.continuousRecView != nil {
            recViewFrames += 1
            return
        }
        if let last = lastDelivered, timestamp < last, last - timestamp > 1 << 31 { cycles += 1 }
        lastDelivered = timestamp
        frame.reset()
        frame.jpeg = buffer[0..<info.length]
        frame.info = info
        frame.seq = cycles << 32 | Int64(timestamp)
        let spaceW = Double(liveViewSize?.width ?? info.width), spaceH = Double(liveViewSize?.height ?? info.height)
        let space = AFCoordinateSpace(width: spaceW, height: spaceH)
        if let a = metadata.afFrame, a.width > 0, a.height > 0 {
            let r = CameraRect(x: Double(a.x), y: Double(a.y), width: Double(a.width), height: Double(a.height))
            frame.af.append(AFArea(camera: r, in: space, imageWidth: info.width, imageHeight: info.height,
                                   kind: .af, state: a.state))
        }
        for f in metadata.faces {
            let r = CameraRect(x: Double(f.x), y: Double(f.y), width: Double(f.width), height: Double(f.height))
            frame.af.append(AFArea(camera: r, in: space, imageWidth: info.width, imageHeight: info.height,
                                   kind: .face, state: .normal))
        }
        stats.frames += 1
        emit(.frame(frame, metadata))
        frame.jpeg = []  // a slice kept here would make the next frame's write into `buffer` copy it
    }
}
