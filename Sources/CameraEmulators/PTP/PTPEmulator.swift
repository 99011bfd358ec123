public import CameraWire
import LiveViewCore
public import Logging
public import NIOCore
import NIOPosix

/// A PTP/IP camera on loopback (`livegate emulate nikon|canon|sony-ptp|fuji`): both PTP/IP sockets on
/// one port (Fujifilm: its own command / event / live-view ports), the session rules, GetDeviceInfo
/// with the vendor's identity, the vendor's property operations and live-view objects built by
/// CameraWire's serializers with the test pattern and its moving AF box. Live-view requests faster
/// than `fps` really answer DeviceBusy 0x2019 (Sony: AccessDenied 0x200F). Every operation is logged
/// in `requests`.
public final class PTPEmulator: CameraEmulator, Sendable {
    public let kind: PTPEmulatorKind
    public let fps: Double
    public let source: any EmulatorFrameSource
    let model: PTPEmulatorModel
    private let group: any EventLoopGroup
    private let host: String
    private let requestedPort: Int
    private let requestedEventPort: Int
    private let requestedLiveViewPort: Int
    private let servers = Mutex<[any Channel]>([])
    private let ports = Mutex<(command: Int, event: Int, liveView: Int)>((0, 0, 0))
    private let connections = PTPConnectionSet()
    private let guid: [UInt8] = (0..<16).map { _ in UInt8.random(in: 0...255) }
    let logger: Logger

    /// - Parameters:
    ///   - port: PTP/IP port (Fujifilm: command port); 0 = any free port.
    ///   - eventPort, liveViewPort: Fujifilm only; 0 = any free port.
    ///   - nikonUseEx: Nikon advertises and serves GetLiveViewImageEx 0x9428 (else only 0x9203, D600 layout).
    ///   - nikonExHeaderSize: 0x9428 header size (1024 ZR, 512 first Z bodies).
    ///   - fujiBody: which Fujifilm numbering and write path (`FujiEmulatedBody`).
    ///   - sonyTransferNeedsSDIOSession: Sony takes contents transfer (its card) only in a session
    ///     opened with SDIO_OpenSession mode 1 or 2.
    public init(kind: PTPEmulatorKind, host: String = "127.0.0.1", port: Int = 0, eventPort: Int = 0,
                liveViewPort: Int = 0, fps: Double = 30, source: any EmulatorFrameSource, group: any EventLoopGroup,
                nikonUseEx: Bool = true, nikonExHeaderSize: Int = 1024, fujiBody: FujiEmulatedBody = .xh1,
                sonyTransferNeedsSDIOSession: Bool = false, mood: EmulatorMood = .prompt,
                logger: Logger = Logger(label: "livegate.emulator.ptp")) {
        self.kind = kind
        self.host = host
        self.requestedPort = port
        self.requestedEventPort = eventPort
        self.requestedLiveViewPort = liveViewPort
        self.fps = fps
        self.source = source
        self.group = group
        self.logger = logger
        self.model = PTPEmulatorModel(kind: kind, source: source, fps: fps, nikonUseEx: nikonUseEx,
                                      nikonExHeaderSize: nikonExHeaderSize, fujiBody: fujiBody,
                                      sonyTransferNeedsSDIOSession: sonyTransferNeedsSDIOSession, mood: mood)
    }

    public var vendor: String { kind.rawValue }

    private func bind(port: Int, _ make: @escaping @Sendable () -> any ChannelHandler) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { ch in
                ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(make()) }
            }
            .bind(host: host, port: port).get()
    }

    @discardableResult
    public func start() async throws -> Int {
        let model = self.model, conns = connections, guid = self.guid
        if kind == .fuji {
            let cmd = try await bind(port: requestedPort) { FujiCommandHandler(model: model, connections: conns, guid: guid) }
            servers.withLock { $0.append(cmd) }
            let evt = try await bind(port: requestedEventPort) { FujiEventHandler(connections: conns) }
            servers.withLock { $0.append(evt) }
            let lv = try await bind(port: requestedLiveViewPort) { FujiLiveViewHandler(model: model, connections: conns) }
            servers.withLock { $0.append(lv) }
            ports.withLock {
                $0 = (cmd.localAddress?.port ?? 0, evt.localAddress?.port ?? 0, lv.localAddress?.port ?? 0)
            }
        } else {
            let name = kind == .nikon ? "Nikon" : kind == .canon ? "Canon EOS" : "Sony"
            let ch = try await bind(port: requestedPort) {
                PTPIPResponderHandler(model: model, connections: conns, guid: guid, name: name)
            }
            servers.withLock { $0.append(ch) }
            let p = ch.localAddress?.port ?? 0
            ports.withLock { $0 = (p, p, p) }
        }
        return port
    }

    /// The bound PTP/IP (or Fujifilm command) port; 0 before `start`.
    public var port: Int { ports.withLock { $0.command } }
    /// Fujifilm event and live-view ports.
    public var eventPort: Int { ports.withLock { $0.event } }
    public var liveViewPort: Int { ports.withLock { $0.liveView } }

    /// `ptpip://127.0.0.1:P?vendor=…` (Fujifilm: `fuji://127.0.0.1:P?event=E&liveview=L`).
    public var cameraURL: String {
        let p = ports.withLock { $0 }
        if kind == .fuji { return "fuji://\(host):\(p.command)?event=\(p.event)&liveview=\(p.liveView)" }
        return "ptpip://\(host):\(p.command)?vendor=\(kind.rawValue)"
    }

    public func stop() async {
        let all = servers.withLock { v -> [any Channel] in
            let o = v
            v = []
            return o
        }
        for ch in all { try? await ch.close() }
        connections.closeAll()
        model.connectionLost()
    }

    /// Every operation received so far, in order.
    public var requests: [PTPRequestRecord] { model.log.withLock { $0 } }
    /// The stills a Nikon emulator shot into SDRAM, oldest first.
    public var capturedStills: [[UInt8]] { model.state.withLock { $0.nikonStills } }
    /// A shot with the button on the body: Canon, Nikon and Fujifilm write it to the card (Canon
    /// and Nikon announce it), Sony hands it to the PC at 0xFFFFC001.
    public func shootOnBody() {
        switch kind {
        case .canon: model.canonShoot()
        case .nikon: model.nikonShootOnBody()
        case .sony: model.sonyShoot()
        case .fuji: model.fujiShoot()
        }
    }
    /// The stills a Canon or Fujifilm emulator wrote to its card (remote releases and, Canon, body
    /// shots), oldest first.
    public var canonShots: [[UInt8]] { model.state.withLock { $0.canonShots } }
    /// Canon PC target: shots still waiting for the PC (no TransferComplete yet).
    public var canonShotsWaitingForPC: Int { model.state.withLock { $0.canonPC.count } }
    /// Canon PC target: the next `n` reads (GetPartialObject) of shots waiting for the PC fail.
    public func failNextTransfers(_ n: Int) { model.state.withLock { $0.canonFailTransfers = n } }
    /// Canon PC target: the next `n` TransferComplete are not accepted (the shot stays).
    public func failNextTransferCompletes(_ n: Int) { model.state.withLock { $0.canonFailTransferCompletes = n } }
    /// The stills a Sony PTP emulator shot for the PC (remote and body shots), oldest first.
    public var sonyShots: [[UInt8]] { model.state.withLock { $0.sonyShots } }
    /// Sony PTP: shots still waiting at 0xFFFFC001 (not fetched by the client yet).
    public var sonyShotsWaiting: Int { model.state.withLock { $0.sonyMemory.count } }
    /// True while a Nikon picture waits in SDRAM (not deleted by the client yet).
    public var sdramOccupied: Bool { model.state.withLock { $0.nikonSDRAM != nil } }
    /// A file of the emulated card by its path (`/DCIM/100NIKON/DSC_0001.JPG`).
    public func cardFile(_ path: String) -> [UInt8]? { model.cardFile(path) }
    /// Forgets the request log.
    public func clearRequests() { model.log.withLock { $0.removeAll() } }
    /// Live-view frames served (or pushed) so far.
    public var framesSent: Int { model.state.withLock { $0.framesSent } }
    /// Live-view requests answered busy (too fast, or stalled).
    public var busyReplies: Int { model.state.withLock { $0.busyReplies } }
    /// Open TCP connections (command, event, live view).
    public var openConnections: Int { connections.count }
    /// Nikon: live view ends by itself after this many frames (GetLiveViewImg then answers 0xA00B
    /// NotLiveView until StartLiveView); 0 = never.
    public var nikonLiveViewDropEvery: Int {
        get { model.state.withLock { $0.nikonDropEvery } }
        set { model.state.withLock { $0.nikonDropEvery = newValue } }
    }
    /// Current raw value of a property (for tests).
    public func propertyValue(_ code: UInt16) -> Int64? { model.state.withLock { $0.props[code]?.value } }

    public func inject(_ fault: EmulatorFault) {
        switch fault {
        case .disconnect:
            connections.closeAll()
            model.connectionLost()
        case .stall(let seconds):
            model.state.withLock { $0.stallUntil = MonotonicClock.nanos() + UInt64(max(0, seconds) * 1e9) }
        case .dropEveryNthDatagram, .none:
            model.state.withLock { $0.stallUntil = 0 }
        }
    }

    // MARK: Reference objects (for checks against recorded camera bytes)

    /// The live-view object this emulator serves for frame `index`: Nikon 0x9428 (or 0x9203) object,
    /// Sony 0xFFFFC002 dataset, Canon GetViewFinderData payload, Fujifilm port-55742 frame.
    public func liveViewObject(index: Int) -> [UInt8] {
        let f = source.frame(index: index)
        var out: [UInt8] = []
        switch kind {
        case .nikon: return model.nikonObject(index: index, ex: model.nikonUseEx)
        case .sony: SonyPTPDataset.append(jpeg: f.jpeg, focalFrame: sonyFocalFrame(f), to: &out)
        case .canon: CanonEVFData.append(jpeg: f.jpeg, to: &out)
        case .fuji: FujiLiveViewFrame.append(jpeg: f.jpeg, to: &out)
        }
        return out
    }

    /// The FocusInfoEx (0xD1D3) value the Canon emulator reports for frame `index`.
    public func canonFocusInfo(index: Int) -> CanonFocusInfo { model.canonFocusInfo(index: index) }
}
