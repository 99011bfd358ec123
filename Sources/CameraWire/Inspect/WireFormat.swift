/// A parser `livegate inspect` can drive: fed a byte stream in chunks, or one UDP payload per call.
public protocol LiveViewWireParser {
    /// Feeds the next bytes (stream formats) or one whole datagram payload (datagram formats).
    /// Slices keep their indices: `chunk.startIndex` is the absolute input offset.
    mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void)
    /// Reports what is left at the end of the input.
    mutating func finish(_ emit: (WireEvent) -> Void)
    var stats: WireStats { get }
}

/// One live-view wire format: its name for `livegate inspect --format`, how its input comes
/// (a byte stream, or UDP datagrams read from a classic libpcap file), how strongly some bytes look
/// like it (for `--format auto`) and its parser. Each vendor's folder defines its formats; the vendor
/// plug-ins list them.
public struct WireFormat: Sendable, Hashable, CustomStringConvertible {
    public enum Input: Sendable, Hashable {
        /// The whole file is one byte stream (an HTTP body, a PTP data phase, a dump).
        case byteStream
        /// A classic libpcap file; the parser gets each UDP payload.
        case udpDatagrams
    }

    /// The `--format` name (`sony-remote`, `olympus-rtp`, …).
    public let rawValue: String
    public let input: Input
    /// How strongly the bytes look like this format: 0 = not at all; higher wins, ties go to the
    /// earlier format. Byte-stream formats get the file's first bytes, datagram formats one payload.
    let confidence: @Sendable (ArraySlice<UInt8>) -> Int
    let makeParser: @Sendable (WireLimits) -> any LiveViewWireParser

    public init(_ name: String, input: Input, confidence: @escaping @Sendable (ArraySlice<UInt8>) -> Int,
                parser: @escaping @Sendable (WireLimits) -> any LiveViewWireParser) {
        self.rawValue = name
        self.input = input
        self.confidence = confidence
        self.makeParser = parser
    }

    /// Whether the input is a classic libpcap file of UDP datagrams (else a byte stream / object).
    public var isPcap: Bool { input == .udpDatagrams }
    public var description: String { rawValue }

    /// A new parser for this format.
    public func parser(limits: WireLimits = .default) -> any LiveViewWireParser { makeParser(limits) }

    public static func == (a: WireFormat, b: WireFormat) -> Bool { a.rawValue == b.rawValue }
    public func hash(into h: inout Hasher) { h.combine(rawValue) }

    /// Guesses the format of a whole input among `formats` (for `--format auto`); nil when nothing fits.
    /// A pcap file is matched on its UDP payloads (the first of at most 64 that a datagram format
    /// recognises); anything else by the byte-stream formats' confidence in its first bytes, and
    /// failing that as an RFC 4571 datagram dump (`DatagramDump`).
    public static func guess(_ bytes: [UInt8], among formats: [WireFormat]) -> WireFormat? {
        if var r = try? PcapReader(bytes) {
            let datagramFormats = formats.filter(\.isPcap)
            var tried = 0
            while tried < 64, let rec = try? r.next() {
                tried += 1
                guard let u = PacketDecoder.udp(linkType: r.linkType, frame: rec.data) else { continue }
                if let f = best(datagramFormats, u.payload) { return f }
            }
            return nil
        }
        if let f = best(formats.filter { !$0.isPcap }, bytes[...]) { return f }
        // An RFC 4571 dump of datagrams (16-bit length before each).
        if let records = DatagramDump.records(bytes) {
            let datagramFormats = formats.filter(\.isPcap)
            for r in records.prefix(64) {
                if let f = best(datagramFormats, r) { return f }
            }
        }
        return nil
    }

    private static func best(_ formats: [WireFormat], _ bytes: ArraySlice<UInt8>) -> WireFormat? {
        var winner: (WireFormat, Int)?
        for f in formats {
            let c = f.confidence(bytes)
            if c > 0, c > (winner?.1 ?? 0) { winner = (f, c) }
        }
        return winner?.0
    }
}
