import CameraEmulators
import CameraKit
import ServiceLifecycle
import Synchronization

/// One camera as a service of the application's `ServiceGroup`: it lives while the camera streams
/// (its driver connecting and reconnecting, its in-process emulator serving) and ends when the
/// group shuts down gracefully, when the group is cancelled, or when the camera is removed (a
/// reload); its driver and emulator stop then. It ends without an error, so the group carries on
/// without it (`successTerminationBehavior: .ignore`).
///
/// Cameras are added to the running group by the gateway (`addServiceUnlessShutdown`), after the
/// services the group was built with, so a graceful shutdown stops every camera first, then the
/// HTTP server, then the gateway (which finishes the recordings and stops the outputs).
struct CameraService: Service {
    let id: String
    let stopper: CameraStopper

    func run() async {
        for await _ in stopper.removed.cancelOnGracefulShutdown() {}
        await stopper.stop()
    }
}

/// Stops a camera's driver and in-process emulator once, whoever asks first: its service on
/// shutdown, a reload that removes the camera, or the gateway's own stop (when it runs without a
/// service group, as in tests).
final class CameraStopper: Sendable {
    private let driver: any CameraDriver
    private let emulator: (any CameraEmulator)?
    private let driverStopped = Atomic(false)
    private let emulatorStopped = Atomic(false)
    /// Finishes when the camera is removed (its service then ends).
    let removed: AsyncStream<Void>
    private let removal: AsyncStream<Void>.Continuation

    init(driver: any CameraDriver, emulator: (any CameraEmulator)?) {
        self.driver = driver
        self.emulator = emulator
        (removed, removal) = AsyncStream.makeStream(of: Void.self)
    }

    /// Stops the driver, then the emulator (each only once, whoever asks).
    func stop() async {
        await stopDriver()
        await stopEmulator()
    }

    /// Stops the driver (a removal then detaches the outputs before the emulator goes).
    func stopDriver() async {
        guard !driverStopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await driver.stop()
    }

    /// Stops the in-process emulator, if the camera is one.
    func stopEmulator() async {
        guard let emulator, !emulatorStopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await emulator.stop()
    }

    /// Ends the camera's service (after a removal stopped the camera).
    func serviceEnds() { removal.finish() }
}
