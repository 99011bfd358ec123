import Foundation

/// The one way tests wait: poll `condition` every `poll` until it holds or `timeout` seconds pass
/// (a deadline, never an assertion about how long it took); returns whether it held at the end.
@discardableResult
public func waitUntil(timeout: Double, poll: Duration = .milliseconds(50),
                      _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: poll)
    }
    return try condition()
}

/// `waitUntil` for a condition that itself waits (an HTTP request, a lock held by an actor).
@discardableResult
public func waitUntilAsync(timeout: Double, poll: Duration = .milliseconds(100),
                           _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: poll)
    }
    return try await condition()
}
