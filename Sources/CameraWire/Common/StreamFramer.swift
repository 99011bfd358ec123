/// What a container format decides about the bytes at the start of a window.
enum FramingStep {
    /// The window must hold at least this many bytes before a decision is possible.
    case needMore(Int)
    /// Consume this many bytes silently (padding, unknown container types, resync scanning).
    case skip(Int)
    /// Consume this many bytes and report a problem; `frameLost` counts a dropped frame.
    case damaged(Int, WireIssue, frameLost: Bool)
    /// Consume this many bytes; the frame was written into the `frame` argument.
    case frame(Int)
    /// Emit the frame written into `frame` (one the format held back) and consume nothing: the
    /// same bytes are stepped again, now that the held frame is out.
    case heldFrame
}

/// A byte-stream container format: looks at the start of a window and decides.
protocol StreamContainerFormat {
    /// `w` starts at a container boundary (or where resync scanning continues); `offset` is the
    /// absolute stream offset of `w.startIndex`. `needMore` values must stay ≤ `bufferBound`.
    mutating func step(_ w: ArraySlice<UInt8>, offset: Int, frame: inout WireFrame) -> FramingStep
    /// A frame the format still holds at the end of the input (written into `frame`), if any.
    mutating func flush(frame: inout WireFrame) -> Bool
    /// The most bytes a `needMore` may ask for.
    var bufferBound: Int { get }
}

/// The incremental driver shared by the byte-stream parsers (sony-remote, sony-ptp, nikon-lv,
/// canon-evf, fuji-lv): parses straight from the caller's chunk while containers are whole in it
/// (frames are then slices of that chunk), and copies into a private buffer only the bytes of a
/// container that straddles two chunks. The buffer never holds more than `bufferBound` bytes.
struct StreamFramer<Format: StreamContainerFormat> {
    var format: Format
    private(set) var buffer: [UInt8] = []
    private var bufferOffset = 0
    private(set) var streamOffset = 0
    private var frame = WireFrame.empty
    var stats = WireStats()

    init(format: Format) {
        self.format = format
    }

    private mutating func apply(_ r: FramingStep, _ emit: (WireEvent) -> Void) -> Int {
        switch r {
        case .needMore:
            return 0
        case .skip(let n):
            stats.skippedBytes += n
            return max(n, 1)
        case .damaged(let n, let issue, let lost):
            stats.issues += 1
            if lost { stats.droppedFrames += 1 }
            emit(.issue(issue))
            return max(n, 1)
        case .frame(let n):
            stats.frames += 1
            emit(.frame(frame))
            // Let go of the bytes the frame pointed into (the caller's chunk or `buffer`): a slice
            // kept here would make the caller's next reuse of its array, or our next `buffer` edit,
            // copy the whole array (one heap allocation per frame).
            frame.jpeg = []
            return max(n, 1)
        case .heldFrame:
            stats.frames += 1
            emit(.frame(frame))
            frame.jpeg = []
            return 0
        }
    }

    /// A step that would consume more than the window holds waits for those bytes instead.
    @inline(__always) static func checked(_ r: FramingStep, _ available: Int) -> FramingStep {
        switch r {
        case .skip(let n) where n > available, .damaged(let n, _, _) where n > available, .frame(let n) where n > available:
            return .needMore(n)
        default:
            return r
        }
    }

    mutating func feed(_ chunk: ArraySlice<UInt8>, _ emit: (WireEvent) -> Void) {
        var rest = chunk
        var restOffset = streamOffset
        streamOffset += chunk.count
        while true {
            if buffer.isEmpty {
                // Fast path: whole containers straight from the caller's bytes.
                while !rest.isEmpty {
                    let r = Self.checked(format.step(rest, offset: restOffset, frame: &frame), rest.count)
                    if case .needMore = r { break }
                    let n = min(apply(r, emit), rest.count)
                    rest = rest.dropFirst(n)
                    restOffset += n
                }
                if rest.isEmpty { return }
                buffer.append(contentsOf: rest)
                bufferOffset = restOffset
                return
            }
            let r = Self.checked(format.step(buffer[...], offset: bufferOffset, frame: &frame), buffer.count)
            if case .needMore(let want) = r {
                if buffer.count >= format.bufferBound {
                    // A format asked for more than its bound: drop a byte and rescan.
                    let n = apply(.damaged(1, WireIssue(offset: bufferOffset, error: .sizeOverLimit(
                        field: "container", declared: want, limit: format.bufferBound)), frameLost: false), emit)
                    buffer.removeFirst(n)
                    bufferOffset += n
                    continue
                }
                if rest.isEmpty { return }
                let need = min(max(want, buffer.count + 1), format.bufferBound)
                let take = min(max(need - buffer.count, 1), rest.count)
                buffer.append(contentsOf: rest.prefix(take))
                rest = rest.dropFirst(take)
                restOffset += take
                continue
            }
            let n = min(apply(r, emit), buffer.count)
            buffer.removeFirst(n)
            bufferOffset += n
            if buffer.isEmpty { restOffset = bufferOffset }
        }
    }

    /// End of input: a frame the format held back comes out; a container still incomplete is
    /// reported (never emitted); state is reset.
    mutating func finish(_ emit: (WireEvent) -> Void) {
        if format.flush(frame: &frame) { _ = apply(.heldFrame, emit) }
        if !buffer.isEmpty {
            var want = buffer.count + 1
            if case .needMore(let w) = format.step(buffer[...], offset: bufferOffset, frame: &frame) { want = w }
            stats.issues += 1
            emit(.issue(WireIssue(offset: bufferOffset,
                                  error: .truncated(needed: want, available: buffer.count))))
            buffer.removeAll(keepingCapacity: true)
        }
    }
}

extension StreamFramer: Sendable where Format: Sendable {}

extension StreamContainerFormat {
    /// Formats that never hold a frame back.
    mutating func flush(frame: inout WireFrame) -> Bool { false }
}

extension StreamFramer {
    /// Absolute offset of the first byte not yet consumed.
    var consumedOffset: Int { streamOffset - buffer.count }
}
