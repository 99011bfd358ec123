import LiveViewCore
internal import CGStreamer
internal import CGStreamerShim
import Dispatch
import Foundation
public import Logging

/// Why a MediaKit output could not be started.
public struct MediaError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let description: String
    /// An error with a message.
    public init(_ description: String) { self.description = description }
}

/// The process's GStreamer: `gst_init` once, and one GLib main loop with its own main context running
/// on a dedicated thread. The RTSP server and the bus watches of every pipeline are attached to that
/// context; errors and warnings from the buses are logged through swift-log.
public final class GStreamerRuntime: Sendable {
    /// Unchecked because it holds C pointers; the context and loop are only used on the loop's thread
    /// or through GLib's thread-safe calls (`g_main_context_invoke`, `g_main_loop_quit`).
    struct Handles: @unchecked Sendable {
        let context: OpaquePointer
        let loop: OpaquePointer
    }

    let handles: Handles
    /// The runtime's logger.
    public let logger: Logger
    private let stopped = Atomic<Bool>(false)
    /// Entered while the main loop's thread runs: a wait on it returns once that thread has ended
    /// (any number of waits, each seeing the same end).
    private let loopRunning = DispatchGroup()

    /// Initialises GStreamer (once per process) and starts the main loop thread.
    public init(logger: Logger = Logger(label: "livegate.gstreamer")) throws {
        guard lg_gst_init_once() != 0 else { throw MediaError("gst_init failed") }
        self.logger = logger
        let ctx = lg_main_context_new()!
        // The runtime's own reference, released by deinit: `invoke()` and a bus watch attached
        // after `shutdown()` (the loop's thread has then let go of its reference) still find a live
        // context, whose work is just never run.
        g_main_context_ref(ctx)
        let loop = lg_main_loop_new(ctx)!
        handles = Handles(context: ctx, loop: loop)
        let h = handles
        let running = loopRunning
        running.enter()
        let thread = Thread {
            lg_main_loop_run(h.loop, h.context)
            // The loop's own thread lets go of the loop and its context once the loop has returned:
            // a shutdown that stopped waiting for it (a loop busy for more than 5 s) never frees
            // them under a running loop.
            g_main_loop_unref(h.loop)
            g_main_context_unref(h.context)
            running.leave()
        }
        thread.name = "gst-main-loop"
        thread.start()
        // Wait until the loop runs, so sources attached right after init are dispatched.
        let started = DispatchSemaphore(value: 0)
        invoke { started.signal() }
        started.wait()
    }

    deinit {
        shutdown()
        g_main_context_unref(handles.context)
    }

    /// Stops the main loop and waits (up to `wait`) for its thread, which frees the loop and its
    /// context when it ends (outputs must be stopped first). Returns false when the loop was still
    /// running after `wait`: it then ends on its own, whenever what keeps it busy returns.
    @discardableResult
    public func shutdown(wait: Duration = .seconds(5)) -> Bool {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return true }
        lg_main_loop_quit(handles.loop)
        guard waitForLoopEnd(timeout: wait) else {
            logger.error("GStreamer's main loop did not stop within \(wait); it is left to end on its own")
            return false
        }
        return true
    }

    /// Runs `work` on the main loop's thread (nothing after `shutdown()`).
    func invoke(_ work: @escaping @Sendable () -> Void) {
        guard !stopped.load(ordering: .acquiring) else { return }
        let box = Unmanaged.passRetained(WorkBox(work)).toOpaque()
        lg_main_context_invoke(handles.context, { user in
            Unmanaged<WorkBox>.fromOpaque(user!).takeRetainedValue().work()
        }, box)
    }

    /// Waits (up to `timeout`) until the main loop's thread has ended; true when it has.
    func waitForLoopEnd(timeout: Duration) -> Bool {
        loopRunning.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) == .success
    }

    /// The GStreamer version, e.g. "1.22.0".
    public static var version: String {
        _ = lg_gst_init_once()
        var major: guint = 0, minor: guint = 0, micro: guint = 0, nano: guint = 0
        gst_version(&major, &minor, &micro, &nano)
        return "\(major).\(minor).\(micro)"
    }

    /// True when an element factory is installed (e.g. "x264enc", "hlssink2").
    public static func hasElement(_ name: String) -> Bool {
        _ = lg_gst_init_once()
        guard let f = gst_element_factory_find(name) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(f))
        return true
    }

    var context: OpaquePointer { handles.context }
}

final class WorkBox {
    let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void) { self.work = work }
}

/// A running GStreamer pipeline built from a launch string, with a bus watch on the runtime's
/// main context that logs errors/warnings and records EOS.
/// Unchecked because it holds a C pointer: the pipeline, a thread-safe GStreamer object (its bus
/// watch is behind `watch`).
final class MediaPipeline: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    let name: String
    private let logger: Logger
    private let watch: Mutex<UnsafeMutablePointer<GSource>?>
    private let watchState: WatchState

    final class WatchState: Sendable {
        let eos = DispatchSemaphore(value: 0)
        let errors = Atomic<Int>(0)
        let lastError = Mutex<String?>(nil)
        let logger: Logger
        let name: String
        init(logger: Logger, name: String) {
            self.logger = logger
            self.name = name
        }
    }

    init(launch: String, name: String, runtime: GStreamerRuntime, logger: Logger) throws {
        var err: UnsafeMutablePointer<CChar>?
        guard let el = lg_parse_launch(launch, &err) else {
            let msg = err.map { String(cString: $0) } ?? "unknown"
            g_free(err)
            throw MediaError("\(name): cannot build pipeline: \(msg)")
        }
        element = el
        self.name = name
        self.logger = logger
        watchState = WatchState(logger: logger, name: name)
        let user = Unmanaged.passRetained(watchState).toOpaque()
        watch = Mutex(lg_bus_watch_attach(el, runtime.context, { _, msg, user in
            guard let msg, let user else { return 1 }
            let st = Unmanaged<WatchState>.fromOpaque(user).takeUnretainedValue()
            MediaPipeline.handle(msg, st)
            return 1
        }, user, { user in
            if let user { Unmanaged<WatchState>.fromOpaque(user).release() }
        }))
    }

    static func handle(_ msg: UnsafeMutablePointer<GstMessage>, _ st: WatchState) {
        let type = lg_message_type(msg)
        if type == GST_MESSAGE_EOS {
            st.eos.signal()
        } else if type == GST_MESSAGE_ERROR || type == GST_MESSAGE_WARNING {
            var text: UnsafeMutablePointer<CChar>?, debug: UnsafeMutablePointer<CChar>?
            if type == GST_MESSAGE_ERROR { lg_message_parse_error(msg, &text, &debug) } else { lg_message_parse_warning(msg, &text, &debug) }
            let src = lg_message_source_name(msg)
            let s = text.map { String(cString: $0) } ?? "?"
            let d = debug.map { String(cString: $0) } ?? ""
            let from = src.map { String(cString: $0) } ?? "?"
            g_free(text); g_free(debug); g_free(src)
            if type == GST_MESSAGE_ERROR {
                st.errors.wrappingAdd(1, ordering: .relaxed)
                st.lastError.withLock { $0 = "\(from): \(s)" }
                st.logger.error("GStreamer error", metadata: ["pipeline": "\(st.name)", "element": "\(from)", "error": "\(s)", "debug": "\(d)"])
                st.eos.signal()  // wake anyone waiting for EOS: it will not come
            } else {
                st.logger.warning("GStreamer warning", metadata: ["pipeline": "\(st.name)", "element": "\(from)", "warning": "\(s)"])
            }
        }
    }

    /// Errors posted on the bus so far.
    var errorCount: Int { watchState.errors.load(ordering: .relaxed) }
    var lastError: String? { watchState.lastError.withLock { $0 } }

    /// A child element by name (a new reference; unref with `lg_object_unref`).
    func child(_ name: String) -> UnsafeMutablePointer<GstElement>? {
        lg_bin_get_by_name(element, name)
    }

    func play() throws {
        let rc = lg_element_set_state(element, GST_STATE_PLAYING)
        if rc == Int32(GST_STATE_CHANGE_FAILURE.rawValue) {
            throw MediaError("\(name): cannot start pipeline" + (lastError.map { ": \($0)" } ?? ""))
        }
    }

    /// Sends EOS through `appsrc` and waits for it at the sinks (or an error, or the timeout).
    @discardableResult
    func finish(appsrc: UnsafeMutablePointer<GstElement>, timeout: Double) -> Bool {
        _ = lg_app_src_end_of_stream(appsrc)
        return watchState.eos.wait(timeout: .now() + timeout) == .success && errorCount == 0
    }

    /// Stops the pipeline (NULL state) and removes the bus watch. Idempotent.
    func stop() {
        _ = lg_element_set_state(element, GST_STATE_NULL)
        watch.withLock { w in
            if let source = w { lg_source_remove(source) }
            w = nil
        }
    }

    deinit {
        stop()
        lg_object_unref(element)
    }
}

/// One GStreamer element with a reference of its own, dropped on deinit. Unchecked because it holds
/// a C pointer; GStreamer objects are reference-counted and their properties thread-safe.
final class GstElementRef: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    /// Takes over a reference the caller holds.
    init(_ element: UnsafeMutablePointer<GstElement>) { self.element = element }
    deinit { lg_object_unref(element) }
}
