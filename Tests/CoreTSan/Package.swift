// swift-tools-version:6.0
// The LiveViewCore sources and tests, alone, so that `make test` can run them under
// ThreadSanitizer without rebuilding the whole gateway with it. The folders are links.
import PackageDescription

let settings: [SwiftSetting] = [.swiftLanguageMode(.v6), .enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "CoreTSan",
    targets: [
        .target(name: "LiveViewCore", swiftSettings: settings),
        .testTarget(name: "LiveViewCoreTests", dependencies: ["LiveViewCore"], swiftSettings: settings),
    ]
)
