import JPEGKit
import CameraEmulators
import CameraKit
import Foundation
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport


struct SonySetup {
    let emulator: SonyEmulator
    let driver: SonyDriver
    let hub: FrameHub
    let collector: FrameCollector

    static func make(fps: Double = 30, start: Bool = true,
                     order: SonyEmulator.FrameInfoOrder = .before) async throws -> SonySetup {
        let group = MultiThreadedEventLoopGroup.singleton
        let source = try TestPatternSource(width: 320, height: 240)
        let emulator = SonyEmulator(port: 0, fps: fps, source: source, group: group, frameInfoOrder: order)
        let port = try await emulator.start()
        var logger = Logger(label: "test.sony")
        logger.logLevel = .warning
        let driver = SonyDriver(endpoint: HTTPURL(host: "127.0.0.1", port: port, target: "/sony/camera"),
                                group: group, logger: logger)
        let hub = FrameHub()
        let collector = FrameCollector()
        hub.attach(collector.pacer)
        if start { driver.start(hub: hub) }
        return SonySetup(emulator: emulator, driver: driver, hub: hub, collector: collector)
    }

    func shutdown() async {
        await driver.stop()
        await emulator.stop()
    }
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct SonyDriverTests {
    @Test func streamsFramesWithPTSSequenceAndAFAreas() async throws {
        let s = try await SonySetup.make()
        #expect(await s.collector.wait(for: 20))
        await s.shutdown()
        let frames = s.collector.all
        #expect(frames.count >= 20)
        // The session ran the Remote API sequence.
        let methods = s.emulator.calls.map(\.method)
        #expect(methods.contains("startRecMode"))
        #expect(methods.contains("startLiveview"))
        #expect(methods.contains("setLiveviewFrameInfo"))
        for f in frames.prefix(20) {
            #expect(f.width == 320 && f.height == 240)
            #expect(f.bytes.first == 0xFF && f.bytes[1] == 0xD8)
            #expect(f.bytes.suffix(2) == [0xFF, 0xD9])
            #expect(f.timeBase == .camera)
            #expect(f.pts != nil && f.pts! % 1_000_000 == 0, "Sony PTS is the packet's ms timestamp in ns")
            #expect(f.af.count == 1)
        }
        // Sequence numbers increase by one, PTS increases.
        let seqs = frames.compactMap(\.seq)
        for (a, b) in zip(seqs, seqs.dropFirst()) { #expect(b == a + 1) }
        let pts = frames.compactMap(\.pts)
        for (a, b) in zip(pts, pts.dropFirst()) { #expect(b > a) }
    }

    @Test func afBoxLandsWhereTheEmulatorDrewIt() async throws {
        let s = try await SonySetup.make()
        #expect(await s.collector.wait(for: 5))
        await s.shutdown()
        // The emulator's picture is deterministic per frame number, so the box of the first frame
        // (frame 0 of the pattern) can be recomputed: 0..10000 grid → pixels, within rounding.
        let pattern = try TestPatternSource(width: 320, height: 240)
        let first = s.collector.all[0]
        let expected = pattern.frame(index: 0).afBox
        let a = first.af[0].pixels
        #expect(abs(Double(a.x) - expected.x1 * 320) <= 1)
        #expect(abs(Double(a.y) - expected.y1 * 240) <= 1)
        #expect(abs(Double(a.x + a.width) - expected.x2 * 320) <= 1.5)
        #expect(abs(Double(a.y + a.height) - expected.y2 * 240) <= 1.5)
        #expect(first.af[0].kind == .contrastAF)
    }

    /// Whatever order the camera sends frame information and JPEGs in, each frame's box is its own
    /// (the test pattern's counter names the frame; its box is known for every frame number).
    @Test(arguments: ["before", "after", "alternate"])
    func afBoxesBelongToTheirOwnFrameInEitherOrder(order: String) async throws {
        let o: SonyEmulator.FrameInfoOrder = order == "after" ? .after : order == "alternate" ? .alternate : .before
        let s = try await SonySetup.make(order: o)
        #expect(await s.collector.wait(for: 90, seconds: 20))
        await s.shutdown()
        let pattern = try TestPatternSource(width: 320, height: 240)
        let decoder = try JPEGDecoder()
        var withBox = 0, inPlace = 0
        for f in s.collector.all.dropFirst(2) where !f.af.isEmpty {
            let pic = I420Picture(width: 16, height: 16)
            try f.bytes.withUnsafeBytes { try decoder.decode($0, into: pic) }
            guard let n = TestPattern.readCounter(from: pic, patternWidth: pic.width, patternHeight: pic.height) else { continue }
            withBox += 1
            let e = pattern.frame(index: n).afBox, a = f.af[0].pixels
            if abs(Double(a.x) - e.x1 * 320) <= 1 && abs(Double(a.y) - e.y1 * 240) <= 1 { inPlace += 1 }
        }
        #expect(withBox >= 80, "\(order): \(withBox) frames with a box")
        #expect(Double(inPlace) >= Double(withBox) * 0.99, "\(order): \(inPlace) of \(withBox) boxes in place")
        #expect(s.driver.stats.afUnmatched == 0, "every frame's information came")
    }

    @Test func aMissingFrameInformationIsCountedAndCostsOnlyThatFrame() async throws {
        let s = try await SonySetup.make(order: .missingEvery(10))
        #expect(await s.collector.wait(for: 60, seconds: 20))
        await s.shutdown()
        #expect(s.driver.stats.afUnmatched >= 4, "every 10th frame has no 0x02: \(s.driver.stats.afUnmatched) counted")
        // Sticky: a frame whose information never came keeps the latest boxes (the overlay never
        // blinks off for a frame); only frames before the first information may be bare.
        let bare = s.collector.all.dropFirst(2).filter { $0.af.isEmpty }.count
        #expect(bare == 0, "\(bare) of \(s.collector.all.count) frames without a box")
    }

    @Test func aColourTemperatureOutsideTheCamerasRangeIsRefusedBeforeTheCamera() async throws {
        let s = try await SonySetup.make(start: false)
        for bad in ["99999K", "2000K", "5550K", "0K"] {
            do {
                try await s.driver.setProperty(.whiteBalance, to: .text(bad))
                Issue.record("\(bad) was accepted")
            } catch let CameraControlError.invalidValue(_, value, valid) {
                #expect(value == bad && valid == ["2500K…9900K in steps of 100K"], "\(value): \(valid)")
            }
        }
        #expect(s.emulator.calls.filter { $0.method == "setWhiteBalance" }.isEmpty, "nothing out of range reaches the camera")
        try await s.driver.setProperty(.whiteBalance, to: .text("5500K"))
        #expect(s.emulator.calls.filter { $0.method == "setWhiteBalance" }.map(\.params) == [#"["Color Temperature",true,5500]"#])
        await s.shutdown()
    }

    @Test func whiteBalanceTungstenIsOneSetWhiteBalanceWithSonysValue() async throws {
        let s = try await SonySetup.make(start: false)
        try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
        let sets = s.emulator.calls.filter { $0.method == "setWhiteBalance" }
        #expect(sets.count == 1)
        #expect(sets.first?.params == #"["Incandescent",false,-1]"#)
        let p = try await s.driver.property(.whiteBalance)
        #expect(p.value == .text("tungsten"))
        #expect(p.displayText == "Incandescent")
        await s.shutdown()
    }

    @Test func invalidValueIsRefusedWithoutCallingTheCamera() async throws {
        let s = try await SonySetup.make(start: false)
        await #expect(throws: CameraControlError.self) {
            try await s.driver.setProperty(.iso, to: .number(123))
        }
        do {
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/3"))
            Issue.record("expected invalidValue")
        } catch CameraControlError.invalidValue(let p, _, let valid) {
            #expect(p == .shutterSpeed)
            #expect(valid.contains("1/250"))
        }
        #expect(!s.emulator.calls.contains { $0.method.hasPrefix("set") })
        await s.shutdown()
    }

    @Test func everyCommonPropertyMapsToSonysRequest() async throws {
        let s = try await SonySetup.make(start: false)
        try await s.driver.setProperty(.iso, to: .number(400))
        try await s.driver.setProperty(.iso, to: .text("auto"))
        try await s.driver.setProperty(.shutterSpeed, to: .text("1/250"))
        try await s.driver.setProperty(.aperture, to: .text("5.6"))
        try await s.driver.setProperty(.exposureCompensation, to: .number(-0.7))
        try await s.driver.setProperty(.focusMode, to: .text("af-c"))
        try await s.driver.setProperty(.whiteBalance, to: .text("5500K"))
        let sets = s.emulator.calls.filter { $0.method.hasPrefix("set") }.map { "\($0.method) \($0.params)" }
        #expect(sets == [
            #"setIsoSpeedRate ["400"]"#, #"setIsoSpeedRate ["AUTO"]"#, #"setShutterSpeed ["1\/250"]"#,
            #"setFNumber ["5.6"]"#, "setExposureCompensation [-2]", #"setFocusMode ["AF-C"]"#,
            #"setWhiteBalance ["Color Temperature",true,5500]"#,
        ])
        let props = try await s.driver.properties()
        #expect(props.count == PropertyName.allCases.count)
        let ev = props.first { $0.name == .exposureCompensation }
        #expect(ev?.value == .number(-0.7))
        #expect(props.first { $0.name == .whiteBalance }?.value == .text("5500K"))
        #expect(props.first { $0.name == .focusMode }?.choices.contains(.text("dmf")) == true)
        await s.shutdown()
    }

    @Test func cameraErrorsKeepTheirCode() async throws {
        let s = try await SonySetup.make(start: false)
        do {
            _ = try await s.driver.rpc.call("actFormatStorage")
            Issue.record("expected an error")
        } catch CameraControlError.camera(let code, let message) {
            #expect(code == 12)
            #expect(message == "No Such Method")
        }
        await s.shutdown()
    }

    @Test func touchFocusSendsPercentOfTheImage() async throws {
        let s = try await SonySetup.make(start: false)
        try await s.driver.touchFocus(x: 160, y: 60, imageWidth: 320, imageHeight: 240)
        let call = s.emulator.calls.first { $0.method == "setTouchAFPosition" }
        #expect(call?.params == "[50,25]")
        await s.shutdown()
    }

    @Test func reconnectsAfterTheStreamDrops() async throws {
        let s = try await SonySetup.make()
        #expect(await s.collector.wait(for: 10))
        let before = s.collector.count
        s.emulator.dropStreams()
        let t0 = Date()
        #expect(await s.collector.wait(for: before + 30, seconds: 5))
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(s.driver.stats.reconnects >= 1)
        #expect(s.emulator.calls.filter { $0.method == "startLiveview" }.count >= 2)
        await s.shutdown()
    }

    /// The stream stays open and goes silent: the stall check (2 s of silence) ends the session and
    /// a new one brings the frames back; a stream that flows is never taken for a stalled one.
    @Test func aSilentStreamIsReconnectedAfterTwoSeconds() async throws {
        let s = try await SonySetup.make()
        #expect(await s.collector.wait(for: 10))
        // Frames flowing for longer than the stall limit: no reconnect.
        try await Task.sleep(for: .milliseconds(2600))
        #expect(s.driver.stats.reconnects == 0)
        let starts = s.emulator.calls.filter { $0.method == "startLiveview" }.count
        s.emulator.inject(.stall(seconds: 30))
        let deadline = ContinuousClock.now + .seconds(6)
        while s.driver.stats.reconnects == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(s.driver.stats.reconnects >= 1, "a stream silent for 6 s was not reconnected")
        // The new session asks for the live view again (after its back-off and API list).
        let restartBy = ContinuousClock.now + .seconds(5)
        while s.emulator.calls.filter({ $0.method == "startLiveview" }).count <= starts, ContinuousClock.now < restartBy {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(s.emulator.calls.filter { $0.method == "startLiveview" }.count > starts)
        s.emulator.inject(.none)
        let n = s.collector.count
        #expect(await s.collector.wait(for: n + 10, seconds: 5))
        await s.shutdown()
    }

    @Test func reconnectsAfterTheCameraIsKilledAndRestarted() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = SonyEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        let port = try await first.start()
        var logger = Logger(label: "test.sony")
        logger.logLevel = .critical
        let driver = SonyDriver(endpoint: HTTPURL(host: "127.0.0.1", port: port, target: "/sony/camera"), group: group, logger: logger)
        let hub = FrameHub()
        let collector = FrameCollector()
        hub.attach(collector.pacer)
        driver.start(hub: hub)
        #expect(await collector.wait(for: 10))
        await first.stop()
        try await Task.sleep(for: .milliseconds(700))
        #expect(driver.state != .streaming)
        let second = SonyEmulator(port: port, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        _ = try await second.start()
        let n = collector.count
        let t0 = Date()
        #expect(await collector.wait(for: n + 10, seconds: 5))
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(driver.state == .streaming)
        await driver.stop()
        await second.stop()
    }
}
