public import NIOCore
public import LiveViewCore

/// Which datagrams belong to the camera's live view: those from the camera's address and from the
/// one source port its stream uses (the session's peer). The port is learnt from the first
/// datagram of the session; another port is accepted only after the learnt one has been silent for
/// `takeover` (the camera restarted its stream), so datagrams forged from another port while the
/// camera streams never reach a viewer or a recording. Used on one event loop only.
public struct UDPSourceLock: Sendable {
    /// The camera's address (nil: any, when the camera was given by name).
    public let address: String?
    public let takeover: UInt64
    private(set) var port: Int?
    private var lastSeen: UInt64 = 0

    public init(address: String?, takeover: Duration = .seconds(2)) {
        self.address = address
        self.takeover = takeover.nanoseconds
    }

    /// True when the datagram is the camera's.
    public mutating func accepts(_ from: SocketAddress, now: UInt64 = MonotonicClock.nanos()) -> Bool {
        if let address {
            guard let ip = from.ipAddress, ip == address else { return false }
        }
        guard let p = from.port else { return false }
        if let port, port != p, now &- lastSeen < takeover { return false }
        port = p
        lastSeen = now
        return true
    }
}
