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

    public init(endpoint: HTTPURL) {
        self.endpoint = endpoint
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
        callLog.withLock { $0.append(method) }
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

    /// Method names called so far (for diagnostics and tests).
    public var calls: [String] { callLog.withLock { $0 } }
}
