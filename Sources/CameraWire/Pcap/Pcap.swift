/// Why a pcap file cannot be read further.
public enum PcapError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a classic libpcap magic (a1b2c3d4 / a1b23c4d in either byte order).
    case badMagic
    /// The file ends inside the global header or a record (offset of the record).
    case truncated(offset: Int)
    /// A record's captured length is larger than the reader's bound.
    case recordTooLarge(offset: Int, length: Int)

    public var description: String {
        switch self {
        case .badMagic: return "expected a classic libpcap magic (A1B2C3D4 or A1B23C4D, either byte order)"
        case .truncated(let o): return "offset \(o): file ends inside a pcap record"
        case .recordTooLarge(let o, let l): return "offset \(o): captured length \(l) exceeds the limit"
        }
    }
}

/// One captured packet.
public struct PcapRecord: Sendable {
    /// Capture time in nanoseconds since the epoch.
    public var timestampNs: Int64
    /// The captured bytes (a slice of the file).
    public var data: ArraySlice<UInt8>
    /// File offset of `data`'s first byte.
    public var dataOffset: Int
    /// Length on the wire.
    public var originalLength: Int
}

/// Classic libpcap reader (both byte orders, µs and ns magic) over a whole file in memory.
/// Records are slices of the file: nothing is copied.
public struct PcapReader: Sendable {
    public let bytes: [UInt8]
    public let bigEndian: Bool
    public let nanosecond: Bool
    public let linkType: UInt32
    public let snapLength: Int
    /// Offset of the next record header.
    public private(set) var offset = 24
    /// Largest captured length accepted (bound; 256 KiB covers any snaplen in use).
    public static let maxRecord = 256 << 10

    public init(_ bytes: [UInt8]) throws(PcapError) {
        guard bytes.count >= 24 else { throw bytes.count >= 4 ? .truncated(offset: 0) : .badMagic }
        let le = bytes.le32(0)
        switch le {
        case 0xA1B2_C3D4: (bigEndian, nanosecond) = (false, false)
        case 0xA1B2_3C4D: (bigEndian, nanosecond) = (false, true)
        case 0xD4C3_B2A1: (bigEndian, nanosecond) = (true, false)
        case 0x4D3C_B2A1: (bigEndian, nanosecond) = (true, true)
        default: throw .badMagic
        }
        self.bytes = bytes
        let be = bigEndian
        snapLength = Int(be ? bytes.be32(16) : bytes.le32(16))
        linkType = (be ? bytes.be32(20) : bytes.le32(20)) & 0x0FFF_FFFF
    }

    @inline(__always) private func u32(_ i: Int) -> UInt32 { bigEndian ? bytes.be32(i) : bytes.le32(i) }

    /// The next record, nil at the end of the file; throws on a truncated/oversized record.
    public mutating func next() throws(PcapError) -> PcapRecord? {
        guard offset < bytes.count else { return nil }
        guard offset + 16 <= bytes.count else { throw .truncated(offset: offset) }
        let sec = Int64(u32(offset)), frac = Int64(u32(offset + 4))
        let incl = Int(u32(offset + 8)), orig = Int(u32(offset + 12))
        guard incl <= Self.maxRecord else { throw .recordTooLarge(offset: offset, length: incl) }
        let start = offset + 16
        guard start + incl <= bytes.count else { throw .truncated(offset: offset) }
        offset = start + incl
        return PcapRecord(timestampNs: sec * 1_000_000_000 + (nanosecond ? frac : frac * 1000),
                          data: bytes[start..<(start + incl)], dataOffset: start, originalLength: orig)
    }
}

/// A UDP datagram found in a captured frame.
public struct UDPDatagram: Sendable {
    public var sourceAddress: UInt32
    public var destinationAddress: UInt32
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    /// The UDP payload, bounded by the UDP length (Ethernet padding excluded).
    public var payload: ArraySlice<UInt8>
}

/// Link-layer decoding down to UDP: Ethernet (with 802.1Q tags), Linux cooked SLL/SLL2, raw IPv4;
/// unfragmented IPv4 only.
public enum PacketDecoder {
    public static let ethernet: UInt32 = 1
    public static let rawIP: UInt32 = 101
    public static let linuxSLL: UInt32 = 113
    public static let linuxSLL2: UInt32 = 276

    /// The UDP datagram in `frame`, or nil (not IPv4/UDP, fragmented, truncated, bad lengths).
    public static func udp(linkType: UInt32, frame f: ArraySlice<UInt8>) -> UDPDatagram? {
        let b = f.startIndex
        var ip: Int
        switch linkType {
        case ethernet:
            guard f.count >= 14 else { return nil }
            var t = f.be16(b + 12)
            ip = b + 14
            while t == 0x8100 || t == 0x88A8 {
                guard ip + 4 <= f.endIndex else { return nil }
                t = f.be16(ip + 2)
                ip += 4
            }
            guard t == 0x0800 else { return nil }
        case linuxSLL:
            guard f.count >= 16, f.be16(b + 14) == 0x0800 else { return nil }
            ip = b + 16
        case linuxSLL2:
            guard f.count >= 20, f.be16(b) == 0x0800 else { return nil }
            ip = b + 20
        case rawIP, 12:
            ip = b
        default:
            return nil
        }
        guard ip + 20 <= f.endIndex, f[ip] >> 4 == 4 else { return nil }
        let ihl = Int(f[ip] & 15) * 4
        let total = Int(f.be16(ip + 2))
        let frag = f.be16(ip + 6)
        guard ihl >= 20, total >= ihl, ip + total <= f.endIndex, frag & 0x3FFF == 0, f[ip + 9] == 17 else { return nil }
        let u = ip + ihl
        guard u + 8 <= ip + total else { return nil }
        let ulen = Int(f.be16(u + 4))
        guard ulen >= 8, u + ulen <= ip + total else { return nil }
        return UDPDatagram(sourceAddress: f.be32(ip + 12), destinationAddress: f.be32(ip + 16),
                           sourcePort: f.be16(u), destinationPort: f.be16(u + 2), payload: f[(u + 8)..<(u + ulen)])
    }
}

/// Classic libpcap writer (little-endian, µs or ns), with helpers that wrap UDP payloads in
/// Ethernet + IPv4 + UDP (padded to the 60-byte Ethernet minimum, as on a wire).
public struct PcapWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    public let nanosecond: Bool

    public init(linkType: UInt32 = PacketDecoder.ethernet, nanosecond: Bool = false, snapLength: UInt32 = 262_144) {
        self.nanosecond = nanosecond
        bytes.putLE32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4)
        bytes.putLE16(2); bytes.putLE16(4)
        bytes.putLE32(0); bytes.putLE32(0)
        bytes.putLE32(snapLength)
        bytes.putLE32(linkType)
    }

    /// Appends a raw captured frame.
    public mutating func append(frame: some Collection<UInt8>, timestampNs: Int64, originalLength: Int? = nil) {
        let sec = timestampNs / 1_000_000_000
        let sub = timestampNs % 1_000_000_000
        bytes.putLE32(UInt32(truncatingIfNeeded: sec))
        bytes.putLE32(UInt32(truncatingIfNeeded: nanosecond ? sub : sub / 1000))
        bytes.putLE32(UInt32(frame.count))
        bytes.putLE32(UInt32(originalLength ?? frame.count))
        bytes.append(contentsOf: frame)
    }

    /// Appends an Ethernet/IPv4/UDP frame carrying `payload` (unfragmented; payload ≤ 65 507 bytes).
    public mutating func appendUDP(_ payload: some Collection<UInt8>, source: UInt32, sourcePort: UInt16,
                                   destination: UInt32, destinationPort: UInt16, timestampNs: Int64, ipID: UInt16 = 0) {
        var f: [UInt8] = [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00]
        let ipLen = 20 + 8 + payload.count
        precondition(ipLen <= 0xFFFF, "UDP payload too large for one IPv4 datagram")
        let ip = f.count
        f += [0x45, 0]
        f.putBE16(UInt16(ipLen)); f.putBE16(ipID); f.putBE16(0x4000)
        f += [64, 17, 0, 0]
        f.putBE32(source); f.putBE32(destination)
        var sum: UInt32 = 0
        for i in stride(from: ip, to: ip + 20, by: 2) { sum += UInt32(f.be16(i)) }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        f.setBE16(~UInt16(sum), at: ip + 10)
        f.putBE16(sourcePort); f.putBE16(destinationPort); f.putBE16(UInt16(8 + payload.count)); f.putBE16(0)
        f.append(contentsOf: payload)
        if f.count < 60 { f.putZeros(60 - f.count) }
        append(frame: f, timestampNs: timestampNs)
    }

    /// IPv4 address from dotted parts.
    public static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> UInt32 {
        UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }
}
