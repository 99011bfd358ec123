public import LiveViewCore

/// Connection state of a camera, as the API reports it.
public enum CameraState: String, Sendable {
    case connecting
    case streaming
    case reconnecting
    case stopped
    case failed
}

/// What every vendor driver offers the gateway: frames into a hub, a state, and the control
/// channel in the common vocabulary.
public protocol CameraDriver: AnyObject, Sendable {
    /// The vendor family (e.g. "sony").
    var vendor: String { get }
    /// Current connection state.
    var state: CameraState { get }
    /// Why the last session ended or failed (nil before the first failure).
    var lastError: String? { get }
    /// Counters for the API and /metrics.
    var stats: DriverStats { get }
    /// Starts connecting and streaming into `hub`; reconnects with back-off until `stop()`.
    func start(hub: FrameHub)
    /// Stops streaming and closes the camera session.
    func stop() async
    /// Every supported property with its value and choices.
    func properties() async throws -> [CameraProperty]
    /// Sets one property; throws `CameraControlError`.
    func setProperty(_ name: PropertyName, to value: PropertyValue) async throws
    /// Touch-AF at a point in pixels of the camera's live-view JPEG.
    func touchFocus(x: Double, y: Double, imageWidth: Int, imageHeight: Int) async throws
    /// What the body is doing that holds the live view or makes it answer slowly, in words
    /// ("showing its card (Contents Transfer) …", "switching modes …"); nil when nothing.
    var activity: String? { get }
}

extension CameraDriver {
    public var activity: String? { nil }
}

/// A body's passing "busy" answers ("Not Available Now", DeviceBusy), for `CameraDriver.activity`:
/// what answered so, shown for `shownFor` after the latest one.
public final class BusyNotes: Sendable {
    private let latest = Mutex<(what: String, at: UInt64)?>(nil)
    private let shownFor: UInt64

    public init(shownFor: Duration = .seconds(3)) { self.shownFor = shownFor.nanoseconds }

    public func note(_ what: String) { latest.withLock { $0 = (what, MonotonicClock.nanos()) } }

    /// "switching modes (getSourceList: not ready yet); waiting for it", nil when none is recent.
    public var text: String? {
        guard let l = latest.withLock({ $0 }), MonotonicClock.elapsed(from: l.at, to: MonotonicClock.nanos()) < shownFor else { return nil }
        return "the camera is busy switching modes (\(l.what) answered not ready); waiting for it"
    }
}

/// The pauses between asking a busy body again: `first`, growing by `growth` up to `cap`, for at
/// most `patience` from its making. The Sony, PTP and Olympus drivers' "ask again while busy"
/// loops share it.
struct BusyBackoff {
    private let giveUp: ContinuousClock.Instant
    private var pause: Duration
    private let growth: Double
    private let cap: Duration

    init(first: Duration, growth: Double, cap: Duration, patience: Duration) {
        giveUp = .now + patience
        pause = first
        self.growth = growth
        self.cap = cap
    }

    /// Sleeps the next pause and returns true; false (at once) when it would end past the patience.
    mutating func wait() async throws -> Bool {
        guard ContinuousClock.now + pause < giveUp else { return false }
        try await Task.sleep(for: pause)
        pause = min(pause * growth, cap)
        return true
    }
}
