public import Foundation
import LiveViewCore
public import Logging

/// Pushes a camera's H.264 — the camera's ONE shared encoder — to a media server, so that many
/// gateways near their cameras feed a media-server cluster that serves the viewers:
///
/// * `rtsp://` and `rtsps://`: RTSP RECORD (ANNOUNCE/SETUP/RECORD) through `rtspclientsink`, over TCP;
/// * `rtmp://` and `rtmps://`: FLV through `rtmp2sink`;
/// * `srt://`: MPEG-TS through `srtsink` (caller mode unless the URL says otherwise).
///
/// A push is a consumer that is always on while configured. When the server is missing, refuses or
/// goes away, the pipeline is torn down and built again after a back-off (1 s doubling to 15 s;
/// back to 1 s after a minute of pushing), with the state and the reason told to `onChange`. The
/// push's appsrc drops its oldest buffers when full, so a stalled or slow server never holds up the
/// encoder, the other outputs or the camera; it resumes at a key frame asked for it.
public final class PushOutput: Sendable {
    /// What a push is doing.
    public enum State: String, Sendable {
        case connecting, pushing, retrying, stopped
    }

    /// The push's state for the API and the events.
    public struct Status: Sendable, Equatable {
        public var url: String
        public var state: State
        public var reason: String?
        public var since: Date
        public var attempts: Int
    }

    /// A target URL that cannot be pushed to.
    public struct BadURL: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public let camera: String
    /// The URL as given (may carry a stream key: never logged; see `displayURL`).
    public let url: String
    /// The URL without user, password and query, for logs and the API.
    public let displayURL: String
    private let launch: String
    private let graph: CameraGraph
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let onChange: @Sendable (Status) -> Void
    private let status: Mutex<Status>
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Frames pushed by connections that have ended, and the connection running now.
    private let pushedFrames = Atomic<Int>(0)
    private let live = Mutex<AppSource?>(nil)
    private let errorCount = Atomic<Int>(0)

    /// Checks a URL and names what is wrong with it.
    public static func check(_ url: String) throws(BadURL) -> (scheme: String, display: String) {
        guard let u = URLComponents(string: url), let scheme = u.scheme?.lowercased() else {
            throw BadURL(description: "push URL '\(redact(url))' is not a URL (rtsp://, rtmp:// or srt://HOST[:PORT]/PATH)")
        }
        guard ["rtsp", "rtsps", "rtmp", "rtmps", "srt"].contains(scheme) else {
            throw BadURL(description: "push URL scheme '\(scheme)' is not supported; use rtsp://, rtmp:// or srt://")
        }
        guard let host = u.host, !host.isEmpty else { throw BadURL(description: "push URL '\(redact(url))' has no host") }
        if let p = u.port, !(1...65535).contains(p) { throw BadURL(description: "push URL port \(p) must be 1…65535") }
        return (scheme, redact(url))
    }

    /// `scheme://host[:port]/path` without credentials and query (stream keys often sit there).
    static func redact(_ url: String) -> String {
        guard var u = URLComponents(string: url) else { return "(unparsable URL)" }
        u.user = nil
        u.password = nil
        u.query = nil
        return u.string ?? "(unparsable URL)"
    }

    /// Builds the push (not started). Throws for a URL that cannot be pushed to.
    public init(camera graph: CameraGraph, url: String, runtime: GStreamerRuntime, logger: Logger,
                onChange: @escaping @Sendable (Status) -> Void = { _ in }) throws {
        let (scheme, display) = try Self.check(url)
        let template: String
        switch scheme {
        case "rtsp", "rtsps": template = PipelineTemplates.pushRTSP
        case "rtmp", "rtmps": template = PipelineTemplates.pushRTMP
        default: template = PipelineTemplates.pushSRT
        }
        launch = try PipelineTemplates.render(template, ["url": PipelineTemplates.escapeQuoted(url)])
        self.camera = graph.configuration.id
        self.url = url
        self.displayURL = display
        self.graph = graph
        self.runtime = runtime
        self.logger = logger
        self.onChange = onChange
        status = Mutex(Status(url: display, state: .connecting, reason: nil, since: Date(), attempts: 0))
    }

    /// The push's state now.
    public var current: Status { status.withLock { $0 } }

    /// Starts pushing (and keeps trying until `stop`).
    public func start() {
        task.withLock { t in
            guard t == nil else { return }
            t = Task.detached { [self] in await self.loop() }
        }
    }

    /// Stops pushing: the server sees the end of the stream.
    public func stop() {
        let t = task.withLock { t -> Task<Void, Never>? in let o = t; t = nil; return o }
        t?.cancel()
        set(.stopped, reason: nil)
    }

    private func set(_ state: State, reason: String?, attempt: Bool = false) {
        let s = status.withLock { s -> Status? in
            guard s.state != .stopped || state == .stopped else { return nil }
            if attempt { s.attempts += 1 }
            guard s.state != state || s.reason != reason else { return nil }
            s.state = state
            s.reason = reason
            s.since = Date()
            return s
        }
        if let s { onChange(s) }
    }

    private func loop() async {
        var backoff: Double = 1
        while !Task.isCancelled {
            set(.connecting, reason: nil, attempt: true)
            let began = ContinuousClock.now
            let reason = await runOnce()
            if Task.isCancelled { break }
            errorCount.wrappingAdd(1, ordering: .relaxed)
            if ContinuousClock.now - began > .seconds(60) { backoff = 1 }
            set(.retrying, reason: reason)
            logger.warning("push failed; retrying", metadata: ["camera": "\(camera)", "url": "\(displayURL)",
                                                               "reason": "\(reason)", "retryIn": "\(backoff) s"])
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(15, backoff * 2)
        }
    }

    /// One connection: runs until the pipeline fails (returns why) or the task is cancelled.
    private func runOnce() async -> String {
        let pipeline: MediaPipeline
        let source: AppSource
        do {
            pipeline = try MediaPipeline(launch: launch, name: "push-\(camera)", runtime: runtime, logger: logger)
            guard let src = pipeline.child("src") else { return "the push pipeline has no appsrc" }
            source = AppSource(element: src)
            try pipeline.play()
        } catch {
            return "\(error)"
        }
        let consumer = graph.encoded.addConsumer(kind: .stream, source: source)
        live.withLock { $0 = source }
        defer {
            graph.encoded.removeConsumer(consumer)
            live.withLock { $0 = nil }
            pushedFrames.wrappingAdd(source.pushed, ordering: .relaxed)
            pipeline.finish(appsrc: source.element, timeout: 1)
            pipeline.stop()
        }
        var announced = false
        while !Task.isCancelled {
            if pipeline.errorCount > 0 { return Self.readable(pipeline.lastError) }
            if !announced && source.pushed > 0 {
                announced = true
                set(.pushing, reason: nil)
                logger.info("pushing", metadata: ["camera": "\(camera)", "url": "\(displayURL)"])
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return "stopped"
    }

    /// GStreamer's error text, shortened for the API and the events.
    static func readable(_ error: String?) -> String {
        guard let e = error else { return "the server went away" }
        return e.count > 160 ? String(e.prefix(157)) + "..." : e
    }

    /// framesOut = H.264 frames handed to the push, errors = failed connections.
    public func stats() -> OutputStats {
        var s = OutputStats(output: "push", camera: camera)
        s.framesOut = pushedFrames.load(ordering: .relaxed) + (live.withLock { $0 }?.pushed ?? 0)
        s.errors = errorCount.load(ordering: .relaxed)
        s.clients = current.state == .pushing ? 1 : 0
        return s
    }
}
