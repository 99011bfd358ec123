import CameraWire
import Foundation

/// Still capture over PTP: Nikon into SDRAM (ptp.md §8.2), Canon EOS release with the picture on
/// the card (§8.3), Fujifilm with the standard InitiateCapture and the card's handle lists compared.
/// Canon's PC target and Sony PTP are not done yet (not supported).
extension PTPDriver: StillCapturing {
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        let session = try current()
        do {
            if let nikon = session as? NikonPTPSession { return [try await nikon.captureIntoSDRAM()] }
            if let canon = session as? CanonPTPSession { return try await canon.releaseToCard(autofocus: autofocus) }
            if let fuji = session as? FujiPTPSession { return try await fuji.captureToCard() }
        } catch let e as PTPTransportError {
            throw CameraControlError.unavailable("\(e)")
        }
        throw CameraControlError.notSupported("capture over this PTP/IP dialect")
    }

    /// Canon bodies announce their shots (ObjectAddedEx in GetEvent): those taken on the body are
    /// fetched and handed to `sink`.
    public func setImageSink(_ sink: @escaping CameraImageSink) { imageSink.withLock { $0 = sink } }

    /// After a live-view poll: files the camera announced that no capture of ours is waiting for
    /// were shot on the body (Canon: ObjectAddedEx from GetEvent; Nikon: ObjectAdded 0x4002 from
    /// its GetEvent 0x90C7, asked at most once a second); each is fetched (retried) in a task of
    /// its own and handed to the sink, or reported lost.
    func transferShotsOnTheBody(_ session: any PTPVendorSession) async {
        guard let sink = imageSink.withLock({ $0 }) else { return }
        var found: [(handle: UInt32, name: String)] = []
        let fetch: @Sendable (UInt32, String) async throws -> CameraImage
        if let canon = session as? CanonPTPSession, !canon.isCapturing {
            found = canon.takeAddedObjects().filter { $0.storage != 0 }.map { ($0.handle, $0.name) }
            fetch = { h, n in try await canon.fetchImage(h, name: n, fromBody: true) }
        } else if let nikon = session as? NikonPTPSession, !nikon.isCapturing, nikon.bodyEventsDue() {
            found = ((try? await nikon.objectsAddedOnTheCard()) ?? []).map { ($0, "") }
            fetch = { h, _ in try await nikon.fetchImage(h, fromBody: true) }
        } else {
            return
        }
        for o in found {
            Task {
                do {
                    await sink(.image(try await retrying { try await fetch(o.handle, o.name) }))
                } catch {
                    await sink(.lost(name: o.name.isEmpty ? "object 0x\(String(o.handle, radix: 16))" : o.name, reason: "\(error)"))
                }
            }
        }
    }
}

extension NikonPTPSession {
    /// The picture's handle in SDRAM (what ObjectAddedInSDRAM's 0 means).
    static let sdramHandle: UInt32 = 0xFFFF_0001

    /// True while a capture of ours runs (its events are its own).
    var isCapturing: Bool { capturing.withLock { $0 > 0 } }

    /// True at most once a second: time to ask GetEvent for shots on the body.
    func bodyEventsDue() -> Bool {
        let now = ContinuousClock.now
        return lastBodyEvents.withLock { last in
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }
    }

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
        let handle = added ?? Self.sdramHandle
        let image: Result<CameraImage, any Error>
        do { image = .success(try await fetchImage(handle, fallbackName: "NIKON_SDRAM.JPG", fromBody: false)) } catch { image = .failure(error) }
        _ = try? await call(PTPOperation.deleteObject, [handle, 0])  // SDRAM is freed either way
        return try image.get()
    }
}

extension CanonPTPSession {
    /// The regular EOS release (ptp.md §8.3): RemoteReleaseOn(1) (half press, a moment for focus
    /// when asked), RemoteReleaseOn(2), RemoteReleaseOff(2), RemoteReleaseOff(1); then GetEvent
    /// until the camera announces the new file (0xC181 ObjectAddedEx, read by the live-view loop's
    /// GetEvent too, so nothing is missed), which is fetched from the card.
    func releaseToCard(autofocus: Bool) async throws -> [CameraImage] {
        capturing.withLock { $0 += 1 }
        defer { capturing.withLock { $0 -= 1 } }
        _ = takeAddedObjects()
        try await callOK(0x9128, [1, 0])
        if autofocus { try await Task.sleep(for: .milliseconds(300)) }
        let full = try await call(0x9128, [2, 0])
        guard full.ok else {
            _ = try? await call(0x9129, [1])
            throw CameraControlError.refused("the camera refused the release (0x\(String(full.code, radix: 16, uppercase: true)))")
        }
        _ = try? await call(0x9129, [2])
        _ = try? await call(0x9129, [1])
        var added: [(handle: UInt32, storage: UInt32, name: String)] = []
        let by = ContinuousClock.now + .seconds(30)
        while added.isEmpty {
            guard ContinuousClock.now < by else {
                throw CameraControlError.camera(code: 0, message: "the camera announced no new file within 30 s of the release")
            }
            try await getEvent()
            added = takeAddedObjects()
            if added.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        var images: [CameraImage] = []
        for o in added where o.storage != 0 {
            images.append(try await retrying { try await self.fetchImage(o.handle, name: o.name, fromBody: false) })
        }
        return images
    }

    /// True while a capture of ours waits for its file (announced files are then ours).
    var isCapturing: Bool { capturing.withLock { $0 > 0 } }
}

extension PTPVendorBase {
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
    func captureToCard() async throws -> [CameraImage] {
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
        var images: [CameraImage] = []
        for o in ready {
            images.append(try await retrying { try await self.fetchImage(o.handle, name: o.name, fromBody: false) })
        }
        return images
    }

}
