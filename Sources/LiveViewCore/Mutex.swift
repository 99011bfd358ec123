// The one lock of the project: `Synchronization.Mutex`, named here so that every module says
// `Mutex` and `Atomic` through LiveViewCore and none imports Synchronization itself.
//
// Why the names go through this file: on Linux the standard Mutex hands a contended lock over in
// the kernel (a priority-inheritance futex), where ThreadSanitizer cannot see it, so a
// ThreadSanitizer run reports a race on every contended hand-over. Test runs under the sanitizer
// are built with `-DLIVEGATE_TSAN` (see the Makefile's `tsan-tests`), and only then `Mutex` is the
// stand-in below: the same interface over a POSIX mutex, which the sanitizer understands. Every
// other build uses the standard type itself.
public import Synchronization

public typealias Atomic<Value: AtomicRepresentable> = Synchronization.Atomic<Value>

#if LIVEGATE_TSAN
#if canImport(Glibc)
import Glibc
#endif

/// ThreadSanitizer builds only: `Synchronization.Mutex`'s interface over a `pthread_mutex_t`.
/// Unchecked because it holds C pointers; every access to the value is inside the POSIX lock.
public struct Mutex<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    public init(_ initialValue: consuming sending Value) {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value.pointee)
    }
}
#else
public typealias Mutex<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif
