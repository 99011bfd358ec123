import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Testing
import TestSupport

extension PTPTests {
    @Suite(.serialized) struct Canon {
        @Test func streamsWithFocusInfoExAFBoxes() async throws {
            let s = try await PTPSetup.make(.canon)
            #expect(await s.collector.wait(for: 5))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP canon fps: \(fps)")
            await s.shutdown()
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
            #expect(s.driver.vendor == "canon")
            let codes = s.emulator.requests.map(\.code)
            #expect(codes.contains(PTPOperation.canonSetRemoteMode))
            #expect(codes.contains(PTPOperation.canonSetEventMode))
            #expect(codes.contains(PTPOperation.canonGetViewFinderData))
            // EVF output to the PC (0xD1B0 = 2) went through SetDevicePropValueEx.
            let evf = s.requests(PTPOperation.canonSetDevicePropValueEx).map(\.data)
            #expect(evf.contains(ptpLE32(12) + ptpLE32(0xD1B0) + ptpLE32(2)))
            for f in s.collector.all.prefix(15) {
                #expect(f.width == 320 && f.height == 240)
                #expect(f.af.count == 1)
                try ptpCheckAF(f)
            }
        }

        @Test func busyIsRetried() async throws {
            let s = try await PTPSetup.make(.canon, fps: 10)
            #expect(await s.collector.wait(for: 3))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP canon at a 10 fps camera: \(fps) fps")
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the paced camera sent (its busy replies retried)")
            #expect(s.emulator.busyReplies > 0)
            #expect(s.driver.stats.reconnects == 0)
            await s.shutdown()
        }

        @Test func setPropertyIsOneSetDevicePropValueExWithD1xxCodes() async throws {
            let s = try await PTPSetup.make(.canon)
            #expect(await s.driver.waitUntilStreaming())
            s.emulator.clearRequests()
            try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
            var sets = s.requests(PTPOperation.canonSetDevicePropValueEx).map(\.data)
            #expect(sets == [ptpLE32(12) + ptpLE32(0xD109) + ptpLE32(3)])
            try await s.driver.setProperty(.iso, to: .number(800))
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/125"))
            try await s.driver.setProperty(.aperture, to: .text("5.6"))
            try await s.driver.setProperty(.exposureCompensation, to: .number(-0.3))
            try await s.driver.setProperty(.focusMode, to: .text("mf"))
            sets = s.requests(PTPOperation.canonSetDevicePropValueEx).map(\.data)
            #expect(sets == [
                ptpLE32(12) + ptpLE32(0xD109) + ptpLE32(3), ptpLE32(12) + ptpLE32(0xD103) + ptpLE32(0x60), ptpLE32(12) + ptpLE32(0xD102) + ptpLE32(0x70),
                ptpLE32(12) + ptpLE32(0xD101) + ptpLE32(0x30), ptpLE32(12) + ptpLE32(0xD104) + ptpLE32(0xFD), ptpLE32(12) + ptpLE32(0xD108) + ptpLE32(3),
            ])
            // Never the standard property operations.
            #expect(s.requests(PTPOperation.setDevicePropValue).isEmpty)
            let props = try await s.driver.properties()
            #expect(props.first { $0.name == .whiteBalance }?.value == .text("tungsten"))
            #expect(props.first { $0.name == .iso }?.value == .number(800))
            #expect(props.first { $0.name == .exposureCompensation }?.value == .number(-0.3))
            await s.shutdown()
        }

        @Test func invalidIsRefusedWithoutARequest() async throws {
            let s = try await PTPSetup.make(.canon)
            #expect(await s.driver.waitUntilStreaming())
            s.emulator.clearRequests()
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.iso, to: .number(100_000)) }
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.aperture, to: .text("1.0")) }
            #expect(s.requests(PTPOperation.canonSetDevicePropValueEx).isEmpty)
            await s.shutdown()
        }

        @Test func touchFocusUsesSensorUnits() async throws {
            let s = try await PTPSetup.make(.canon)
            #expect(await s.collector.wait(for: 2))
            try await s.driver.touchFocus(x: 80, y: 120, imageWidth: 320, imageHeight: 240)
            #expect(s.requests(PTPOperation.canonTouchAfPosition).map(\.params) == [[0, 1500, 2000]])
            await s.shutdown()
        }

        @Test func reconnectsAfterTheCameraIsKilledAndRestarted() async throws {
            try await ptpKillAndRestart(.canon)
        }
    }
}

extension PTPTests {
    @Suite(.serialized) struct Fuji {
        @Test func streamsThePushedLiveViewOnConfigurablePorts() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.collector.wait(for: 5))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP fuji fps: \(fps)")
            await s.shutdown()
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
            #expect(s.driver.vendor == "fuji")
            #expect(s.driver.deviceInfo?.manufacturer == "FUJIFILM")
            let reqs = s.emulator.requests
            #expect(reqs.contains { $0.code == PTPOperation.setDevicePropValue && $0.params == [0xDF01] && $0.data == [5, 0] })
            #expect(reqs.contains { $0.code == PTPOperation.initiateOpenCapture })
            for f in s.collector.all.prefix(5) {
                #expect(f.width == 320 && f.height == 240)
                #expect(f.bytes.prefix(2) == [0xFF, 0xD8] && f.bytes.suffix(2) == [0xFF, 0xD9])
            }
        }

        /// Each common property is one SetDevicePropValue with Fujifilm's own code and value, and reads
        /// back in words (never the raw number).
        @Test func everyCommonPropertyMapsToFujiCodes() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.driver.waitUntilStreaming())
            s.emulator.clearRequests()
            try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
            try await s.driver.setProperty(.iso, to: .number(800))
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/250"))
            try await s.driver.setProperty(.aperture, to: .text("6.3"))
            try await s.driver.setProperty(.exposureCompensation, to: .number(-0.7))
            try await s.driver.setProperty(.focusMode, to: .text("af-c"))
            try await s.driver.setProperty(.whiteBalance, to: .text("3200K"))
            let sets = s.requests(PTPOperation.setDevicePropValue).map { "\(String($0.params[0], radix: 16)) \($0.data)" }
            #expect(sets == [
                "5005 \(ptpLE16(6))", "d02a \(ptpLE32(800))", "d240 \(ptpLE32(0x8000_0000 | 250_000))", "5007 \(ptpLE16(640))",
                "5010 \(ptpLE16(-667))", "500a \(ptpLE16(0x8002))", "5005 \(ptpLE16(0x8007))", "d017 \(ptpLE16(3200))",
            ])
            let props = try await s.driver.properties()
            let byName = Dictionary(uniqueKeysWithValues: props.map { ($0.name, $0) })
            #expect(props.count == PropertyName.allCases.count)
            #expect(byName[.whiteBalance]?.value == .text("3200K"))
            #expect(byName[.iso]?.value == .number(800))
            #expect(byName[.shutterSpeed]?.value == .text("1/250"))
            #expect(byName[.aperture]?.value == .text("6.3"))
            #expect(byName[.exposureCompensation]?.value == .number(-0.7))
            #expect(byName[.focusMode]?.value == .text("af-c"))
            #expect(byName[.whiteBalance]?.choices.contains(.text("underwater")) == true)
            #expect(byName[.whiteBalance]?.choices.contains(.text("10000K")) == true)
            #expect(byName[.iso]?.choices.contains(.text("auto")) == true)
            #expect(byName[.shutterSpeed]?.choices.contains(.text("2\"")) == true)
            #expect(props.allSatisfy { !($0.displayText ?? "").contains("camera value") })
            try await s.driver.setProperty(.whiteBalance, to: .text("underwater"))
            #expect(s.emulator.propertyValue(0x5005) == 0x0008)
            await s.shutdown()
        }

        @Test func valuesTheBodyDoesNotOfferAreRefusedWithoutARequest() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.driver.waitUntilStreaming())
            s.emulator.clearRequests()
            do {
                try await s.driver.setProperty(.iso, to: .number(123))
                Issue.record("expected invalidValue")
            } catch CameraControlError.invalidValue(let p, _, let valid) {
                #expect(p == .iso)
                #expect(valid.contains("6400") && valid.contains("auto"))
            }
            do {
                try await s.driver.setProperty(.whiteBalance, to: .text("20000K"))
                Issue.record("expected invalidValue")
            } catch CameraControlError.invalidValue(_, _, let valid) {
                #expect(valid == ["2500K…10000K in steps of 10K"])
            }
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.focusMode, to: .text("af-a")) }
            #expect(s.requests(PTPOperation.setDevicePropValue).isEmpty)
            await s.shutdown()
        }

        /// An X-T1-era body: its own white-balance numbering, and exposure values that move only by
        /// the step operations (SetDevicePropValue refused).
        @Test func anXT1IsSteppedAndReadInItsOwnNumbering() async throws {
            let s = try await PTPSetup.make(.fuji, fujiBody: .xt1)
            #expect(await s.driver.waitUntilStreaming())
            s.emulator.clearRequests()
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/30"))
            #expect(s.emulator.propertyValue(0xD240) == Int64(0x8000_0000 | 30_000))
            #expect(s.requests(0x902C).map(\.params) == [[0], [0]])
            try await s.driver.setProperty(.aperture, to: .text("8"))
            #expect(s.emulator.propertyValue(0x5007) == 800)
            #expect(s.requests(0x902D).map(\.params) == [[1], [1], [1]])
            try await s.driver.setProperty(.exposureCompensation, to: .number(0.7))
            #expect(s.emulator.propertyValue(0x5010) == 667)
            #expect(s.requests(0x902E).map(\.params) == [[1], [1]])
            try await s.driver.setProperty(.whiteBalance, to: .text("4000K"))
            #expect(s.emulator.propertyValue(0x5005) == 0x800B)
            #expect(s.emulator.propertyValue(0xD017) == 4000)
            try await s.driver.setProperty(.whiteBalance, to: .text("underwater"))
            #expect(s.emulator.propertyValue(0x5005) == 0x800A)
            let props = try await s.driver.properties()
            #expect(props.first { $0.name == .shutterSpeed }?.value == .text("1/30"))
            #expect(props.first { $0.name == .whiteBalance }?.value == .text("underwater"))
            await s.shutdown()
        }

        /// The focus point of the state list (0xD212) is every frame's AF area: a cell of the body's
        /// 7 × 7 grid, one the emulator's AF box held (the list is read at most twice a second).
        @Test func theFocusPointIsEveryFramesAFArea() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.collector.wait(for: 60))
            await s.shutdown()
            let frames = s.collector.all
            #expect(frames.allSatisfy { $0.af.count == 1 }, "\(frames.filter { $0.af.count != 1 }.count) frames without the point")
            let source = try TestPatternSource(width: 320, height: 240)
            func cell(_ centre: Double) -> Int { min(7, max(1, Int(centre * 7) + 1)) }
            var held = Set<[Int]>()
            for i in 0..<s.emulator.framesSent {
                let b = source.frame(index: i).afBox
                held.insert([cell((b.x1 + b.x2) / 2), cell((b.y1 + b.y2) / 2)])
            }
            var seen = Set<[Int]>()
            for f in frames {
                guard let p = f.af.first?.pixels else { continue }
                // A cell of a 320 × 240 picture on a 7 × 7 grid.
                #expect(abs(p.width - 46) <= 1 && abs(p.height - 34) <= 1, "\(p)")
                let c = [Int((Double(p.x) / (320.0 / 7)).rounded()) + 1, Int((Double(p.y) / (240.0 / 7)).rounded()) + 1]
                #expect(held.contains(c), "cell \(c) never held the AF box")
                seen.insert(c)
                #expect(f.af.first?.state == .selected)
            }
            #expect(seen.count >= 2, "the point follows the AF box: \(seen)")
            #expect(s.requests(PTPOperation.getDevicePropValue).filter { $0.params == [0xD212] }.count <= 8)
        }

        /// Touch-AF sets the focus point to the cell under the touch (inverse of the AF translation),
        /// keeping the body's upper bits, and the frames then carry that cell.
        @Test func touchSetsTheFocusPointToTheCellUnderIt() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.collector.wait(for: 3))
            try await s.driver.touchFocus(x: 300, y: 20, imageWidth: 320, imageHeight: 240)
            let sets = s.requests(PTPOperation.setDevicePropValue).filter { $0.params == [0xD17C] }
            #expect(sets.map(\.data) == [ptpLE32(0x0302_0701)])
            let n = s.collector.count
            #expect(await s.collector.wait(for: n + 20))
            await s.shutdown()
            // From the frame after the touch on (not only once the state list says so).
            for f in s.collector.all.dropFirst(n + 1) {
                let p = f.af.first?.pixels
                #expect(p.map { abs($0.x - 274) <= 1 && $0.y == 0 } == true, "\(String(describing: p))")
            }
        }

        @Test func stallEndsTheSessionAndItComesBack() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.collector.wait(for: 5))
            s.emulator.inject(.disconnect)
            let n = s.collector.count
            #expect(await s.collector.wait(for: n + 10, seconds: 5))
            #expect(s.driver.stats.reconnects >= 1)
            await s.shutdown()
        }

        @Test func reconnectsAfterTheCameraIsKilledAndRestarted() async throws {
            try await ptpKillAndRestart(.fuji)
        }
    }
}
