/// What every emulated camera offers: it listens on loopback, speaks its vendor's real protocol, and
/// can be told to misbehave for tests.
public protocol CameraEmulator: AnyObject, Sendable {
    /// Vendor name as used in `emulator:<vendor>` and `livegate emulate <vendor>`.
    var vendor: String { get }
    /// Starts listening; returns the bound (control) port.
    @discardableResult
    func start() async throws -> Int
    /// Stops listening and closes every connection.
    func stop() async
    /// The URL a user passes to `livegate run --camera`.
    var cameraURL: String { get }
    /// Frames sent so far.
    var framesSent: Int { get }
    /// Fault switch for tests.
    func inject(_ fault: EmulatorFault)
}

/// Faults an emulator can be told to produce.
public enum EmulatorFault: Sendable, Equatable {
    /// Drop every `n`-th datagram (UDP formats) or, for streams, nothing.
    case dropEveryNthDatagram(Int)
    /// Stop sending frames for this many seconds while keeping connections open.
    case stall(seconds: Double)
    /// Close every live-view connection now (the camera "disappears" and comes back).
    case disconnect
    /// Back to normal.
    case none
}
