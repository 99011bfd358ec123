import JPEGKit
/// The live-view wire formats `livegate inspect --format` accepts.
public enum WireFormat: String, CaseIterable, Sendable {
    case sonyRemote = "sony-remote"
    case sonyPTP = "sony-ptp"
    case nikonLV = "nikon-lv"
    case canonEVF = "canon-evf"
    case fujiLV = "fuji-lv"
    case banditUDP = "bandit-udp"
    case panasonicUDP = "panasonic-udp"

    /// Whether the input is a classic libpcap file of UDP datagrams (else a byte stream / object).
    public var isPcap: Bool { self == .banditUDP || self == .panasonicUDP }

    /// Guesses the format from the first bytes (for `--format auto`); nil when nothing fits.
    /// Checks, in order: pcap magic (then the first UDP payload: `55 AA` → bandit, else panasonic),
    /// sony-remote (`FF` + `24 35 68 79` at 8), HTTP chunk line (sony-ptp), Nikon 0x9428 header,
    /// Canon JPEG record, Fuji frame, Sony dataset.
    public static func guess(_ bytes: [UInt8]) -> WireFormat? {
        let w = bytes[...]
        if var r = try? PcapReader(bytes) {
            var tried = 0
            while tried < 64, let rec = try? r.next() {
                tried += 1
                guard let u = PacketDecoder.udp(linkType: r.linkType, frame: rec.data) else { continue }
                let p = u.payload
                if p.count >= 7 && p.be16(p.startIndex) == BanditDatagram.sync { return .banditUDP }
                if p.count >= 34 {
                    let js = p.startIndex + 32 + Int(p.be16(p.startIndex + 30))
                    if JPEGScanner.hasSOI(p, at: js) { return .panasonicUDP }
                }
            }
            return nil
        }
        func soi(_ i: Int) -> Bool { JPEGScanner.hasSOI(bytes, at: i) }
        if bytes.count >= 16 && bytes[0] == 0xFF && bytes[8] == 0x24 && bytes[9] == 0x35 && bytes[10] == 0x68
            && bytes[11] == 0x79 { return .sonyRemote }
        var i = 0
        while i < bytes.count && i < 16 && HTTPChunkedDecoder.hexValue(bytes[i]) != nil { i += 1 }
        if i > 0 && i + 1 < bytes.count && bytes[i] == 0x0D && bytes[i + 1] == 0x0A { return .sonyPTP }
        guard bytes.count >= 20 else { return nil }
        let nikonHeader = Int(w.be32(8))
        if nikonHeader >= 48 && nikonHeader <= 1 << 16 && soi(nikonHeader) { return .nikonLV }
        if (w.le32(4) == 1 || w.le32(4) == 11) && soi(8) { return .canonEVF }
        if Int(w.le32(0)) >= 20 && soi(18) { return .fujiLV }
        let jo = Int(w.le32(0))
        if jo >= 16 && jo <= 1 << 20 {
            if soi(jo) { return .sonyPTP }
            if case .line(let len, _) = ChunkLine.at(w, jo), soi(jo + len) { return .sonyPTP }
            if case .line(let l1, _) = ChunkLine.at(w, 16), case .line(let l2, _) = ChunkLine.at(w, jo + l1),
               soi(jo + l1 + l2) { return .sonyPTP }
        }
        if soi(384) { return .nikonLV }
        return nil
    }
}
