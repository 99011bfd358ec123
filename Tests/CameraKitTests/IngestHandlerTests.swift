@testable import CameraKit
import CameraEmulators
import CameraWire
import LiveViewCore
import NIOCore
import NIOEmbedded
import Testing
import TestSupport

/// The UDP live-view handlers on an `EmbeddedChannel`: datagrams go in by hand, from the camera's
/// address and from a stranger's, and what reaches the hub and the driver's counters is checked at
/// once — no socket, no emulator, no waiting. (The same paths over real loopback sockets, against the
/// emulators, are in `UDPSourceTests`, `PanasonicFaultTests` and `OlympusDriverTests`.)
@Suite struct IngestHandlerTests {
    let hub = FrameHub()
    let stats = DriverStats()
    let camera = try! SocketAddress(ipAddress: "127.0.0.1", port: 40000)
    let stranger = try! SocketAddress(ipAddress: "127.0.0.1", port: 40001)
    let source = try! TestPatternSource(width: 320, height: 240)

    var publisher: FramePublisher {
        FramePublisher(hub: hub, pool: FramePool(capacity: 4, frameBytes: 64 * 1024), stats: stats, cameraIndex: 0)
    }

    /// The newest frame's bytes and sequence number, its owner given back.
    func newest() throws -> (bytes: [UInt8], sequence: UInt64?, pts: Int64?) {
        let f = try #require(hub.latest(), "nothing was published")
        defer { f.release() }
        return (Array(f.bytes), f.sequence, f.cameraPTS)
    }

    @Test func panasonicDatagramsFromTheCameraAreFramesAndAStrangersAreCounted() throws {
        let channel = EmbeddedChannel(handler: PanasonicLiveViewHandler(publisher: publisher, expectedSource: "127.0.0.1",
                                                                        onFrame: {}))
        func datagram(_ index: Int, seq: Int32) -> ByteBuffer {
            var d: [UInt8] = []
            PanasonicDatagram.append(jpeg: source.frame(index: index).jpeg, seq: seq, to: &d)
            return ByteBuffer(bytes: d)
        }
        try channel.writeInbound(AddressedEnvelope(remoteAddress: camera, data: datagram(0, seq: 1)))
        #expect(hub.published == 1)
        // A whole, well-formed frame from another port is not the camera's.
        try channel.writeInbound(AddressedEnvelope(remoteAddress: stranger, data: datagram(7, seq: 99)))
        #expect(hub.published == 1 && stats.foreignDatagrams == 1)
        // Garbage from the camera is a counted drop, not a frame and not a crash.
        try channel.writeInbound(AddressedEnvelope(remoteAddress: camera, data: ByteBuffer(bytes: [1, 2, 3, 4, 5])))
        #expect(hub.published == 1 && stats.drops == 1, "\(stats.dropsByReason)")
        // The camera's next frame, then one after a lost one: published, the hole in seqNo counted.
        try channel.writeInbound(AddressedEnvelope(remoteAddress: camera, data: datagram(2, seq: 2)))
        try channel.writeInbound(AddressedEnvelope(remoteAddress: camera, data: datagram(4, seq: 4)))
        #expect(hub.published == 3)
        #expect(stats.dropsByReason["sequence-gap"] == 1, "\(stats.dropsByReason)")
        let last = try newest()
        #expect(last.bytes == source.frame(index: 4).jpeg, "the published frame is the camera's JPEG, byte for byte")
        #expect(last.sequence == 4)
        #expect(try channel.finish().isClean)
    }

    @Test func olympusPacketsMakeWholeFramesATornOneIsDroppedAndAStrangersIsCounted() throws {
        let handler = OlympusLiveViewHandler(publisher: publisher, expectedSource: "127.0.0.1", liveViewSize: nil, fps: 30,
                                             onDatagram: {}, onFrame: { _ in })
        let channel = EmbeddedChannel(handler: handler)
        var packetizer = OlympusRTPPacketizer(ssrc: 0x0102_0304, firstSequence: 100, chunk: 1000)
        var frames: [[[UInt8]]] = []
        for n in 0..<4 {
            frames.append(packetizer.packets(jpeg: source.frame(index: n).jpeg, frameNumber: UInt32(n), metadata: OlympusRTP.Metadata()))
        }
        #expect(frames.allSatisfy { $0.count > 2 }, "each frame spans several packets")
        func send(_ packet: [UInt8], from: SocketAddress) throws {
            try channel.writeInbound(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: packet)))
        }
        for p in frames[0] { try send(p, from: camera) }
        #expect(hub.published == 1)
        let first = try newest()
        #expect(first.bytes == source.frame(index: 0).jpeg && first.sequence == 0)
        // Frame 1 loses its middle packet: never published torn, counted as incomplete.
        for (i, p) in frames[1].enumerated() where i != 1 { try send(p, from: camera) }
        // A stranger's copy of frame 2 changes nothing.
        for p in frames[2] { try send(p, from: stranger) }
        #expect(stats.foreignDatagrams == frames[2].count)
        for p in frames[2] + frames[3] { try send(p, from: camera) }
        #expect(hub.published == 3, "frames 0, 2 and 3")
        #expect(stats.dropsByReason["incomplete"] == 1, "\(stats.dropsByReason)")
        let last = try newest()
        #expect(last.bytes == source.frame(index: 3).jpeg && last.sequence == 3)
        #expect(try channel.finish().isClean)
    }
}
