/// Cuts one JPEG into the RTP packets an Olympus camera sends (olympus.md §6): the first packet has
/// X=1 and the header extension, the last M=1 (a frame that fits one packet has both), the
/// timestamp is the frame number, the sequence number counts packets and wraps. Used by the
/// emulator and the tests.
public struct OlympusRTPPacketizer: Sendable {
    /// JPEG bytes per packet by default (the emulator's choice; real chunk sizes are UNCONFIRMED).
    public static let defaultChunk = 1400

    public var ssrc: UInt32
    /// Sequence number of the next packet.
    public var sequence: UInt16
    /// JPEG bytes per packet (≥ 1).
    public var chunk: Int

    public init(ssrc: UInt32, firstSequence: UInt16 = 0, chunk: Int = OlympusRTPPacketizer.defaultChunk) {
        self.ssrc = ssrc
        self.sequence = firstSequence
        self.chunk = max(1, chunk)
    }

    /// All packets of one frame, each a separate datagram. `metadata.frameSize` is filled with the
    /// JPEG's length when nil (set it to send a deliberately wrong one).
    public mutating func packets(jpeg: [UInt8], frameNumber: UInt32, metadata: OlympusRTP.Metadata) -> [[UInt8]] {
        var m = metadata
        if m.frameSize == nil { m.frameSize = UInt32(truncatingIfNeeded: jpeg.count) }
        var out: [[UInt8]] = []
        out.reserveCapacity(jpeg.count / chunk + 1)
        var i = 0
        repeat {
            let first = i == 0
            let j = min(i + chunk, jpeg.count)
            let last = j == jpeg.count
            var d: [UInt8] = []
            d.reserveCapacity(OlympusRTP.fixedHeaderSize + (first ? 256 : 0) + (j - i))
            OlympusRTP.appendHeader(OlympusRTP.Header(marker: last, hasExtension: first, sequence: sequence,
                                                      timestamp: frameNumber, ssrc: ssrc), to: &d)
            if first { OlympusRTP.appendExtension(m, to: &d) }
            d += jpeg[i..<j]
            out.append(d)
            sequence &+= 1
            i = j
        } while i < jpeg.count
        return out
    }
}
