import JPEGKit
public import CameraEmulators
import CameraKit
import Logging
public import NIOCore

/// One camera family the gateway can drive: its URL scheme, default port, how to make its driver
/// and (when there is one) its emulator.
struct Vendor: Sendable {
    /// URL scheme (`sony`, `bandit`, …).
    var scheme: String
    var defaultPort: Int
    /// Checks a URL's options before anything starts (throws a clear reason).
    var validate: @Sendable (CameraURL) throws(CameraSpecError) -> Void = { _ throws(CameraSpecError) in }
    var makeDriver: @Sendable (CameraURL, _ group: any EventLoopGroup, _ cameraIndex: Int, _ logger: Logger) throws -> any CameraDriver
}

/// Emulated vendors for `emulator:VENDOR` and `livegate emulate VENDOR`.
struct EmulatorKind: Sendable {
    var vendor: String
    /// Makes an emulator listening on `host:port` (0 = any free port).
    var make: @Sendable (_ host: String, _ port: Int, _ fps: Double, _ source: TestPatternSource, _ group: any EventLoopGroup) throws -> any CameraEmulator
}

/// Every vendor the gateway knows.
public enum VendorRegistry {
    static let vendors: [Vendor] = [
        Vendor(scheme: "sony", defaultPort: 8080, makeDriver: { url, group, index, logger in
            SonyDriver(endpoint: HTTPURL(host: url.host, port: url.port(default: 8080), target: "/sony/camera"),
                       group: group, cameraIndex: index, logger: logger)
        }),
        Vendor(scheme: "panasonic", defaultPort: 80, validate: { url throws(CameraSpecError) in
            guard PanasonicEndpoint.parse(url: url.description) != nil else {
                throw .badURL(url.description, "expected panasonic://HOST[:PORT][?lvport=UDP_PORT&name=NAME]")
            }
        }, makeDriver: { url, group, index, logger in
            guard let driver = PanasonicDriver(url: url.description, group: group, cameraIndex: index, logger: logger) else {
                throw CameraSpecError.badURL(url.description, "expected panasonic://HOST[:PORT][?lvport=UDP_PORT&name=NAME]")
            }
            return driver
        }),
        Vendor(scheme: "bandit", defaultPort: 80, validate: { url throws(CameraSpecError) in
            guard BanditEndpoint.parse(url: url.description) != nil else {
                throw .badURL(url.description, "expected bandit://HOST[:PORT][?udp=PORT]")
            }
        }, makeDriver: { url, group, index, logger in
            guard let driver = BanditDriver(url: url.description, group: group, cameraIndex: index, logger: logger) else {
                throw CameraSpecError.badURL(url.description, "expected bandit://HOST[:PORT][?udp=PORT]")
            }
            return driver
        }),
    ] + ["ptpip", "nikon", "canon", "sony-ptp", "fuji"].map { scheme in
        Vendor(scheme: scheme, defaultPort: scheme == "fuji" ? 55740 : 15740, validate: { url throws(CameraSpecError) in
            guard PTPEndpoint.parse(url: url.description) != nil else {
                throw .badURL(url.description, "expected \(scheme)://HOST[:PORT]\(scheme == "ptpip" ? "[?vendor=nikon|canon|sony-ptp|fuji]" : "")")
            }
        }, makeDriver: { url, group, index, logger in
            guard let driver = PTPDriver(url: url.description, group: group, cameraIndex: index, logger: logger) else {
                throw CameraSpecError.badURL(url.description, "not a PTP/IP camera URL")
            }
            return driver
        })
    }

    static let emulators: [EmulatorKind] = [
        EmulatorKind(vendor: "sony", make: { host, port, fps, source, group in
            SonyEmulator(host: host, port: port, fps: fps, source: source, group: group)
        }),
        EmulatorKind(vendor: "panasonic", make: { host, port, fps, _, group in
            // LUMIX bodies send a VGA (4:3) live view, whatever the gateway's emulator size.
            var config = PanasonicEmulator.Configuration()
            config.fps = fps
            return PanasonicEmulator(host: host, port: port, configuration: config,
                                     source: try TestPatternSource(width: 640, height: 480), group: group)
        }),
        EmulatorKind(vendor: "bandit", make: { host, port, fps, source, group in
            BanditEmulator(host: host, port: port, fps: fps, source: source, group: group, sentFrameHistory: 0)
        }),
    ] + PTPEmulatorKind.allCases.map { kind in
        EmulatorKind(vendor: kind.rawValue, make: { host, port, fps, source, group in
            PTPEmulator(kind: kind, host: host, port: port, fps: fps, source: source, group: group)
        })
    }

    /// Supported URL schemes.
    public static var schemes: [String] { vendors.map(\.scheme) }
    /// Vendors that have an emulator.
    public static var emulatorVendors: [String] { emulators.map(\.vendor) }

    static func vendor(forScheme s: String) -> Vendor? { vendors.first { $0.scheme == s } }

    /// Makes an emulator for `vendor`, or nil when there is none.
    public static func makeEmulator(vendor: String, host: String, port: Int, fps: Double, width: Int, height: Int,
                                    group: any EventLoopGroup) throws -> (any CameraEmulator)? {
        guard let kind = emulators.first(where: { $0.vendor == vendor }) else { return nil }
        return try kind.make(host, port, fps, try TestPatternSource(width: width, height: height), group)
    }

    /// Makes the driver for a camera URL.
    static func makeDriver(_ url: CameraURL, group: any EventLoopGroup, cameraIndex: Int, logger: Logger) throws -> any CameraDriver {
        guard let v = vendor(forScheme: url.scheme) else {
            throw CameraSpecError.unsupported(url.description, "unknown scheme")
        }
        return try v.makeDriver(url, group, cameraIndex, logger)
    }
}
