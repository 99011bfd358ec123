import Foundation
import LiveViewCore
public import NIOCore

/// The Bandit's REST API (bandit.md §2): `GET /api/version` once, then everything under
/// `/api/<version>/`. Bodies are JSON with `Content-Type: application/json`; success is HTTP 200.
public final class BanditREST: Sendable {
    public let endpoint: BanditEndpoint
    let client: CameraHTTP
    private let versionBox = Mutex<String?>(nil)
    private let log = Mutex<[(method: String, path: String)]>([])

    public init(endpoint: BanditEndpoint) {
        self.endpoint = endpoint
        self.client = CameraHTTP()
    }

    /// The API version the camera reported (nil before the first discovery).
    public var apiVersion: String? { versionBox.withLock { $0 } }

    /// Requests sent so far (method and path), for diagnostics and tests.
    public var requests: [(method: String, path: String)] { log.withLock { $0 } }

    /// `GET /api/version` → `version`, `revision`, `supported_versions`. Remembers `version`.
    @discardableResult
    public func discoverVersion(timeout: TimeAmount = .seconds(3)) async throws -> (version: String, revision: String, supported: [String]) {
        let obj = try await json("GET", "/api/version", timeout: timeout)
        func text(_ v: Any?) -> String? {
            if let s = v as? String { return s }
            if let n = v as? NSNumber { return n.stringValue }
            return nil
        }
        guard let version = text(obj["version"]), !version.isEmpty, !version.contains("/") else {
            throw CameraControlError.camera(code: 6, message: "GET /api/version: no version in \(obj)")
        }
        let supported = (obj["supported_versions"] as? [Any])?.compactMap(text) ?? []
        if version != "2" && !supported.contains("2") {
            throw CameraControlError.camera(code: 6, message: "camera speaks API version \(version), not 2")
        }
        // This driver speaks version 2; use it even when the camera's default is newer.
        versionBox.withLock { $0 = "2" }
        return (version, text(obj["revision"]) ?? "", supported)
    }

    /// `/api/<version>/<path>`, discovering the version first when needed.
    public func apiPath(_ path: String) async throws -> String {
        if let v = apiVersion { return "/api/\(v)/\(path)" }
        try await discoverVersion()
        return "/api/\(apiVersion ?? "2")/\(path)"
    }

    /// A request under `/api/<version>/`; returns the reply's JSON (an empty object for an empty body).
    /// A 503 from a busy body (finalising a recording, switching between video and photos: the
    /// notes name the status, not its timing) is asked again after 200 ms, then 400 ms, up to 1 s
    /// apart, for up to 8 s, then answered `.unavailable` ("still busy"). A 503 that says the card
    /// is full is passed on at once: waiting does not empty a card.
    @discardableResult
    public func call(_ method: String, _ path: String, body: [String: Any]? = nil,
                     timeout: TimeAmount = .seconds(5)) async throws -> [String: Any] {
        let target = try await apiPath(path)
        let deadline = ContinuousClock.now + .seconds(8)
        var pause = Duration.milliseconds(200)
        while true {
            do {
                return try await json(method, target, body: body, timeout: timeout)
            } catch CameraControlError.camera(let code, let message) where code == 503 && !message.lowercased().contains("full") {
                guard ContinuousClock.now + pause < deadline, !Task.isCancelled else {
                    throw CameraControlError.unavailable("the camera is still busy: \(message) for 8 s")
                }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    /// Raw request: throws `.unavailable` for transport problems, `.camera(code: HTTP status)` for a
    /// status other than 200.
    func json(_ method: String, _ target: String, body: [String: Any]? = nil,
              timeout: TimeAmount = .seconds(5)) async throws -> [String: Any] {
        var bytes: [UInt8]? = nil
        if let body {
            bytes = Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]))
        }
        log.withLock { $0.append((method, target)) }
        let response: HTTPResponse
        do {
            response = try await client.request(
                method, endpoint.url(target), headers: [("Content-Type", "application/json")], body: bytes,
                timeout: timeout)
        } catch {
            throw CameraControlError.unavailable("\(method) \(target): \(error)")
        }
        guard response.status == 200 else {
            let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            throw CameraControlError.camera(code: response.status, message: "HTTP \(response.status) for \(method) \(target) \(text)")
        }
        if response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        guard let obj = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw CameraControlError.camera(code: 6, message: "\(method) \(target): reply is not a JSON object")
        }
        return obj
    }
}

/// The fields of `GET /api/2/status` the driver uses (bandit.md §2.3).
public struct BanditStatus: Sendable, Equatable {
    public var recordingActive: Bool
    /// `recording_secs` (iOS, TomTom) or `recoding_secs` (Android's spelling).
    public var recordingSeconds: Int
    public var viewfinderActive: Bool
    public var viewfinderStreamingPort: Int
    public var backchannelPort: Int
    public var batteryLevelPercent: Int
    public var memoryFreeBytes: Int64
    public var remainingTimeSeconds: Int

    init(_ o: [String: Any]) {
        func int(_ k: String) -> Int { (o[k] as? NSNumber)?.intValue ?? 0 }
        recordingActive = o["recording_active"] as? Bool ?? false
        recordingSeconds = (o["recording_secs"] as? NSNumber ?? o["recoding_secs"] as? NSNumber)?.intValue ?? 0
        viewfinderActive = o["viewfinder_active"] as? Bool ?? false
        viewfinderStreamingPort = int("viewfinder_streaming_port")
        backchannelPort = int("backchannel_port")
        batteryLevelPercent = int("battery_level_pct")
        memoryFreeBytes = (o["memory_free_bytes"] as? NSNumber)?.int64Value ?? 0
        remainingTimeSeconds = int("remaining_time_secs")
    }
}

/// A video recording mode (`settings.video`, `capabilities/recording` entries; bandit.md §2.4).
public struct BanditVideoMode: Sendable, Hashable, CustomStringConvertible {
    /// `normal`, `slow_motion`, `time_lapse`, `night_lapse`.
    public var mode: String
    /// `4k`, `2.7k`, `1080p`, `720p`, `wvga`.
    public var resolution: String
    public var framerateFPS: Int
    /// `normal` or `wide`.
    public var fov: String
    public var slowMotionRate: Int?
    public var intervalSeconds: Double?

    public init(mode: String, resolution: String, framerateFPS: Int, fov: String,
                slowMotionRate: Int? = nil, intervalSeconds: Double? = nil) {
        self.mode = mode
        self.resolution = resolution
        self.framerateFPS = framerateFPS
        self.fov = fov
        self.slowMotionRate = slowMotionRate
        self.intervalSeconds = intervalSeconds
    }

    init?(_ o: [String: Any]) {
        guard let mode = o["mode"] as? String, let res = o["resolution"] as? String,
              let fps = (o["framerate_fps"] as? NSNumber)?.intValue else { return nil }
        self.init(mode: mode, resolution: res, framerateFPS: fps, fov: o["fov"] as? String ?? "normal",
                  slowMotionRate: (o["slow_motion_rate"] as? NSNumber)?.intValue,
                  intervalSeconds: (o["interval_secs"] as? NSNumber)?.doubleValue)
    }

    var json: [String: Any] {
        var o: [String: Any] = ["mode": mode, "resolution": resolution, "framerate_fps": framerateFPS, "fov": fov]
        if let slowMotionRate { o["slow_motion_rate"] = slowMotionRate }
        if let intervalSeconds { o["interval_secs"] = intervalSeconds }
        return o
    }

    /// Same mode, resolution, frame rate and field of view (the combination a capability entry names).
    func sameCombination(_ o: BanditVideoMode) -> Bool {
        mode == o.mode && resolution.lowercased() == o.resolution.lowercased() && framerateFPS == o.framerateFPS
            && fov == o.fov
    }

    public var description: String { "\(mode) \(resolution)@\(framerateFPS) fov \(fov)" }
}
