import Testing
import TestSupport
@testable import CameraWire

@Suite struct PTPIPTests {
    static let guid: [UInt8] = Array(0..<16)
    static let all: [PTPIPPacket] = [
        .initCommandRequest(guid: guid, friendlyName: "livegate", protocolVersion: PTPIPPacket.protocolVersion1),
        .initCommandAck(connectionNumber: 1, guid: guid, friendlyName: "EOS", protocolVersion: PTPIPPacket.protocolVersion1),
        .initEventRequest(connectionNumber: 1), .initEventAck, .initFail(reason: 1),
        .operationRequest(dataPhase: 1, code: PTPOperation.openSession, transactionID: 0, params: [1]),
        .operationRequest(dataPhase: 1, code: PTPOperation.canonGetViewFinderData, transactionID: 7,
                          params: [0x0020_0000, 0, 0]),
        .operationResponse(code: PTPResponse.ok, transactionID: 7, params: []),
        .operationResponse(code: PTPResponse.deviceBusy, transactionID: 8, params: [1, 2, 3, 4, 5]),
        .event(code: PTPEvent.devicePropChanged, transactionID: 0xFFFF_FFFF, params: [0xD1A2]),
        .startData(transactionID: 7, totalLength: 5), .data(transactionID: 7, payload: [1, 2, 3]),
        .endData(transactionID: 7, payload: [4, 5]), .endData(transactionID: 7, payload: []),
        .cancel(transactionID: 7), .probeRequest, .probeResponse,
    ]

    @Test func roundTripEveryPacketType() {
        for p in Self.all {
            #expect(PTPIPPacket.parse(p.bytes[...]) == p, "\(p)")
        }
        #expect(Set(Self.all.map(\.type)) == Set(1...14))
        // Known sizes from ptp.md §1.1.
        #expect(PTPIPPacket.initEventRequest(connectionNumber: 1).bytes.count == 12)
        #expect(PTPIPPacket.initEventAck.bytes.count == 8)
        #expect(PTPIPPacket.startData(transactionID: 1, totalLength: 0).bytes.count == 20)
        #expect(PTPIPPacket.operationRequest(dataPhase: 1, code: 0x1002, transactionID: 0, params: [1]).bytes
            == [22, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0x02, 0x10, 0, 0, 0, 0, 1, 0, 0, 0])
        // vcam's canned Canon Init_Command_Ack shape: 6-char name + NUL → 0x2E bytes.
        #expect(PTPIPPacket.initCommandAck(connectionNumber: 1, guid: Self.guid, friendlyName: "Canon1",
                                           protocolVersion: PTPIPPacket.protocolVersion1).bytes.count == 0x2E)
    }

    @Test func decoderAnySplitAndDataPhase() {
        var rng = SplitMix64(seed: 77)
        let data = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let packets = PTPIPDataPhase.packets(transactionID: 9, data: data, chunk: 65536)
            + [.operationResponse(code: PTPResponse.ok, transactionID: 9, params: [])]
        #expect(packets.count == 6)
        let stream = packets.flatMap(\.bytes)
        for _ in 0..<5 {
            var dec = PTPIPPacketDecoder()
            var phase = PTPIPDataPhase()
            var got: [PTPIPPacket] = []
            var done = false
            var i = 0
            while i < stream.count {
                let n = Int.random(in: 1...30_000, using: &rng)
                dec.feed(stream[i..<min(stream.count, i + n)]) { p in
                    got.append(p)
                    if case .operationResponse = p {} else if phase.ingest(p) == .complete { done = true }
                }
                i += n
            }
            #expect(got == packets)
            #expect(done && phase.payload == data)
        }
        // Length mismatch between Start_Data and the data is an error.
        var ph = PTPIPDataPhase()
        _ = ph.ingest(.startData(transactionID: 1, totalLength: 10))
        #expect(ph.ingest(.endData(transactionID: 1, payload: [1])) == .error("got 1 bytes, Start_Data said 10"))
    }

    /// (Mutated input: `FuzzTests.ptpipPackets`.)
    @Test func decoderRefusesAPacketOverTheLimit() {
        let limits = WireLimits(maxContainer: 4096)
        var dec = PTPIPPacketDecoder(limits: limits)
        var tooBig: [UInt8] = []
        tooBig.putLE32(1 << 20); tooBig.putLE32(10)
        dec.feed(tooBig[...]) { _ in }
        #expect(dec.failed == WireIssue(offset: 0, error: .sizeOverLimit(field: "PTP/IP length", declared: 1 << 20, limit: 4096)))
    }
}
