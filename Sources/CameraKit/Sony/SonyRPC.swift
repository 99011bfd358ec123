import Foundation
import LiveViewCore
public import NIOCore

/// Sony Camera Remote API JSON-RPC over HTTP: `POST <endpoint>` with
/// `{"method", "params", "id", "version"}`, answered by `{"result": [...]}` or `{"error": [code, msg]}`.
public final class SonyRPC: Sendable {
    public let endpoint: HTTPURL
    private let client: CameraHTTP
    private let nextID = Mutex(1)
    private let callLog = Mutex<[String]>([])

    /// Largest JSON-RPC reply accepted: real ones (getEvent with every parameter included) are
    /// tens of kilobytes; a camera sending more is refused before it costs memory.
    public static let maxReplyBytes = 1024 * 1024

    /// Calls answered "not ready" and asked again (`callWhenReady`); shared with the avContent
    /// service's client of the same camera.
    public let busy: BusyNotes

    public init(endpoint: HTTPURL, busy: BusyNotes = BusyNotes()) {
        self.endpoint = endpoint
        self.busy = busy
        var client = CameraHTTP()
        client.maxBodyBytes = Self.maxReplyBytes
        self.client = client
    }

    /// Calls `method` and returns its `result` (or `results`) array. Camera errors throw
    /// `CameraControlError.camera(code:message:)`; transport problems `.unavailable`.
    public func call(_ method: String, _ params: [Any] = [], version: String = "1.0",
                     timeout: TimeAmount = .seconds(5)) async throws -> [Any] {
        let id = nextID.withLock { v -> Int in
            let id = v
            v = v >= 2_147_483_647 ? 1 : v + 1
            return id
        }
        let body: [String: Any] = ["method": method, "params": params, "id": id, "version": version]
        let data = try JSONSerialization.data(withJSONObject: body)
        callLog.withLock { log in
            // The newest calls only: a camera polled with getEvent every 2 s makes ~43 000 a day.
            if log.count >= Self.callLogLimit { log.removeFirst(log.count - Self.callLogLimit / 2) }
            log.append(method)
        }
        let response: HTTPResponse
        do {
            response = try await client.request(
                "POST", endpoint, headers: [("Content-Type", "application/json")], body: Array(data), timeout: timeout)
        } catch {
            throw CameraControlError.unavailable("\(method): \(error)")
        }
        guard response.status == 200 else {
            throw CameraControlError.camera(code: response.status, message: "HTTP \(response.status) for \(method)")
        }
        guard let obj = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw CameraControlError.camera(code: 6, message: "\(method): reply is not a JSON object")
        }
        if let err = obj["error"] as? [Any] {
            let code = (err.first as? NSNumber)?.intValue ?? 1
            let message = err.count > 1 ? String(describing: err[1]) : "error"
            throw CameraControlError.camera(code: code, message: message)
        }
        if let result = (obj["result"] ?? obj["results"]) as? [Any] { return result }
        throw CameraControlError.camera(code: 6, message: "\(method): reply has neither result nor error")
    }

    /// Method names of the newest calls (at most `callLogLimit`; for diagnostics and tests).
    public var calls: [String] { callLog.withLock { $0 } }
    static let callLogLimit = 512

    /// What a body answers while it switches modes or is busy for a moment: 40401 "Camera Not
    /// Ready", or 1 "Not Available Now" (sony.md: a body changing its camera function answers so for
    /// a second or more).
    public static func isNotReady(_ error: any Error, cameraNotReady: Bool = true) -> Bool {
        guard case CameraControlError.camera(let code, let message) = error else { return false }
        if code == 40401 { return cameraNotReady }
        let m = message.lowercased()
        return code == 1 && (m.contains("not available") || m.contains("not ready") || m.contains("busy"))
    }

    /// `call`, repeated while the body answers "Not Available Now" / "Camera Not Ready", with a
    /// back-off from 100 ms growing to 1 s, for at most `patience`, noted in `busy` meanwhile; then
    /// 503 saying the camera is still busy. Other answers and errors come back at once.
    /// `cameraNotReady: false` leaves 40401 to the caller (startLiveview's 40401 means "not in
    /// shooting mode": startRecMode first).
    public func callWhenReady(_ method: String, _ params: [Any] = [], version: String = "1.0",
                              timeout: TimeAmount = .seconds(5), patience: Duration = .seconds(8),
                              cameraNotReady: Bool = true) async throws -> [Any] {
        var backoff = BusyBackoff(first: .milliseconds(100), growth: 1.5, cap: .seconds(1), patience: patience)
        while true {
            do {
                return try await call(method, params, version: version, timeout: timeout)
            } catch where Self.isNotReady(error, cameraNotReady: cameraNotReady) {
                busy.note(method)
                guard try await backoff.wait() else {
                    throw CameraControlError.unavailable("the camera is still busy (switching modes): \(method) answered \(error) for \(patience)")
                }
            }
        }
    }
}
