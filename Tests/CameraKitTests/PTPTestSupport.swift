import JPEGKit
import CameraEmulators
import CameraKit
import Foundation
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport

typealias PTPFrameCollector = FrameCollector

struct PTPSetup {
    let emulator: PTPEmulator
    let driver: PTPDriver
    let hub: FrameHub
    let collector: PTPFrameCollector
    let width = 320, height = 240

    static func make(_ kind: PTPEmulatorKind, fps: Double = 30, driverFPS: Double = 30, nikonUseEx: Bool = true,
                     fujiBody: FujiEmulatedBody = .xh1, start: Bool = true) async throws -> PTPSetup {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = PTPEmulator(kind: kind, fps: fps, source: try TestPatternSource(width: 320, height: 240),
                                   group: group, nikonUseEx: nikonUseEx, fujiBody: fujiBody)
        try await emulator.start()
        var logger = Logger(label: "test.ptp")
        logger.logLevel = .critical
        guard var ep = PTPEndpoint.parse(url: emulator.cameraURL) else {
            throw CameraControlError.unavailable("bad emulator URL \(emulator.cameraURL)")
        }
        ep.maxFPS = driverFPS
        let driver = PTPDriver(endpoint: ep, group: group, logger: logger)
        let hub = FrameHub()
        let collector = PTPFrameCollector()
        hub.attach(collector.pacer)
        if start { driver.start(hub: hub) }
        return PTPSetup(emulator: emulator, driver: driver, hub: hub, collector: collector)
    }

    /// Requests the emulator logged with this operation code.
    func requests(_ code: UInt16) -> [PTPRequestRecord] { emulator.requests.filter { $0.code == code } }

    func shutdown() async {
        await driver.stop()
        await emulator.stop()
    }
}

func ptpLE16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
func ptpLE32(_ v: Int) -> [UInt8] {
    [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16),
     UInt8(truncatingIfNeeded: v >> 24)]
}

/// The expected AF box (pixels) of emulator frame `index` in a `w`×`h` image.
func ptpExpectedBox(index: Int, w: Int = 320, h: Int = 240) throws -> (x1: Double, y1: Double, x2: Double, y2: Double) {
    let b = try TestPatternSource(width: w, height: h).frame(index: index).afBox
    return (b.x1 * Double(w), b.y1 * Double(h), b.x2 * Double(w), b.y2 * Double(h))
}

/// Checks a published frame's first AF area against the emulator's box for that frame (±tol px).
func ptpCheckAF(_ f: PTPFrameCollector.Seen, tolerance: Double = 2) throws {
    guard let seq = f.seq, let a = f.af.first else {
        Issue.record("frame without sequence or AF area")
        return
    }
    let e = try ptpExpectedBox(index: Int(seq) - 1)
    let p = a.pixels
    #expect(abs(Double(p.x) - e.x1) <= tolerance, "x \(p.x) vs \(e.x1)")
    #expect(abs(Double(p.y) - e.y1) <= tolerance, "y \(p.y) vs \(e.y1)")
    #expect(abs(Double(p.x + p.width) - e.x2) <= tolerance, "x2 \(p.x + p.width) vs \(e.x2)")
    #expect(abs(Double(p.y + p.height) - e.y2) <= tolerance, "y2 \(p.y + p.height) vs \(e.y2)")
}

/// Kill the emulator, check the driver notices, start a new one on the same port(s), and require
/// frames again within 5 s.
func ptpKillAndRestart(_ kind: PTPEmulatorKind) async throws {
    let group = MultiThreadedEventLoopGroup.singleton
    let first = PTPEmulator(kind: kind, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
    try await first.start()
    var logger = Logger(label: "test.ptp")
    logger.logLevel = .critical
    let ep = try #require(PTPEndpoint.parse(url: first.cameraURL))
    let driver = PTPDriver(endpoint: ep, group: group, logger: logger)
    let hub = FrameHub()
    let collector = PTPFrameCollector()
    hub.attach(collector.pacer)
    driver.start(hub: hub)
    #expect(await collector.wait(for: 5))
    await first.stop()
    await waitUntil(timeout: 5, poll: .milliseconds(20)) { driver.state != .streaming }
    #expect(driver.state != .streaming)
    let second = PTPEmulator(kind: kind, port: first.port, eventPort: kind == .fuji ? first.eventPort : 0,
                             liveViewPort: kind == .fuji ? first.liveViewPort : 0, fps: 30,
                             source: try TestPatternSource(width: 320, height: 240), group: group)
    try await second.start()
    let n = collector.count
    let t0 = Date()
    #expect(await collector.wait(for: n + 5, seconds: 5))
    #expect(Date().timeIntervalSince(t0) < 5)
    #expect(driver.state == .streaming)
    #expect(driver.stats.reconnects >= 1)
    await driver.stop()
    await second.stop()
}

/// All PTP suites run one after the other (they measure frame rates on a 2-core machine).
@Suite(.serialized, .tags(.integration, .sanitized)) struct PTPTests {}
