// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "livegate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "livegate", targets: ["livegate"]),
        .library(name: "LiveViewCore", targets: ["LiveViewCore"]),
        .library(name: "CameraWire", targets: ["CameraWire"]),
        .library(name: "CameraKit", targets: ["CameraKit"]),
        .library(name: "JPEGKit", targets: ["JPEGKit"]),
        .library(name: "MediaKit", targets: ["MediaKit"]),
        .library(name: "CameraEmulators", targets: ["CameraEmulators"]),
        .library(name: "Vendors", targets: ["Vendors"]),
        .library(name: "GatewayAPI", targets: ["GatewayAPI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.25.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CTurboJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(
            name: "CGStreamer", pkgConfig: "gstreamer-rtsp-server-1.0 gstreamer-rtsp-1.0 gio-2.0 gstreamer-app-1.0 gstreamer-video-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstrtspserver-1.0-dev"])]),
        .target(name: "CGStreamerShim", dependencies: ["CGStreamer"]),
        .target(name: "LiveViewCore", swiftSettings: strict),
        .target(name: "GatewayAPI", swiftSettings: strict),
        .target(name: "JPEGKit", dependencies: ["CTurboJPEG", "LiveViewCore"], swiftSettings: strict),
        .target(name: "CameraWire", dependencies: ["JPEGKit", "LiveViewCore"], swiftSettings: strict),
        .target(
            name: "MediaKit",
            dependencies: ["JPEGKit", "CGStreamer", "CGStreamerShim", "LiveViewCore",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "CameraKit",
            dependencies: ["CameraWire", "LiveViewCore",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "CameraEmulators",
            dependencies: ["CameraWire", "JPEGKit", "LiveViewCore",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "Vendors",
            dependencies: ["CameraKit", "CameraEmulators", "CameraWire", "LiveViewCore",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "Gateway",
            dependencies: ["GatewayAPI", "Vendors", "CameraKit", "CameraEmulators", "MediaKit", "CameraWire", "LiveViewCore", "JPEGKit",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Yams", package: "Yams"),
                           .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "Prometheus", package: "swift-prometheus"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .executableTarget(
            name: "livegate",
            dependencies: ["Gateway", "GatewayAPI", "MediaKit", "Vendors", "CameraKit", "CameraEmulators", "CameraWire", "LiveViewCore",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["LiveViewCore"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "LiveViewCoreTests", dependencies: ["LiveViewCore"], swiftSettings: strict),
        .testTarget(name: "CameraWireTests", dependencies: ["CameraWire", "JPEGKit", "LiveViewCore"],
                    resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(name: "MediaKitTests", dependencies: ["MediaKit", "JPEGKit", "LiveViewCore"], swiftSettings: strict),
        .testTarget(
            name: "CameraKitTests",
            dependencies: ["CameraKit", "CameraEmulators", "CameraWire", "LiveViewCore", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: ["Gateway", "Vendors", "CameraKit", "CameraEmulators", "LiveViewCore", "JPEGKit", "TestSupport",
                           .product(name: "HummingbirdTesting", package: "hummingbird")],
            swiftSettings: strict),
    ]
)
