public import CameraEmulators
public import CameraKit
public import CameraWire

/// The one list of vendor plug-ins, and lookups over it.
public enum Vendors {
    /// Every vendor, in the order help texts list them and discovery / format guessing try them.
    public static let all: [any CameraVendor] = [
        SonyRemoteVendor(),
        PanasonicVendor(),
        BanditVendor(),
        PTPCameraVendor(.generic),
        PTPCameraVendor(.nikon),
        PTPCameraVendor(.canon),
        PTPCameraVendor(.sonyPTP),
        PTPCameraVendor(.fuji),
        OlympusVendor(),
    ]

    /// Every URL scheme, canonical ones first.
    public static var schemes: [String] { all.map { $0.schemes[0] } }
    /// Vendors with an emulator.
    public static var emulatorNames: [String] { all.filter(\.hasEmulator).map(\.name) }
    /// Every wire format, vendor order.
    public static var wireFormats: [WireFormat] { all.flatMap(\.wireFormats) }
    /// Every SSDP recogniser, vendor order.
    public static var ssdpMatchers: [SSDPMatcher] { all.compactMap(\.ssdp) }

    public static func vendor(forScheme scheme: String) -> (any CameraVendor)? {
        let s = scheme.lowercased()
        return all.first { $0.schemes.contains(s) }
    }

    public static func vendor(named name: String) -> (any CameraVendor)? {
        all.first { $0.name == name.lowercased() }
    }

    public static func wireFormat(named name: String) -> WireFormat? {
        wireFormats.first { $0.rawValue == name }
    }

    /// Parses and checks a camera URL: the syntax, the scheme, then the vendor's options.
    public static func parse(_ text: String) throws(CameraURLError) -> (url: CameraURL, vendor: any CameraVendor) {
        let url = try CameraURL.parse(text)
        guard let vendor = vendor(forScheme: url.scheme) else {
            throw CameraURLError(text, "unknown scheme '\(url.scheme)'; supported: \(schemes.map { "\($0)://" }.joined(separator: ", "))")
        }
        try vendor.check(url)
        return (url, vendor)
    }

    /// Makes the emulator of `name`; nil when that vendor has none.
    public static func makeEmulator(named name: String, _ request: EmulatorRequest) throws -> (any CameraEmulator)? {
        try vendor(named: name)?.makeEmulator(request)
    }
}
