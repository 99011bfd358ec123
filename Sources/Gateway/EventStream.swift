import CameraKit
import Foundation
import GatewayAPI
import LiveViewCore
import MediaKit

/// The camera events of `GET /api/v1/events` (Server-Sent Events), one stream for all cameras:
/// `state` (connection state and the reason when away), `property` (a property's value changed) and
/// `af` (the newest frame's AF areas, at most twice a second and only when they change). The
/// drivers have no change notifications of their own, so while at least one client listens the
/// gateway watches: states every 250 ms, properties every second, AF every 500 ms. Nobody
/// listening, nothing is polled. `storage` (the card: mounted, full, write-protected, remaining
/// shots, where the camera says) is checked every second. Also sent as they happen: `recording` (a segment started or was
/// finished), `capture` and `capture-failed`.
///
/// Every event sent to all listeners has an `id:`; a client that reconnects with `Last-Event-ID`
/// (browsers' EventSource do it by themselves) first gets what it missed, from the newest
/// `replayLimit` events, then the current states and properties like any newcomer.
final class EventStream: Sendable {
    /// The gateway's cameras at the moment of asking (set once by the gateway, which owns the list).
    private let cameraList = Mutex<@Sendable () -> [CameraRuntime]>({ [] })
    private struct Listeners {
        var subscribers: [Int: AsyncStream<String>.Continuation] = [:]
        var lastID = 0
        var recent: [(id: Int, text: String)] = []
        /// The gateway is closing: every stream has ended and new ones end at once.
        var closed = false
    }
    private let listeners = Mutex(Listeners())
    /// Held while events are handed to listeners (`yield`), so that each listener gets them in
    /// order; never while `listeners` is held. A `yield` may wait for the listening task's own
    /// lock, under which a cancelled listener ends (`onTermination` → `unsubscribe`, which takes
    /// `listeners`): yielding under `listeners` deadlocked exactly so.
    private let delivery = Mutex(())
    /// Events kept for clients that reconnect.
    static let replayLimit = 512
    private let nextID = Atomic<Int>(1)
    private let watcher = Mutex<Task<Void, Never>?>(nil)

    init() {}

    /// Where the stream reads the current cameras from.
    func readCameras(from list: @escaping @Sendable () -> [CameraRuntime]) {
        cameraList.withLock { $0 = list }
    }

    private func cameras() -> [CameraRuntime] {
        cameraList.withLock { $0 }()
    }

    /// A new listener: its stream starts with the events after `lastEventID` when they are still
    /// kept (a reconnect), then every camera's state and properties.
    func subscribe(lastEventID: Int? = nil) -> AsyncStream<String> {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let first = delivery.withLock { _ -> Bool? in
            let (first, missed) = listeners.withLock { l -> (Bool?, [String]) in
                guard !l.closed else { return (nil, []) }
                l.subscribers[id] = continuation
                var missed: [String] = []
                if let last = lastEventID, last <= l.lastID, last >= (l.recent.first?.id ?? l.lastID + 1) - 1 {
                    missed = l.recent.filter { $0.id > last }.map(\.text)
                }
                return (l.subscribers.count == 1, missed)
            }
            for text in missed { continuation.yield(text) }
            return first
        }
        guard let first else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        if first {
            let task = Task.detached { [weak self] in
                guard let self else { return }
                await self.watch()
            }
            watcher.withLock { $0 = task }
        } else {
            Task.detached { [weak self] in await self?.snapshot(to: continuation) }
        }
        return stream
    }

    /// Ends every listener's stream (their answers finish cleanly) and every later one at once.
    func close() {
        let all = delivery.withLock { _ in
            listeners.withLock { l -> [AsyncStream<String>.Continuation] in
                l.closed = true
                return Array(l.subscribers.values)
            }
        }
        for c in all { c.finish() }
    }

    private func unsubscribe(_ id: Int) {
        let last = listeners.withLock { l -> Bool in
            l.subscribers.removeValue(forKey: id)
            return l.subscribers.isEmpty
        }
        guard last else { return }
        let task = watcher.withLock { t -> Task<Void, Never>? in
            defer { t = nil }
            return t
        }
        task?.cancel()
    }

    static func format(_ event: String, _ data: some Encodable) -> String {
        let json = (try? APIJSON.encoder.encode(data)) ?? Data("{}".utf8)
        return "event: \(event)\ndata: \(String(decoding: json, as: UTF8.self))\n\n"
    }

    /// To every listener, with the next id (kept for reconnects).
    private func send(_ text: String) {
        delivery.withLock { _ in
            let (t, to) = listeners.withLock { l -> (String, [AsyncStream<String>.Continuation]) in
                l.lastID += 1
                let t = "id: \(l.lastID)\n" + text
                l.recent.append((l.lastID, t))
                if l.recent.count > Self.replayLimit { l.recent.removeFirst(l.recent.count - Self.replayLimit) }
                return (t, Array(l.subscribers.values))
            }
            for c in to { c.yield(t) }
        }
    }

    private func stateEvent(_ cam: CameraRuntime) -> (key: String, text: String) {
        let state = cam.driver.state.rawValue
        let reason = OutputSet.reason(cam.driver)
        return (state + "|" + (reason ?? ""), Self.format("state", StateEvent(camera: cam.id, state: state, reason: reason)))
    }

    private func propertyEvents(_ cam: CameraRuntime) async -> [String: String] {
        guard cam.driver.state == .streaming, let props = try? await cam.driver.properties() else { return [:] }
        var out: [String: String] = [:]
        for p in props {
            out[p.name.rawValue] = Self.format("property", PropertyEvent(camera: cam.id, name: p.name.rawValue,
                                                                         value: p.value.map(APIValue.init),
                                                                         displayText: p.displayText))
        }
        return out
    }

    private func snapshot(to c: AsyncStream<String>.Continuation) async {
        for cam in cameras() {
            c.yield(stateEvent(cam).text)
            for (_, text) in await propertyEvents(cam).sorted(by: { $0.key < $1.key }) { c.yield(text) }
        }
    }

    private func afEvent(_ cam: CameraRuntime) -> String? {
        guard let f = cam.hub.latest() else { return nil }
        defer { f.release() }
        let areas = f.afAreas.map { a in
            AFBox(x: a.pixels.x, y: a.pixels.y, w: a.pixels.width, h: a.pixels.height, kind: "\(a.kind)", state: "\(a.state)")
        }
        return Self.format("af", AFEvent(camera: cam.id, width: f.width, height: f.height, rotation: f.rotation, areas: areas))
    }

    /// The camera's card, when its driver reports one.
    private func storageEvent(_ cam: CameraRuntime) -> String? {
        guard let s = (cam.driver as? any StorageReporting)?.storage else { return nil }
        return Self.format("storage", StorageEvent(camera: cam.id, storage: s.api))
    }

    /// A recording segment started or finished.
    func recordingSegment(_ s: RecordingSegment) {
        send(Self.format("recording", RecordingEvent(camera: s.camera, change: s.change.rawValue, path: s.path,
                                                     frames: s.frames, clean: s.clean)))
    }

    /// A file saved from a camera.
    func captureSaved(_ file: SavedFile) {
        send(Self.format("capture", file))
    }

    /// An image the camera produced that could not be fetched or saved.
    func captureFailed(camera: String, name: String, reason: String) {
        send(Self.format("capture-failed", CaptureFailedEvent(camera: camera, name: name, reason: reason)))
    }

    /// A push to a media server connected, failed or is retrying.
    func push(camera: String, _ status: PushOutput.Status) {
        var o = Self.pushState(status)
        o.camera = camera
        send(Self.format("push", o))
    }

    static func pushState(_ s: PushOutput.Status) -> PushState {
        PushState(url: s.url, state: s.state.rawValue, reason: s.reason, attempts: s.attempts,
                  since: ISO8601DateFormatter().string(from: s.since))
    }

    /// The configuration was reloaded: cameras added and removed.
    func reloaded(added: [String], removed: [String]) {
        send(Self.format("config", ConfigEvent(added: added, removed: removed)))
    }

    /// A property this gateway just set: sent at once (the watcher confirms it from the camera).
    func propertySet(camera: String, name: String, value: APIValue) {
        send(Self.format("property", PropertyEvent(camera: camera, name: name, value: value, displayText: nil)))
    }

    /// Runs while anyone listens: sends what changed. Properties are read in a loop of their own (a
    /// slow camera answer never delays states and AF).
    private func watch() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                var props: [String: [String: String]] = [:]
                while !Task.isCancelled {
                    for cam in cameras() {
                        let now = await propertyEvents(cam)
                        let before = props[cam.id] ?? [:]
                        for (name, text) in now.sorted(by: { $0.key < $1.key }) where before[name] != text { send(text) }
                        if !now.isEmpty { props[cam.id] = now }
                    }
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            group.addTask { [self] in
                var states: [String: String] = [:]
                var af: [String: String] = [:]
                var storage: [String: String] = [:]
                var tick = 0
                while !Task.isCancelled {
                    for cam in cameras() {
                        let s = stateEvent(cam)
                        if states[cam.id] != s.key {
                            states[cam.id] = s.key
                            send(s.text)
                        }
                        if tick % 2 == 0, let a = afEvent(cam), af[cam.id] != a {
                            af[cam.id] = a
                            send(a)
                        }
                        if tick % 4 == 0, let s = storageEvent(cam), storage[cam.id] != s {
                            storage[cam.id] = s
                            send(s)
                        }
                    }
                    tick += 1
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
    }
}
