// swift-tools-version:6.1
// livegate benchmarks: a separate package so that the benchmark dependency (and its malloc
// interposer) never reaches the gateway. See README.md.
import Foundation
import PackageDescription

/// The main package's identity is the name of its folder (a clone may be called anything).
let main = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "livegate-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        // `traits` turns on the malloc interposer that counts allocations (mallocCountTotal).
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // GStreamer for the in-process RTSP client and the buffer-counting probes.
        .systemLibrary(name: "CGst", pkgConfig: "gstreamer-app-1.0 gstreamer-video-1.0 gstreamer-1.0"),
        .target(name: "BenchGst", dependencies: ["CGst"]),
        .target(
            name: "BenchSupport",
            dependencies: [
                "BenchGst",
                .product(name: "LiveViewCore", package: main),
                .product(name: "CameraWire", package: main),
                .product(name: "CameraKit", package: main),
                .product(name: "MediaKit", package: main),
                .product(name: "JPEGKit", package: main),
                .product(name: "CameraEmulators", package: main),
            ]),
        .executableTarget(
            name: "livegate-bench",
            dependencies: [
                "BenchSupport", "BenchGst",
                .product(name: "LiveViewCore", package: main),
                .product(name: "CameraWire", package: main),
                .product(name: "CameraKit", package: main),
                .product(name: "MediaKit", package: main),
                .product(name: "JPEGKit", package: main),
                .product(name: "CameraEmulators", package: main),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "HotPath",
            dependencies: [
                "BenchSupport", "BenchGst",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LiveViewCore", package: main),
                .product(name: "CameraWire", package: main),
                .product(name: "CameraKit", package: main),
                .product(name: "MediaKit", package: main),
                .product(name: "JPEGKit", package: main),
            ],
            path: "Benchmarks/HotPath",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "Parsers",
            dependencies: [
                "BenchSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "CameraWire", package: main),
            ],
            path: "Benchmarks/Parsers",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
    ]
)
