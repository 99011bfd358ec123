internal import CGStreamer
internal import CGStreamerShim
import Foundation
import LiveViewCore
public import Logging

/// WebRTC preview over WHEP (RFC 9725): every viewer is a small pipeline
/// `appsrc ! rtph264pay ! webrtcbin` fed by the camera's ONE shared H.264 encoder (the same stream
/// as RTSP and HLS). Non-trickle: the answer waits for ICE gathering (a fraction of a second on
/// loopback) and carries every candidate, on the listen address only (libnice leaves loopback out
/// unless told). A viewer's first frame is a key frame forced once its connection is up (what was
/// sent before DTLS completed never reached it); a viewer's RTCP PLI/FIR asks the shared encoder for
/// a key frame (rate-limited). Sessions end on DELETE, when the connection fails
/// or stays disconnected, or when it never connects.
public final class WHEPOutput: Sendable {
    /// WHEP settings.
    public struct Configuration: Sendable {
        /// The address ICE offers (the HTTP listen address); "0.0.0.0" lets libnice pick every
        /// non-loopback interface.
        public var address: String
        /// Sessions at once, all cameras together.
        public var maxSessions = 16
        /// Longest wait for ICE gathering before answering.
        public var gatherTimeout: Duration = .seconds(2)
        /// A session whose connection is not up after this long ends.
        public var connectTimeout: Duration = .seconds(10)
        /// A connection disconnected, or a peer silent (no RTCP after it sent some), for this long
        /// ends its session: a browser tab that was closed or a client that died without DELETE.
        public var disconnectedTimeout: Duration = .seconds(5)

        public init(address: String = "127.0.0.1") {
            self.address = address
        }
    }

    /// Why an offer got no session (the HTTP layer maps these to status codes).
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case unknownCamera(String)
        /// Not an SDP offer with a video m-line (400).
        case badOffer(String)
        /// No H.264 with packetization-mode 1 in the offer (406).
        case noH264
        /// `maxSessions` reached (503).
        case tooManySessions(Int)
        /// webrtcbin or the pipeline failed (500).
        case failed(String)

        public var description: String {
            switch self {
            case .unknownCamera(let id): return "no camera '\(id.prefix(64))'"
            case .badOffer(let why): return "bad SDP offer: \(why)"
            case .noH264: return "the offer has no H.264 video with packetization-mode=1"
            case .tooManySessions(let n): return "\(n) WebRTC sessions already; end one first"
            case .failed(let why): return "WebRTC session failed: \(why)"
            }
        }
    }

    /// A session made from an offer.
    public struct Answer: Sendable {
        /// The SDP answer, with every ICE candidate.
        public let sdp: String
        /// The session's id (the last segment of its `Location`).
        public let session: String
        /// The camera it shows.
        public let camera: String
    }

    public let configuration: Configuration
    private let runtime: GStreamerRuntime
    private let logger: Logger
    private let state: WHEPState
    private let reaper: Task<Void, Never>

    public init(runtime: GStreamerRuntime, configuration: Configuration = .init(), logger: Logger = Logger(label: "livegate.whep")) {
        self.runtime = runtime
        self.configuration = configuration
        self.logger = logger
        let state = WHEPState()
        self.state = state
        let c = configuration
        let log = logger
        reaper = Task.detached {
            var added = state.added.wakeups.makeAsyncIterator()
            while !Task.isCancelled {
                // No session to follow: no timer either, until one is added (ends when cancelled).
                if state.count == 0 {
                    guard await added.next() != nil else { return }
                    continue
                }
                try? await Task.sleep(for: .milliseconds(100))
                for s in state.all() {
                    let asked = s.serveKeyframeRequests()
                    if asked > 0 { state.countKeyframeRequests(camera: s.camera, asked) }
                    if let why = s.check(connectTimeout: c.connectTimeout, disconnectedTimeout: c.disconnectedTimeout) {
                        if state.remove(s.id) != nil {
                            s.close()
                            log.info("WebRTC session ended", metadata: ["camera": "\(s.camera)", "session": "\(s.id)", "why": "\(why)"])
                        }
                    }
                }
            }
        }
    }

    deinit { stop() }

    /// Serves WHEP for a camera's graph.
    public func addCamera(_ graph: CameraGraph) {
        state.cameras.withLock { $0[graph.configuration.id] = graph }
    }

    /// Stops serving a camera and ends its sessions (the camera was removed).
    public func removeCamera(id: String) {
        state.cameras.withLock { _ = $0.removeValue(forKey: id) }
        for s in state.all() where s.camera == id {
            if let gone = state.remove(s.id) { gone.close() }
        }
    }

    /// Answers a viewer's offer with a new session (blocks a thread of its own for the negotiation,
    /// never the caller's).
    public func offer(camera id: String, sdp: String) async throws(Failure) -> Answer {
        guard let graph = state.cameras.withLock({ $0[id] }) else { throw .unknownCamera(id) }
        let pt = try WHEPOffer.h264PayloadType(sdp)
        // Sessions and offers still negotiating count together, so a burst of offers cannot build
        // more pipelines than `maxSessions`.
        guard state.reserve(max: configuration.maxSessions) else { throw .tooManySessions(configuration.maxSessions) }
        defer { state.unreserve() }
        let c = configuration
        let runtime = self.runtime
        let log = logger
        let session = try await blocking("whep-\(id)") { () throws(Failure) -> WHEPSession in
            try WHEPSession.negotiate(graph: graph, offer: sdp, payloadType: pt, configuration: c,
                                      runtime: runtime, logger: log).get()
        }
        state.add(session)
        logger.info("WebRTC session started", metadata: ["camera": "\(id)", "session": "\(session.id)", "pt": "\(pt)"])
        return Answer(sdp: session.answer, session: session.id, camera: id)
    }

    /// Ends a session; false when there is no such session (already ended).
    @discardableResult
    public func end(session id: String) -> Bool {
        guard let s = state.remove(id) else { return false }
        s.close()
        logger.info("WebRTC session ended", metadata: ["camera": "\(s.camera)", "session": "\(id)", "why": "DELETE"])
        return true
    }

    /// The camera of a live session.
    public func camera(ofSession id: String) -> String? { state.get(id)?.camera }

    /// Live sessions (all cameras).
    public var sessionCount: Int { state.count }

    /// Ends the reaper and waits until it has (a stop that follows never races it).
    public func endReaper() async {
        reaper.cancel()
        await reaper.value
    }

    /// Ends every session.
    public func stop() {
        reaper.cancel()
        for s in state.removeAll() { s.close() }
    }

    /// One entry per camera ("webrtc"): sessions and what was sent.
    public func stats() -> [OutputStats] {
        let sessions = state.all()
        return state.cameras.withLock { Array($0.keys) }.sorted().map { id in
            var s = OutputStats(output: "webrtc", camera: id)
            let mine = sessions.filter { $0.camera == id }
            s.clients = mine.count
            s.framesOut = state.finishedFrames(camera: id) + mine.reduce(0) { $0 + $1.source.pushed }
            s.errors = mine.reduce(0) { $0 + $1.pipeline.errorCount }
            s.keyframeRequests = state.keyframeRequests(camera: id)
            return s
        }
    }
}

/// The sessions and cameras of a WHEP output (shared with its reaper).
final class WHEPState: Sendable {
    let cameras = Mutex<[String: CameraGraph]>([:])
    private let sessions = Mutex<[String: WHEPSession]>([:])
    private let finished = Mutex<[String: Int]>([:])
    private let keyRequests = Mutex<[String: Int]>([:])
    private let negotiating = Mutex(0)

    /// Takes a place for an offer being negotiated, when sessions + negotiations stay below `max`.
    func reserve(max: Int) -> Bool {
        negotiating.withLock { n in
            guard count + n < max else { return false }
            n += 1
            return true
        }
    }

    func unreserve() { negotiating.withLock { $0 -= 1 } }

    /// Wakes the idle reaper when a session is added.
    let added = WakeSignal()

    func add(_ s: WHEPSession) {
        sessions.withLock { $0[s.id] = s }
        added.wake()
    }
    func get(_ id: String) -> WHEPSession? { sessions.withLock { $0[id] } }
    func remove(_ id: String) -> WHEPSession? {
        guard let s = sessions.withLock({ $0.removeValue(forKey: id) }) else { return nil }
        finished.withLock { $0[s.camera, default: 0] += s.source.pushed }
        return s
    }
    func removeAll() -> [WHEPSession] { sessions.withLock { m in let v = Array(m.values); m.removeAll(); return v } }
    func all() -> [WHEPSession] { sessions.withLock { Array($0.values) } }
    var count: Int { sessions.withLock { $0.count } }
    func finishedFrames(camera: String) -> Int { finished.withLock { $0[camera] ?? 0 } }
    func countKeyframeRequests(camera: String, _ n: Int) { keyRequests.withLock { $0[camera, default: 0] += n } }
    func keyframeRequests(camera: String) -> Int { keyRequests.withLock { $0[camera] ?? 0 } }
}

/// One viewer: its pipeline, its consumer of the encoded branch and its connection's progress.
final class WHEPSession: Sendable {
    let id: String
    let camera: String
    let answer: String
    let pipeline: MediaPipeline
    let source: AppSource
    private let webrtc: GstElementRef
    private let encoded: EncodedBranch
    private let consumer: EncodedBranch.Consumer
    private let startedAt = MonotonicClock.nanos()
    private struct Progress {
        var connected = false
        var connectedAt: UInt64 = 0
        var disconnectedSince: UInt64?
        var closed = false
    }
    private let progress = Mutex(Progress())

    private init(id: String, camera: String, answer: String, pipeline: MediaPipeline, source: AppSource,
                 webrtc: GstElementRef, encoded: EncodedBranch, consumer: EncodedBranch.Consumer) {
        self.id = id
        self.camera = camera
        self.answer = answer
        self.pipeline = pipeline
        self.source = source
        self.webrtc = webrtc
        self.encoded = encoded
        self.consumer = consumer
    }

    /// Builds the pipeline, joins the encoder and answers the offer (blocking; own thread).
    static func negotiate(graph: CameraGraph, offer: String, payloadType: Int, configuration c: WHEPOutput.Configuration,
                          runtime: GStreamerRuntime, logger: Logger) -> Result<WHEPSession, WHEPOutput.Failure> {
        let camera = graph.configuration.id
        let sessionID = WHEPSession.newID()
        let pipeline: MediaPipeline
        do {
            let launch = try PipelineTemplates.render(PipelineTemplates.whep, ["pt": "\(payloadType)"])
            pipeline = try MediaPipeline(launch: launch, name: "whep-\(camera)-\(sessionID.prefix(8))", runtime: runtime, logger: logger)
        } catch {
            return .failure(.failed("\(error)"))
        }
        guard let src = pipeline.child("src"), let rtc = pipeline.child("webrtc") else {
            pipeline.stop()
            return .failure(.failed("WHEP pipeline lacks src or webrtc"))
        }
        let webrtc = GstElementRef(rtc)
        if lg_webrtc_watch_peer_rtcp(rtc) == 0 {
            logger.warning("cannot watch the WebRTC peer's RTCP; a vanished peer ends only by ICE or timeout")
        }
        if c.address != "0.0.0.0" && lg_webrtc_add_local_address(rtc, c.address) == 0 {
            logger.warning("ICE agent did not take the listen address", metadata: ["address": "\(c.address)"])
        }
        do {
            try pipeline.play()
        } catch {
            lg_object_unref(src)
            pipeline.stop()
            return .failure(.failed("\(error)"))
        }
        if lg_watch_key_unit_requests(src) == 0 {
            logger.warning("cannot watch the viewer's key-frame requests (PLI/FIR); it gets key frames on the 1 s grid only")
        }
        let source = AppSource(element: src, owner: 0)
        let consumer = graph.encoded.addConsumer(kind: .stream, source: source)
        let answer: String
        switch WebRTCNegotiation.answer(rtc, offer: offer, gatherTimeout: max(.milliseconds(100), c.gatherTimeout)) {
        case .success(let text):
            answer = text
        case .failure(let why):
            graph.encoded.removeConsumer(consumer)
            pipeline.stop()
            return .failure(.badOffer(why.description))
        }
        return .success(WHEPSession(id: sessionID, camera: camera, answer: answer, pipeline: pipeline, source: source,
                                    webrtc: webrtc, encoded: graph.encoded, consumer: consumer))
    }

    /// Follows the connection (reaper, every 100 ms): on the first "connected" the stream restarts
    /// at a key frame forced for this viewer. Returns why the session must end, or nil.
    func check(connectTimeout: Duration, disconnectedTimeout: Duration) -> String? {
        let s = lg_webrtc_connection_state(webrtc.element)
        let now = MonotonicClock.nanos()
        var joinNow = false
        let verdict = progress.withLock { p -> String? in
            switch UInt32(s) {
            case GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED.rawValue:
                if !p.connected {
                    joinNow = true
                    p.connectedAt = now
                }
                p.connected = true
                p.disconnectedSince = nil
            case GST_WEBRTC_PEER_CONNECTION_STATE_FAILED.rawValue:
                return "connection failed"
            case GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED.rawValue:
                return "connection closed"
            case GST_WEBRTC_PEER_CONNECTION_STATE_DISCONNECTED.rawValue:
                if p.disconnectedSince == nil { p.disconnectedSince = now }
                if now &- p.disconnectedSince! > UInt64(disconnectedTimeout.nanoseconds) { return "peer gone (disconnected)" }
            default:
                break
            }
            if !p.connected && now &- startedAt > UInt64(connectTimeout.nanoseconds) { return "never connected" }
            let rtcp = lg_webrtc_last_peer_rtcp(webrtc.element)
            if p.connected, rtcp > 0 {
                let silentMicros = Int64(g_get_monotonic_time()) - Int64(rtcp)
                if silentMicros > Int64(disconnectedTimeout.nanoseconds / 1000) { return "peer gone (no RTCP for \(silentMicros / 1_000_000) s)" }
            } else if p.connected, now &- p.connectedAt > UInt64(connectTimeout.nanoseconds) {
                return "peer sent no RTCP"
            }
            return nil
        }
        if joinNow { encoded.joined(consumer) }
        return verdict
    }

    /// Passes the viewer's key-frame requests (RTCP PLI/FIR, seen as upstream force-key-unit events
    /// at the appsrc) to the shared encoder once connected; returns how many there were.
    func serveKeyframeRequests() -> Int {
        let n = Int(lg_take_key_unit_requests(source.element))
        if n > 0, progress.withLock({ $0.connected && !$0.closed }) { encoded.keyframeAsked(by: consumer) }
        return n
    }

    /// Leaves the encoder and stops the pipeline. Idempotent.
    func close() {
        let first = progress.withLock { p -> Bool in
            defer { p.closed = true }
            return !p.closed
        }
        guard first else { return }
        encoded.removeConsumer(consumer)
        pipeline.stop()
    }

    static func newID() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", g.next() as UInt32) }.joined()
    }
}


/// What a WHEP offer must contain for livegate: a video m-line offering H.264 with
/// packetization-mode=1; the payload type preferred is constrained baseline (profile-level-id
/// 42e0xx), then any baseline (42xxxx), then any H.264 with packetization-mode=1.
public enum WHEPOffer {
    /// Largest offer accepted.
    public static let maxBytes = 64 * 1024

    /// The payload type to send H.264 with.
    public static func h264PayloadType(_ sdp: String) throws(WHEPOutput.Failure) -> Int {
        guard sdp.utf8.count <= maxBytes else { throw .badOffer("larger than \(maxBytes) bytes") }
        let lines = sdp.split(whereSeparator: \.isNewline).map(String.init)
        guard lines.first?.hasPrefix("v=0") == true else { throw .badOffer("does not start with v=0") }
        var inVideo = false
        var sawVideo = false
        var h264: [Int] = []
        var fmtp: [Int: String] = [:]
        for l in lines {
            if l.hasPrefix("m=") {
                inVideo = l.hasPrefix("m=video ")
                sawVideo = sawVideo || inVideo
                continue
            }
            guard inVideo else { continue }
            if l.hasPrefix("a=rtpmap:") {
                let rest = l.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
                if rest.count == 2, let pt = Int(rest[0]), rest[1].uppercased().hasPrefix("H264/90000") { h264.append(pt) }
            } else if l.hasPrefix("a=fmtp:") {
                let rest = l.dropFirst("a=fmtp:".count).split(separator: " ", maxSplits: 1)
                if rest.count == 2, let pt = Int(rest[0]) { fmtp[pt] = rest[1].lowercased() }
            }
        }
        guard sawVideo else { throw .badOffer("no video m-line") }
        let mode1 = h264.filter { (fmtp[$0] ?? "").contains("packetization-mode=1") }
        func profile(_ pt: Int) -> String? {
            guard let f = fmtp[pt], let r = f.range(of: "profile-level-id=") else { return nil }
            return String(f[r.upperBound...].prefix(6))
        }
        if let pt = mode1.first(where: { profile($0)?.hasPrefix("42e0") == true }) { return pt }
        if let pt = mode1.first(where: { profile($0)?.hasPrefix("42") == true }) { return pt }
        if let pt = mode1.first { return pt }
        throw .noH264
    }
}
