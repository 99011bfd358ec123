import CameraWire
import Foundation
import LiveViewCore
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// A camera speaking Sony's Camera Remote API on loopback: JSON-RPC at `/sony/camera` and the
/// liveview packet stream (0x02 frame information with the moving AF box, then the 0x01 JPEG) at
/// `/liveview/liveviewstream`, with the property methods and Sony's error codes.
public final class SonyEmulator: CameraEmulator, Sendable {
    public let vendor = "sony"
    public let fps: Double
    public let source: any EmulatorFrameSource
    let state: SonyEmulatorState
    private let group: any EventLoopGroup
    private let host: String
    private let requestedPort: Int
    private let channelBox = Mutex<(any Channel)?>(nil)
    let logger: Logger

    /// Where the 0x02 frame information goes relative to the JPEG it describes (sony.md §1.3 leaves
    /// it open; cameras differ).
    public enum FrameInfoOrder: Sendable {
        /// Information, then its JPEG (the default).
        case before
        /// The JPEG, then its information, in a write of its own.
        case after
        /// Before and after in turn, frame by frame.
        case alternate
        /// Before, but every `n`-th frame gets none.
        case missingEvery(Int)
    }
    public let frameInfoOrder: FrameInfoOrder

    public init(host: String = "127.0.0.1", port: Int = 0, fps: Double = 30, source: any EmulatorFrameSource,
                group: any EventLoopGroup, frameInfoOrder: FrameInfoOrder = .before, mood: EmulatorMood = .prompt,
                logger: Logger = Logger(label: "livegate.emulator.sony")) {
        self.frameInfoOrder = frameInfoOrder
        self.host = host
        self.requestedPort = port
        self.fps = fps
        self.source = source
        self.group = group
        self.logger = logger
        self.state = SonyEmulatorState(mood: mood)
    }

    /// Starts listening; returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        let emulator = self
        let channel = try await EmulatorHTTPServer.bind(group: group, host: host, port: requestedPort) {
            SonyEmulatorHandler(emulator: emulator)
        }
        channelBox.withLock { $0 = channel }
        return channel.localAddress?.port ?? requestedPort
    }

    /// The bound port (0 before `start`).
    public var port: Int { channelBox.withLock { $0?.localAddress?.port } ?? 0 }

    /// The JSON-RPC camera endpoint, for `--camera sony://…`.
    public var cameraURL: String { "sony://\(host):\(port)" }

    public func stop() async {
        let ch = channelBox.withLock { v -> (any Channel)? in
            let o = v
            v = nil
            return o
        }
        try? await ch?.close()
        state.closeStreams()
    }

    /// Every JSON-RPC call received so far: method and its params as JSON text.
    public var calls: [(method: String, params: String)] { state.calls }

    /// Fault switch for tests: drop every liveview connection now (the camera "disappears" for the
    /// stream but keeps answering JSON-RPC).
    public func dropStreams() { state.closeStreams() }

    /// Takes a picture as if the shutter button on the body was pressed; returns its name.
    @discardableResult
    public func shootOnBody() -> String { state.shootOnBody(baseURL: "http://\(host):\(port)", source: source) }
    /// The bytes of a picture on the card.
    public func cardFile(_ name: String) -> [UInt8]? { state.cardFile(name) }
    /// Every picture on the card, sorted.
    public var cardNames: [String] { state.cardNames }
    /// True while the camera is in its "Contents Transfer" function (card served, no live view).
    public var inContentsTransfer: Bool { state.inContentsTransfer }
    /// The card's thumbnail of a picture (what `/contentstransfer/thumb/…` serves).
    public func thumbnail(_ name: String) -> [UInt8]? { SonyEmulatorHandler.thumbnail(name) }
    /// Postview GETs served.
    public var postviewsServed: Int { state.postviewsServed }
    /// Long exposures: actTakePicture answers 40403, awaitTakePicture the picture.
    public func setLongExposure(_ on: Bool) { state.update { $0.longExposure = on } }
    /// Fault switch for tests: the next `n` picture downloads stop half-way (the connection drops
    /// after half the bytes its Content-Length announced).
    public func cutNextTransfers(_ n: Int) { state.cutTransfers(n) }
    /// Refuses shots with 40400 and `reason` (nil: accept them again).
    public func refuseShots(_ reason: String?) { state.update { $0.refuseShots = reason } }
    /// Fault switch for tests: every property setter answers this JSON-RPC error (nil: normal).
    public func refuseSettings(code: Int, message: String) { state.update { $0.refuseSettings = (code, message) } }

    public func inject(_ fault: EmulatorFault) {
        switch fault {
        case .disconnect: state.closeStreams()
        case .stall(let seconds): state.stall(until: MonotonicClock.nanos() + UInt64(max(0, seconds) * 1e9))
        case .dropEveryNthDatagram, .none: state.stall(until: 0)
        }
    }

    /// Frames sent so far over all streams.
    public var framesSent: Int { state.framesSent }
}
