/// Incremental RFC 9112 chunked-body decoder: hands out the data runs (slices of the input, with
/// their absolute input offsets) and skips chunk-size lines, extensions and trailers.
///
/// State is a few integers; nothing is buffered. A malformed size line or a missing CRLF after
/// chunk data is reported once, then the decoder resynchronises at the next CRLF.
public struct HTTPChunkedDecoder: Sendable {
    enum State: Sendable {
        case size(value: UInt64, digits: Int)
        case ext
        case sizeLF(UInt64)
        case data(UInt64)
        case dataCR
        case dataLF
        case trailer(lineLength: Int, sawCR: Bool)
        case done
        case resync(sawCR: Bool)
    }
    var state = State.size(value: 0, digits: 0)
    private(set) var offset = 0
    /// True once the terminating zero-size chunk has been read.
    public var isDone: Bool { if case .done = state { return true } else { return false } }

    public init() {}

    @inline(__always) static func hexValue(_ c: UInt8) -> UInt64? {
        switch c {
        case 0x30...0x39: return UInt64(c - 0x30)
        case 0x41...0x46: return UInt64(c - 0x41 + 10)
        case 0x61...0x66: return UInt64(c - 0x61 + 10)
        default: return nil
        }
    }

    /// Decodes the next bytes of the chunked body. `run` receives each piece of chunk data with the
    /// absolute offset of its first byte; `issue` receives framing errors.
    public mutating func decode(_ chunk: ArraySlice<UInt8>, run: (ArraySlice<UInt8>, Int) -> Void,
                                issue: (WireIssue) -> Void) {
        var i = chunk.startIndex
        let base = offset - chunk.startIndex
        offset += chunk.count
        while i < chunk.endIndex {
            let c = chunk[i]
            switch state {
            case .size(let v, let d):
                if let h = Self.hexValue(c), d < 15 {
                    state = .size(value: v << 4 | h, digits: d + 1)
                } else if d > 0 && c == 0x0D {
                    state = .sizeLF(v)
                } else if d > 0 && (c == 0x3B || c == 0x20 || c == 0x09) {
                    state = .ext
                    pendingSize = v
                } else {
                    fail(base + i, "a chunk-size line (hex digits, CRLF)", issue)
                }
                i += 1
            case .ext:
                if c == 0x0D { state = .sizeLF(pendingSize) }
                i += 1
            case .sizeLF(let v):
                if c == 0x0A {
                    state = v == 0 ? .trailer(lineLength: 0, sawCR: false) : .data(v)
                } else {
                    fail(base + i, "LF after the chunk size", issue)
                }
                i += 1
            case .data(let left):
                let n = Int(min(left, UInt64(chunk.endIndex - i)))
                run(chunk[i..<(i + n)], base + i)
                i += n
                state = left == UInt64(n) ? .dataCR : .data(left - UInt64(n))
            case .dataCR:
                if c == 0x0D { state = .dataLF; i += 1 } else { fail(base + i, "CRLF after chunk data", issue) }
            case .dataLF:
                if c == 0x0A { state = .size(value: 0, digits: 0); i += 1 } else {
                    fail(base + i, "CRLF after chunk data", issue)
                }
            case .trailer(let len, let cr):
                if cr && c == 0x0A {
                    state = len == 0 ? .done : .trailer(lineLength: 0, sawCR: false)
                } else if c == 0x0D {
                    state = .trailer(lineLength: len, sawCR: true)
                } else {
                    state = .trailer(lineLength: len + 1, sawCR: false)
                }
                i += 1
            case .done:
                return
            case .resync(let cr):
                if cr && c == 0x0A { state = .size(value: 0, digits: 0) } else { state = .resync(sawCR: c == 0x0D) }
                i += 1
            }
        }
    }

    private var pendingSize: UInt64 = 0

    private mutating func fail(_ at: Int, _ expected: String, _ issue: (WireIssue) -> Void) {
        issue(WireIssue(offset: at, error: .badMagic(expected: expected)))
        state = .resync(sawCR: false)
    }

    /// Appends `data` as one chunk (`HEX CRLF data CRLF`) — the serializer side, for emulators/tests.
    public static func appendChunk(_ data: some Collection<UInt8>, to out: inout [UInt8]) {
        out.append(contentsOf: String(data.count, radix: 16, uppercase: true).utf8)
        out.append(0x0D); out.append(0x0A)
        out.append(contentsOf: data)
        out.append(0x0D); out.append(0x0A)
    }

    /// Appends the last chunk (`0 CRLF CRLF`).
    public static func appendLastChunk(to out: inout [UInt8]) {
        out.append(contentsOf: [0x30, 0x0D, 0x0A, 0x0D, 0x0A])
    }
}
