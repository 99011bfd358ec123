import JPEGKit
import CameraEmulators
@testable import CameraKit
import CameraWire
import Foundation
import LiveViewCore
import Logging
import NIOPosix
import Testing
import TestSupport

let ptpFixtureDir = Locations.shared("fixtures/ptp")
let ptpFixturesPresent = FileManager.default.fileExists(atPath: ptpFixtureDir)

func ptpFixture(_ name: String, dir: String = ptpFixtureDir) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
}

/// Frames and issues a parser produced from one object.
func ptpFrames(_ feed: ((WireEvent) -> Void) -> Void) -> (frames: [(w: Int, h: Int, af: Int)], issues: Int) {
    var out: [(Int, Int, Int)] = []
    var issues = 0
    feed { ev in
        switch ev {
        case .frame(let f): out.append((f.width, f.height, f.af.count))
        case .issue: issues += 1
        }
    }
    return (out.map { (w: $0.0, h: $0.1, af: $0.2) }, issues)
}

func makePTPEmulator(_ kind: PTPEmulatorKind, nikonUseEx: Bool = true) throws -> PTPEmulator {
    PTPEmulator(kind: kind, source: try TestPatternSource(width: 320, height: 240),
                group: MultiThreadedEventLoopGroup.singleton, nikonUseEx: nikonUseEx)
}

func ptpBE32(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
func ptpRD32(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }

/// Canon record walk `{u32 size, u32 type/code}` … `{8, 0}`: the types in order (nil if malformed).
func ptpCanonRecords(_ b: [UInt8]) -> [Int]? {
    var p = 0
    var types: [Int] = []
    while p + 8 <= b.count {
        let size = ptpRD32(b, p), type = ptpRD32(b, p + 4)
        types.append(type)
        if size == 8 && type == 0 { return types }
        guard size >= 8, p + size <= b.count else { return nil }
        p += size
    }
    return nil
}

extension PTPTests {
    /// The emulators' objects against recorded camera bytes (../shared/fixtures/ptp): both parse
    /// the same way and share the framing the notes describe.
    @Suite(.serialized) struct Fixtures {
        @Test(.enabled(if: ptpFixturesPresent, "needs ../shared/fixtures/ptp"))
        func nikonExObjectsMatchTheZRDumps() throws {
            let emu = try makePTPEmulator(.nikon).liveViewObject(index: 3)
            for n in ["00", "12", "18", "19", "20", "24"] {
                let real = try ptpFixture("nikon_zr_getliveviewimageex_sweep-\(n).bin")
                // Same framing: version 2.1, header size at 8 (BE), JPEG size at 12 = object − header.
                for obj in [real, emu] {
                    #expect(obj[0...3] == [0, 2, 0, 1])
                    let hdr = ptpBE32(obj, 8)
                    #expect(hdr == 1024)
                    #expect(ptpBE32(obj, 12) == obj.count - hdr)
                    #expect(obj[hdr] == 0xFF && obj[hdr + 1] == 0xD8)
                }
                var p = NikonLiveViewParser()
                let r = ptpFrames { e in p.feed(real, e) }
                #expect(r.issues == 0 && r.frames.count == 1)
                #expect(r.frames.first?.w == 1024 && r.frames.first?.h == 576)
                #expect((r.frames.first?.af ?? 0) >= 1)
            }
            var p = NikonLiveViewParser()
            let r = ptpFrames { e in p.feed(emu, e) }
            #expect(r.issues == 0 && r.frames.count == 1 && r.frames.first?.af == 1)
            #expect(r.frames.first?.w == 320 && r.frames.first?.h == 240)
        }

        @Test func nikonLegacyObjectParsesAsD600Layout() throws {
            let emu = try makePTPEmulator(.nikon, nikonUseEx: false).liveViewObject(index: 0)
            #expect(emu[384] == 0xFF && emu[385] == 0xD8)
            var p = NikonLiveViewParser()
            let r = ptpFrames { e in p.feed(emu, e) }
            #expect(r.issues == 0 && r.frames.count == 1 && r.frames.first?.af == 1)
        }

        @Test(.enabled(if: ptpFixturesPresent, "needs ../shared/fixtures/ptp"))
        func canonViewFinderDataAndGetEventMatchTheEOSDumps() throws {
            let real = try ptpFixture("canon_eos_getviewfinderdata_vcam.bin")
            let emu = try makePTPEmulator(.canon).liveViewObject(index: 0)
            let realTypes = try #require(ptpCanonRecords(real))
            let emuTypes = try #require(ptpCanonRecords(emu))
            #expect(realTypes.first == 1 && realTypes.last == 0)
            #expect(emuTypes.first == 1 && emuTypes.last == 0)
            var p = CanonEVFParser()
            let r = ptpFrames { e in p.feed(real, e) }
            #expect(r.issues == 0 && r.frames.count == 1 && r.frames.first?.w == 1056 && r.frames.first?.h == 704)
            var q = CanonEVFParser()
            let s = ptpFrames { e in q.feed(emu, e) }
            #expect(s.issues == 0 && s.frames.count == 1 && s.frames.first?.w == 320)

            // The driver's GetEvent reader on the real EOS events: values and allowed lists.
            let events = try ptpFixture("canon_eos_getevent_vcam.bin")
            var cache = CanonEventCache()
            let n = cache.ingest(events)
            #expect(n == 84 + 98 + 2)
            #expect(cache.values[0xD105] == 3)
            #expect(cache.values.count >= 40)
            #expect(cache.allowed.count >= 40)
            // The emulator's FocusInfoEx round-trips through the GetEvent record reader.
            let fi = try makePTPEmulator(.canon).canonFocusInfo(index: 5)
            var rec: [UInt8] = []
            let v = fi.serialized()
            rec += ptpLE32(12 + v.count) + ptpLE32(0xC189) + ptpLE32(0xD1D3) + v + ptpLE32(8) + ptpLE32(0)
            var c2 = CanonEventCache()
            _ = c2.ingest(rec)
            #expect(c2.focus == fi)
            #expect(CanonFocusInfo.fromGetEvent(rec[...]) == fi)
        }

        @Test(.enabled(if: ptpFixturesPresent, "needs ../shared/fixtures/ptp"))
        func fujiFramesAndDeviceInfoMatchTheRecordedOnes() throws {
            let real = try ptpFixture("fuji_lv_port55742_frame_vcam.bin")
            let emu = try makePTPEmulator(.fuji).liveViewObject(index: 0)
            for obj in [real, emu] {
                #expect(ptpRD32(obj, 0) == obj.count)
                #expect(obj[18] == 0xFF && obj[19] == 0xD8)
            }
            #expect(Array(emu[4..<18]) == Array(real[4..<18]), "same 14-byte header as the sample")
            var p = FujiLiveViewParser()
            let r = ptpFrames { e in p.feed(real, e) }
            #expect(r.frames.count == 1 && r.frames.first?.w == 640 && r.frames.first?.h == 480)
            var q = FujiLiveViewParser()
            #expect(ptpFrames { e in q.feed(emu, e) }.frames.count == 1)
            // X-H1 DeviceInfo container: type 2, code 0x1001; the dataset identifies Fujifilm.
            let di = try ptpFixture("fuji_xh1_getdeviceinfo_container_vcam.bin")
            #expect(ptpRD32(di, 0) == di.count && di[4] == 2 && di[6] == 0x01 && di[7] == 0x10)
            let info = PTPDeviceInfo.parse(Array(di[12...]))
            #expect(info.vendorExtensionID == 6)
            #expect(PTPVendor.identify(info) == .fuji)
            #expect(!info.operations.isEmpty)
        }

        @Test func sonyDatasetHasTheRealFraming() throws {
            let emu = try makePTPEmulator(.sony).liveViewObject(index: 0)
            #expect(ptpRD32(emu, 0) >= 16 && emu[ptpRD32(emu, 0)] == 0xFF && emu[ptpRD32(emu, 0) + 1] == 0xD8)
            // The real block's 120 bytes plus the one 24-byte Focus entry the emulator fills in.
            #expect(ptpRD32(emu, 8) == 16 && ptpRD32(emu, 12) == 120 + 24, "focal-frame block like the real one")
            var q = SonyPTPParser(transfer: .raw)
            #expect(ptpFrames { e in q.feed(emu, e) }.frames.count == 1)
        }

        @Test(.enabled(if: Locations.sharedHas("fixtures/sony/rocc-liveview-rx100m7-singleimage.bin"),
                       "needs ../shared/fixtures/sony"))
        func sonyRealDatasetHasTheSameFraming() throws {
            let sonyDir = Locations.shared("fixtures/sony")
            let real = try ptpFixture("rocc-liveview-rx100m7-singleimage.bin", dir: sonyDir)
            #expect(ptpRD32(real, 0) == 136 && ptpRD32(real, 8) == 16 && ptpRD32(real, 12) == 120)
            var p = SonyPTPParser(transfer: .raw)
            let r = ptpFrames { e in p.feed(real, e) }
            #expect(r.frames.first?.w == 640 && r.frames.first?.h == 424)
        }

        @Test func vocabularyConversions() {
            #expect(PTPVocabulary.canon.first { $0.name == .aperture }!.toCommon(0x23) == .text("3.2"))
            #expect(PTPVocabulary.canon.first { $0.name == .aperture }!.toCommon(0x50) == .text("22"))
            #expect(PTPVocabulary.canon.first { $0.name == .shutterSpeed }!.toCommon(0x6B) == .text("1/80"))
            #expect(PTPVocabulary.canon.first { $0.name == .shutterSpeed }!.toCommon(0x10) == .text("30\""))
            #expect(PTPVocabulary.canon.first { $0.name == .iso }!.toCommon(0x4D) == .number(160))
            #expect(PTPVocabulary.canon.first { $0.name == .exposureCompensation }!.toCommon(0xFB) == .number(-0.7))
            #expect(PTPVocabulary.nikon.first { $0.name == .shutterSpeed }!.toCommon(Int64(25 << 16 | 10)) == .text("2.5\""))
            #expect(PTPVocabulary.sony.first { $0.name == .iso }!.toCommon(0x00FF_FFFF) == .text("auto"))
        }

        /// Fujifilm's two codes for ISO and shutter (Wi-Fi and USB) and its two white-balance numberings.
        @Test func fujiVocabularyReadsBothReadings() {
            func fuji(_ code: UInt16, _ v: Int64) -> PropertyValue? {
                PTPVocabulary.fuji.first { $0.code == code }!.toCommon(v)
            }
            #expect(fuji(0xD02A, 0x8000_1900) == .text("auto"))
            #expect(fuji(0xD02A, 0xFFFF_FFFF) == .text("auto"))
            #expect(fuji(0xD02A, 0x4000_C800) == .number(51200))
            #expect(fuji(0xD02A, 400) == .number(400))
            #expect(fuji(0x500F, Int64(UInt32(bitPattern: -2))) == .text("auto"))
            #expect(fuji(0x500F, 12800) == .number(12800))
            #expect(fuji(0xD240, 0x8001_86A0) == .text("1/100"))
            #expect(fuji(0xD240, 2000) == .text("2\""))
            #expect(fuji(0xD240, 0xFFFF_FFFF) == .text("auto"))
            #expect(fuji(0x500D, 7812) == .text("1/125"))
            #expect(fuji(0x500D, 122) == .text("1/8000"))
            #expect(fuji(0x500D, 9843) == .text("1/100"))
            #expect(fuji(0x500D, 32_000_000) == .text("30\""))
            #expect(fuji(0x500D, 64_000_000) == .text("60\""))
            #expect(fuji(0x500D, 64_000_030) == .text("120\""))
            #expect(fuji(0x500D, 0xFFFF_FFFF) == .text("bulb"))
            #expect(fuji(0x5007, 640) == .text("6.3"))
            #expect(fuji(0x5007, 360) == .text("3.5"))
            #expect(fuji(0x5007, 1100) == .text("11"))
            #expect(fuji(0x5010, Int64(UInt16(bitPattern: -2667))) == .number(-2.7))
            #expect(fuji(0x500A, 0x8002) == .text("af-c"))
            let current = PTPVocabulary.FujiWhiteBalanceTable(offered: [2, 0x8007, 0x0008, 0x8008])
            let xt1 = PTPVocabulary.FujiWhiteBalanceTable(offered: [2, 0x800A, 0x800B, 0x800C])
            #expect(PTPVocabulary.fujiWhiteBalance(0x800A, table: xt1) == .text("underwater"))
            #expect(PTPVocabulary.fujiWhiteBalance(0x800A, table: current) == .text("custom3"))
            #expect(PTPVocabulary.fujiWhiteBalance(0x0008, table: current) == .text("underwater"))
            #expect(PTPVocabulary.fujiWhiteBalance(0x8002, table: current) == .text("fluorescent2"))
            #expect(xt1.kelvinMode == 0x800B && current.kelvinMode == 0x8007)
        }

        /// What a hostile body may declare never costs more than a bounded list, never traps.
        @Test func fujiHostileDescriptionsStayBounded() {
            #expect(PTPVocabulary.fujiKelvinChoices(.range(min: 2500, max: 10000, step: 10)).prefix(3) == [2500, 2600, 2700])
            #expect(PTPVocabulary.fujiKelvinChoices(.range(min: 0, max: 0xFFFF_FFFF, step: 1)).count == 200)
            #expect(PTPVocabulary.fujiKelvinChoices(.range(min: Int64.max - 1, max: Int64.max, step: Int64.max)) == [Int64.max - 1])
            #expect(PTPVocabulary.fujiKelvinChoices(.range(min: 5000, max: 4000, step: 100)).isEmpty)
            #expect(PTPVocabulary.fujiKelvinChoices(.range(min: 3000, max: 3300, step: -5)) == [3000, 3100, 3200, 3300])
            let d = PTPPropDesc(code: 0xD017, dataType: 8, writable: true, current: 0,
                                form: .range(min: Int64.max - 1, max: Int64.max, step: 2))
            #expect(d.offered == [Int64.max - 1])
            // A focus point outside its grid, or a grid of zero, is no point or the default grid.
            #expect(FujiFocusPoint(value: 0x0000_0809, maximum: 0x1009_0707) == nil)
            #expect(FujiFocusPoint(value: 0x0000_0101, maximum: 0)?.columns == 7)
            #expect(FujiStateList.parse([5, 0, 0x7C, 0xD1, 1, 2, 3]).isEmpty)
        }
    }

    /// PTP/IP session rules, with the driver's own transport against the emulator.
    @Suite(.serialized) struct Session {
        @Test func handshakeAndSessionRules() async throws {
            let emu = try makePTPEmulator(.nikon)
            let port = try await emu.start()
            let group = MultiThreadedEventLoopGroup.singleton
            let t = try await PTPIPTransport.connect(host: "127.0.0.1", port: port, group: group, timeout: .seconds(2))
            #expect(t.connectionNumber != 0)
            #expect(t.cameraName == "Nikon")
            // Before OpenSession only GetDeviceInfo is allowed.
            let early = try await t.transact(PTPOperation.getDevicePropDesc, [0x5005], dataOut: nil, timeout: .seconds(2))
            #expect(early.code == PTPResponse.sessionNotOpen)
            let open = try await t.transact(PTPOperation.openSession, [1], dataOut: nil, timeout: .seconds(2))
            #expect(open.ok)
            let twice = try await t.transact(PTPOperation.openSession, [1], dataOut: nil, timeout: .seconds(2))
            #expect(twice.code == PTPResponse.sessionAlreadyOpened)
            let di = try await t.transact(PTPOperation.getDeviceInfo, [], dataOut: nil, timeout: .seconds(2))
            #expect(PTPVendor.identify(PTPDeviceInfo.parse(di.data)) == .nikon)
            // TIDs: 0 for the first request, then incrementing.
            #expect([early.transactionID, open.transactionID, twice.transactionID, di.transactionID] == [0, 1, 2, 3])
            // An event connection with an unknown connection number is refused with Init_Fail.
            let evt = try await PTPSocket.connect(host: "127.0.0.1", port: port, group: group, mode: .ptpip, name: "evt")
            try await evt.send(.initEventRequest(connectionNumber: 999))
            guard case .packet(.initFail(let reason)) = try await evt.receive(timeout: .seconds(2)) else {
                Issue.record("expected Init_Fail")
                return
            }
            #expect(reason == 1)
            evt.close()
            t.close()
            await emu.stop()
        }

        @Test func unknownVendorIsAnErrorNotACrash() async throws {
            // Nothing listens: the driver keeps reconnecting, state never reaches streaming, stop is prompt.
            let ep = try #require(PTPEndpoint.parse(url: "ptpip://127.0.0.1:1"))
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let d = PTPDriver(endpoint: ep, group: MultiThreadedEventLoopGroup.singleton, logger: logger)
            d.start(hub: FrameHub())
            try await Task.sleep(for: .milliseconds(300))
            #expect(d.state != .streaming)
            await #expect(throws: CameraControlError.self) { try await d.setProperty(.iso, to: .number(100)) }
            await d.stop()
            #expect(d.state == .stopped)
        }
    }
}
