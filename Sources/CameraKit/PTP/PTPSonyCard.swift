import CameraWire
import Foundation
import LiveViewCore

/// The card of a Sony body over PTP (ptp.md §8.4, whose details are UNCONFIRMED): the body shows
/// its card to the standard operations (§8.1) only in its contents-transfer mode,
/// SDIO_SetContentsTransferMode 0x9212 (p1 2 = the PC chooses the contents, p2 1 = on / 0 = off,
/// p3 0), ready once ContentTransferEnable 0xD295 reads 1. Two readings are handled: bodies that
/// switch inside any session, and bodies that take 0x9212 only in a session opened with
/// SDIO_OpenSession 0x9210 in mode 2 (remote control with transfer), for which the driver opens
/// its next sessions that way (`PTPDriver.sonyOpening`).
extension SonyPTPSession {
    static let contentTransferEnable: UInt16 = 0xD295

    enum TransferEntry: Sendable {
        case entered
        /// Refused in a session that was not opened for transfer: a session opened with 0x9210
        /// in mode 2 may take it.
        case needsTransferSession(code: UInt16)
    }

    var inTransfer: Bool { transferOn.withLock { $0 } }

    /// Turns contents-transfer mode on and waits (≤ 5 s) until the body says the card can be read.
    func enterContentsTransfer() async throws -> TransferEntry {
        if inTransfer { return .entered }
        let r = try await call(PTPOperation.sonySetContentsTransferMode, [2, 1, 0])
        guard r.ok else {
            if !openedForTransfer && r.code != PTPResponse.deviceBusy { return .needsTransferSession(code: r.code) }
            throw CameraControlError.notSupported(
                "the card over Sony PTP: the camera refused contents-transfer mode (0x\(String(r.code, radix: 16, uppercase: true)))")
        }
        transferOn.withLock { $0 = true }
        let by = ContinuousClock.now + .seconds(5)
        while true {
            let enabled = try await allDescs()[Self.contentTransferEnable]
            guard let enabled else {
                // A body without the property: give it a moment, then try the card.
                try await Task.sleep(for: .milliseconds(300))
                return .entered
            }
            if enabled.current == 1 { return .entered }
            guard ContinuousClock.now < by else {
                await leaveContentsTransfer()
                throw CameraControlError.camera(code: 0, message: "the camera did not enable contents transfer within 5 s")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Back to shooting: contents-transfer mode off (live view and releases again).
    func leaveContentsTransfer() async {
        guard transferOn.withLock({ $0 }) else { return }
        transferOn.withLock { $0 = false }
        _ = try? await call(PTPOperation.sonySetContentsTransferMode, [2, 0, 0])
    }
}

/// How the driver opens a Sony's sessions.
enum SonyOpening: Sendable {
    /// OpenSession (what live view and capture need).
    case plain
    /// SDIO_OpenSession in mode 2: the body took contents transfer only in such a session.
    case forTransfer
    /// The body refused such a session too: its card is out of reach.
    case transferRefused
}

extension PTPDriver {
    /// Card work on a Sony: `body` runs with the body in contents-transfer mode (entered on the
    /// first card operation, left by the session loop once no card work ran for 3 s). A body that
    /// takes the mode only in a session opened for transfer gets one: the session is ended and the
    /// next one opened that way (≤ 15 s), then the card is tried again.
    func withSonyCard<T: Sendable>(_ body: (SonyPTPSession) async throws -> T) async throws -> T {
        try await sonyCard.run(linger: .seconds(3)) {
            var sony = try currentSony()
            if case .needsTransferSession(let code) = try await sony.enterContentsTransfer() {
                guard sonyOpening.withLock({ $0 }) == .plain else {
                    throw CameraControlError.notSupported(
                        "the card over Sony PTP: the camera refused contents-transfer mode (0x\(String(code, radix: 16, uppercase: true)))")
                }
                logger.notice("ptp \(endpoint): contents transfer refused (0x\(String(code, radix: 16))); reconnecting in a session opened for transfer")
                sonyOpening.withLock { $0 = .forTransfer }
                let old = sony
                old.close()
                let by = ContinuousClock.now + .seconds(15)
                while true {
                    if let next = try? currentSony(), next !== old, next.openedForTransfer || sonyOpening.withLock({ $0 }) == .transferRefused {
                        sony = next
                        break
                    }
                    guard ContinuousClock.now < by else {
                        throw CameraControlError.unavailable("the camera did not come back in a session opened for transfer within 15 s")
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
                guard case .entered = try await sony.enterContentsTransfer() else {
                    throw CameraControlError.notSupported("the card over Sony PTP: the camera refused contents-transfer mode")
                }
            }
            sonyCard.entered()
            return try await body(sony)
        }
    }

    private func currentSony() throws -> SonyPTPSession {
        guard let sony = try current() as? SonyPTPSession else { throw CameraControlError.unavailable("camera not connected") }
        return sony
    }

    /// A capture on a Sony showing its card: contents transfer is left first (after the card
    /// operation under way), so the release is taken.
    func leaveSonyTransfer(_ sony: SonyPTPSession) async {
        guard sonyCard.isOpen else { return }
        await sonyCard.serial.withLock {
            await sony.leaveContentsTransfer()
            sonyCard.left()
        }
    }
}
