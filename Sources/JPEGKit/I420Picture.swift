public import LiveViewCore

/// The memory layout of a planar 4:2:0 (I420) picture, identical to GStreamer's default `I420`
/// layout for `video/x-raw,format=I420` (luma stride rounded up to 4, chroma stride to 4), so a
/// picture can be handed to an `appsrc` without repacking.
public struct I420Layout: Sendable, Hashable {
    /// Picture size in pixels.
    public let width: Int
    public let height: Int
    /// Bytes per luma row.
    public let yStride: Int
    /// Bytes per chroma (U or V) row.
    public let chromaStride: Int
    /// Chroma plane width and height in samples.
    public let chromaWidth: Int
    public let chromaHeight: Int
    /// Byte offsets of the U and V planes from the start of the buffer.
    public let uOffset: Int
    public let vOffset: Int
    /// Total bytes of the picture.
    public let byteCount: Int

    /// The layout of a picture of this size.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "empty picture")
        self.width = width
        self.height = height
        yStride = (width + 3) & ~3
        chromaWidth = (width + 1) / 2
        chromaStride = (((width + 1) & ~1) / 2 + 3) & ~3
        chromaHeight = (height + 1) / 2
        uOffset = yStride * ((height + 1) & ~1)
        vOffset = uOffset + chromaStride * chromaHeight
        byteCount = vOffset + chromaStride * chromaHeight
    }
}

/// A decoded picture in planar I420 with the metadata of the frame it came from. Pooled and
/// reference counted by hand like `Frame`: `retain()` before handing it to a second owner (a
/// GStreamer buffer), `release()` once when done; the last release returns it to its pool.
/// Unchecked because it owns a C buffer; it is written by one owner before it is handed on (through
/// a lock), and only read afterwards.
public final class I420Picture: @unchecked Sendable {
    /// Current layout (changes only while the picture is owned by one writer).
    public private(set) var layout: I420Layout
    private var storage: UnsafeMutableRawBufferPointer
    /// The arrival time (gateway monotonic clock, ns) of the source frame.
    public var arrivalNanos: UInt64 = 0
    /// The camera's sequence number of the source frame, when known.
    public var sequence: UInt64?
    /// The camera's PTS of the source frame, when known.
    public var cameraPTS: Int64?
    /// The source frame's AF areas (pixels of this picture); they also travel to GStreamer as
    /// `GstVideoRegionOfInterestMeta` ("af") on the buffers of the H.264/HLS/v4l2 pipelines.
    public var afAreas: [AFArea] = []

    private let refs = Atomic<Int>(1)
    private let pool: I420PicturePool?

    init(layout: I420Layout, pool: I420PicturePool?) {
        self.layout = layout
        self.pool = pool
        storage = .allocate(byteCount: layout.byteCount, alignment: 64)
    }

    /// A free-standing picture (no pool), filled with black.
    public convenience init(width: Int, height: Int) {
        self.init(layout: I420Layout(width: width, height: height), pool: nil)
        fill(y: 16, u: 128, v: 128)
    }

    deinit { storage.deallocate() }

    /// Picture size in pixels.
    public var width: Int { layout.width }
    public var height: Int { layout.height }

    /// Changes the size; keeps no pixels. Allocates only when the new picture is larger.
    public func resize(width: Int, height: Int) {
        guard width != layout.width || height != layout.height else { return }
        let l = I420Layout(width: width, height: height)
        if l.byteCount > storage.count {
            storage.deallocate()
            storage = .allocate(byteCount: l.byteCount, alignment: 64)
        }
        layout = l
    }

    /// The whole picture's bytes (`layout.byteCount`).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<layout.byteCount]) }
    /// Mutable access to the whole picture.
    public var mutableBytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[0..<layout.byteCount]) }

    /// Start of the luma plane.
    public var y: UnsafeMutablePointer<UInt8> { storage.baseAddress!.assumingMemoryBound(to: UInt8.self) }
    /// Start of the U (Cb) plane.
    public var u: UnsafeMutablePointer<UInt8> { y + layout.uOffset }
    /// Start of the V (Cr) plane.
    public var v: UnsafeMutablePointer<UInt8> { y + layout.vOffset }

    /// Fills all three planes with constant values.
    public func fill(y yv: UInt8, u uv: UInt8, v vv: UInt8) {
        let l = layout
        (y).update(repeating: yv, count: l.uOffset)
        (y + l.uOffset).update(repeating: uv, count: l.vOffset - l.uOffset)
        (y + l.vOffset).update(repeating: vv, count: l.byteCount - l.vOffset)
    }

    /// This picture becomes `source` turned `degrees` clockwise (90, 180 or 270; resized to the
    /// turned size, metadata copied, AF areas turned with it). Any other angle copies it as it is.
    public func rotate(from source: I420Picture, clockwise degrees: Int) {
        guard degrees == 90 || degrees == 180 || degrees == 270 else { return copy(from: source) }
        let w = source.width, h = source.height
        if degrees == 180 { resize(width: w, height: h) } else { resize(width: h, height: w) }
        let s = source.layout, d = layout
        Self.turn(source.y, s.yStride, w, h, into: y, d.yStride, degrees)
        Self.turn(source.u, s.chromaStride, s.chromaWidth, s.chromaHeight, into: u, d.chromaStride, degrees)
        Self.turn(source.v, s.chromaStride, s.chromaWidth, s.chromaHeight, into: v, d.chromaStride, degrees)
        copyMetadata(from: source)
        afAreas = source.afAreas.map { a in
            var r = a
            r.pixels = a.pixels.rotated(clockwise: degrees, width: w, height: h)
            return r
        }
    }

    /// One plane of `w`×`h` samples turned clockwise into `dst` (row by row of the destination).
    private static func turn(_ src: UnsafeMutablePointer<UInt8>, _ srcStride: Int, _ w: Int, _ h: Int,
                             into dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int, _ degrees: Int) {
        switch degrees {
        case 90:   // dst(x, y) = src(y, h - 1 - x); the destination is h wide, w high
            for row in 0..<w {
                let out = dst + row * dstStride
                for col in 0..<h { out[col] = src[(h - 1 - col) * srcStride + row] }
            }
        case 180:
            for row in 0..<h {
                let out = dst + row * dstStride, line = src + (h - 1 - row) * srcStride
                for col in 0..<w { out[col] = line[w - 1 - col] }
            }
        default:   // 270: dst(x, y) = src(w - 1 - y, x)
            for row in 0..<w {
                let out = dst + row * dstStride
                for col in 0..<h { out[col] = src[col * srcStride + (w - 1 - row)] }
            }
        }
    }

    /// Copies pixels and metadata from another picture (resizing this one).
    public func copy(from other: I420Picture) {
        resize(width: other.width, height: other.height)
        mutableBytes.baseAddress!.copyMemory(from: other.bytes.baseAddress!, byteCount: layout.byteCount)
        copyMetadata(from: other)
    }

    /// Takes another picture's arrival, sequence, camera PTS and AF areas.
    public func copyMetadata(from other: I420Picture) {
        arrivalNanos = other.arrivalNanos
        sequence = other.sequence
        cameraPTS = other.cameraPTS
        afAreas = other.afAreas
    }

    /// Takes a frame's arrival, sequence, camera PTS and AF areas.
    public func copyMetadata(from frame: Frame) {
        arrivalNanos = frame.arrivalNanos
        sequence = frame.sequence
        cameraPTS = frame.cameraPTS
        afAreas = frame.afAreas
    }

    /// The luma value at a pixel (for tests and diagnostics).
    public func luma(x: Int, y row: Int) -> UInt8 { y[row * layout.yStride + x] }
    /// The (U, V) values covering a pixel.
    public func chroma(x: Int, y row: Int) -> (u: UInt8, v: UInt8) {
        let i = (row / 2) * layout.chromaStride + x / 2
        return (u[i], v[i])
    }

    /// Adds an owner.
    public func retain() { refs.wrappingAdd(1, ordering: .relaxed) }

    /// Drops an owner; the last one returns the picture to its pool.
    public func release() {
        let old = refs.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue
        precondition(old > 0, "I420Picture released more often than retained")
        if old == 1, let pool {
            refs.store(1, ordering: .relaxed)
            pool.recycle(self)
        }
    }

    /// Current number of owners.
    public var ownerCount: Int { refs.load(ordering: .relaxed) }
}

/// A bounded pool of reusable pictures (a warm pool stops allocating).
public final class I420PicturePool: Sendable {
    private let free = Mutex<[I420Picture]>([])
    /// Pictures kept at most.
    public let capacity: Int
    private let allocatedCount = Atomic<Int>(0)

    /// A pool keeping at most `capacity` idle pictures.
    public init(capacity: Int = 8) {
        self.capacity = capacity
    }

    /// A picture of the given size with one owner (pixels undefined).
    public func take(width: Int, height: Int) -> I420Picture {
        if let p = free.withLock({ $0.popLast() }) {
            p.resize(width: width, height: height)
            return p
        }
        allocatedCount.wrappingAdd(1, ordering: .relaxed)
        return I420Picture(layout: I420Layout(width: width, height: height), pool: self)
    }

    func recycle(_ p: I420Picture) {
        free.withLock { list in
            if list.count < capacity { list.append(p) }
        }
    }

    /// Pictures this pool has allocated so far.
    public var allocated: Int { allocatedCount.load(ordering: .relaxed) }
}
