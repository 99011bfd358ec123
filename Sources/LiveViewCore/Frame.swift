
/// One live-view frame: the camera's JPEG bytes in a pooled buffer, the camera's sequence number and
/// PTS when the vendor sends them, the gateway's arrival time, the image size from the JPEG's SOF and
/// the AF areas already translated into that JPEG's pixels.
///
/// Frames are reference counted by hand so that a pool can take them back without a heap allocation
/// per frame: whoever holds a frame calls `release()` once when done; `retain()` before handing it to
/// a second owner (a GStreamer buffer, a queue). The last release returns the frame to its pool.
/// A frame's fields are written only by its producer before it is published, and read-only afterwards.
/// Unchecked because it owns a C buffer (`storage`); the publish hand-over (the hub's lock) orders
/// the producer's writes before every reader.
public final class Frame: @unchecked Sendable {
    /// Storage for the JPEG bytes; `count` bytes from the start are valid.
    public private(set) var storage: UnsafeMutableRawBufferPointer
    /// Number of valid JPEG bytes.
    public private(set) var count: Int = 0
    /// The camera's sequence number, when it sends one.
    public var sequence: UInt64?
    /// The camera's presentation time in nanoseconds, when it sends one.
    public var cameraPTS: Int64?
    /// Which clock `presentationTime` comes from.
    public var timeBase: TimeBase = .arrival
    /// The gateway's monotonic clock when the frame's last byte arrived, in nanoseconds.
    public var arrivalNanos: UInt64 = 0
    /// Image size from the JPEG's SOF.
    public var width: Int = 0
    public var height: Int = 0
    /// AF areas in pixels of this JPEG, with the camera's own rectangles.
    public var afAreas: [AFArea] = []
    /// The id of the camera that produced the frame (set by the driver).
    public var cameraIndex: Int = 0
    /// True for the gateway's offline slate (shown while the camera is away): live outputs carry it,
    /// the recorder skips it.
    public var isSlate = false
    /// Clockwise degrees (0, 90, 180, 270) that turn the picture upright, when the camera says how
    /// it is held (Olympus' EXIF orientation). The outputs that decode (the picture branch: H.264,
    /// WebRTC, HLS, webcams) turn the picture and its AF areas; the camera's JPEG bytes (raw RTSP,
    /// MJPEG, recordings) stay as sent, and `afAreas` stay in their pixels.
    public var rotation: Int = 0
    /// Whether RFC 2435 (RTP/JPEG) carries these bytes unchanged, when the producer already walked
    /// the JPEG's headers (the drivers do); nil when unknown, and the raw outputs look themselves.
    public var rtpCompatible: Bool?

    private let refs = Atomic<Int>(1)
    let pool: FramePool?

    /// Where the recorder takes its timestamps from.
    public enum TimeBase: String, Sendable {
        /// The camera's own presentation time (Sony's packet timestamp, Bandit's video PTS).
        case camera
        /// The gateway's monotonic arrival clock.
        case arrival
    }

    init(capacity: Int, pool: FramePool?) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 16)
        self.pool = pool
        afAreas.reserveCapacity(8)
    }

    /// A free-standing frame (no pool) holding a copy of `bytes`.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(capacity: bytes.count, pool: nil)
        setJPEG(bytes)
    }

    deinit {
        storage.deallocate()
    }

    /// The JPEG bytes.
    @inlinable
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[0..<count])
    }

    /// Copies the JPEG bytes in, growing the storage when needed (only while warming up).
    public func setJPEG(_ bytes: some Collection<UInt8>) {
        reserve(bytes.count)
        let n = bytes.count
        if n > 0 {
            let done = bytes.withContiguousStorageIfAvailable { src in
                storage.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: n)
                return true
            }
            if done == nil {
                var i = 0
                for b in bytes {
                    storage[i] = b
                    i += 1
                }
            }
        }
        count = n
    }

    /// Copies raw bytes in.
    public func setJPEG(_ raw: UnsafeRawBufferPointer) {
        reserve(raw.count)
        if raw.count > 0 {
            storage.baseAddress!.copyMemory(from: raw.baseAddress!, byteCount: raw.count)
        }
        count = raw.count
    }

    /// Makes room for `n` bytes, keeping nothing.
    public func reserve(_ n: Int) {
        if n > storage.count {
            storage.deallocate()
            storage = .allocate(byteCount: n + n / 4, alignment: 16)
        }
    }

    /// Gives write access to the first `n` bytes (after `reserve`), and sets `count` to `n`.
    public func withWritableBytes<R>(count n: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        reserve(n)
        count = n
        return try body(UnsafeMutableRawBufferPointer(rebasing: storage[0..<n]))
    }

    func resetMetadata() {
        count = 0
        sequence = nil
        cameraPTS = nil
        timeBase = .arrival
        arrivalNanos = 0
        width = 0
        height = 0
        afAreas.removeAll(keepingCapacity: true)
        isSlate = false
        rotation = 0
        rtpCompatible = nil
    }

    /// Adds an owner.
    @inlinable
    public func retain() {
        retainCount()
    }

    @usableFromInline
    func retainCount() {
        refs.wrappingAdd(1, ordering: .relaxed)
    }

    /// Drops an owner; the last one returns the frame to its pool.
    public func release() {
        let old = refs.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue
        precondition(old > 0, "Frame released more often than retained")
        if old == 1 {
            if let pool {
                refs.store(1, ordering: .relaxed)
                pool.recycle(self)
            }
        }
    }

    /// Current number of owners (for tests and diagnostics).
    public var ownerCount: Int { refs.load(ordering: .relaxed) }
}
