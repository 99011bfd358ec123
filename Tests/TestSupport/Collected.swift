import LiveViewCore

/// A value that a test and the callbacks it hands out (on other threads, in escaping closures)
/// share: the project's `Mutex` in a class, because a `Mutex` itself cannot be captured.
public final class Collected<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<R: Sendable, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending R in try body(&value) }
    }
}
