import JPEGKit
import CameraWire
import LiveViewCore
import MediaKit

/// What the Sony emulator sends per frame, built once: for each of `count` test-pattern JPEGs
/// (MediaKit's `TestPattern`, 768×432 by default, frame counter = index) one body write holding a
/// 0x02 frame-information packet (the AF box on the moving subject) and the 0x01 JPEG packet,
/// serialized with `SonyRemotePacket`.
public struct SonyPacketStream: Sendable {
    public let packets: [[UInt8]]
    public let jpegs: [[UInt8]]
    public let width: Int
    public let height: Int

    public init(count: Int = 30, width: Int = 768, height: Int = 432) throws {
        let pattern = try TestPattern(width: width, height: height)
        var packets: [[UInt8]] = []
        var jpegs: [[UInt8]] = []
        var seq: UInt16 = 0
        for i in 0..<count {
            let r = try pattern.render(frameNumber: i)
            let jpeg = Array(r.jpeg)
            let b = r.afBox
            func gx(_ v: Int) -> UInt16 { UInt16(max(0, min(10000, v * 10000 / width))) }
            func gy(_ v: Int) -> UInt16 { UInt16(max(0, min(10000, v * 10000 / height))) }
            let rec = SonyRemoteFrameRecord(x1: gx(b.x), y1: gy(b.y), x2: gx(b.x + b.width), y2: gy(b.y + b.height),
                                            category: 1, status: (i / 15) % 4 != 0 ? 4 : 1, additionalStatus: 1)
            let ts = UInt32(1000 + i * 33)
            var p: [UInt8] = []
            SonyRemotePacket.appendFrameInfo([rec], seq: seq, timestamp: ts, to: &p)
            SonyRemotePacket.appendJPEG(jpeg, seq: seq, timestampMs: ts, to: &p)
            seq &+= 1
            packets.append(p)
            jpegs.append(jpeg)
        }
        self.packets = packets
        self.jpegs = jpegs
        self.width = width
        self.height = height
    }

    /// Mean bytes per packet pair.
    public var meanPacketBytes: Int { packets.reduce(0) { $0 + $1.count } / max(packets.count, 1) }
}
