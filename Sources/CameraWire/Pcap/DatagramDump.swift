/// UDP payloads written back to back, each after a 16-bit big-endian length: the framing RFC 4571
/// gives RTP over a byte stream. `livegate inspect` reads datagram formats from a pcap or from such a
/// dump (what `tcpdump` cannot give, a program that logs its datagrams can).
public enum DatagramDump {
    /// The payloads of a whole dump; nil when the bytes are not one (a length runs past the end, or
    /// there is nothing).
    public static func records(_ bytes: [UInt8]) -> [ArraySlice<UInt8>]? {
        var out: [ArraySlice<UInt8>] = []
        var i = 0
        while i < bytes.count {
            guard i + 2 <= bytes.count else { return nil }
            let n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            guard n > 0, i + 2 + n <= bytes.count else { return nil }
            out.append(bytes[(i + 2)..<(i + 2 + n)])
            i += 2 + n
        }
        return out.isEmpty ? nil : out
    }

    /// Writes payloads as a dump.
    public static func write(_ payloads: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for p in payloads where !p.isEmpty && p.count <= 65535 {
            out.append(UInt8(p.count >> 8))
            out.append(UInt8(p.count & 0xFF))
            out += p
        }
        return out
    }
}
