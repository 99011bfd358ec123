@testable import CameraKit
import CameraEmulators
import CameraWire
import LiveViewCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
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

/// Sony's endless live-view body on an `EmbeddedChannel`: the HTTP parts go in by hand, the stream
/// cut at awkward places, and the frames are in the hub at once.
@Suite struct SonyLiveviewHandlerTests {
    let hub = FrameHub()
    let stats = DriverStats()
    let source = try! TestPatternSource(width: 320, height: 240)

    /// A channel with the handler, connected (an embedded channel is inactive until then, and closing
    /// is what these tests look for).
    func connected(status: Collected<[Int]>) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: handler(status: status))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 10000)).wait()
        #expect(channel.isActive)
        return channel
    }

    func handler(status: Collected<[Int]>) -> SonyLiveviewHandler {
        SonyLiveviewHandler(publisher: FramePublisher(hub: hub, pool: FramePool(capacity: 4, frameBytes: 64 * 1024),
                                                      stats: stats, cameraIndex: 0),
                            onStatus: { code in status.withLock { $0.append(code) } }, onFrame: {})
    }

    @Test func packetsCutAnywhereBecomeTheCamerasFramesAndGarbageIsADrop() throws {
        let status = Collected<[Int]>([])
        let channel = try connected(status: status)
        var stream: [UInt8] = []
        for n in 0..<3 {
            SonyRemotePacket.appendJPEG(source.frame(index: n).jpeg, seq: UInt16(10 + n), timestampMs: UInt32(1000 + 33 * n),
                                        to: &stream)
            if n == 1 { stream += [0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x11] }  // bytes that are no packet
        }
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        // Pieces of 1, 7, 135, 1000, 1, 7, 135, 1000 … bytes: headers and JPEGs split everywhere.
        let sizes = [1, 7, 135, 1000]
        var at = 0, i = 0
        while at < stream.count {
            let end = min(stream.count, at + sizes[i % sizes.count])
            try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(bytes: stream[at..<end])))
            at = end
            i += 1
        }
        #expect(status.withLock { $0 } == [200])
        #expect(hub.published == 3, "\(stats.dropsByReason)")
        #expect(stats.drops >= 1, "the garbage between packets was not counted")
        let f = try #require(hub.latest())
        defer { f.release() }
        #expect(Array(f.bytes) == source.frame(index: 2).jpeg, "the frame is the camera's JPEG, byte for byte")
        #expect(f.sequence == 12)
        #expect(channel.isActive, "a 200 answer keeps the connection")
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(!channel.isActive, "the end of the body closes the connection")
    }

    @Test func aRefusalClosesTheConnectionAndSaysWhy() throws {
        let status = Collected<[Int]>([])
        let channel = try connected(status: status)
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .serviceUnavailable)))
        #expect(status.withLock { $0 } == [503])
        #expect(!channel.isActive)
        #expect(hub.published == 0)
    }
}
