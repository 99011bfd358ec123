public import LiveViewCore
import JPEGKit

/// Olympus / OM System live view (olympus.md §6): RTP over UDP, one JPEG per frame cut into
/// consecutive packets. The first packet of a frame has X=1 and carries a header extension
/// (profile 0x0001) with TLV records of per-frame metadata; the last has M=1. The RTP timestamp is
/// the frame number, not a clock. Payloads are the raw JPEG bytes (no RFC 2435 header).
///
/// Everything here is pure: bytes in, values out. Every length read from the wire is checked
/// against the datagram before it is used; nothing traps on hostile input.
public enum OlympusRTP {
    /// The dynamic payload type the cameras use.
    public static let payloadType: UInt8 = 96
    /// The "version" (RFC 3550 profile-defined) field of the header extension.
    public static let extensionProfile: UInt16 = 0x0001
    /// Size of the RTP fixed header.
    public static let fixedHeaderSize = 12

    /// TLV function ids (olympus.md §6.3).
    public enum FunctionID {
        public static let frameSize: UInt16 = 1
        public static let afFrame: UInt16 = 2
        public static let mediaInfo: UInt16 = 3
        public static let rotation: UInt16 = 4
        public static let maxTakeNumber: UInt16 = 5
        public static let shutterSpeed: UInt16 = 8
        public static let aperture: UInt16 = 9
        public static let exposureCompensation: UInt16 = 10
        public static let iso: UInt16 = 12
        public static let exposureWarning: UInt16 = 16
        public static let focusInfo: UInt16 = 17
        public static let zoomInfo: UInt16 = 18
        /// facerecognize1 … facerecognize8 are 108 … 115.
        public static let firstFace: UInt16 = 108
        public static let lastFace: UInt16 = 115
        /// contrecview: the frame is a continuous-shooting preview, not live view.
        public static let continuousRecView: UInt16 = 200
    }

    /// The RTP fixed header of one packet.
    public struct Header: Sendable, Hashable {
        public var marker: Bool
        public var hasExtension: Bool
        public var payloadType: UInt8
        public var sequence: UInt16
        /// The frame number (same in every packet of a frame, +1 per frame, wraps).
        public var timestamp: UInt32
        public var ssrc: UInt32

        public init(marker: Bool, hasExtension: Bool, payloadType: UInt8 = OlympusRTP.payloadType, sequence: UInt16,
                    timestamp: UInt32, ssrc: UInt32) {
            self.marker = marker
            self.hasExtension = hasExtension
            self.payloadType = payloadType
            self.sequence = sequence
            self.timestamp = timestamp
            self.ssrc = ssrc
        }
    }

    /// TLV 2 (afframeinfo): the AF frame in live-view pixels, top-left + size.
    public struct AFFrame: Sendable, Hashable {
        /// AF result: 0 not performed, 1 success, 2 failure, ≥ 3 unsupported.
        public var colour: UInt32
        public var x: UInt32, y: UInt32, width: UInt32, height: UInt32

        public init(colour: UInt32, x: UInt32, y: UInt32, width: UInt32, height: UInt32) {
            self.colour = colour
            self.x = x; self.y = y; self.width = width; self.height = height
        }

        /// The area's state for a colour.
        public var state: AFState {
            switch colour {
            case 0: return .normal
            case 1: return .focused
            case 2: return .notFocused
            default: return .unknown
            }
        }
    }

    /// TLVs 108–115 (facerecognize1–8): a face in live-view pixels (0 = none).
    public struct Face: Sendable, Hashable {
        public var x: UInt16, y: UInt16, width: UInt16, height: UInt16
        public init(x: UInt16, y: UInt16, width: UInt16, height: UInt16) {
            self.x = x; self.y = y; self.width = width; self.height = height
        }
    }

    /// A num/den pair (TLV 8).
    public struct Fraction: Sendable, Hashable {
        public var numerator: UInt16, denominator: UInt16
        public init(_ numerator: UInt16, _ denominator: UInt16) {
            self.numerator = numerator
            self.denominator = denominator
        }
        /// Seconds (nil for a zero denominator).
        public var seconds: Double? { denominator == 0 ? nil : Double(numerator) / Double(denominator) }
    }

    /// TLV 8 (shutspeedvalue): slowest, fastest and current exposure time.
    public struct ShutterInfo: Sendable, Hashable {
        public var slowest: Fraction, fastest: Fraction, current: Fraction
        public init(slowest: Fraction, fastest: Fraction, current: Fraction) {
            self.slowest = slowest; self.fastest = fastest; self.current = current
        }
    }

    /// TLV 9 (focalvalue = aperture), F-numbers × 10, in the spec's order: maximum F, minimum F,
    /// current (0 when no lens).
    public struct ApertureInfo: Sendable, Hashable {
        public var maximum: UInt32, minimum: UInt32, current: UInt32
        public init(maximum: UInt32, minimum: UInt32, current: UInt32) {
            self.maximum = maximum; self.minimum = minimum; self.current = current
        }
    }

    /// TLV 10 (expcomp), EV × 10: maximum, minimum, current.
    public struct ExposureCompensationInfo: Sendable, Hashable {
        public var maximum: Int32, minimum: Int32, current: Int32
        public init(maximum: Int32, minimum: Int32, current: Int32) {
            self.maximum = maximum; self.minimum = minimum; self.current = current
        }
    }

    /// TLV 12 (isospeedvalue).
    public struct ISOInfo: Sendable, Hashable {
        /// Current (in auto: the effective) ISO; 0xFFFE = Low.
        public var current: UInt32
        public var auto: Bool
        public var extendedWarning: Bool
        public static let low: UInt32 = 0xFFFE
        public init(current: UInt32, auto: Bool, extendedWarning: Bool) {
            self.current = current; self.auto = auto; self.extendedWarning = extendedWarning
        }
    }

    /// TLV 17 (focusinfo) focus system.
    public enum FocusSystem: UInt16, Sendable, Hashable {
        case singleAF = 0
        case continuousAF = 1
        case manual = 2
    }

    /// TLV 18 (zoominfo), millimetres.
    public struct ZoomInfo: Sendable, Hashable {
        public var wide: UInt16, current: UInt16, tele: UInt16
        public init(wide: UInt16, current: UInt16, tele: UInt16) {
            self.wide = wide; self.current = current; self.tele = tele
        }
    }

    /// What one frame's header extension says. Absent TLVs are nil (faces: empty).
    public struct Metadata: Sendable, Hashable {
        /// TLV 1: JPEG bytes of this frame (0 = extension only).
        public var frameSize: UInt32?
        public var afFrame: AFFrame?
        /// TLV 3: raw bits (card mounted, not full, protected, error, writing).
        public var mediaInfo: UInt32?
        /// TLV 4: EXIF orientation (1, 3, 6, 8).
        public var rotation: UInt32?
        /// TLV 5: remaining shots.
        public var maxTakeNumber: UInt32?
        public var shutter: ShutterInfo?
        public var aperture: ApertureInfo?
        public var exposureCompensation: ExposureCompensationInfo?
        public var iso: ISOInfo?
        /// TLV 16: exposure warning (high 16 bits) and metering warning (low 16 bits).
        public var exposureWarning: UInt32?
        /// TLV 17 raw focus-system value (see `focusSystem`).
        public var focusSystemRaw: UInt16?
        public var zoom: ZoomInfo?
        /// TLVs 108–115 with a non-zero size, in id order.
        public var faces: [Face] = []
        /// TLV 200 present: a continuous-shooting preview (its u32 = JPEG size).
        public var continuousRecView: UInt32?

        public init() {}

        public var focusSystem: FocusSystem? { focusSystemRaw.flatMap(FocusSystem.init(rawValue:)) }

        /// Clears every field, keeping the faces array's capacity.
        public mutating func reset() {
            frameSize = nil; afFrame = nil; mediaInfo = nil; rotation = nil; maxTakeNumber = nil
            shutter = nil; aperture = nil; exposureCompensation = nil; iso = nil; exposureWarning = nil
            focusSystemRaw = nil; zoom = nil; continuousRecView = nil
            faces.removeAll(keepingCapacity: true)
        }
    }

    /// One parsed packet: where its header extension and payload lie in the datagram.
    public struct Packet: Sendable, Hashable {
        public var header: Header
        /// Index range of the TLV records (inside the datagram's indices); nil without X.
        public var extensionRange: Range<Int>?
        /// The extension's profile field (nil without X).
        public var extensionProfile: UInt16?
        /// Index range of the payload (JPEG bytes) in the datagram.
        public var payloadRange: Range<Int>
    }

    /// Parses the RTP fixed header, CSRCs, the extension's bounds and padding. Errors: `.truncated`
    /// (short datagram), `.badMagic` (not RTP version 2), `.badField` (wrong payload type, padding or
    /// extension longer than the datagram).
    public static func parsePacket(_ d: ArraySlice<UInt8>) -> Result<Packet, WireError> {
        let b = d.startIndex
        guard d.count >= fixedHeaderSize else { return .failure(.truncated(needed: fixedHeaderSize, available: d.count)) }
        let v0 = d[b], v1 = d[b + 1]
        guard v0 >> 6 == 2 else { return .failure(.badMagic(expected: "RTP version 2 (first byte 0b10……)")) }
        let pt = v1 & 0x7F
        guard pt == payloadType else {
            return .failure(.badField("RTP payload type \(pt), expected \(payloadType): packet dropped"))
        }
        let header = Header(marker: v1 & 0x80 != 0, hasExtension: v0 & 0x10 != 0, payloadType: pt,
                            sequence: d.be16(b + 2), timestamp: d.be32(b + 4), ssrc: d.be32(b + 8))
        var end = d.endIndex
        if v0 & 0x20 != 0 {
            // Padding: the last byte counts the padding bytes, itself included.
            let pad = Int(d[end - 1])
            guard pad >= 1, pad <= d.count - fixedHeaderSize else {
                return .failure(.badField("RTP padding of \(pad) bytes does not fit the datagram"))
            }
            end -= pad
        }
        var p = b + fixedHeaderSize + 4 * Int(v0 & 0x0F)
        guard p <= end else { return .failure(.truncated(needed: p - b, available: end - b)) }
        var ext: Range<Int>?
        var profile: UInt16?
        if header.hasExtension {
            guard end - p >= 4 else { return .failure(.truncated(needed: p - b + 4, available: end - b)) }
            profile = d.be16(p)
            let words = Int(d.be16(p + 2))
            guard 4 * words <= end - p - 4 else {
                return .failure(.badField("header extension of \(words) words (\(4 * words) bytes) runs past the datagram (\(end - p - 4) bytes left)"))
            }
            ext = (p + 4)..<(p + 4 + 4 * words)
            p += 4 + 4 * words
        }
        return .success(Packet(header: header, extensionRange: ext, extensionProfile: profile, payloadRange: p..<end))
    }

    /// Decodes the TLV records in `d[range]` into `m` (reset first). Unknown ids are skipped by
    /// their length; known ids shorter than their layout are ignored. A record whose length runs
    /// past the extension is an error (the metadata is then unreliable and the frame is dropped).
    public static func decodeTLVs(_ d: ArraySlice<UInt8>, _ range: Range<Int>, into m: inout Metadata) -> WireError? {
        m.reset()
        var p = range.lowerBound
        let end = range.upperBound
        while p < end {
            guard end - p >= 4 else {
                return .badField("TLV header truncated: \(end - p) bytes left in the extension")
            }
            let id = d.be16(p)
            let words = Int(d.be16(p + 2))
            let v = p + 4
            guard 4 * words <= end - v else {
                return .badField("TLV id \(id) declares \(words) words, only \((end - v) / 4) left in the extension")
            }
            decode(id: id, words: words, d, at: v, into: &m)
            p = v + 4 * words
        }
        return nil
    }

    private static func decode(id: UInt16, words: Int, _ d: ArraySlice<UInt8>, at v: Int, into m: inout Metadata) {
        func s32(_ i: Int) -> Int32 { Int32(bitPattern: d.be32(i)) }
        switch id {
        case FunctionID.frameSize where words >= 1: m.frameSize = d.be32(v)
        case FunctionID.afFrame where words >= 5:
            m.afFrame = AFFrame(colour: d.be32(v), x: d.be32(v + 4), y: d.be32(v + 8), width: d.be32(v + 12),
                                height: d.be32(v + 16))
        case FunctionID.mediaInfo where words >= 1: m.mediaInfo = d.be32(v)
        case FunctionID.rotation where words >= 1: m.rotation = d.be32(v)
        case FunctionID.maxTakeNumber where words >= 1: m.maxTakeNumber = d.be32(v)
        case FunctionID.shutterSpeed where words >= 3:
            m.shutter = ShutterInfo(slowest: Fraction(d.be16(v), d.be16(v + 2)), fastest: Fraction(d.be16(v + 4), d.be16(v + 6)),
                                    current: Fraction(d.be16(v + 8), d.be16(v + 10)))
        case FunctionID.aperture where words >= 3:
            m.aperture = ApertureInfo(maximum: d.be32(v), minimum: d.be32(v + 4), current: d.be32(v + 8))
        case FunctionID.exposureCompensation where words >= 3:
            m.exposureCompensation = ExposureCompensationInfo(maximum: s32(v), minimum: s32(v + 4), current: s32(v + 8))
        case FunctionID.iso where words >= 3:
            m.iso = ISOInfo(current: d.be32(v), auto: d.be16(v + 4) == 1, extendedWarning: d.be32(v + 8) == 1)
        case FunctionID.exposureWarning where words >= 1: m.exposureWarning = d.be32(v)
        case FunctionID.focusInfo where words >= 1: m.focusSystemRaw = d.be16(v)
        case FunctionID.zoomInfo where words >= 3:
            m.zoom = ZoomInfo(wide: d.be16(v + 2), current: d.be16(v + 4), tele: d.be16(v + 6))
        case FunctionID.firstFace...FunctionID.lastFace where words >= 2:
            let f = Face(x: d.be16(v), y: d.be16(v + 2), width: d.be16(v + 4), height: d.be16(v + 6))
            if f.width > 0 && f.height > 0 { m.faces.append(f) }
        case FunctionID.continuousRecView where words >= 1: m.continuousRecView = d.be32(v)
        default: break
        }
    }

    /// True when `d` looks like the first packet of an Olympus live-view frame: RTP v2, PT 96,
    /// X=1, no CSRC, extension profile 0x0001 whose records end where a JPEG `FF D8` starts
    /// (used by `WireFormat.guess`).
    public static func looksLikeFirstPacket(_ d: ArraySlice<UInt8>) -> Bool {
        let b = d.startIndex
        guard d.count >= 18, d[b] & 0xDF == 0x90, d[b + 1] & 0x7F == payloadType, d.be16(b + 12) == extensionProfile
        else { return false }
        let js = 16 + 4 * Int(d.be16(b + 14))
        return JPEGScanner.hasSOI(d, at: b + js)
    }

    // MARK: Serializing

    /// Appends the RTP fixed header (V=2, no padding, no CSRC).
    public static func appendHeader(_ h: Header, to out: inout [UInt8]) {
        out.append(0x80 | (h.hasExtension ? 0x10 : 0))
        out.append((h.marker ? 0x80 : 0) | (h.payloadType & 0x7F))
        out.putBE16(h.sequence)
        out.putBE32(h.timestamp)
        out.putBE32(h.ssrc)
    }

    /// Appends the header extension (profile, length, TLVs) for `m`, TLVs in the order
    /// 1, 2, 3, 4, 5, 8, 9, 10, 12, 16, 17, 18, faces (108…), 200; absent fields are left out.
    public static func appendExtension(_ m: Metadata, to out: inout [UInt8]) {
        var tlv: [UInt8] = []
        func record(_ id: UInt16, _ words: UInt16, _ body: (inout [UInt8]) -> Void) {
            tlv.putBE16(id)
            tlv.putBE16(words)
            body(&tlv)
        }
        if let v = m.frameSize { record(FunctionID.frameSize, 1) { $0.putBE32(v) } }
        if let a = m.afFrame {
            record(FunctionID.afFrame, 5) {
                $0.putBE32(a.colour); $0.putBE32(a.x); $0.putBE32(a.y); $0.putBE32(a.width); $0.putBE32(a.height)
            }
        }
        if let v = m.mediaInfo { record(FunctionID.mediaInfo, 1) { $0.putBE32(v) } }
        if let v = m.rotation { record(FunctionID.rotation, 1) { $0.putBE32(v) } }
        if let v = m.maxTakeNumber { record(FunctionID.maxTakeNumber, 1) { $0.putBE32(v) } }
        if let s = m.shutter {
            record(FunctionID.shutterSpeed, 3) {
                for f in [s.slowest, s.fastest, s.current] { $0.putBE16(f.numerator); $0.putBE16(f.denominator) }
            }
        }
        if let a = m.aperture {
            record(FunctionID.aperture, 3) { $0.putBE32(a.maximum); $0.putBE32(a.minimum); $0.putBE32(a.current) }
        }
        if let e = m.exposureCompensation {
            record(FunctionID.exposureCompensation, 3) {
                $0.putBE32(UInt32(bitPattern: e.maximum)); $0.putBE32(UInt32(bitPattern: e.minimum))
                $0.putBE32(UInt32(bitPattern: e.current))
            }
        }
        if let i = m.iso {
            record(FunctionID.iso, 3) {
                $0.putBE32(i.current); $0.putBE16(i.auto ? 1 : 0); $0.putBE16(0); $0.putBE32(i.extendedWarning ? 1 : 0)
            }
        }
        if let v = m.exposureWarning { record(FunctionID.exposureWarning, 1) { $0.putBE32(v) } }
        if let v = m.focusSystemRaw { record(FunctionID.focusInfo, 1) { $0.putBE16(v); $0.putBE16(0) } }
        if let z = m.zoom {
            record(FunctionID.zoomInfo, 3) { $0.putBE16(0); $0.putBE16(z.wide); $0.putBE16(z.current); $0.putBE16(z.tele); $0.putBE32(0) }
        }
        for (i, f) in m.faces.prefix(8).enumerated() {
            record(FunctionID.firstFace + UInt16(i), 2) {
                $0.putBE16(f.x); $0.putBE16(f.y); $0.putBE16(f.width); $0.putBE16(f.height)
            }
        }
        if let v = m.continuousRecView { record(FunctionID.continuousRecView, 1) { $0.putBE32(v) } }
        out.putBE16(extensionProfile)
        out.putBE16(UInt16(tlv.count / 4))
        out += tlv
    }
}
