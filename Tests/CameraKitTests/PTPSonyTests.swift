import JPEGKit
import CameraEmulators
import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Testing
import TestSupport

extension PTPTests {
    @Suite(.serialized) struct Sony {
        @Test func streamsAtTheEmulatorRateAfterTheSDIOSequence() async throws {
            let s = try await PTPSetup.make(.sony)
            #expect(await s.collector.wait(for: 5))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP sony-ptp fps: \(fps)")
            await s.shutdown()
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the camera sent")
            #expect(s.driver.vendor == "sony-ptp")
            let reqs = s.emulator.requests
            let connects = reqs.filter { $0.code == PTPOperation.sonySDIOConnect }.map { $0.params.first ?? 0 }
            #expect(Array(connects.prefix(3)) == [1, 2, 3])
            #expect(reqs.contains { $0.code == PTPOperation.sonySDIOGetExtDeviceInfo })
            #expect(reqs.contains { $0.code == PTPOperation.getObject && $0.params == [PTPEvent.sonyLiveViewHandle] })
            for f in s.collector.all.prefix(10) {
                #expect(f.width == 320 && f.height == 240)
                #expect(f.bytes.prefix(2) == [0xFF, 0xD8] && f.bytes.suffix(2) == [0xFF, 0xD9])
                // The emulator's focal-frame block (ptp.md §2.3 layout, UNCONFIRMED) carries one box.
                #expect(f.af.count == 1 && f.af.first?.kind == .contrastAF)
            }
        }

        @Test func accessDeniedWhenPolledTooFastIsRetried() async throws {
            let s = try await PTPSetup.make(.sony, fps: 10)
            #expect(await s.collector.wait(for: 3))
            let w = await FrameCollector.window(frames: 20, delivered: { s.driver.stats.frames }, sent: { s.emulator.framesSent })
            let fps = w.fps
            print("PTP sony-ptp at a 10 fps camera: \(fps) fps")
            #expect(w.complete && w.oneForOne, "the driver delivered \(w.delivered) of the \(w.sent) frames the paced camera sent (its busy replies retried)")
            #expect(s.emulator.busyReplies > 0)
            #expect(s.driver.stats.reconnects == 0)
            #expect(s.driver.state == .streaming)
            await s.shutdown()
        }

        @Test func focalFrameBoxesLandOnTheirFrame() async throws {
            let s = try await PTPSetup.make(.sony)
            #expect(await s.collector.wait(for: 30))
            await s.shutdown()
            let decoder = try JPEGDecoder()
            var checked = 0
            for f in s.collector.all.prefix(30) {
                let pic = I420Picture(width: 16, height: 16)
                try f.bytes.withUnsafeBytes { try decoder.decode($0, into: pic) }
                guard let n = TestPattern.readCounter(from: pic, patternWidth: pic.width, patternHeight: pic.height) else { continue }
                let e = try ptpExpectedBox(index: n), p = try #require(f.af.first).pixels
                #expect(abs(Double(p.x) - e.x1) <= 2 && abs(Double(p.y) - e.y1) <= 2, "frame \(n): \(p) vs \(e)")
                #expect(abs(Double(p.x + p.width) - e.x2) <= 2 && abs(Double(p.y + p.height) - e.y2) <= 2, "frame \(n)")
                checked += 1
            }
            #expect(checked >= 25)
        }

        @Test func propertiesReadInTheVocabularysWordsNeverHex() async throws {
            let s = try await PTPSetup.make(.sony)
            #expect(await s.driver.waitUntilStreaming())
            let props = try await s.driver.properties()
            await s.shutdown()
            let byName = Dictionary(uniqueKeysWithValues: props.map { ($0.name, $0) })
            for p in props { #expect(p.displayText?.contains("0x") == false, "\(p.name.rawValue): \(p.displayText ?? "nil")") }
            #expect(byName[.whiteBalance]?.displayText == "auto")
            #expect(byName[.iso]?.displayText == "ISO auto")
            #expect(byName[.shutterSpeed]?.displayText == "1/60 s")
            #expect(byName[.aperture]?.displayText == "f/4.0")
            #expect(byName[.exposureCompensation]?.displayText == "0 EV")
            #expect(PTPVocabulary.words(.exposureCompensation, .number(-1.0 / 3)) == "-0.3 EV")
            #expect(PTPVocabulary.words(.shutterSpeed, .text("2\"")) == "2\"")
        }

        @Test func setPropertyIsOneSDIOSetExtDevicePropValue() async throws {
            let s = try await PTPSetup.make(.sony)
            #expect(await s.driver.waitUntilStreaming())
            let before = s.requests(PTPOperation.sonySDIOSetExtDevicePropValue).count
            try await s.driver.setProperty(.whiteBalance, to: .text("tungsten"))
            try await s.driver.setProperty(.iso, to: .number(400))
            try await s.driver.setProperty(.iso, to: .text("auto"))
            try await s.driver.setProperty(.shutterSpeed, to: .text("1/250"))
            try await s.driver.setProperty(.aperture, to: .text("5.6"))
            try await s.driver.setProperty(.exposureCompensation, to: .number(1.3))
            let sets = s.requests(PTPOperation.sonySDIOSetExtDevicePropValue).dropFirst(before)
                .map { "\(String($0.params[0], radix: 16)) \($0.data)" }
            #expect(Array(sets) == [
                "5005 \(ptpLE16(6))", "d21e \(ptpLE32(400))", "d21e \(ptpLE32(0xFFFFFF))", "d20d \(ptpLE32(1 << 16 | 250))",
                "5007 \(ptpLE16(560))", "5010 \(ptpLE16(1333))",
            ])
            #expect(s.requests(PTPOperation.setDevicePropValue).isEmpty)
            let props = try await s.driver.properties()
            #expect(props.first { $0.name == .whiteBalance }?.value == .text("tungsten"))
            #expect(props.first { $0.name == .iso }?.value == .text("auto"))
            #expect(props.first { $0.name == .exposureCompensation }?.value == .number(1.3))
            await s.shutdown()
        }

        @Test func invalidAndUnsupportedAreRefusedWithoutARequest() async throws {
            let s = try await PTPSetup.make(.sony)
            #expect(await s.driver.waitUntilStreaming())
            let before = s.requests(PTPOperation.sonySDIOSetExtDevicePropValue).count
            await #expect(throws: CameraControlError.self) { try await s.driver.setProperty(.aperture, to: .text("1.2")) }
            do {
                try await s.driver.setProperty(.focusMode, to: .text("af-c"))
                Issue.record("expected notSupported")
            } catch CameraControlError.notSupported {}
            do {
                try await s.driver.touchFocus(x: 1, y: 1, imageWidth: 320, imageHeight: 240)
                Issue.record("expected notSupported")
            } catch CameraControlError.notSupported {}
            #expect(s.requests(PTPOperation.sonySDIOSetExtDevicePropValue).count == before)
            await s.shutdown()
        }

        @Test func reconnectsAfterTheCameraIsKilledAndRestarted() async throws {
            try await ptpKillAndRestart(.sony)
        }
    }
}
