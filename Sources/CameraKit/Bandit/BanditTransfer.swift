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
/// the photos of a shutter livegate fired, which go to that capture. Announcements are routed on
/// the backchannel's thread as they arrive (`route`), so one that came before a shutter is never
/// taken for its photos.
final class BanditTransfer: Sendable {
    private let sink = Mutex<CameraImageSink?>(nil)
    private let handled = Mutex(HandledImages())
    /// The capture collecting what the camera announces after its shutter.
    private let waiting = Mutex<BanditShotWaiter?>(nil)

    func setSink(_ s: @escaping CameraImageSink) { sink.withLock { $0 = s } }

    /// A `photo_captured`: the ids not seen before go to the capture that waits, if one does; else
    /// they are returned, to be fetched for the sink.
    func route(_ ids: [String]) -> [String] {
        let fresh = ids.filter { id in handled.withLock { $0.claim(id) } }
        guard !fresh.isEmpty else { return [] }
        // The first announcements after a shutter livegate fired are that shutter's (the notes give
        // no way to tell them from a button press at the same moment).
        // Added under the lock `close` takes: an id is either in the ids a capture took or for the sink.
        let taken = waiting.withLock { w -> Bool in
            guard let w else { return false }
            w.add(fresh)
            return true
        }
        return taken ? [] : fresh
    }

    /// Fetches photos shot on the body and hands them to the sink (a failed read: reported lost).
    func fetchForSink(_ ids: [String], rest: BanditREST) async {
        guard let sink = sink.withLock({ $0 }) else { return }
        for id in ids {
            do {
                await sink(.image(try await Self.fetch(id, rest: rest, fromBody: true)))
            } catch {
                await sink(.lost(name: await Self.name(of: id, rest: rest), reason: "\(error)"))
            }
        }
    }

    /// `recording_started` while a capture waits: the camera read the shutter as "record".
    func recordingStarted() { waiting.withLock { $0 }?.recordingStarted() }

    /// Starts collecting for a capture (one at a time).
    func beginShot() throws -> BanditShotWaiter {
        let w = BanditShotWaiter()
        guard waiting.withLock({ current -> Bool in
            guard current == nil else { return false }
            current = w
            return true
        }) else { throw CameraControlError.refused("a capture is already running") }
        return w
    }

    /// Stops collecting and returns what was collected: later announcements are body shots again.
    @discardableResult
    func endShot(_ w: BanditShotWaiter) -> [String] {
        waiting.withLock { current -> [String] in
            if current === w { current = nil }
            return w.ids
        }
    }

    /// Reads the photos of a capture; one that cannot be read goes to the sink as lost (it is on
    /// the card), and the capture fails only when none could be read.
    func fetchShot(_ ids: [String], rest: BanditREST) async throws -> [CameraImage] {
        var images: [CameraImage] = []
        var failures: [String] = []
        for id in ids {
            do {
                images.append(try await Self.fetch(id, rest: rest, fromBody: false))
            } catch {
                failures.append("\(id): \(error)")
                await sink.withLock({ $0 })?(.lost(name: await Self.name(of: id, rest: rest), reason: "\(error)"))
            }
        }
        guard !images.isEmpty else {
            throw CameraControlError.unavailable("the photos were taken and are on the card, but reading them failed: \(failures.joined(separator: "; "))")
        }
        return images
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

/// What the camera announced after one capture's shutter: the photo ids as they come, and whether
/// it started a recording instead. `first(timeout:)` waits for the first announcement.
final class BanditShotWaiter: Sendable {
    enum Outcome: Sendable, Equatable {
        /// `photo_captured`.
        case photos
        /// `recording_started`: the camera records a video instead.
        case recordingStarted
        /// Nothing within the wait (or the capture was cancelled).
        case nothing
    }

    private struct State {
        var ids: [String] = []
        var result: Outcome?
        var continuation: CheckedContinuation<Outcome, Never>?
    }
    private let state = Mutex(State())

    /// The photo ids announced so far.
    var ids: [String] { state.withLock { $0.ids } }

    func add(_ fresh: [String]) {
        state.withLock { $0.ids += fresh }
        resolve(.photos)
    }

    func recordingStarted() { resolve(.recordingStarted) }

    private func resolve(_ outcome: Outcome) {
        let c = state.withLock { s -> CheckedContinuation<Outcome, Never>? in
            guard s.result == nil else { return nil }
            s.result = outcome
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume(returning: outcome)
    }

    /// The first announcement, or `.nothing` after `timeout` (or on cancellation).
    func first(timeout: Duration) async -> Outcome {
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            resolve(.nothing)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Outcome, Never>) in
                let done = state.withLock { s -> Outcome? in
                    if let r = s.result { return r }
                    s.continuation = c
                    return nil
                }
                if let done { c.resume(returning: done) }
            }
        } onCancel: { resolve(.nothing) }
    }

    /// After the first photos: waits for the rest of a burst, until `expected` ids came or
    /// `quiet` passed without a new one (a body that announces each photo on its own).
    func rest(expected: Int, quiet: Duration) async {
        var count = ids.count
        var since = ContinuousClock.now
        while count < expected, ContinuousClock.now - since < quiet, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            let now = ids.count
            if now != count { count = now; since = .now }
        }
    }
}

extension BanditDriver: StillCapturing {
    /// The notes name no shutter endpoint; in an image mode (`settings.image`, single or burst)
    /// `POST record {"recording_active": true}` is read as one (UNCONFIRMED): the photos the camera
    /// then announces with `photo_captured` are this capture's (a burst: until its count came, in
    /// one announcement or several). The other reading, a body that starts a video instead, is
    /// caught: `recording_started` (or no photo within the wait and `recording_active`) → the
    /// recording is stopped and the capture refused with that reason. Video mode and continuous
    /// photo runs are refused before anything is sent.
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
        // bandit.md: `burst_count` (iOS) or `count` (Android), UNCONFIRMED which is real.
        let expected = mode == "burst" ? max(1, ((image["burst_count"] ?? image["count"]) as? NSNumber)?.intValue ?? 1) : 1
        guard hasBackchannel else {
            throw CameraControlError.unavailable("no backchannel: the Bandit announces its photos there")
        }
        let w = try transfer.beginShot()
        // Whatever the way out, photos collected and not taken by this capture go to the sink.
        var handedOver = false
        defer {
            if !handedOver {
                let orphans = transfer.endShot(w)
                if !orphans.isEmpty {
                    let rest = self.rest, transfer = self.transfer
                    Task { await transfer.fetchForSink(orphans, rest: rest) }
                }
            }
        }
        do {
            try await rest.call("POST", "record", body: ["recording_active": true])
        } catch CameraControlError.camera(let code, let message) where code == 409 || code == 503 {
            throw CameraControlError.refused("the camera answered \(code) to the shutter: \(message)")
        } catch {
            // No answer, or an unclear one: the body may have started recording all the same.
            _ = await stopRecordingIfStarted()
            throw error
        }
        let recording: Bool
        switch await w.first(timeout: shotTimeout) {
        case .photos:
            await w.rest(expected: expected, quiet: .seconds(2))
            let ids = transfer.endShot(w)
            handedOver = true
            return try await transfer.fetchShot(ids, rest: rest)
        case .recordingStarted:
            recording = true
        case .nothing:
            recording = (try? await status())?.recordingActive ?? false
        }
        guard !recording else {
            let stopped = (try? await stopRecording()) != nil
            throw CameraControlError.refused("the Bandit started a recording instead of taking a photo ("
                + (stopped ? "stopped again" : "stopping it failed: stop it on the camera") + "): it takes no remote photos in this mode")
        }
        throw CameraControlError.unavailable("the Bandit announced no photo within \(shotTimeout) of the shutter")
    }

    /// Stops a recording an unanswered shutter may have started; true when one was stopped.
    private func stopRecordingIfStarted() async -> Bool {
        guard (try? await status())?.recordingActive == true else { return false }
        return (try? await stopRecording()) != nil
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { transfer.setSink(sink) }
}
