import LiveViewCore
public import Logging
public import NIOCore

/// The access-control generations of `cam.cgi` (panasonic.md §4).
public enum PanasonicAccessGeneration: String, Sendable, CaseIterable {
    /// GH3/GH4 class: `cam.cgi` works at once.
    case none
    /// `accctrl&type=req_acc&value=<id>&value2=<name>` → `ok,<camera>,remote`.
    case reqAcc = "req_acc"
    /// S5II class: `req_acc_g` then `req_acc_e` polled until `ok,…,<SESSION_ID>`; every later request
    /// carries `X-SESSION_ID`.
    case session = "req_acc_g"
}

/// The pauses of a Panasonic session (tests shorten them).
public struct PanasonicTiming: Sendable {
    /// Interval of the `getstate` keep-alive (the camera ends the stream after ~10–12 s of silence).
    public var keepAliveInterval: Duration = .seconds(2)
    /// Pause between `req_acc` polls while the camera asks its user (`ok_under_research…`).
    public var reqAccPollInterval: Duration = .seconds(1)
    /// Pause between `req_acc_e` polls.
    public var reqAccEPollInterval: Duration = .milliseconds(500)

    public init(keepAliveInterval: Duration = .seconds(2), reqAccPollInterval: Duration = .seconds(1),
                reqAccEPollInterval: Duration = .milliseconds(500)) {
        self.keepAliveInterval = keepAliveInterval
        self.reqAccPollInterval = reqAccPollInterval
        self.reqAccEPollInterval = reqAccEPollInterval
    }
}

/// The `cam.cgi` control channel of one camera: builds requests, runs the access-control handshake
/// (trying the generations in the notes' order and remembering what worked), adds the session
/// header, and maps error replies to `CameraControlError`.
public final class PanasonicCamCGI: Sendable {
    public let endpoint: PanasonicEndpoint
    let http: CameraHTTP
    let logger: Logger
    /// The id sent as `req_acc` `value` / `req_acc_e` UDN (a stable UUID derived from the client name).
    public let clientID: String
    /// How long to wait for the user to accept the connection on the camera.
    public let pairingTimeout: Duration = .seconds(30)
    public let timing: PanasonicTiming
    /// Timeout of one ordinary request.
    public let requestTimeout: TimeAmount = .seconds(5)

    private struct Access {
        var generation: PanasonicAccessGeneration?
        var granted = false
        var sessionID: String?
    }
    private let access = Mutex(Access())
    private let handshakeTask = Mutex<Task<PanasonicAccessGeneration, any Error>?>(nil)
    private let requestLog = Mutex<[String]>([])

    public init(endpoint: PanasonicEndpoint, timing: PanasonicTiming = .init(),
                logger: Logger) {
        self.endpoint = endpoint
        self.timing = timing
        self.http = CameraHTTP()
        self.logger = logger
        self.clientID = Self.uuid(from: endpoint.clientName)
    }

    /// The generation that worked last (nil before the first handshake).
    public var generation: PanasonicAccessGeneration? { access.withLock { $0.generation } }
    /// The current `X-SESSION_ID` (generation `.session` only).
    public var sessionID: String? { access.withLock { $0.sessionID } }
    /// True after a successful handshake, until access is lost.
    public var isGranted: Bool { access.withLock { $0.granted } }

    /// Forgets the grant (a new handshake runs before the next request); keeps the remembered generation.
    public func invalidate() {
        access.withLock {
            $0.granted = false
            $0.sessionID = nil
        }
    }

    // MARK: Requests

    /// The query string for a request (`/`, `-` and unreserved characters are sent as they are).
    public static func target(mode: String, type: String? = nil, value: String? = nil, value2: String? = nil,
                              extra: [(String, String)] = []) -> String {
        var q = "/cam.cgi?mode=\(percentEncode(mode))"
        if let type { q += "&type=\(percentEncode(type))" }
        if let value { q += "&value=\(percentEncode(value))" }
        if let value2 { q += "&value2=\(percentEncode(value2))" }
        for (k, v) in extra { q += "&\(percentEncode(k))=\(percentEncode(v))" }
        return q
    }

    public static func percentEncode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b & 15)]))
            }
        }
        return out
    }

    public static func percentDecode(_ s: String) -> String {
        var bytes: [UInt8] = []
        let u = Array(s.utf8)
        var i = 0
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count, let h = hex(u[i + 1]), let l = hex(u[i + 2]) {
                bytes.append(h << 4 | l)
                i += 3
            } else if u[i] == UInt8(ascii: "+") {
                bytes.append(0x20)
                i += 1
            } else {
                bytes.append(u[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sends one request as it is (with the session header when there is a session) and parses the
    /// reply; throws `CameraControlError.unavailable` when the camera cannot be reached and
    /// `.camera(code: status…)` for a non-200 HTTP status.
    public func raw(_ target: String, timeout: TimeAmount? = nil) async throws -> PanasonicReply {
        var headers: [(String, String)] = []
        if let sid = sessionID { headers.append(("X-SESSION_ID", sid)) }
        let url = HTTPURL(host: endpoint.host, port: endpoint.port, target: target)
        let response: HTTPResponse
        do {
            response = try await http.request("GET", url, headers: headers, timeout: timeout ?? requestTimeout)
        } catch let e as CameraHTTPError {
            throw CameraControlError.unavailable("\(endpoint): \(e)")
        }
        guard response.status == 200 else {
            throw CameraControlError.camera(code: response.status, message: "HTTP \(response.status) for \(target)")
        }
        return PanasonicReply(body: response.body)
    }

    /// A request that must answer `ok`: runs the handshake first when needed, and once more when the
    /// camera says access was lost (`err_unsuitable_app`, or `err_critical` on a session camera).
    @discardableResult
    public func call(mode: String, type: String? = nil, value: String? = nil, value2: String? = nil,
                     timeout: TimeAmount? = nil) async throws -> PanasonicReply {
        let target = Self.target(mode: mode, type: type, value: value, value2: value2)
        let what = [mode, type, value].compactMap { $0 }.joined(separator: " ")
        for attempt in 0..<2 {
            try await ensureAccess()
            let reply = try await raw(target, timeout: timeout)
            if reply.isOK { return reply }
            let lost = reply.result == "err_unsuitable_app"
                || (reply.result == "err_critical" && generation == .session)
            if lost && attempt == 0 {
                logger.info("panasonic \(endpoint): access lost (\(reply.result)); registering again")
                invalidate()
                continue
            }
            throw PanasonicResult.error(reply.result, request: what)
        }
        throw PanasonicResult.error("err_unsuitable_app", request: what)
    }

    // MARK: Access control

    /// Runs the handshake unless access is granted already; concurrent callers share one handshake.
    public func ensureAccess() async throws {
        if isGranted { return }
        let task = handshakeTask.withLock { slot -> Task<PanasonicAccessGeneration, any Error> in
            if let t = slot { return t }
            let t = Task { try await self.handshake() }
            slot = t
            return t
        }
        defer { handshakeTask.withLock { if $0 == task { $0 = nil } } }
        // A stopping driver must not wait for a pairing prompt nobody answers.
        _ = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    private func handshake() async throws -> PanasonicAccessGeneration {
        var order: [PanasonicAccessGeneration] = [.none, .reqAcc, .session]
        if let g = generation, let i = order.firstIndex(of: g) {
            order.remove(at: i)
            order.insert(g, at: 0)
        }
        access.withLock { $0.sessionID = nil }
        var lastError: (any Error)?
        for g in order {
            do {
                if try await attempt(g) {
                    access.withLock {
                        $0.generation = g
                        $0.granted = true
                    }
                    logger.info("panasonic \(endpoint): access granted (\(g.rawValue))")
                    return g
                }
            } catch let e as PanasonicFatalError {
                throw e
            } catch let e as CameraControlError {
                if case .unavailable = e { throw e }
                lastError = e
            }
        }
        throw lastError ?? CameraControlError.camera(code: PanasonicResult.code("err_unsuitable_app"),
                                                     message: "err_unsuitable_app: no access-control generation worked")
    }

    /// One generation; true when it granted access, false when this camera does not speak it.
    private func attempt(_ g: PanasonicAccessGeneration) async throws -> Bool {
        switch g {
        case .none:
            let r = try await raw(Self.target(mode: "getstate"))
            return r.isOK
        case .reqAcc:
            let deadline = ContinuousClock.now + pairingTimeout
            while true {
                let r = try await raw(Self.target(mode: "accctrl", type: "req_acc", value: clientID,
                                                  value2: endpoint.clientName))
                if r.isXML && r.result == "err_non_support" {
                    // No pairing on this body: works only if getstate now does.
                    return try await raw(Self.target(mode: "getstate")).isOK
                }
                if r.result == "ok" { return true }
                if r.result.hasPrefix("ok_under_research") {
                    guard ContinuousClock.now < deadline else {
                        throw CameraControlError.camera(code: 10, message: "\(r.result): nobody accepted the connection on the camera in time")
                    }
                    try await Task.sleep(for: timing.reqAccPollInterval)
                    continue
                }
                if r.result == "err_param" || r.result == "err_critical" || r.result == "err_non_support" { return false }
                if r.result == "err_user_refused" {
                    throw PanasonicFatalError(message: "err_user_refused: the connection was refused on the camera")
                }
                throw PanasonicResult.error(r.result, request: "accctrl req_acc")
            }
        case .session:
            let g = try await raw(Self.target(mode: "accctrl", type: "req_acc_g"))
            guard g.result == "ok" else {
                if g.result == "err_param" || g.result == "err_non_support" { return false }
                throw PanasonicResult.error(g.result, request: "accctrl req_acc_g")
            }
            let udnHex = Self.hex(clientID)
            let nameHex = Self.hex(endpoint.clientName)
            let deadline = ContinuousClock.now + pairingTimeout
            while true {
                let r = try await raw(Self.target(mode: "accctrl", type: "req_acc_e", value: udnHex, value2: nameHex))
                if r.result == "ok" {
                    guard r.fields.count >= 5, !r.fields[4].isEmpty else {
                        throw CameraControlError.camera(code: 99, message: "req_acc_e ok without a session id: \(r.text)")
                    }
                    access.withLock { $0.sessionID = r.fields[4] }
                    return true
                }
                if r.result.hasPrefix("ok_under_research") {
                    guard ContinuousClock.now < deadline else {
                        throw CameraControlError.camera(code: 10, message: "\(r.result): nobody accepted the connection on the camera in time")
                    }
                    try await Task.sleep(for: timing.reqAccEPollInterval)
                    continue
                }
                if r.result == "err_user_refused" {
                    // Never retry: repeated refusals lock the camera until it is power-cycled.
                    throw PanasonicFatalError(message: "err_user_refused: the connection was refused on the camera")
                }
                throw PanasonicResult.error(r.result, request: "accctrl req_acc_e")
            }
        }
    }

    /// Hex of the ASCII/UTF-8 bytes (req_acc_e encodes the UDN and name this way).
    public static func hex(_ s: String) -> String {
        let digits = Array("0123456789abcdef".unicodeScalars)
        var out = ""
        for b in s.utf8 {
            out.unicodeScalars.append(digits[Int(b >> 4)])
            out.unicodeScalars.append(digits[Int(b & 15)])
        }
        return out
    }

    /// A stable UUID-shaped id from a name (FNV-1a), so the camera recognises us across restarts.
    static func uuid(from name: String) -> String {
        var h1: UInt64 = 0xcbf2_9ce4_8422_2325
        var h2: UInt64 = 0x8422_2325_cbf2_9ce4
        for b in name.utf8 {
            h1 = (h1 ^ UInt64(b)) &* 0x100_0000_01b3
            h2 = (h2 ^ UInt64(b)) &* 0x100_0000_01b3 &+ 7
        }
        func hx(_ v: UInt64, _ n: Int) -> String {
            let s = String(v, radix: 16, uppercase: true)
            let t = String(s.suffix(n))
            return String(repeating: "0", count: max(0, n - t.count)) + t
        }
        return "\(hx(h1 >> 32, 8))-\(hx(h1 >> 16, 4))-4\(hx(h1, 3))-8\(hx(h2 >> 48, 3))-\(hx(h2, 12))"
    }
}

/// An error after which the driver must not retry (e.g. `err_user_refused`).
public struct PanasonicFatalError: FatalDriverError, Sendable {
    public var message: String
    public var description: String { message }
}
