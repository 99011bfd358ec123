import JPEGKit

extension NikonLiveViewParser: LiveViewWireParser {}
extension CanonEVFParser: LiveViewWireParser {}
extension FujiLiveViewParser: LiveViewWireParser {}

extension WireFormat {
    /// Nikon GetLiveViewImage(Ex) objects: a header whose size (at 8) points at `FF D8` (strong),
    /// or a JPEG at the classic 384-byte offset (weak).
    public static let nikonLV = WireFormat("nikon-lv", input: .byteStream, confidence: { w in
        guard w.count >= 20 else { return 0 }
        let header = Int(w.be32(w.startIndex + 8))
        if header >= 48 && header <= 1 << 16 && JPEGScanner.hasSOI(w, at: w.startIndex + header) { return 3 }
        return JPEGScanner.hasSOI(w, at: w.startIndex + 384) ? 1 : 0
    }, parser: { NikonLiveViewParser(limits: $0) })

    /// Canon EOS GetViewFinderData records: a JPEG record (type 1 or 11) with the JPEG at 8.
    public static let canonEVF = WireFormat("canon-evf", input: .byteStream, confidence: { w in
        guard w.count >= 20 else { return 0 }
        let type = w.le32(w.startIndex + 4)
        return (type == 1 || type == 11) && JPEGScanner.hasSOI(w, at: w.startIndex + 8) ? 3 : 0
    }, parser: { CanonEVFParser(limits: $0) })

    /// Fujifilm live-view frames on the live-view port: a length ≥ 20, the JPEG at 18.
    public static let fujiLV = WireFormat("fuji-lv", input: .byteStream, confidence: { w in
        guard w.count >= 20 else { return 0 }
        return Int(w.le32(w.startIndex)) >= 20 && JPEGScanner.hasSOI(w, at: w.startIndex + 18) ? 3 : 0
    }, parser: { FujiLiveViewParser(limits: $0) })
}
