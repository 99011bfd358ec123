/// `livegate inspect`: parses a capture and prints one JSON object per complete frame.
///
/// Usage from the CLI:
/// ```swift
/// let bytes: [UInt8] = … // the whole FILE
/// let format = formats.first { $0.rawValue == arg } ?? WireFormat.guess(bytes, among: formats)!
/// let summary = Inspector.run(format: format, input: bytes,
///                             emit: { print($0) },                 // stdout, one JSON line each
///                             diagnostic: { printToStderr($0) })   // stderr
/// // exit status 0 after a parse, also with zero frames
/// ```
/// Output contract (shared/conformance/README.md): keys in the order index, jpegOffset, jpegSize,
/// jpegSHA256, width, height, af, pts, seq; AF boxes `{"x","y","w","h","kind","state"}`.
/// Damaged frames are reported through `diagnostic` (with the byte offset and what was expected)
/// and skipped; parsing resumes at the next valid frame.
public enum Inspector {
    /// Totals of one run.
    public struct Summary: Sendable, Hashable {
        public var frames = 0
        public var issues = 0
        public var droppedFrames = 0
    }

    /// Parses `input` as `format`; `emit` receives each JSON line (without newline), `diagnostic`
    /// each problem as `"offset N: what was expected"`.
    @discardableResult
    public static func run(format: WireFormat, input: [UInt8], emit: (String) -> Void,
                           diagnostic: (String) -> Void) -> Summary {
        var summary = Summary()
        var index = 0
        let sink: (WireEvent) -> Void = { ev in
            switch ev {
            case .frame(let f):
                emit(jsonLine(index: index, frame: f))
                index += 1
            case .issue(let i):
                diagnostic(i.description)
            }
        }
        var parser = format.parser()
        var pcapIssues = 0
        switch format.input {
        case .byteStream:
            parser.feed(input[...], sink)
        case .udpDatagrams:
            let reader: PcapReader
            do { reader = try PcapReader(input) } catch {
                guard let records = DatagramDump.records(input) else {
                    diagnostic("offset 0: not a pcap file nor an RFC 4571 datagram dump (\(error))")
                    return Summary(frames: 0, issues: 1, droppedFrames: 0)
                }
                for r in records { parser.feed(r, sink) }
                break
            }
            var pcap = reader
            while true {
                let rec: PcapRecord?
                do { rec = try pcap.next() } catch {
                    diagnostic("\(error)")
                    pcapIssues += 1
                    break
                }
                guard let rec else { break }
                guard let udp = PacketDecoder.udp(linkType: pcap.linkType, frame: rec.data) else { continue }
                parser.feed(udp.payload, sink)
            }
        }
        parser.finish(sink)
        var stats = parser.stats
        stats.issues += pcapIssues
        summary.frames = index
        summary.issues = stats.issues
        summary.droppedFrames = stats.droppedFrames
        return summary
    }

    /// The JSON object for one frame (contract key order), without a trailing newline.
    public static func jsonLine(index: Int, frame f: WireFrame) -> String {
        var s = "{\"index\": \(index), \"jpegOffset\": "
        s += f.jpegOffset.map { String($0) } ?? "null"
        s += ", \"jpegSize\": \(f.jpeg.count), \"jpegSHA256\": \"\(SHA256.hex(f.jpeg))\""
        s += ", \"width\": \(f.width), \"height\": \(f.height), \"af\": ["
        for (i, a) in f.af.enumerated() {
            if i > 0 { s += ", " }
            s += "{\"x\": \(a.pixels.x), \"y\": \(a.pixels.y), \"w\": \(a.pixels.width), \"h\": \(a.pixels.height)"
            s += ", \"kind\": \"\(a.kind.rawValue)\", \"state\": \"\(a.state.rawValue)\"}"
        }
        s += "], \"pts\": " + (f.pts.map { String($0) } ?? "null")
        s += ", \"seq\": " + (f.seq.map { String($0) } ?? "null") + "}"
        return s
    }
}
