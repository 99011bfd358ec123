import Foundation
import LiveViewCore
import NIOCore

extension BanditREST {
    /// The bytes of `GET /api/2/images/<id>/contents` (the photo as the camera stored it).
    func imageContents(_ id: String, maxBytes: Int) async throws -> [UInt8] {
        var c = client
        c.maxBodyBytes = maxBytes
        let target = try await apiPath("images/\(Self.pathComponent(id))/contents")
        let r: HTTPResponse
        do {
            r = try await c.request("GET", endpoint.url(target), timeout: .seconds(60))
        } catch {
            throw CameraControlError.unavailable("GET \(target): \(error)")
        }
        guard r.status == 200 else { throw CameraControlError.camera(code: r.status, message: "HTTP \(r.status) for GET \(target)") }
        return r.body
    }

    /// An id as one URL path component (ids come from the camera: never let one add a path).
    static func pathComponent(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_."))) ?? "_"
    }
}

/// Photos the Bandit announces on its backchannel (`photo_captured`, also for shots taken with the
/// button on the camera): each is fetched once, with retries, and handed to the image sink, except
/// the photos of a shutter livegate fired (`shoot`), which go to that capture.
final class BanditTransfer: Sendable {
    private let sink = Mutex<CameraImageSink?>(nil)
    private let handled = Mutex(HandledImages())
    /// The capture waiting for the camera's next `photo_captured`.
    private let waiting = Mutex<BanditShotWaiter?>(nil)

    func setSink(_ s: @escaping CameraImageSink) { sink.withLock { $0 = s } }

    func photosCaptured(_ ids: [String], rest: BanditREST) async {
        let fresh = ids.filter { id in handled.withLock { $0.claim(id) } }
        guard !fresh.isEmpty else { return }
        // The first announcement after a shutter livegate fired is that shutter's (the notes give no
        // way to tell it from a button press at the same moment).
        if let w = waiting.withLock({ w -> BanditShotWaiter? in defer { w = nil }; return w }) {
            w.resolve(.photos(fresh))
            return
        }
        guard let sink = sink.withLock({ $0 }) else { return }
        for id in fresh {
            do {
                await sink(.image(try await Self.fetch(id, rest: rest, fromBody: true)))
            } catch {
                await sink(.lost(name: await Self.name(of: id, rest: rest), reason: "\(error)"))
            }
        }
    }

    /// `recording_started` while a capture waits: the camera read the shutter as "record".
    func recordingStarted() {
        waiting.withLock { w -> BanditShotWaiter? in defer { w = nil }; return w }?.resolve(.recordingStarted)
    }

    /// Runs `trigger` (the shutter) and waits up to `timeout` for what the camera announces next.
    func shoot(timeout: Duration, trigger: () async throws -> Void) async throws -> BanditShotWaiter.Outcome {
        let w = BanditShotWaiter()
        guard waiting.withLock({ current -> Bool in
            guard current == nil else { return false }
            current = w
            return true
        }) else { throw CameraControlError.refused("a capture is already running") }
        defer { waiting.withLock { if $0 === w { $0 = nil } } }
        try await trigger()
        let timer = Task {
            try? await Task.sleep(for: timeout)
            w.resolve(.nothing)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler { await w.wait() } onCancel: { w.resolve(.nothing) }
    }

    /// The photo's file name: the last component of its card path, else `<id>.JPG`.
    static func name(of id: String, rest: BanditREST) async -> String {
        if let obj = try? await rest.call("GET", "images/\(BanditREST.pathComponent(id))"),
           let path = obj["path"] as? String, let last = path.split(separator: "/").last {
            return String(last)
        }
        return "\(id).JPG"
    }

    /// Reads one photo (its bytes as the camera stored them), with retries.
    static func fetch(_ id: String, rest: BanditREST, fromBody: Bool) async throws -> CameraImage {
        let name = await name(of: id, rest: rest)
        let bytes = try await retrying { try await rest.imageContents(id, maxBytes: 256 * 1024 * 1024) }
        return CameraImage(name: name, bytes: bytes, fromBody: fromBody)
    }
}

/// One capture's wait for the camera's answer to the shutter: resolved once, whether before or
/// after the capture starts waiting.
final class BanditShotWaiter: Sendable {
    enum Outcome: Sendable, Equatable {
        /// `photo_captured` with these image ids.
        case photos([String])
        /// `recording_started`: the camera records a video instead.
        case recordingStarted
        /// Nothing within the wait (or the capture was cancelled).
        case nothing
    }

    private struct State {
        var result: Outcome?
        var continuation: CheckedContinuation<Outcome, Never>?
    }
    private let state = Mutex(State())

    func resolve(_ outcome: Outcome) {
        let c = state.withLock { s -> CheckedContinuation<Outcome, Never>? in
            guard s.result == nil else { return nil }
            s.result = outcome
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume(returning: outcome)
    }

    func wait() async -> Outcome {
        await withCheckedContinuation { (c: CheckedContinuation<Outcome, Never>) in
            let done = state.withLock { s -> Outcome? in
                if let r = s.result { return r }
                s.continuation = c
                return nil
            }
            if let done { c.resume(returning: done) }
        }
    }
}

extension BanditDriver: StillCapturing {
    /// The notes name no shutter endpoint; in an image mode (`settings.image`, single or burst)
    /// `POST record {"recording_active": true}` is read as one (UNCONFIRMED): the photos the camera
    /// then announces with `photo_captured` are this capture's. The other reading, a body that starts
    /// a video instead, is caught: `recording_started` (or no photo within the wait and
    /// `recording_active`) → the recording is stopped and the capture refused with that reason.
    /// Video mode and continuous photo runs are refused before anything is sent.
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        guard state == .streaming else { throw CameraControlError.unavailable("the camera is \(state.rawValue)") }
        let settings = try await rest.call("GET", "settings")
        guard let image = settings["image"] as? [String: Any] else {
            throw CameraControlError.refused("the Bandit is in video mode; it takes photos in image mode (set it on the camera)")
        }
        let mode = image["mode"] as? String ?? "single"
        guard mode != "continuous" else {
            throw CameraControlError.refused("image mode 'continuous' takes photos until it is stopped; choose single or burst")
        }
        guard hasBackchannel else {
            throw CameraControlError.unavailable("no backchannel: the Bandit announces its photos there")
        }
        let rest = self.rest
        let outcome: BanditShotWaiter.Outcome
        do {
            outcome = try await transfer.shoot(timeout: shotTimeout) {
                try await rest.call("POST", "record", body: ["recording_active": true])
            }
        } catch CameraControlError.camera(let code, let message) where code == 409 || code == 503 {
            throw CameraControlError.refused("the camera answered \(code) to the shutter: \(message)")
        }
        let recording: Bool
        switch outcome {
        case .photos(let ids):
            return try await fetchShot(ids)
        case .recordingStarted:
            recording = true
        case .nothing:
            recording = (try? await status())?.recordingActive ?? false
        }
        guard !recording else {
            try? await stopRecording()
            throw CameraControlError.refused(
                "the Bandit started a recording instead of taking a photo (stopped again): it takes no remote photos in this mode")
        }
        throw CameraControlError.unavailable("the Bandit announced no photo within \(shotTimeout) of the shutter")
    }

    /// Reads the photos a shutter produced.
    private func fetchShot(_ ids: [String]) async throws -> [CameraImage] {
        var images: [CameraImage] = []
        for id in ids {
            do {
                images.append(try await BanditTransfer.fetch(id, rest: self.rest, fromBody: false))
            } catch {
                throw CameraControlError.unavailable("photo \(id) was taken and is on the card, but reading it failed: \(error)")
            }
        }
        return images
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { transfer.setSink(sink) }
}
