import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Testing

extension PTPTests {
    @Suite(.serialized) struct Canon {
        @Test func streamsWithFocusInfoExAFBoxes() async throws {
            let s = try await PTPSetup.make(.canon)
            #expect(await s.collector.wait(for: 5))
            let fps = await s.collector.measureFPS(seconds: 1.0)
            print("PTP canon fps: \(fps)")
            await s.shutdown()
            #expect(fps >= 15 && fps <= 31.5, "fps \(fps)")
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
            let fps = await s.collector.measureFPS(seconds: 1.0)
            print("PTP canon at a 10 fps camera: \(fps) fps")
            #expect(fps >= 5 && fps <= 11, "fps \(fps)")
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
            let fps = await s.collector.measureFPS(seconds: 1.0)
            print("PTP fuji fps: \(fps)")
            await s.shutdown()
            #expect(fps >= 15 && fps <= 31.5, "fps \(fps)")
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

        @Test func propertiesAreNotSupported() async throws {
            let s = try await PTPSetup.make(.fuji)
            #expect(await s.driver.waitUntilStreaming())
            let n = s.emulator.requests.count
            do {
                try await s.driver.setProperty(.iso, to: .number(400))
                Issue.record("expected notSupported")
            } catch CameraControlError.notSupported {}
            #expect(s.emulator.requests.count == n)
            await s.shutdown()
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
