import JPEGKit

extension PanasonicLiveViewParser: LiveViewWireParser {
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        ingest(chunk, offset: chunk.startIndex, emit)
    }
    /// Every datagram is a whole frame: nothing is pending at the end.
    public mutating func finish(_ emit: (WireEvent) -> Void) {}
}

extension WireFormat {
    /// Panasonic LUMIX live-view datagrams (header, then the JPEG at 32 + the u16 at 30), read from a pcap.
    public static let panasonicUDP = WireFormat("panasonic-udp", input: .udpDatagrams, confidence: { p in
        guard p.count >= 34 else { return 0 }
        let js = p.startIndex + 32 + Int(p.be16(p.startIndex + 30))
        return JPEGScanner.hasSOI(p, at: js) ? 1 : 0
    }, parser: { _ in PanasonicLiveViewParser() })
}
