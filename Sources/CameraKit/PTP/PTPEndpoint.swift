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

/// Where a PTP/IP camera is: `ptpip://HOST[:15740][?vendor=nikon|canon|sony-ptp|fuji]`.
///
/// Fujifilm uses its own ports (command 55740, event 55741, live view 55742); they can be
/// overridden for emulators: `ptpip://HOST:CMD?vendor=fuji&event=P&liveview=P`, or the same with
/// the `fuji://` scheme (vendor implied). Other query keys: `fps` (poll-rate cap, default 30).
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

    public static let defaultPort = 15740
    public static let fujiPorts = (command: 55740, event: 55741, liveView: 55742)

    public init(host: String, port: Int = PTPEndpoint.defaultPort, vendor: PTPVendor? = nil,
                eventPort: Int? = nil, liveViewPort: Int? = nil, maxFPS: Double = 30) {
        self.host = host
        self.port = port
        self.vendor = vendor
        self.eventPort = eventPort ?? (vendor == .fuji ? Self.fujiPorts.event : port)
        self.liveViewPort = liveViewPort ?? Self.fujiPorts.liveView
        self.maxFPS = maxFPS
    }

    public var description: String {
        var s = "ptpip://\(host):\(port)"
        var q: [String] = []
        if let v = vendor { q.append("vendor=\(v.rawValue)") }
        if vendor == .fuji { q.append("event=\(eventPort)"); q.append("liveview=\(liveViewPort)") }
        if maxFPS != 30 { q.append("fps=\(maxFPS)") }
        if !q.isEmpty { s += "?" + q.joined(separator: "&") }
        return s
    }

    /// Parses `ptpip://…`, `fuji://…`, `nikon://…`, `canon://…`, `sony-ptp://…`; nil when not one of these.
    public static func parse(url text: String) -> PTPEndpoint? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        var vendor: PTPVendor?
        switch scheme {
        case "ptpip", "ptp": vendor = nil
        case "fuji", "fujifilm": vendor = .fuji
        case "nikon": vendor = .nikon
        case "canon": vendor = .canon
        case "sony-ptp", "sonyptp": vendor = .sony
        default: return nil
        }
        var rest = text[schemeEnd.upperBound...]
        var query: [String: String] = [:]
        if let q = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { query[kv[0].lowercased()] = String(kv[1]) }
            }
            rest = rest[..<q]
        }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = String(rest)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]) else { return nil }
            port = p
            host = String(host[..<colon])
        }
        guard !host.isEmpty else { return nil }
        if let v = query["vendor"] {
            guard let pv = PTPVendor(rawValue: v.lowercased()) ?? (v.lowercased() == "sony" ? .sony : nil) else { return nil }
            vendor = pv
        }
        func intQ(_ k: String) -> Int? { query[k].flatMap { Int($0) } }
        if let p = port, !(1...65535).contains(p) { return nil }
        let fps = query["fps"].flatMap(Double.init) ?? 30
        guard fps > 0 else { return nil }
        let defaultPort = vendor == .fuji ? fujiPorts.command : defaultPort
        return PTPEndpoint(host: host, port: port ?? defaultPort, vendor: vendor,
                           eventPort: intQ("event") ?? intQ("eventport"),
                           liveViewPort: intQ("liveview") ?? intQ("lv") ?? intQ("liveviewport"), maxFPS: fps)
    }
}
