public import CameraEmulators
public import CameraKit
public import CameraWire

/// PTP/IP cameras: one plug-in per dialect (Nikon, Canon, Sony PTP, Fujifilm) sharing the PTP
/// driver, and the generic `ptpip://` that picks the dialect from DeviceInfo.
public struct PTPCameraVendor: CameraVendor {
    public enum Dialect: Sendable {
        case generic, nikon, canon, sonyPTP, fuji
    }

    public let dialect: Dialect

    public init(_ dialect: Dialect) { self.dialect = dialect }

    public var name: String {
        switch dialect {
        case .generic: return "ptpip"
        case .nikon: return "nikon"
        case .canon: return "canon"
        case .sonyPTP: return "sony-ptp"
        case .fuji: return "fuji"
        }
    }

    public var summary: String {
        switch dialect {
        case .generic: return "PTP/IP (dialect from DeviceInfo)"
        case .nikon: return "Nikon PTP/IP"
        case .canon: return "Canon EOS PTP/IP"
        case .sonyPTP: return "Sony PTP/IP"
        case .fuji: return "Fujifilm PTP/IP"
        }
    }

    public var schemes: [String] { [name] }

    public var urlSyntax: String {
        switch dialect {
        case .generic: return "ptpip://HOST[:PORT][?vendor=nikon|canon|sony-ptp|fuji&fps=N&target=card|pc] (default port 15740; target: Canon only)"
        case .canon: return "canon://HOST[:PORT][?fps=N&target=card|pc] (default port 15740; target=pc: shots go to livegate, not the card)"
        case .fuji: return "fuji://HOST[:PORT][?event=PORT&liveview=PORT&fps=N] (default ports 55740/55741/55742)"
        default: return "\(name)://HOST[:PORT][?fps=N] (default port 15740)"
        }
    }

    public var capabilities: CameraCapabilities {
        switch dialect {
        case .nikon: return [.liveView, .afAreas, .touchAF, .events, .files, .shutter, .transfer]
        case .canon: return [.liveView, .afAreas, .touchAF, .events, .files, .shutter, .transfer]
        // Before DeviceInfo says which dialect: what every dialect offers (`resolved` gives the rest).
        case .generic: return [.liveView, .afAreas, .events, .files, .shutter, .transfer]
        case .fuji: return [.liveView, .afAreas, .touchAF, .events, .files, .shutter, .transfer]
        case .sonyPTP: return [.liveView, .afAreas, .events, .files, .shutter, .transfer]
        }
    }

    public var properties: [PropertyName] { PropertyName.allCases }

    public var wireFormats: [WireFormat] {
        switch dialect {
        case .generic: return []
        case .nikon: return [.nikonLV]
        case .canon: return [.canonEVF]
        case .sonyPTP: return [.sonyPTP]
        case .fuji: return [.fujiLV]
        }
    }

    var emulatorKind: PTPEmulatorKind? {
        switch dialect {
        case .generic: return nil
        case .nikon: return .nikon
        case .canon: return .canon
        case .sonyPTP: return .sony
        case .fuji: return .fuji
        }
    }

    public var hasEmulator: Bool { emulatorKind != nil }

    public func check(_ url: CameraURL) throws(CameraURLError) {
        _ = try PTPEndpoint(url: url)
    }

    public func makeDriver(_ url: CameraURL, context: DriverContext) throws -> any CameraDriver {
        PTPDriver(endpoint: try PTPEndpoint(url: url), group: context.group, cameraIndex: context.cameraIndex,
                  logger: context.logger)
    }

    public func makeEmulator(_ r: EmulatorRequest) throws -> (any CameraEmulator)? {
        guard let kind = emulatorKind else { return nil }
        return PTPEmulator(kind: kind, host: r.host, port: r.port, fps: r.fps,
                           source: try TestPatternSource(width: r.width, height: r.height), group: r.group, mood: r.mood)
    }

    /// `ptpip://` without `vendor=`: the dialect DeviceInfo named (the PTP driver's `vendor`, which
    /// is `ptp` until it knows).
    public func resolved(driverVendor: String) -> any CameraVendor {
        guard dialect == .generic, let v = PTPVendor(rawValue: driverVendor) else { return self }
        switch v {
        case .nikon: return PTPCameraVendor(.nikon)
        case .canon: return PTPCameraVendor(.canon)
        case .sony: return PTPCameraVendor(.sonyPTP)
        case .fuji: return PTPCameraVendor(.fuji)
        }
    }

    public func unsupportedReason(_ capability: CameraCapabilities) -> String {
        if dialect == .generic && capability == .touchAF {
            return "touch-AF: the camera's PTP dialect is not known yet (it is read from DeviceInfo when the camera connects)"
        }
        if capability == .touchAF && dialect == .sonyPTP { return "touch-AF over Sony PTP/IP: no operation is known" }
        return genericUnsupportedReason(capability)
    }
}
