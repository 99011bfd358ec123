import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Testing
import TestSupport

extension PTPTests {
    @Suite(.serialized) struct Nikon {
        @Test func urlParsing() throws {
            let a = try #require(PTPEndpoint.parse(url: "ptpip://192.168.1.1"))
            #expect(a.host == "192.168.1.1" && a.port == 15740 && a.vendor == nil)
            let b = try #require(PTPEndpoint.parse(url: "ptpip://10.0.0.2:1234?vendor=canon"))
            #expect(b.port == 1234 && b.vendor == .canon)
            let c = try #require(PTPEndpoint.parse(url: "fuji://192.168.0.1"))
            #expect(c.vendor == .fuji && c.port == 55740 && c.eventPort == 55741 && c.liveViewPort == 55742)
            let d = try #require(PTPEndpoint.parse(url: "fuji://127.0.0.1:4000?event=4001&liveview=4002"))
            #expect(d.port == 4000 && d.eventPort == 4001 && d.liveViewPort == 4002)
            #expect(PTPEndpoint.parse(url: "http://x") == nil)
            #expect(PTPEndpoint.parse(url: "ptpip://host:99999") == nil)
            #expect(PTPEndpoint.parse(url: "ptpip://host?vendor=olympus") == nil)
        }

        @Test func streamsAtTheEmulatorRateWithAFBoxesInPixels() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.collector.wait(for: 5))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP nikon (0x9428) fps: \(fps)")
            await s.shutdown()
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
            #expect(s.driver.vendor == "nikon")
            #expect(s.driver.deviceInfo?.manufacturer == "Nikon Corporation")
            // The session: OpenSession first (TID 0), GetDeviceInfo, LV status, StartLiveView, DeviceReady polls.
            let codes = s.emulator.requests.map(\.code)
            #expect(Array(codes.prefix(2)) == [PTPOperation.openSession, PTPOperation.getDeviceInfo])
            #expect(codes.contains(PTPOperation.nikonStartLiveView))
            #expect(codes.filter { $0 == PTPOperation.nikonDeviceReady }.count >= 3, "busy DeviceReady polled until OK")
            #expect(codes.contains(PTPOperation.nikonGetLiveViewImageEx))
            #expect(!codes.contains(PTPOperation.nikonGetLiveViewImg))
            // stop() ends live view and closes the session.
            #expect(Array(codes.suffix(2)) == [PTPOperation.nikonEndLiveView, PTPOperation.closeSession])
            let frames = s.collector.all
            for f in frames.prefix(15) {
                #expect(f.width == 320 && f.height == 240)
                #expect(f.bytes.prefix(2) == [0xFF, 0xD8] && f.bytes.suffix(2) == [0xFF, 0xD9])
                #expect(f.af.count == 1)
                try ptpCheckAF(f)
            }
            #expect(s.driver.stats.reconnects == 0)
        }

        @Test func legacyGetLiveViewImgWithD600Header() async throws {
            let s = try await PTPSetup.make(.nikon, nikonUseEx: false)
            #expect(await s.collector.wait(for: 8))
            await s.shutdown()
            #expect(s.requests(PTPOperation.nikonGetLiveViewImg).count >= 8)
            #expect(s.requests(PTPOperation.nikonGetLiveViewImageEx).isEmpty)
            for f in s.collector.all.prefix(8) { try ptpCheckAF(f) }
        }

        @Test func busyRepliesArePacedNotErrors() async throws {
            // The camera allows 10 fps; the driver would poll at 30: DeviceBusy must be retried quietly.
            let s = try await PTPSetup.make(.nikon, fps: 10)
            #expect(await s.collector.wait(for: 3))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP nikon at a 10 fps camera: \(fps) fps, emulator busy replies \(s.emulator.busyReplies)")
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the paced camera sent (its busy replies retried)")
            #expect(s.emulator.busyReplies > 0)
            #expect(s.driver.busyReplies > 0)
            #expect(s.driver.stats.reconnects == 0)
            #expect(s.driver.state == .streaming)
            await s.shutdown()
        }

        @Test func setPropertyIsExactlyOneSetDevicePropValueWithNikonsCode() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.driver.waitUntilStreaming())
            try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
            let sets = s.requests(PTPOperation.setDevicePropValue)
            #expect(sets.count == 1)
            #expect(sets.first?.params == [0x5005])
            #expect(sets.first?.data == [6, 0])
            #expect(s.emulator.propertyValue(0x5005) == 6)
            // The camera announces the change on the event socket; the driver reads it there.
            #expect(await waitUntil(timeout: 2, poll: .milliseconds(10)) {
                s.driver.recentEvents.contains { $0.code == PTPEvent.devicePropChanged && $0.params == [0x5005] }
            })
            let props = try await s.driver.properties()
            #expect(props.first { $0.name == .whiteBalance }?.value == .text("tungsten"))
            await s.shutdown()
        }

        @Test func everyCommonPropertyMapsToNikonValues() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.driver.waitUntilStreaming())
            try await s.driver.setProperty(.iso, to: .number(800))
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/250"))
            try await s.driver.setProperty(.aperture, to: .text("8"))
            try await s.driver.setProperty(.exposureCompensation, to: .number(-0.7))
            try await s.driver.setProperty(.focusMode, to: .text("af-c"))
            let sets = s.requests(PTPOperation.setDevicePropValue).map { "\(String($0.params[0], radix: 16)) \($0.data)" }
            #expect(sets == [
                "500f \(ptpLE16(800))", "d100 \(ptpLE32(1 << 16 | 250))", "5007 \(ptpLE16(800))", "5010 \(ptpLE16(-666))",
                "500a \(ptpLE16(0x8011))",
            ])
            let props = try await s.driver.properties()
            #expect(props.count == PropertyName.allCases.count)
            #expect(props.first { $0.name == .exposureCompensation }?.value == .number(-0.7))
            #expect(props.first { $0.name == .shutterSpeed }?.value == .text("1/250"))
            #expect(props.first { $0.name == .aperture }?.value == .text("8.0"))
            #expect(props.first { $0.name == .iso }?.choices.contains(.number(6400)) == true)
            await s.shutdown()
        }

        @Test func invalidValuesAreRefusedWithoutARequest() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.driver.waitUntilStreaming())
            do {
                try await s.driver.setProperty(.iso, to: .number(123))
                Issue.record("expected invalidValue")
            } catch CameraControlError.invalidValue(let p, _, let valid) {
                #expect(p == .iso)
                #expect(valid.contains("400"))
            }
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.shutterSpeed, to: .text("1/3")) }
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.whiteBalance, to: .text("purple")) }
            #expect(s.requests(PTPOperation.setDevicePropValue).isEmpty)
            await s.shutdown()
        }

        @Test func touchFocusSendsChangeAfAreaInWholeSizeUnits() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.collector.wait(for: 2))
            try await s.driver.touchFocus(x: 160, y: 60, imageWidth: 320, imageHeight: 240)
            let r = s.requests(PTPOperation.nikonChangeAfArea)
            #expect(r.count == 1)
            #expect(r.first?.params == [3024, 850])
            await s.shutdown()
        }

        @Test func stallAndDisconnectFaultsRecover() async throws {
            let s = try await PTPSetup.make(.nikon)
            #expect(await s.collector.wait(for: 5))
            s.emulator.inject(.stall(seconds: 0.5))
            let n0 = s.collector.count
            #expect(await s.collector.wait(for: n0 + 20, seconds: 4), "frames resume after a short stall")
            #expect(s.emulator.busyReplies > 0)
            let n1 = s.collector.count
            s.emulator.inject(.disconnect)
            let t0 = Date()
            #expect(await s.collector.wait(for: n1 + 10, seconds: 5))
            #expect(Date().timeIntervalSince(t0) < 5)
            #expect(s.driver.stats.reconnects >= 1)
            #expect(s.requests(PTPOperation.openSession).count >= 2)
            await s.shutdown()
        }

        @Test func notLiveViewRestartsLiveViewWithoutReconnecting() async throws {
            let s = try await PTPSetup.make(.nikon, start: false)
            s.emulator.nikonLiveViewDropEvery = 10
            s.driver.start(hub: s.hub)
            #expect(await s.collector.wait(for: 25))
            await s.shutdown()
            #expect(s.requests(PTPOperation.nikonStartLiveView).count >= 3)
            #expect(s.driver.stats.reconnects == 0)
            #expect(s.requests(PTPOperation.openSession).count == 1)
        }

        @Test func reconnectsAfterTheCameraIsKilledAndRestarted() async throws {
            try await ptpKillAndRestart(.nikon)
        }
    }
}
