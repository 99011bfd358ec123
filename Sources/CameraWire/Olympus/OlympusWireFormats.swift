extension OlympusLiveViewReassembler: LiveViewWireParser {
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        ingest(chunk, offset: chunk.startIndex, emit)
    }
}

extension WireFormat {
    /// Olympus / OM System live view: RTP datagrams (PT 96) whose first packet of each frame carries
    /// the metadata extension, read from a pcap. A first packet is a strong sign; it outranks the
    /// looser datagram checks of other vendors.
    public static let olympusRTP = WireFormat("olympus-rtp", input: .udpDatagrams, confidence: { p in
        OlympusRTP.looksLikeFirstPacket(p) ? 3 : 0
    }, parser: { OlympusLiveViewReassembler(limits: $0) })
}
