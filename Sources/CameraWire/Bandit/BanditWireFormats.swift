extension BanditViewfinderReassembler: LiveViewWireParser {
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        ingest(chunk, offset: chunk.startIndex, emit)
    }
}

extension WireFormat {
    /// TomTom Bandit viewfinder datagrams (sync word `55 AA`), read from a pcap.
    public static let banditUDP = WireFormat("bandit-udp", input: .udpDatagrams, confidence: { p in
        p.count >= 7 && p.be16(p.startIndex) == BanditDatagram.sync ? 2 : 0
    }, parser: { BanditViewfinderReassembler(limits: $0) })
}
