import CameraEmulators
import CameraKit
import ServiceLifecycle
import LiveViewCore

/// One camera as a service of the application's `ServiceGroup`: it lives while the camera streams
/// (its driver connecting and reconnecting, its in-process emulator serving) and, on the group's
/// graceful shutdown or cancellation, stops the driver and then the emulator.
///
/// Cameras are added to the group by the gateway (`addServiceUnlessShutdown`), after the services
/// the group was built with, so a graceful shutdown stops every camera first, then the reloader,
/// the HTTP server and last the gateway (which finishes the recordings and stops the outputs; the
/// drivers are down by then, so the emulators may go before the outputs).
///
/// A camera removed by a reload is stopped at once by the gateway; its service then only waits for
/// the group's shutdown without doing anything. It does not end early: a service that ends while
/// the group shuts down others fails the whole group, and a reload can race a shutdown.
struct CameraService: Service {
    let id: String
    let stopper: CameraStopper
    var order: ShutdownOrder?

    func run() async {
        for await _ in stopper.removed.cancelOnGracefulShutdown() {}
        await stopper.stop()
        order?.note("camera \(id)")
        // Removed: idle until the group's graceful shutdown (or cancellation) reaches this service.
        try? await gracefulShutdown()
    }
}

/// Stops a camera's driver and in-process emulator once, whoever asks first: its service on
/// shutdown, a reload that removes the camera, or the gateway's own stop (when it runs without a
/// service group, as in tests). Every caller waits until that one stop has finished.
final class CameraStopper: Sendable {
    private let driver: any CameraDriver
    private let emulator: (any CameraEmulator)?
    private let driverStop = Mutex<(task: Task<Void, Never>, began: ContinuousClock.Instant)?>(nil)
    private let emulatorStop = Mutex<(task: Task<Void, Never>, began: ContinuousClock.Instant)?>(nil)
    /// Finishes when the camera is removed (its service then stops the camera and idles).
    let removed: AsyncStream<Void>
    private let removal: AsyncStream<Void>.Continuation

    init(driver: any CameraDriver, emulator: (any CameraEmulator)?) {
        self.driver = driver
        self.emulator = emulator
        (removed, removal) = AsyncStream.makeStream(of: Void.self)
    }

    /// Stops the driver, then the emulator.
    func stop() async {
        await stopDriver()
        await stopEmulator()
    }

    /// How long a caller waits for the driver to stop. A camera that stopped answering holds its
    /// request (and the driver's goodbyes) until their own timeouts, up to 10 s; the shutdown must
    /// end within 3 s, so the caller goes on and the stop finishes (or the process ends) behind it.
    static let driverStopLimit: Duration = .milliseconds(1500)

    /// Stops the driver (a removal then detaches the outputs before the emulator goes). False when
    /// the stop was still under way after `driverStopLimit`.
    @discardableResult
    func stopDriver() async -> Bool {
        let driver = self.driver
        return await Self.once(driverStop, atMost: Self.driverStopLimit) { await driver.stop() }
    }

    /// Stops the in-process emulator, if the camera is one.
    func stopEmulator() async {
        guard let emulator else { return }
        await Self.once(emulatorStop) { await emulator.stop() }
    }

    /// Tells the camera's service that the camera was removed.
    func wasRemoved() { removal.finish() }

    /// Runs `work` the first time and waits for that one run on every call.
    /// With `atMost`, waits no longer than that after the first call began it (false: still
    /// running), so a second caller does not wait the whole budget again.
    @discardableResult
    private static func once(_ slot: borrowing Mutex<(task: Task<Void, Never>, began: ContinuousClock.Instant)?>,
                             atMost limit: Duration? = nil, _ work: @escaping @Sendable () async -> Void) async -> Bool {
        let (task, began) = slot.withLock { t -> (Task<Void, Never>, ContinuousClock.Instant) in
            if let t { return t }
            let started = (task: Task { await work() }, began: ContinuousClock.now)
            t = started
            return started
        }
        guard let limit else {
            await task.value
            return true
        }
        let left = limit - began.duration(to: .now)
        return await waitForTask(task, atMost: max(left, .zero))
    }
}
