import CameraWire
import LiveViewCore
import Foundation

/// Still capture over PTP: Nikon into SDRAM (ptp.md §8.2), Canon EOS release with the picture on
/// the card or handed to the PC (§8.3), Fujifilm with the standard InitiateCapture and the card's
/// handle lists compared, Sony's PC remote with the shot handed over at 0xFFFFC001 (§8.4).
extension PTPDriver: StillCapturing {
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        // A capture asked while the camera reconnects waits for it (≤ 5 s).
        await sessionUp(within: .seconds(5))
        let session = try current()
        defer { cardListing.invalidate() }
        do {
            if let nikon = session as? NikonPTPSession { return try await nikon.captureWithLeftovers(sink: imageSink.withLock { $0 }) }
            if let canon = session as? CanonPTPSession {
                return try await canon.release(autofocus: autofocus, bodySink: imageSink.withLock { $0 })
            }
            if let fuji = session as? FujiPTPSession { return try await fuji.captureToCard(bodySink: imageSink.withLock { $0 }) }
            if let sony = session as? SonyPTPSession { return try await captureOnSony(sony, autofocus: autofocus) }
        } catch let e as PTPTransportError {
            throw CameraControlError.unavailable("\(e)")
        } catch let e as PTPShotCarriedOver {
            throw CameraControlError.unavailable(e.description)
        }
        throw CameraControlError.notSupported("capture over this PTP/IP dialect")
    }

    /// Canon bodies announce their shots (ObjectAddedEx in GetEvent): those taken on the body are
    /// fetched and handed to `sink`.
    public func setImageSink(_ sink: @escaping CameraImageSink) { imageSink.withLock { $0 = sink } }

    /// After a live-view poll: files the camera announced that no capture of ours is waiting for
    /// were shot on the body (Canon: ObjectAddedEx from GetEvent; Nikon: ObjectAdded 0x4002 from
    /// its GetEvent 0x90C7, asked at most once a second); each is fetched (retried) in a task of
    /// its own and handed to the sink, or reported lost. Nikon shots an earlier connection left
    /// half-read in SDRAM are fetched here first, in line.
    func transferShotsOnTheBody(_ session: any PTPVendorSession) async {
        guard let sink = imageSink.withLock({ $0 }) else { return }
        if !cardLeftovers.isEmpty, let base = session as? PTPVendorBase, !session.isCapturing {
            await cardLeftovers.fetch(on: base, to: sink)
        }
        var found: [(handle: UInt32, name: String)] = []
        let fetch: @Sendable (UInt32, String) async throws -> CameraImage
        if let canon = session as? CanonPTPSession, !canon.isCapturing {
            let announced = canon.takeAnnounced()
            if !announced.isEmpty { cardListing.invalidate() }
            canon.handOn(announced, to: sink)
            return
        } else if let nikon = session as? NikonPTPSession, !nikon.isCapturing {
            await nikon.handOnLeftovers(to: sink)
            guard nikon.bodyEvents.due() else { return }
            // Named now (one ObjectInfo each), so a read that a broken connection ends can be
            // looked up by name in the next session.
            for h in (try? await nikon.objectsAddedOnTheCard()) ?? [] {
                let name = (try? await nikon.callOK(PTPOperation.getObjectInfo, [h]).data).flatMap { try? PTPObjectInfo($0) }?.name ?? ""
                found.append((h, name))
            }
            fetch = { h, _ in try await nikon.fetchImage(h, fromBody: true) }
        } else if let fuji = session as? FujiPTPSession, !fuji.isCapturing, fuji.cardWatch.due() {
            found = await fuji.newObjectsOnTheCard()
            fetch = { h, n in try await fuji.fetchImage(h, name: n, fromBody: true) }
        } else if let sony = session as? SonyPTPSession, !sony.isCapturing, !sony.inTransfer, sony.bodyShots.due() {
            // The body keeps no copy for the PC: each waiting shot is taken now, in order, on this
            // connection (the handle is always 0xFFFFC001, so they cannot be fetched in parallel).
            await sony.transferWaitingShots(to: sink)
            return
        } else {
            return
        }
        if !found.isEmpty { cardListing.invalidate() }
        let leftovers = cardLeftovers
        for o in found {
            handOnInTask(name: shownName(handle: o.handle, name: o.name), to: sink,
                         leftovers: o.name.isEmpty ? nil : (leftovers, o.name)) {
                try await fetch(o.handle, o.name)
            }
        }
    }
}

/// The connection to the camera went or stopped answering (the camera still holds what was being
/// read); a malformed answer is not that.
func ptpConnectionBroke(_ e: any Error) -> Bool {
    switch e as? PTPTransportError {
    case .closed, .timeout: return true
    default: return false
    }
}

/// The camera answered DeviceBusy.
func ptpDeviceBusy(_ e: any Error) -> Bool {
    if case .camera(let code, _)? = e as? CameraControlError { return code == Int(PTPResponse.deviceBusy) }
    return false
}

/// How a camera's object is named in reports: its file name, else its handle.
func shownName(handle: UInt32, name: String) -> String {
    name.isEmpty ? "object 0x\(String(handle, radix: 16, uppercase: true))" : name
}

/// Fetches one announced image in a task of its own (retried) and hands it to `sink`, or reports
/// it lost there; a card file whose read a broken connection ended goes to `leftovers` (with its
/// file name) for the next session instead.
func handOnInTask(name: String, to sink: @escaping CameraImageSink, leftovers: (PTPCardLeftovers, String)? = nil,
                  _ fetch: @escaping @Sendable () async throws -> CameraImage) {
    Task {
        do {
            await sink(.image(try await retrying { try await fetch() }))
        } catch {
            if let (kept, file) = leftovers, ptpConnectionBroke(error), kept.keep(.init(name: file, fromBody: true)) {
                return  // read by the next session
            }
            await sink(.lost(name: name, reason: "\(error)"))
        }
    }
}

/// Card files of shots whose read a broken connection ended. The camera will not announce them
/// again, so a later session looks them up on the card by name, among the newest `scanLimit`
/// objects, at most once every 2 s, and hands them on; one not found there (or still unreadable
/// after `maxAttempts` looks) is reported lost, and so is what is still kept when livegate stops
/// (`close`; a read that ends after that reports its own loss: `keep` refuses).
final class PTPCardLeftovers: Sendable {
    struct Entry: Sendable, Hashable {
        var name: String
        var fromBody: Bool
    }
    private struct State {
        var entries: [Entry] = []
        var attempts: [String: Int] = [:]
        var closed = false
    }
    private let state = Mutex(State())
    private let pace = PTPOncePer(.seconds(2))
    static let scanLimit = 256
    static let maxAttempts = 10

    /// Keeps `e` for a later session; false once livegate stops (the caller reports it lost).
    @discardableResult
    func keep(_ e: Entry) -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            if !s.entries.contains(e) { s.entries.append(e) }
            return true
        }
    }
    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    /// Everything kept; nothing is kept from now on.
    func close() -> [Entry] {
        state.withLock { s in
            s.closed = true
            defer { s.entries.removeAll() }
            return s.entries
        }
    }

    /// Looks the files up on `base`'s card and hands them to `sink`; those the connection (or a busy
    /// camera) keeps from being read are kept for a later look.
    func fetch(on base: PTPVendorBase, to sink: CameraImageSink) async {
        guard pace.due() else { return }
        let wanted = state.withLock { s -> [Entry] in
            defer { s.entries.removeAll() }
            return s.entries
        }
        guard !wanted.isEmpty else { return }
        var left = wanted
        var gone: [Entry] = []
        do {
            for h in try await base.objectHandles().sorted(by: >).prefix(Self.scanLimit) where !left.isEmpty {
                let info: PTPObjectInfo
                do {
                    info = try PTPObjectInfo(try await base.callOK(PTPOperation.getObjectInfo, [h]).data)
                } catch let err where ptpConnectionBroke(err) || ptpDeviceBusy(err) {
                    throw err
                } catch {
                    continue  // an object the camera cannot describe: not one of ours
                }
                guard !info.isFolder, let i = left.firstIndex(where: { $0.name == info.name }) else { continue }
                let e = left[i]
                do {
                    await sink(.image(try await retrying { try await base.fetchImage(h, name: e.name, fromBody: e.fromBody) }))
                    left.remove(at: i)
                } catch let err where ptpConnectionBroke(err) || ptpDeviceBusy(err) {
                    throw err
                } catch {
                    left.remove(at: i)
                    await sink(.lost(name: e.name, reason: "\(error) (it is on the card)"))
                }
            }
            gone = left
            left = []
        } catch {
            // Not read now: kept for the next look, up to `maxAttempts` looks.
            let tooLong = state.withLock { s -> [Entry] in
                var out: [Entry] = []
                for e in left {
                    s.attempts[e.name, default: 0] += 1
                    if s.attempts[e.name, default: 0] >= Self.maxAttempts || s.closed { out.append(e) } else if !s.entries.contains(e) { s.entries.append(e) }
                }
                return out
            }
            for e in tooLong { await sink(.lost(name: e.name, reason: "it could not be read from the card (\(error)); it is on the card")) }
            return
        }
        for e in gone { await sink(.lost(name: e.name, reason: "it is not among the card's newest \(Self.scanLimit) objects any more")) }
        state.withLock { s in for e in wanted { s.attempts[e.name] = nil } }
    }
}

/// A shot the camera still holds that could not be read now (the connection broke, or the camera
/// was busy): left to the next look (`PTPPendingShots`), not lost.
struct PTPShotCarriedOver: Error, CustomStringConvertible {
    var description: String {
        "the shot could not be read now (the connection to the camera broke, or the camera was busy); it stays in the camera's memory and is fetched once the camera answers again"
    }
}

/// Handles of shots that could not be read (the connection broke, the camera was busy) and that
/// the camera keeps (Nikon's SDRAM: ptp.md §8.2 frees it only with DeleteObject): the live-view
/// loop or the next capture fetches them, also in the driver's next session; what is left when
/// livegate stops is reported lost (`close`).
final class PTPPendingShots: Sendable {
    private let state = Mutex<(handles: [UInt32], closed: Bool)>(([], false))
    /// Shots read whole whose DeleteObject failed: freed before the next shutter.
    private let unfreed = Mutex<[UInt32]>([])
    func keepUnfreed(_ h: UInt32) { unfreed.withLock { if !$0.contains(h) { $0.append(h) } } }
    func takeUnfreed() -> [UInt32] { unfreed.withLock { u in defer { u = [] }; return u } }
    /// Keeps `h`; false once closed (the caller reports it lost).
    func keep(_ h: UInt32) -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            if !s.handles.contains(h) { s.handles.append(h) }
            return true
        }
    }
    var isEmpty: Bool { state.withLock { $0.handles.isEmpty } }
    func takeFirst() -> UInt32? { state.withLock { s in s.handles.isEmpty ? nil : s.handles.removeFirst() } }
    /// No more keeping: the handles left.
    func close() -> [UInt32] { state.withLock { s in defer { s = ([], true) }; return s.handles } }
}

extension NikonPTPSession {
    /// The picture's handle in SDRAM (what ObjectAddedInSDRAM's 0 means).
    static let sdramHandle: UInt32 = 0xFFFF_0001

    /// True while a capture of ours runs (its events are its own).
    var isCapturing: Bool { capturing.withLock { $0 > 0 } }

    /// GetEvent 0x90C7 (when the camera offers it): the handles of ObjectAdded (0x4002) records.
    func objectsAddedOnTheCard() async throws -> [UInt32] {
        guard info.operations.contains(0x90C7) else { return [] }
        var r = PTPReader(try await callOK(0x90C7).data)
        let n = Int(try r.u16())
        var out: [UInt32] = []
        for _ in 0..<n {
            let code = try r.u16(), param = try r.u32()
            if code == 0x4002, param != 0 { out.append(param) }
        }
        return out
    }

    /// InitiateCaptureRecInSdram (retried while DeviceBusy), DeviceReady until the shot is done,
    /// GetEvent until ObjectAddedInSDRAM and CaptureComplete, then the picture from SDRAM, which
    /// is freed (DeleteObject) for the next shot.
    func captureIntoSDRAM() async throws -> CameraImage {
        capturing.withLock { $0 += 1 }
        defer { capturing.withLock { $0 -= 1 } }
        var tries = 0
        while true {
            let r = try await call(0x90C0, [0xFFFF_FFFF])
            if r.ok { break }
            guard r.code == PTPResponse.deviceBusy, tries < 100 else {
                if r.code == PTPResponse.deviceBusy { throw CameraControlError.refused("the camera stayed busy") }
                throw Self.cameraError(r.code, op: 0x90C0)
            }
            tries += 1
            try await Task.sleep(for: .milliseconds(50))
        }
        let readyBy = ContinuousClock.now + .seconds(60)  // long exposures
        while true {
            let r = try await call(0x90C8)
            if r.ok || r.code == 0xA201 { break }  // 0xA201 Silent_Release_Busy counts as done
            guard r.code == PTPResponse.deviceBusy || r.code == 0xA200, ContinuousClock.now < readyBy else {
                throw Self.cameraError(r.code, op: 0x90C8)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        var added: UInt32?
        var complete = false
        let eventsBy = ContinuousClock.now + .seconds(10)
        while added == nil || !complete {
            guard ContinuousClock.now < eventsBy else {
                throw CameraControlError.camera(code: 0, message: "no ObjectAddedInSDRAM and CaptureComplete within 10 s of the shot")
            }
            var r = PTPReader(try await callOK(0x90C7).data)
            let n = Int(try r.u16())
            for _ in 0..<n {
                let code = try r.u16(), param = try r.u32()
                switch code {
                case 0xC101, 0x4002: added = param == 0 ? Self.sdramHandle : param
                case 0xC102, 0x400D: complete = true
                default: break
                }
            }
            if added == nil || !complete { try await Task.sleep(for: .milliseconds(50)) }
        }
        return try await fetchFromSDRAM(added ?? Self.sdramHandle)
    }

    /// A remote shot. SDRAM shots an earlier connection left unread are handed to `sink` first
    /// (each saved as soon as it is read), so that the new shot's read of 0xFFFF0001 (the oldest
    /// picture there) is the new one; while one still cannot be read the capture is refused. A
    /// picture read but not freed is freed before the shutter. The live-view loop's fetch of
    /// leftovers and a capture never overlap (`sdram`; `capturing` counts the whole of it).
    func captureWithLeftovers(sink: CameraImageSink?) async throws -> [CameraImage] {
        capturing.withLock { $0 += 1 }
        defer { capturing.withLock { $0 -= 1 } }
        return try await sdram.withLock {
            if let sink { await takeLeftovers(to: sink) }
            guard pending.isEmpty else {
                throw CameraControlError.refused("an earlier shot still waits in the camera's memory and could not be read yet; livegate fetches it first")
            }
            for h in pending.takeUnfreed() { _ = try? await call(PTPOperation.deleteObject, [h, 0]) }
            return [try await captureIntoSDRAM()]
        }
    }

    /// The live-view loop: SDRAM shots left unread, handed to `sink` (not while a capture runs:
    /// it takes them itself).
    func handOnLeftovers(to sink: @escaping CameraImageSink) async {
        guard !pending.isEmpty, !isCapturing else { return }
        await sdram.withLock { await takeLeftovers(to: sink) }
    }

    /// Leftovers fetched in turn and handed to `sink`; one that still cannot be read stays kept
    /// (and ends the turn), one the camera answers wrongly for is reported lost.
    private func takeLeftovers(to sink: CameraImageSink) async {
        while let h = pending.takeFirst() {
            do {
                await sink(.image(try await fetchFromSDRAM(h)))
            } catch is PTPShotCarriedOver {
                return
            } catch {
                await sink(.lost(name: shownName(handle: h, name: ""), reason: "\(error)"))
            }
        }
    }

    /// The picture in SDRAM, then freed (DeleteObject) for the next shot — also when the camera's
    /// answer was unusable (a wrong size, an unknown handle). When the connection breaks, or the
    /// camera is busy, the camera keeps it: it is left to a later look (`pending`) and
    /// `PTPShotCarriedOver` thrown.
    func fetchFromSDRAM(_ handle: UInt32) async throws -> CameraImage {
        let image: CameraImage
        do {
            image = try await fetchImage(handle, fallbackName: "NIKON_SDRAM.JPG", fromBody: false)
        } catch {
            if Self.connectionBroke(error) || ptpDeviceBusy(error) || error is CancellationError { try carryOver(handle, error) }
            do { _ = try await call(PTPOperation.deleteObject, [handle, 0]) } catch where Self.connectionBroke(error) {
                try carryOver(handle, error)  // not freed: still the oldest picture there
            } catch {}
            throw error
        }
        // Read but not freed: still the oldest picture there, which the next capture would read
        // as its own; it is freed before the next shutter.
        if (try? await call(PTPOperation.deleteObject, [handle, 0]))?.ok != true { pending.keepUnfreed(handle) }
        return image
    }

    /// Keeps `handle` for a later look and throws `PTPShotCarriedOver`; once the driver stopped,
    /// throws `error` instead (the shot is then reported lost).
    private func carryOver(_ handle: UInt32, _ error: any Error) throws -> Never {
        guard pending.keep(handle) else { throw error }
        throw PTPShotCarriedOver()
    }

}

/// True at most once per interval (asking a camera for shots on the body).
final class PTPOncePer: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(_ interval: Duration) { self.interval = interval }

    func due() -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            guard last.map({ now - $0 >= interval }) ?? true else { return false }
            last = now
            return true
        }
    }
}

extension SonyPTPSession {
    /// Where a shot waits for the PC, and the properties that tell of it (ptp.md §8.4).
    static let shotHandle: UInt32 = 0xFFFF_C001
    static let objectInMemory: UInt16 = 0xD215
    static let focusFound: UInt16 = 0xD213
    static let halfPress: UInt16 = 0xD2C1
    static let fullPress: UInt16 = 0xD2C2

    var isCapturing: Bool { capturing.withLock { $0 > 0 } }

    /// SDIO_ControlDevice 0x9207: a button code and a u16 (2 down, 1 up).
    @discardableResult
    func control(_ button: UInt16, _ value: UInt16) async throws -> PTPResult {
        try await call(0x9207, [UInt32(button)], data: [UInt8(value & 0xFF), UInt8(value >> 8)])
    }

    /// Shots waiting for the PC: ObjectInMemory minus 0x8000 (0 when below: nothing there).
    func shotsWaiting() async throws -> Int {
        guard let v = try await allDescs()[Self.objectInMemory]?.current, v > 0x8000 else { return 0 }
        return Int(min(v - 0x8000, 64))
    }

    /// The PC-remote release (ptp.md §8.4): S1 down (held up to 1 s for FocusFound when asked to
    /// focus), S2 down, S2 up, S1 up — released whatever fails in between; then up to 35 s until
    /// ObjectInMemory says a shot waits, and every waiting shot read from 0xFFFFC001 (a RAW+JPEG
    /// shot is two). Shots already waiting before the release were taken on the body: they go to
    /// `bodySink` first. The handle is read only while ObjectInMemory says something is there
    /// (reading it empty can crash the firmware), and one reader at a time (`shotLock`).
    func captureToPC(autofocus: Bool, bodySink: CameraImageSink?) async throws -> [CameraImage] {
        capturing.withLock { $0 += 1 }
        defer { capturing.withLock { $0 -= 1 } }
        if let bodySink { await takeWaitingShots(to: bodySink, yieldingToCaptures: false) }
        let press = try await control(Self.halfPress, 2)
        guard press.ok else {
            throw CameraControlError.refused("the camera refused the half press (\(Self.cameraError(press.code, op: 0x9207)))")
        }
        let full: PTPResult
        do {
            if autofocus {
                let by = ContinuousClock.now + .seconds(1)
                while ContinuousClock.now < by {
                    if let f = try await allDescs()[Self.focusFound]?.current, f == 2 || f == 3 { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            full = try await control(Self.fullPress, 2)
        } catch {
            _ = try? await control(Self.fullPress, 1)
            _ = try? await control(Self.halfPress, 1)
            throw error
        }
        _ = try? await control(Self.fullPress, 1)
        _ = try? await control(Self.halfPress, 1)
        guard full.ok else {
            throw CameraControlError.refused("the camera refused the release (\(Self.cameraError(full.code, op: 0x9207)))")
        }
        let by = ContinuousClock.now + .seconds(35)
        while try await shotsWaiting() == 0 {
            guard ContinuousClock.now < by else {
                throw CameraControlError.camera(code: 0, message: "the camera handed over no picture within 35 s of the release")
            }
            try await Task.sleep(for: .milliseconds(150))
        }
        return try await shotLock.withLock {
            var images: [CameraImage] = []
            while images.count < 8, try await shotsWaiting() > 0 {
                images.append(try await retrying { try await self.fetchWaitingShot(fromBody: false) })
            }
            return images
        }
    }

    /// The shot at 0xFFFFC001, read only when ObjectInMemory says one waits (also on a retry: a
    /// shot whose GetObject went through is gone).
    func fetchWaitingShot(fromBody: Bool) async throws -> CameraImage {
        guard try await shotsWaiting() > 0 else {
            throw CameraControlError.camera(code: 0, message: "no shot waits at 0xFFFFC001 any more")
        }
        return try await fetchImage(Self.shotHandle, fallbackName: "DSC.JPG", fromBody: fromBody)
    }

    /// Shots with the body's button while in PC remote (the camera keeps no copy for the PC): each
    /// waiting one fetched and handed on, one that cannot be read after retries reported lost.
    func transferWaitingShots(to sink: CameraImageSink) async {
        await takeWaitingShots(to: sink, yieldingToCaptures: true)
    }

    /// Every waiting shot (at most 8) to `sink` as a body shot; when `yieldingToCaptures`, stops
    /// as soon as a capture of ours begins (what comes next is its shot).
    private func takeWaitingShots(to sink: CameraImageSink, yieldingToCaptures: Bool) async {
        await shotLock.withLock {
            var fetched = 0
            while fetched < 8 {
                if yieldingToCaptures && isCapturing { return }
                if inTransfer { return }  // card work got the lock first: after it leaves the mode
                guard let waiting = try? await shotsWaiting(), waiting > 0 else { return }
                do {
                    await sink(.image(try await retrying { try await self.fetchWaitingShot(fromBody: true) }))
                } catch {
                    await sink(.lost(name: "the shot waiting at 0xFFFFC001", reason: "\(error)"))
                    return
                }
                fetched += 1
            }
        }
    }
}

extension CanonPTPSession {
    /// The regular EOS release (ptp.md §8.3): RemoteReleaseOn(1) (half press, a moment for focus
    /// when asked), RemoteReleaseOn(2), RemoteReleaseOff(2), RemoteReleaseOff(1); then GetEvent
    /// until the camera announces the shot (the live-view loop's GetEvent stays out of it meanwhile,
    /// so nothing is missed): 0xC181 ObjectAddedEx, fetched from the card, or with the PC target
    /// 0xC186 RequestObjectTransfer, read and then released with TransferComplete. Shots announced
    /// before the release were taken on the body and go to `bodySink`. The camera keeps no copy of a
    /// PC transfer, so one that cannot be read after retries is reported lost there as well.
    func release(autofocus: Bool, bodySink: CameraImageSink?) async throws -> [CameraImage] {
        capturing.withLock { $0 += 1 }
        defer { capturing.withLock { $0 -= 1 } }
        if let sink = bodySink { handOn(takeAnnounced(), to: sink) }
        try await callOK(0x9128, [1, 0])
        if autofocus { try await Task.sleep(for: .milliseconds(300)) }
        let full = try await call(0x9128, [2, 0])
        guard full.ok else {
            _ = try? await call(0x9129, [1])
            throw CameraControlError.refused("the camera refused the release (0x\(String(full.code, radix: 16, uppercase: true)))")
        }
        _ = try? await call(0x9129, [2])
        _ = try? await call(0x9129, [1])
        var shot = CanonAnnounced()
        let by = ContinuousClock.now + .seconds(30)
        while shot.isEmpty {
            guard ContinuousClock.now < by else {
                throw CameraControlError.camera(code: 0, message: "the camera announced no new file within 30 s of the release")
            }
            try await getEvent()
            shot = takeAnnounced()
            if shot.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        var images: [CameraImage] = []
        var lost: [(name: String, reason: String)] = []
        var broken: Error?
        for o in shot.onCard {
            do {
                images.append(try await retrying { try await self.fetchImage(o.handle, name: o.name, fromBody: false) })
            } catch let e where Self.connectionBroke(e) && !o.name.isEmpty {
                // On the card; the next session reads it by name.
                if leftovers.keep(.init(name: o.name, fromBody: false)) {
                    broken = e
                } else {
                    lost.append((Self.shownName(o), "\(e) (it is on the card)"))
                }
            } catch {
                lost.append((Self.shownName(o), "\(error) (it is on the card)"))
            }
        }
        for t in shot.toPC {
            do {
                images.append(try await deliver(t, fromBody: false))
            } catch let e where Self.connectionBroke(e) {
                // The camera keeps the shot: the next session hands it on.
                carried.keep(CanonAnnounced(toPC: [t]))
                broken = e
            } catch {
                lost.append((Self.shownName(t), "\(error)"))
            }
        }
        // Every file of the shot was tried: what failed is said loudly, what came is answered.
        for (name, reason) in lost { await bodySink?(.lost(name: name, reason: reason)) }
        if images.isEmpty {
            if let broken { throw CameraControlError.unavailable("the connection broke while the shot was read (\(broken)); it is fetched when the camera is back") }
            if let first = lost.first { throw CameraControlError.camera(code: 0, message: "\(first.name) could not be fetched: \(first.reason)") }
        }
        return images
    }

    /// True while a capture of ours waits for its file (announced files are then ours).
    var isCapturing: Bool { capturing.withLock { $0 > 0 } }

    /// Shots on the body: each fetched in a task of its own and handed to `sink` (or reported
    /// lost); a shot for the PC whose reading a broken connection ended waits for the next session.
    func handOn(_ shots: CanonAnnounced, to sink: @escaping CameraImageSink) {
        for o in shots.onCard {
            handOnInTask(name: Self.shownName(o), to: sink, leftovers: o.name.isEmpty ? nil : (leftovers, o.name)) {
                try await self.fetchImage(o.handle, name: o.name, fromBody: true)
            }
        }
        for t in shots.toPC {
            transfersInFlight.withLock { $0 += 1 }
            Task {
                defer { self.transfersInFlight.withLock { $0 -= 1 } }
                do {
                    await sink(.image(try await self.deliver(t, fromBody: true)))
                } catch let e where Self.connectionBroke(e) {
                    self.carried.keep(CanonAnnounced(toPC: [t]))
                } catch {
                    await sink(.lost(name: Self.shownName(t), reason: "\(error)"))
                }
            }
        }
    }

    /// A shot waiting for the PC, read (retried) and then let go with TransferComplete 0x9117 —
    /// only once every byte is here, since the camera then drops it. A TransferComplete that fails
    /// does not cost the image: it is logged.
    func deliver(_ t: CanonTransfer, fromBody: Bool) async throws -> CameraImage {
        let image = try await retrying { try await self.read(t, fromBody: fromBody) }
        let done = try? await call(PTPOperation.canonTransferComplete, [t.handle])
        if done?.ok != true {
            logger.warning("canon: TransferComplete for \(image.name) was not accepted (\(done.map { "0x" + String($0.code, radix: 16) } ?? "no answer")); the image is saved")
        }
        return image
    }

    /// The largest shot read for the PC (a camera's claim beyond it is refused, not allocated).
    static let largestTransfer = 1 << 30

    /// A shot for the PC: GetPartialObject in blocks of at most 1 MiB up to the size the record gave
    /// (or ObjectInfo when it gave none).
    func read(_ t: CanonTransfer, fromBody: Bool) async throws -> CameraImage {
        var size = t.size, name = t.name
        if size == 0 || name.isEmpty {
            let info = try PTPObjectInfo(try await callOK(PTPOperation.getObjectInfo, [t.handle]).data)
            if size == 0 { size = Int(info.size) }
            if name.isEmpty { name = info.name }
        }
        if name.isEmpty { name = Self.shownName(t) }
        guard size > 0, size <= Self.largestTransfer else {
            throw CameraControlError.camera(code: 0, message: "\(name): the camera gives \(size) bytes for the transfer")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(size, 16 << 20))
        try await readPartial(t.handle, size: size, block: 1 << 20, what: name) { bytes += $0 }
        return CameraImage(name: name, bytes: bytes, fromBody: fromBody)
    }


    static func shownName(_ t: CanonTransfer) -> String { CameraKit.shownName(handle: t.handle, name: t.name) }
    static func shownName(_ o: (handle: UInt32, name: String)) -> String { CameraKit.shownName(handle: o.handle, name: o.name) }
}

extension PTPVendorBase {
    /// The connection to the camera went or stopped answering (the camera still holds what was
    /// being read); a malformed answer is not that.
    static func connectionBroke(_ e: any Error) -> Bool { ptpConnectionBroke(e) }

    /// An object by handle (ObjectInfo, then GetObject), checked against the size its ObjectInfo
    /// gives; named `name`, else its ObjectInfo file name, else `fallbackName`.
    func fetchImage(_ handle: UInt32, name: String = "", fallbackName: String = "image.jpg", fromBody: Bool) async throws -> CameraImage {
        let info = try PTPObjectInfo(try await callOK(PTPOperation.getObjectInfo, [handle]).data)
        let bytes = try await callOK(PTPOperation.getObject, [handle]).data
        let shown = !name.isEmpty ? name : (!info.name.isEmpty ? info.name : fallbackName)
        guard info.size == 0 || bytes.count == Int(info.size) else {
            throw CameraControlError.camera(code: 0, message: "\(shown): \(bytes.count) bytes of \(info.size)")
        }
        return CameraImage(name: shown, bytes: bytes, fromBody: fromBody)
    }
}

extension FujiPTPSession {
    /// The standard capture (ptp.md §1.5, §8.1): the card's object handles, InitiateCapture (0x100E,
    /// storage 0 and format 0: the camera's choice), then the handle list again every 200 ms until
    /// new files appear and the list stops growing (at most 30 s), each fetched whole; the state
    /// list is not read meanwhile. Fujifilm's event socket format is not
    /// known, so new files are found by comparing the lists, as a client does with a body that
    /// announces nothing. Autofocus follows the body's AF mode (its half-press is not documented).
    func captureToCard(bodySink: CameraImageSink? = nil) async throws -> [CameraImage] {
        stateCheck.withLock { $0.capturing += 1 }
        defer { stateCheck.withLock { $0.capturing -= 1 } }
        let before = Set(try await objectHandles())
        let r = try await call(PTPOperation.initiateCapture, [0, 0])
        guard r.ok else {
            throw CameraControlError.refused("the camera did not take the picture (\(Self.cameraError(r.code, op: PTPOperation.initiateCapture)))")
        }
        // New files (a RAW+JPEG shot gives two): taken once the list has stopped growing for one
        // poll; a file whose ObjectInfo the camera does not give yet is still being written.
        let by = ContinuousClock.now + .seconds(30)
        var seen: Set<UInt32> = []
        var ready: [(handle: UInt32, name: String)] = []
        while true {
            try await Task.sleep(for: .milliseconds(200))
            let added = try await objectHandles().filter { !before.contains($0) }
            var grew = false
            for h in added where !seen.contains(h) {
                let info = try await call(PTPOperation.getObjectInfo, [h])
                guard info.ok, let oi = try? PTPObjectInfo(info.data) else { continue }
                seen.insert(h)
                grew = true
                if !oi.isFolder { ready.append((h, oi.name)) }
            }
            if !ready.isEmpty && !grew && seen.count == added.count { break }
            guard ContinuousClock.now < by else {
                if !ready.isEmpty { break }
                throw CameraControlError.camera(code: 0, message: "no new file on the card within 30 s of the capture")
            }
        }
        // The card watch must not take these for shots on the body.
        knownHandles.withLock { $0?.formUnion(seen) }
        // Every file of the shot is tried; what fails is said (`bodySink`), what came is answered.
        var images: [CameraImage] = []
        var failures: [String] = []
        for (i, o) in ready.enumerated() {
            do {
                images.append(try await retrying { try await self.fetchImage(o.handle, name: o.name, fromBody: false) })
            } catch let e where Self.connectionBroke(e) {
                // On the card; the next session reads it (and the rest) by name. Once livegate
                // stops nothing is kept: reported lost.
                var kept = true
                for r in ready[i...] where !leftovers.keep(.init(name: r.name, fromBody: false)) {
                    kept = false
                    await bodySink?(.lost(name: r.name, reason: "\(e) (it is on the card)"))
                }
                if images.isEmpty {
                    throw CameraControlError.unavailable("the connection broke while \(o.name) was read (\(e)); it is on the card"
                        + (kept ? " and is saved when the camera is back" : ""))
                }
                return images
            } catch {
                failures.append("\(o.name): \(error)")
                await bodySink?(.lost(name: o.name, reason: "\(error) (it is on the card)"))
            }
        }
        if images.isEmpty, let first = failures.first {
            throw CameraControlError.camera(code: 0, message: "the shot is on the card but could not be read: \(first)")
        }
        return images
    }

    var isCapturing: Bool { stateCheck.withLock { $0.capturing > 0 } }

    /// Shots on the body: Fujifilm's events are not known, so the card's handle list is compared
    /// with the last one (the first look only learns what is there). A new object whose ObjectInfo
    /// the camera does not give yet is still being written: taken at a later look.
    func newObjectsOnTheCard() async -> [(handle: UInt32, name: String)] {
        guard let handles = try? await objectHandles(), !isCapturing else { return [] }
        let fresh = knownHandles.withLock { known -> [UInt32] in
            guard let k = known else {
                known = Set(handles)
                return []
            }
            return handles.filter { !k.contains($0) }
        }
        var out: [(handle: UInt32, name: String)] = []
        for h in fresh.prefix(64) {
            guard let r = try? await call(PTPOperation.getObjectInfo, [h]), r.ok, let info = try? PTPObjectInfo(r.data) else { continue }
            guard !isCapturing else { return out }
            knownHandles.withLock { _ = $0?.insert(h) }
            if !info.isFolder { out.append((h, info.name)) }
        }
        return out
    }

}
