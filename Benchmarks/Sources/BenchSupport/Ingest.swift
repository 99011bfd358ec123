import JPEGKit
import CameraKit
import CameraWire
import LiveViewCore
import MediaKit

/// The Sony ingest path without a socket, as `SonyLiveviewHandler` runs it on the event loop: each
/// body read is copied into a reused scratch array, fed to `SonyRemoteParser`, and every frame goes
/// through `FramePublisher.publish` (pooled frame, one copy, metadata, stats) into a `FrameHub`.
public final class SonyIngest {
    public let stream: SonyPacketStream
    public let hub = FrameHub()
    public let pool = FramePool(capacity: 24, frameBytes: 256 * 1024)
    public let stats = DriverStats()
    private var parser = SonyRemoteParser()
    private var scratch: [UInt8] = []
    private let publisher: FramePublisher
    private var next = 0
    /// Only parse (no publish), for bisecting.
    public var parseOnly = false

    public init(stream: SonyPacketStream) {
        self.stream = stream
        publisher = FramePublisher(hub: hub, pool: pool, stats: stats, cameraIndex: 0)
        scratch.reserveCapacity(256 * 1024)
    }

    /// Feeds the next frame's body write (0x02 + 0x01 packets); returns the frame number it carries.
    @discardableResult
    public func feedOne() -> Int {
        let n = next
        next += 1
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: stream.packets[n % stream.packets.count])
        parser.feed(scratch[...]) { ev in
            switch ev {
            case .frame(let wf):
                if parseOnly { blackHole(wf.jpeg.count) } else { publisher.publish(wf) }
            case .issue(let issue):
                stats.dropped(issue)
            }
        }
        return n
    }

    /// Publishes a frame of the stream straight into the hub (no parser), with its AF area.
    public var framesFed: Int { next }
}

/// A raw-mount consumer without GStreamer: per frame what the `/raw` worker does in Swift — the
/// RTP/JPEG compatibility check, one extra owner handed to a (simulated) GstBuffer as an unmanaged
/// reference and given back by its destroy notify, the worker's release, the pacer's completion.
public func swiftRawConsumer() -> FramePacer {
    FramePacer(name: "raw-swift") { frame, completion in
        if JPEGScanner.rtpCompatibility(of: frame.bytes) == .compatible {
            frame.retain()
            let user = Unmanaged.passRetained(frame).toOpaque()
            blackHole(Int(bitPattern: user))
            // The buffer's destroy notify:
            Unmanaged<Frame>.fromOpaque(user).takeRetainedValue().release()
        }
        frame.release()
        completion()
    }
}
