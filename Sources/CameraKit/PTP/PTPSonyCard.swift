import CameraWire
import Foundation
import LiveViewCore

/// The card of a Sony body over PTP (ptp.md §8.4, whose details are UNCONFIRMED): the body shows
/// its card to the standard operations (§8.1) only in its contents-transfer mode,
/// SDIO_SetContentsTransferMode 0x9212 (p1 2 = the PC chooses the contents, p2 1 = on / 0 off,
/// p3 0), ready once ContentTransferEnable 0xD295 reads 1. Two readings are handled: bodies that
/// switch inside any session, and bodies that take 0x9212 only in a session opened with
/// SDIO_OpenSession 0x9210 in mode 2 (remote control with transfer), for which the driver opens
/// its next sessions that way (`PTPDriver.sonyOpening`).
extension SonyPTPSession {
    static let contentTransferEnable: UInt16 = 0xD295

    enum TransferEntry: Sendable {
        case entered
        /// OperationNotSupported in a session that was not opened for transfer, from a body that
        /// lists SDIO_OpenSession: a session opened that way may take it.
        case needsTransferSession
    }

    var inTransfer: Bool { transferOn.withLock { $0 } }

    /// Turns contents-transfer mode on and waits (≤ 5 s) until the body says the card can be read.
    /// Anything failing after the body said yes turns the mode off again.
    func enterContentsTransfer() async throws -> TransferEntry {
        if inTransfer { return .entered }
        let r = try await call(PTPOperation.sonySetContentsTransferMode, [2, 1, 0])
        guard r.ok else {
            if r.code == PTPResponse.deviceBusy {
                throw CameraControlError.unavailable("the camera is busy; try again")
            }
            if r.code == PTPResponse.operationNotSupported && !openedForTransfer && offersTransferSession {
                return .needsTransferSession
            }
            throw CameraControlError.notSupported(
                "the card over Sony PTP: the camera refused contents-transfer mode (0x\(String(r.code, radix: 16, uppercase: true)))")
        }
        transferOn.withLock { $0 = true }
        do {
            let by = ContinuousClock.now + .seconds(5)
            while true {
                guard let enabled = try await allDescs()[Self.contentTransferEnable] else {
                    // A body without the property: give it a moment, then try the card.
                    try await Task.sleep(for: .milliseconds(300))
                    return .entered
                }
                if enabled.current == 1 { return .entered }
                guard ContinuousClock.now < by else {
                    throw CameraControlError.camera(code: 0, message: "the camera did not enable contents transfer within 5 s")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        } catch {
            await leaveContentsTransfer()
            throw error
        }
    }

    /// Back to shooting: contents-transfer mode off (live view and releases again).
    func leaveContentsTransfer() async {
        guard transferOn.withLock({ on in defer { on = false }; return on }) else { return }
        _ = try? await call(PTPOperation.sonySetContentsTransferMode, [2, 0, 0])
    }
}

/// How the driver opens a Sony's sessions.
enum SonyOpening: Sendable {
    /// OpenSession (what live view and capture need).
    case plain
    /// SDIO_OpenSession in mode 2: the body took contents transfer only in such a session.
    case forTransfer
    /// The body refused such a session, or showed no live view in one: ordinary sessions, no card.
    case transferRefused
}

extension PTPDriver {
    /// Card work on a Sony: `body` runs with the body in contents-transfer mode (entered on the
    /// first card operation, left by the session loop once no card work ran for 3 s), holding the
    /// session's shot lock (no read of 0xFFFFC001 meanwhile) and the lease's lock (no capture). A
    /// body that takes the mode only in a session opened for transfer gets one: the session is
    /// ended, the next one opened that way (≤ 15 s), and the card tried again there.
    func withSonyCard<T: Sendable>(_ body: (SonyPTPSession) async throws -> T) async throws -> T {
        try await sonyCard.run(linger: .seconds(3)) {
            let sony = try await readySony(after: nil)
            if let done = try await inTransfer(sony, body) { return done }
            guard sonyOpening.withLock({ $0 }) == .plain else {
                throw CameraControlError.notSupported("the card over Sony PTP: the camera refused contents-transfer mode")
            }
            logger.notice("ptp \(endpoint): contents transfer refused in an ordinary session; reconnecting in a session opened for transfer")
            sonyOpening.withLock { $0 = .forTransfer }
            sony.close()
            let next = try await readySony(after: sony)
            guard next.openedForTransfer, let done = try await inTransfer(next, body) else {
                sonyOpening.withLock { $0 = .transferRefused }
                throw CameraControlError.notSupported("the card over Sony PTP: the camera refused contents-transfer mode, also in a session opened for transfer")
            }
            return done
        }
    }

    /// `body` in contents transfer on `sony`; nil when the body wants a session opened for transfer.
    private func inTransfer<T: Sendable>(_ sony: SonyPTPSession, _ body: (SonyPTPSession) async throws -> T) async throws -> T? {
        try await sony.shotLock.withLock {
            do {
                guard case .entered = try await sony.enterContentsTransfer() else { return nil }
                sonyCard.entered()
                return try await body(sony)
            } catch let e where ptpConnectionBroke(e) {
                sony.broken.store(true, ordering: .releasing)
                throw e
            }
        }
    }

    /// The current Sony session once its setup is done (≤ 15 s), other than `old`.
    private func readySony(after old: SonyPTPSession?) async throws -> SonyPTPSession {
        var found: SonyPTPSession?
        _ = await lifecycle.waitUntil(within: .seconds(15)) {
            guard let s = sessionBox.withLock({ $0 }) else { return false }
            guard let sony = s as? SonyPTPSession else { return true }
            guard sony !== old, sony.ready.load(ordering: .acquiring), !sony.broken.load(ordering: .acquiring) else { return false }
            found = sony
            return true
        }
        guard let found else {
            throw CameraControlError.unavailable(old == nil ? "camera not connected" : "the camera did not come back within 15 s")
        }
        return found
    }

    /// A capture on a Sony: holding the lease's lock (card work waits for it, and the capture for
    /// card work under way), contents transfer is left first, so the release is taken.
    func captureOnSony(_ sony: SonyPTPSession, autofocus: Bool) async throws -> [CameraImage] {
        try await sonyCard.serial.withLock {
            if sony.inTransfer {
                await sony.leaveContentsTransfer()
                sonyCard.left()
            }
            return try await sony.captureToPC(autofocus: autofocus, bodySink: imageSink.withLock { $0 })
        }
    }
}

extension PTPDriver {
    /// Waits (≤ `within`) until a session is open and set up — a reconnect under way, a session
    /// reopened for transfer, which shows no frames while the card is shown — or the driver is
    /// stopped or failed.
    func sessionUp(within: Duration) async {
        _ = await lifecycle.waitUntil(within: within) {
            guard let s = sessionBox.withLock({ $0 }) else { return false }
            return (s as? SonyPTPSession)?.ready.load(ordering: .acquiring) ?? true
        }
    }
}
