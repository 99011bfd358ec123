/// One PTP/IP packet (ptp.md §1.1): `u32 length` (whole packet), `u32 type`, payload; little-endian.
public enum PTPIPPacket: Sendable, Hashable {
    case initCommandRequest(guid: [UInt8], friendlyName: String, protocolVersion: UInt32)
    case initCommandAck(connectionNumber: UInt32, guid: [UInt8], friendlyName: String, protocolVersion: UInt32)
    case initEventRequest(connectionNumber: UInt32)
    case initEventAck
    case initFail(reason: UInt32)
    case operationRequest(dataPhase: UInt32, code: UInt16, transactionID: UInt32, params: [UInt32])
    case operationResponse(code: UInt16, transactionID: UInt32, params: [UInt32])
    case event(code: UInt16, transactionID: UInt32, params: [UInt32])
    case startData(transactionID: UInt32, totalLength: UInt64)
    case data(transactionID: UInt32, payload: [UInt8])
    case cancel(transactionID: UInt32)
    case endData(transactionID: UInt32, payload: [UInt8])
    case probeRequest
    case probeResponse

    /// ProtocolVersion 1.0 as libgphoto2 writes it (minor 0x0000, major 0x0001).
    public static let protocolVersion1: UInt32 = 0x0001_0000
    /// DataPhaseInfo: no data or data-in (1), data-out (2).
    public static let dataPhaseNoneOrIn: UInt32 = 1
    public static let dataPhaseOut: UInt32 = 2
    /// Start_Data total length when unknown.
    public static let unknownLength: UInt64 = .max

    public var type: UInt32 {
        switch self {
        case .initCommandRequest: return 1
        case .initCommandAck: return 2
        case .initEventRequest: return 3
        case .initEventAck: return 4
        case .initFail: return 5
        case .operationRequest: return 6
        case .operationResponse: return 7
        case .event: return 8
        case .startData: return 9
        case .data: return 10
        case .cancel: return 11
        case .endData: return 12
        case .probeRequest: return 13
        case .probeResponse: return 14
        }
    }

    /// Appends the packet's bytes.
    public func serialize(into out: inout [UInt8]) {
        let start = out.count
        out.putLE32(0)
        out.putLE32(type)
        func name(_ s: String) {
            for u in s.utf16 { out.putLE16(u) }
            out.putLE16(0)
        }
        switch self {
        case .initCommandRequest(let g, let n, let v):
            out += Self.guid16(g); name(n); out.putLE32(v)
        case .initCommandAck(let c, let g, let n, let v):
            out.putLE32(c); out += Self.guid16(g); name(n); out.putLE32(v)
        case .initEventRequest(let c): out.putLE32(c)
        case .initEventAck, .probeRequest, .probeResponse: break
        case .initFail(let r): out.putLE32(r)
        case .operationRequest(let d, let c, let t, let p):
            precondition(p.count <= 5)
            out.putLE32(d); out.putLE16(c); out.putLE32(t); for x in p { out.putLE32(x) }
        case .operationResponse(let c, let t, let p), .event(let c, let t, let p):
            precondition(p.count <= 5)
            out.putLE16(c); out.putLE32(t); for x in p { out.putLE32(x) }
        case .startData(let t, let n): out.putLE32(t); out.putLE64(n)
        case .data(let t, let p), .endData(let t, let p): out.putLE32(t); out += p
        case .cancel(let t): out.putLE32(t)
        }
        out.setLE32(UInt32(out.count - start), at: start)
    }

    public var bytes: [UInt8] {
        var o: [UInt8] = []
        serialize(into: &o)
        return o
    }

    static func guid16(_ g: [UInt8]) -> [UInt8] { Array((g + [UInt8](repeating: 0, count: 16)).prefix(16)) }

    /// Parses one whole packet (`p` is exactly `length` bytes). Nil when the layout is wrong.
    public static func parse(_ p: ArraySlice<UInt8>) -> PTPIPPacket? {
        let b = p.startIndex
        guard p.count >= 8, Int(p.le32(b)) == p.count else { return nil }
        let body = b + 8
        let n = p.count - 8
        func name(from i: Int) -> (String, Int)? {
            var units: [UInt16] = []
            var k = i
            while k + 1 < p.endIndex {
                let u = p.le16(k)
                k += 2
                if u == 0 { return (String(decoding: units, as: UTF16.self), k) }
                units.append(u)
            }
            return nil
        }
        func params(_ from: Int) -> [UInt32]? {
            let rest = p.endIndex - from
            guard rest >= 0, rest % 4 == 0, rest / 4 <= 5 else { return nil }
            return stride(from: from, to: p.endIndex, by: 4).map { p.le32($0) }
        }
        switch p.le32(b + 4) {
        case 1:
            guard n >= 16 + 2 + 4, let (s, k) = name(from: body + 16), k + 4 == p.endIndex else { return nil }
            return .initCommandRequest(guid: Array(p[body..<(body + 16)]), friendlyName: s, protocolVersion: p.le32(k))
        case 2:
            guard n >= 4 + 16 + 2 + 4, let (s, k) = name(from: body + 20), k + 4 == p.endIndex else { return nil }
            return .initCommandAck(connectionNumber: p.le32(body), guid: Array(p[(body + 4)..<(body + 20)]),
                                   friendlyName: s, protocolVersion: p.le32(k))
        case 3: return n == 4 ? .initEventRequest(connectionNumber: p.le32(body)) : nil
        case 4: return n == 0 ? .initEventAck : nil
        case 5: return n == 4 ? .initFail(reason: p.le32(body)) : nil
        case 6:
            guard n >= 10, let ps = params(body + 10) else { return nil }
            return .operationRequest(dataPhase: p.le32(body), code: p.le16(body + 4), transactionID: p.le32(body + 6),
                                     params: ps)
        case 7, 8:
            guard n >= 6, let ps = params(body + 6) else { return nil }
            return p.le32(b + 4) == 7
                ? .operationResponse(code: p.le16(body), transactionID: p.le32(body + 2), params: ps)
                : .event(code: p.le16(body), transactionID: p.le32(body + 2), params: ps)
        case 9: return n == 12 ? .startData(transactionID: p.le32(body), totalLength: p.le64(body + 4)) : nil
        case 10: return n >= 4 ? .data(transactionID: p.le32(body), payload: Array(p[(body + 4)...])) : nil
        case 11: return n == 4 ? .cancel(transactionID: p.le32(body)) : nil
        case 12: return n >= 4 ? .endData(transactionID: p.le32(body), payload: Array(p[(body + 4)...])) : nil
        case 13: return n == 0 ? .probeRequest : nil
        case 14: return n == 0 ? .probeResponse : nil
        default: return nil
        }
    }
}

/// Incremental PTP/IP packet framer for one TCP connection (either direction): feed any chunks,
/// get whole packets. Buffer bound: one packet, `limits.maxContainer` bytes; a larger declared
/// length is a typed error and the connection should be dropped (PTP/IP has no resync marker).
public struct PTPIPPacketDecoder: Sendable {
    var buffer: [UInt8] = []
    let limit: Int
    public private(set) var failed: WireIssue?
    private var offset = 0

    public init(limits: WireLimits = .default) { limit = limits.maxContainer }

    /// Feeds bytes; `packet` gets each whole packet in order. After an error nothing more is decoded.
    public mutating func feed(_ chunk: ArraySlice<UInt8>, _ packet: (PTPIPPacket) -> Void) {
        guard failed == nil else { return }
        buffer.append(contentsOf: chunk)
        var i = 0
        while failed == nil && buffer.count - i >= 8 {
            let len = Int(buffer.le32(i))
            guard len >= 8 else {
                failed = WireIssue(offset: offset + i, error: .badField("PTP/IP length \(len) < 8"))
                break
            }
            guard len <= limit else {
                failed = WireIssue(offset: offset + i, error: .sizeOverLimit(field: "PTP/IP length", declared: len, limit: limit))
                break
            }
            guard buffer.count - i >= len else { break }
            if let p = PTPIPPacket.parse(buffer[i..<(i + len)]) { packet(p) } else {
                failed = WireIssue(offset: offset + i, error: .badField("malformed PTP/IP packet type \(buffer.le32(i + 4))"))
                break
            }
            i += len
        }
        buffer.removeFirst(i)
        offset += i
    }
}

/// Reassembles one transaction's data phase from Start_Data, Data… and End_Data (either direction).
public struct PTPIPDataPhase: Sendable {
    public enum Outcome: Sendable, Equatable {
        case incomplete
        /// The whole payload (`payload` holds it).
        case complete
        case error(String)
    }
    public private(set) var transactionID: UInt32 = 0
    public private(set) var expected: UInt64 = 0
    /// The bytes received so far (reused between transactions).
    public private(set) var payload: [UInt8] = []
    var active = false
    let limit: Int

    public init(limits: WireLimits = .default) { limit = limits.maxContainer }

    /// Feeds one packet of the data phase; other packet types are an error.
    public mutating func ingest(_ p: PTPIPPacket) -> Outcome {
        switch p {
        case .startData(let t, let n):
            guard n == PTPIPPacket.unknownLength || n <= UInt64(limit) else { return .error("data length \(n) over the limit") }
            transactionID = t; expected = n; payload.removeAll(keepingCapacity: true); active = true
            return .incomplete
        case .data(let t, let d), .endData(let t, let d):
            guard active, t == transactionID else { return .error("data for transaction \(t) without Start_Data") }
            guard payload.count + d.count <= limit else { active = false; return .error("data over the limit") }
            payload += d
            if case .endData = p {
                active = false
                if expected != PTPIPPacket.unknownLength && UInt64(payload.count) != expected {
                    return .error("got \(payload.count) bytes, Start_Data said \(expected)")
                }
                return .complete
            }
            if expected != PTPIPPacket.unknownLength && UInt64(payload.count) > expected {
                active = false
                return .error("more data than Start_Data said")
            }
            return .incomplete
        default:
            return .error("not a data-phase packet")
        }
    }

    /// The packets of a data phase carrying `data`: Start_Data, Data packets of at most `chunk`
    /// bytes, then End_Data with the rest (libgphoto2 chunks at 64 KiB).
    public static func packets(transactionID: UInt32, data: [UInt8], chunk: Int = 65536) -> [PTPIPPacket] {
        var out: [PTPIPPacket] = [.startData(transactionID: transactionID, totalLength: UInt64(data.count))]
        var i = 0
        while data.count - i > chunk {
            out.append(.data(transactionID: transactionID, payload: Array(data[i..<(i + chunk)])))
            i += chunk
        }
        out.append(.endData(transactionID: transactionID, payload: Array(data[i...])))
        return out
    }
}
