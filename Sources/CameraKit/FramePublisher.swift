public import CameraWire
public import LiveViewCore

/// Turns a parser's `WireFrame` into a pooled `Frame` and publishes it: the one copy from the
/// parser's bytes into the frame's buffer, the metadata, the driver's counters. Used by every
/// driver on its I/O thread.
public struct FramePublisher: Sendable {
    public let hub: FrameHub
    public let pool: FramePool
    public let stats: DriverStats
    public let cameraIndex: Int

    public init(hub: FrameHub, pool: FramePool, stats: DriverStats, cameraIndex: Int) {
        self.hub = hub
        self.pool = pool
        self.stats = stats
        self.cameraIndex = cameraIndex
    }

    /// Publishes one frame. `timeBase` says whether `wf.pts` is the camera's presentation time
    /// (recorded as is) or absent/unusable (the arrival clock is used).
    /// `inspect` sees the filled frame just before it is published.
    public func publish(_ wf: WireFrame, timeBase: Frame.TimeBase? = nil, inspect: (Frame) -> Void = { _ in }) {
        let now = MonotonicClock.nanos()
        let frame = pool.take()
        wf.jpeg.withUnsafeBytes { frame.setJPEG($0) }
        frame.width = wf.width
        frame.height = wf.height
        frame.rtpCompatible = wf.info.rtpCompatibility == .compatible
        frame.sequence = wf.seq.map { UInt64(truncatingIfNeeded: $0) }
        let base = timeBase ?? (wf.pts == nil ? .arrival : .camera)
        frame.cameraPTS = base == .camera ? wf.pts : nil
        frame.timeBase = base
        frame.arrivalNanos = now
        frame.cameraIndex = cameraIndex
        frame.afAreas.append(contentsOf: wf.af)
        stats.frame(bytes: frame.count, at: now)
        inspect(frame)
        hub.publish(frame)
    }
}
