import Foundation

/// Which PTP vendor dialect a camera speaks.
public enum PTPVendor: String, Sendable, CaseIterable {
    case nikon
    case canon
    case sony = "sony-ptp"
    case fuji

    /// Picks the vendor from DeviceInfo: VendorExtensionID (Nikon 0xA, Canon 0xB), else the
    /// manufacturer / extension description (Sony and Fujifilm report 6 = Microsoft/MTP).
    public static func identify(_ info: PTPDeviceInfo) -> PTPVendor? {
        switch info.vendorExtensionID {
        case 0x0A: return .nikon
        case 0x0B: return .canon
        default: break
        }
        let text = (info.manufacturer + " " + info.vendorExtensionDesc + " " + info.model).lowercased()
        if text.contains("nikon") { return .nikon }
        if text.contains("canon") { return .canon }
        if text.contains("sony") { return .sony }
        if text.contains("fujifilm") || text.contains("fuji") { return .fuji }
        return nil
    }
}

/// Where a Canon EOS saves what it shoots (CaptureDestination 0xD11C, ptp.md §8.3).
public enum PTPCaptureTarget: String, Sendable, CaseIterable {
    /// The body's own setting (the card); every shot is fetched from the card.
    case card
    /// The computer: the camera hands each shot over and keeps no copy (a body without a card).
    case pc
}

/// Where a PTP/IP camera is: `ptpip://HOST[:15740][?vendor=nikon|canon|sony-ptp|fuji]`.
///
/// Fujifilm uses its own ports (command 55740, event 55741, live view 55742); they can be
/// overridden for emulators: `ptpip://HOST:CMD?vendor=fuji&event=P&liveview=P`, or the same with
/// the `fuji://` scheme (vendor implied). Other query keys: `fps` (poll-rate cap, default 30) and,
/// Canon EOS only, `target=pc` (shots go to livegate, not to the card).
public struct PTPEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// Forced vendor; nil = decide from DeviceInfo.
    public var vendor: PTPVendor?
    /// Fujifilm event and live-view ports.
    public var eventPort: Int
    public var liveViewPort: Int
    /// Highest frame rate the driver polls at.
    public var maxFPS: Double
    /// Canon: where shots go (nil = the body's setting).
    public var captureTarget: PTPCaptureTarget?
    /// The camera speaks Fujifilm's TCP dialect from its first packet: `vendor=fuji`, or a generic
    /// URL that names Fujifilm's ports (`event=`/`liveview=`, or command port 55740). DeviceInfo
    /// still names the dialect of a generic one.
    public var fujiTransport: Bool

    public static let defaultPort = 15740
    public static let fujiPorts = (command: 55740, event: 55741, liveView: 55742)

    public init(host: String, port: Int = PTPEndpoint.defaultPort, vendor: PTPVendor? = nil,
                eventPort: Int? = nil, liveViewPort: Int? = nil, maxFPS: Double = 30, captureTarget: PTPCaptureTarget? = nil) {
        self.host = host
        self.port = port
        self.vendor = vendor
        let fuji = vendor == .fuji
            || (vendor == nil && (eventPort != nil || liveViewPort != nil || port == Self.fujiPorts.command))
        self.fujiTransport = fuji
        self.eventPort = eventPort ?? (fuji ? Self.fujiPorts.event : port)
        self.liveViewPort = liveViewPort ?? Self.fujiPorts.liveView
        self.maxFPS = maxFPS
        self.captureTarget = captureTarget
    }

    public var description: String {
        var s = "ptpip://\(host):\(port)"
        var q: [String] = []
        if let v = vendor { q.append("vendor=\(v.rawValue)") }
        if fujiTransport { q.append("event=\(eventPort)"); q.append("liveview=\(liveViewPort)") }
        if maxFPS != 30 { q.append("fps=\(maxFPS)") }
        if let t = captureTarget { q.append("target=\(t.rawValue)") }
        if !q.isEmpty { s += "?" + q.joined(separator: "&") }
        return s
    }

    /// The vendor a URL scheme implies (`ptpip` implies none: DeviceInfo decides); nil for other schemes.
    public static func schemeVendor(_ scheme: String) -> PTPVendor?? {
        switch scheme {
        case "ptpip", "ptp": return .some(nil)
        case "fuji", "fujifilm": return .fuji
        case "nikon": return .nikon
        case "canon": return .canon
        case "sony-ptp", "sonyptp": return .sony
        default: return nil
        }
    }

    /// The endpoint a camera URL names. Options: `vendor` (ptpip only), `fps`, `target` (Canon), and
    /// for Fujifilm `event`/`eventport`, `liveview`/`lv`/`liveviewport`.
    public init(url: CameraURL) throws(CameraURLError) {
        guard var vendor = Self.schemeVendor(url.scheme) else {
            throw CameraURLError(url.description, "'\(url.scheme)' is not a PTP/IP scheme")
        }
        try url.checkOptions(allowed: ["vendor", "fps", "event", "eventport", "liveview", "lv", "liveviewport", "target"])
        if let (_, v) = url.option("vendor") {
            guard let pv = PTPVendor(rawValue: v.lowercased()) ?? (v.lowercased() == "sony" ? .sony : nil) else {
                throw CameraURLError(url.description, "option 'vendor=\(v)' must be one of: \(PTPVendor.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            vendor = pv
        }
        var fps = 30.0
        if let (_, v) = url.option("fps") {
            guard let f = Double(v), f > 0, f <= 120 else {
                throw CameraURLError(url.description, "option 'fps=\(v)' must be a number in (0, 120]")
            }
            fps = f
        }
        var target: PTPCaptureTarget?
        if let (_, v) = url.option("target") {
            guard let t = PTPCaptureTarget(rawValue: v.lowercased()) else {
                throw CameraURLError(url.description, "option 'target=\(v)' must be one of: \(PTPCaptureTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            // Only Canon EOS has a capture destination to set; a generic ptpip:// camera is checked
            // once it says what it is.
            if let other = vendor, other != .canon {
                throw CameraURLError(url.description, "option 'target' is for Canon EOS cameras (CaptureDestination), not \(other.rawValue)")
            }
            target = t
        }
        let event = try url.portOption("event", "eventport")
        let liveView = try url.portOption("liveview", "lv", "liveviewport")
        let defaultPort = vendor == .fuji ? Self.fujiPorts.command : Self.defaultPort
        self.init(host: try url.host(default: nil), port: url.port ?? defaultPort, vendor: vendor, eventPort: event,
                  liveViewPort: liveView, maxFPS: fps, captureTarget: target)
    }

    /// Parses `ptpip://…`, `fuji://…`, `nikon://…`, `canon://…`, `sony-ptp://…`; nil when not one of these.
    public static func parse(url text: String) -> PTPEndpoint? {
        guard let url = CameraURL(text) else { return nil }
        return try? PTPEndpoint(url: url)
    }
}
