import JPEGKit

extension SonyRemoteParser: LiveViewWireParser {}
extension SonyPTPParser: LiveViewWireParser {}

extension WireFormat {
    /// Sony Camera Remote API liveview stream: `FF` common header + payload header `24 35 68 79`.
    public static let sonyRemote = WireFormat("sony-remote", input: .byteStream, confidence: { b in
        let s = b.startIndex
        return b.count >= 16 && b[s] == 0xFF && b[s + 8] == 0x24 && b[s + 9] == 0x35 && b[s + 10] == 0x68
            && b[s + 11] == 0x79 ? 4 : 0
    }, parser: { SonyRemoteParser(limits: $0) })

    /// Sony PTP/IP live-view datasets, raw or inside an HTTP chunked body: a chunk-size line is a
    /// strong sign; a dataset whose JPEG offset points at `FF D8` (possibly across chunk lines) a weaker one.
    public static let sonyPTP = WireFormat("sony-ptp", input: .byteStream, confidence: { w in
        let s = w.startIndex
        var i = s
        while i < w.endIndex && i - s < 16 && HTTPChunkedDecoder.hexValue(w[i]) != nil { i += 1 }
        if i > s && i + 1 < w.endIndex && w[i] == 0x0D && w[i + 1] == 0x0A { return 4 }
        guard w.count >= 20 else { return 0 }
        func soi(_ k: Int) -> Bool { JPEGScanner.hasSOI(w, at: s + k) }
        let jo = Int(w.le32(s))
        guard jo >= 16 && jo <= 1 << 20 else { return 0 }
        if soi(jo) { return 2 }
        if case .line(let len, _) = ChunkLine.at(w, s + jo), soi(jo + len) { return 2 }
        if case .line(let l1, _) = ChunkLine.at(w, s + 16), case .line(let l2, _) = ChunkLine.at(w, s + jo + l1),
           soi(jo + l1 + l2) { return 2 }
        return 0
    }, parser: { SonyPTPParser(limits: $0) })
}
