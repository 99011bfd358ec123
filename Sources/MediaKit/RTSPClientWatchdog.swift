internal import CGStreamer
internal import CGStreamerShim
import Foundation
import LiveViewCore
import Logging

/// Closes the RTSP connections that hold resources without using them, once a second on the
/// runtime's main loop (where gst-rtsp-server handles its clients):
/// * **idle**: a connection that has set up no session for `idleTimeout` (a client that connected
///   and said nothing, or stopped after DESCRIBE);
/// * **stalled**: a client that has acknowledged no byte for `stallTimeout` while data waits for
///   it (it stopped reading: everything sent to it piles up in its socket, then in the server's
///   per-client backlog). Progress is the peer's acknowledged byte count, not the socket's
///   writability: the kernel grows a send buffer to megabytes, which a low-rate H.264 stream
///   takes half a minute to fill.
/// Sessions of UDP clients that stopped sending keep-alives expire through the session pool's own
/// timeout (60 s), which the watchdog also runs.
final class RTSPClientWatchdog: Sendable {
    struct Limits: Sendable {
        var idleTimeout: Duration
        var stallTimeout: Duration
    }

    /// One connection as last seen.
    private struct Seen {
        var since: UInt64
        var lastProgress: UInt64
        var acked: UInt64 = 0
    }
    private struct State {
        var clients: [UInt: Seen] = [:]
        /// Whether the last check saw any connection.
        var hadClients = false
        /// The timer's id on the main context (0: not running).
        var source: UInt32 = 0
    }

    let limits: Limits
    private let server: RTSPOutput.ServerHandle
    private let state = Mutex(State())
    private let logger: Logger
    /// Connections closed because they said nothing / stopped reading.
    let closedIdle = Atomic<Int>(0)
    let closedStalled = Atomic<Int>(0)

    init(server: RTSPOutput.ServerHandle, limits: Limits, logger: Logger) {
        self.server = server
        self.limits = limits
        self.logger = logger
    }

    /// Starts the once-a-second check on `context`.
    func start(on context: OpaquePointer) {
        let user = Unmanaged.passRetained(self).toOpaque()
        let source = g_timeout_source_new_seconds(1)!
        g_source_set_callback(source, { user in
            guard let user else { return 0 }
            Unmanaged<RTSPClientWatchdog>.fromOpaque(user).takeUnretainedValue().tick()
            return 1
        }, user, { user in
            if let user { Unmanaged<RTSPClientWatchdog>.fromOpaque(user).release() }
        })
        let id = g_source_attach(source, context)
        g_source_unref(source)
        state.withLock { $0.source = id }
    }

    /// Stops the checks (idempotent).
    func stop(on context: OpaquePointer) {
        let id = state.withLock { s -> UInt32 in
            defer { s.source = 0 }
            return s.source
        }
        if id != 0 { lg_source_remove_by_id(context, id) }
    }

    /// One check of every connection (on the main loop).
    private func tick() {
        let now = MonotonicClock.nanos()
        let idleNanos = limits.idleTimeout.nanoseconds
        let stallNanos = limits.stallTimeout.nanoseconds
        if let pool = gst_rtsp_server_get_session_pool(server.server) {
            _ = gst_rtsp_session_pool_cleanup(pool)
            g_object_unref(UnsafeMutableRawPointer(pool))
        }
        let list = gst_rtsp_server_client_filter(server.server, nil, nil)
        defer { g_list_free_full(list) { g_object_unref($0) } }
        var present: Set<UInt> = []
        var closing: [(UnsafeMutablePointer<GstRTSPClient>, String)] = []
        var trim = false
        state.withLock { s in
            var node = list
            while let n = node {
                node = n.pointee.next
                guard let data = n.pointee.data else { continue }
                let client = data.assumingMemoryBound(to: GstRTSPClient.self)
                let key = UInt(bitPattern: data)
                present.insert(key)
                // A client object freed and another allocated at the same address within a second
                // would inherit the old one's times: each one seen is marked, and an unmarked one is new.
                let object = UnsafeMutableRawPointer(client).assumingMemoryBound(to: GObject.self)
                if g_object_get_data(object, Self.markKey) == nil {
                    g_object_set_data(object, Self.markKey, UnsafeMutableRawPointer(bitPattern: 1))
                    s.clients[key] = nil
                }
                var seen = s.clients[key] ?? Seen(since: now, lastProgress: now)
                if let p = Self.progress(client) {
                    if p.queued == 0 || p.acked != seen.acked { seen.lastProgress = now }
                    seen.acked = p.acked
                } else if Self.writable(client) {
                    // No acknowledged count from this kernel: the socket taking bytes is progress.
                    seen.lastProgress = now
                }
                s.clients[key] = seen
                if idleNanos > 0, now &- seen.since > idleNanos, !Self.hasSession(client) {
                    closing.append((client, "idle"))
                } else if stallNanos > 0, now &- seen.lastProgress > stallNanos {
                    closing.append((client, "stalled"))
                }
            }
            s.clients = s.clients.filter { present.contains($0.key) }
            trim = present.isEmpty && s.hadClients
            s.hadClients = !present.isEmpty
        }
        // The last viewer left: hand the pages its pipelines and buffers used back to the system.
        // glibc keeps freed memory in per-thread arenas otherwise (a crowd of 55 viewers left
        // ~5 MiB each time; trimming gave back about 40 % of what crowds had left).
        if trim { malloc_trim(0) }
        for (client, why) in closing {
            if why == "idle" { closedIdle.add(1, ordering: .relaxed) } else { closedStalled.add(1, ordering: .relaxed) }
            logger.info("RTSP client closed", metadata: ["reason": "\(why)"])
            gst_rtsp_client_close(client)
        }
    }

    private static let markKey = "livegate-watchdog-seen"

    /// The socket the server writes the client's stream to (nil once its connection is gone).
    private static func writeSocket(_ client: UnsafeMutablePointer<GstRTSPClient>) -> UnsafeMutablePointer<GSocket>? {
        guard let connection = gst_rtsp_client_get_connection(client) else { return nil }
        return gst_rtsp_connection_get_write_socket(connection)
    }

    /// Whether the client's socket accepts bytes now (false once it is closed).
    private static func writable(_ client: UnsafeMutablePointer<GstRTSPClient>) -> Bool {
        guard let socket = writeSocket(client) else { return false }
        return g_socket_condition_check(socket, G_IO_OUT).rawValue != 0
    }

    /// The bytes the client acknowledged so far and those still queued for it (nil when its
    /// connection is gone).
    private static func progress(_ client: UnsafeMutablePointer<GstRTSPClient>) -> (acked: UInt64, queued: UInt32)? {
        guard let socket = writeSocket(client) else { return nil }
        var acked: guint64 = 0
        var queued: guint32 = 0
        guard lg_tcp_progress(g_socket_get_fd(socket), &acked, &queued) == 0 else { return nil }
        return (UInt64(acked), UInt32(queued))
    }

    private static func hasSession(_ client: UnsafeMutablePointer<GstRTSPClient>) -> Bool {
        let sessions = gst_rtsp_client_session_filter(client, nil, nil)
        defer { g_list_free_full(sessions) { g_object_unref($0) } }
        return sessions != nil
    }
}
