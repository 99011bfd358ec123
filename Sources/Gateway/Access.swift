import Foundation
import GatewayAPI
import Hummingbird
import HTTPTypes
import NIOCore

/// Who may use the HTTP side (API, events, HLS, MJPEG, WHEP, metrics, the page).
///
/// On every address: the `Host` must name this machine (an IP literal, `localhost`, the host name,
/// or a name listed with `allowedHosts`), which stops DNS rebinding; a state change (POST, PUT,
/// PATCH, DELETE) from a browser must come from this origin; and POST/PUT carry JSON (or SDP
/// for WHEP), never a type a cross-site form or a no-CORS fetch could send. With a token, every
/// request needs it: `Authorization: Bearer TOKEN`, `?token=TOKEN` (players that cannot send
/// headers), or the cookie the page gets when it is opened with `?token=`.
public struct AccessPolicy: Sendable {
    /// The shared secret; nil: no authentication (only allowed on loopback).
    public var token: String?
    /// Host names (lower case, no port) accepted besides IP literals, `localhost` and this machine's name.
    public var allowedHosts: Set<String>
    /// Origins (`scheme://host[:port]`, lower case) whose pages may read what a GET answers.
    public var allowedOrigins: Set<String>

    public init(token: String? = nil, allowedHosts: Set<String> = [], allowedOrigins: [String] = []) {
        self.token = token
        self.allowedOrigins = Set(allowedOrigins.compactMap(Self.normalizedOrigin))
        var hosts = Set(allowedHosts.map { $0.lowercased() })
        hosts.insert("localhost")
        let name = ProcessInfo.processInfo.hostName.lowercased()
        if !name.isEmpty {
            hosts.insert(name)
            if let short = name.split(separator: ".").first { hosts.insert("\(short).local") }
        }
        self.allowedHosts = hosts
    }

    /// `scheme://host[:port]` in lower case without a trailing slash, or nil when `text` is no web origin.
    public static func normalizedOrigin(_ text: String) -> String? {
        var o = text.lowercased()
        if o.hasSuffix("/") { o.removeLast() }
        guard let r = o.range(of: "://") else { return nil }
        let scheme = o[..<r.lowerBound], rest = o[r.upperBound...]
        guard scheme == "http" || scheme == "https", !rest.isEmpty,
              rest.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:[]".contains($0)) }) else { return nil }
        return o
    }

    /// The name of the cookie that carries the token for the page's own requests.
    static let cookie = "livegate_token"

    /// True for addresses that only this machine reaches.
    public static func isLoopback(_ address: String) -> Bool {
        let a = address.lowercased()
        return a == "localhost" || a == "::1" || a == "[::1]" || a.hasPrefix("127.")
    }

    /// A random token: 32 bytes from the system's generator, base64url without padding.
    public static func generateToken() -> String {
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Compares without an early exit, so the time taken tells nothing about the token.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return diff == 0
    }

    /// The host part of a `Host` value (`name:port`, `[v6]:port`), lower case.
    static func hostPart(_ authority: String) -> String {
        let a = authority.lowercased()
        if a.hasPrefix("["), let end = a.firstIndex(of: "]") { return String(a[...end]) }
        if let colon = a.lastIndex(of: ":"), a.filter({ $0 == ":" }).count == 1 { return String(a[..<colon]) }
        return a
    }

    /// An address written as numbers: nobody can rebind it.
    static func isIPLiteral(_ host: String) -> Bool {
        if host.hasPrefix("[") && host.hasSuffix("]") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in !p.isEmpty && p.count <= 3 && p.allSatisfy(\.isNumber) && Int(p)! <= 255 }
    }

    func hostAllowed(_ authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return false }
        let host = Self.hostPart(authority)
        return Self.isIPLiteral(host) || allowedHosts.contains(host)
    }

    /// The token a request presents, if any.
    static func presentedToken(_ request: Request) -> String? {
        if let auth = request.headers[.authorization] {
            let parts = auth.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return String(parts[1]).trimmingCharacters(in: .whitespaces) }
        }
        if let q = request.uri.queryParameters["token"] { return String(q) }
        for field in request.headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let kv = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0] == Self.cookie { return String(kv[1]) }
            }
        }
        return nil
    }
}

/// Applies an `AccessPolicy` before any route runs.
struct AccessMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: AccessPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard policy.hostAllowed(request.head.authority) else {
            return Self.refuse(.misdirectedRequest, "this server does not answer for host '\(String((request.head.authority ?? "").prefix(100)))'; use its address or localhost")
        }
        let method = request.method
        let changes = method == .post || method == .put || method == .patch || method == .delete
        if changes, let origin = request.headers[.origin] {
            // A browser says where the page that sent this came from: only this server's own pages may change anything.
            let sameOrigin = origin.lowercased() == "http://\(request.head.authority?.lowercased() ?? "")"
            guard sameOrigin else { return Self.refuse(.forbidden, "requests from other web sites may not change anything here") }
        }
        // PATCH (like DELETE) is never a CORS-simple method, so a browser must ask first and is told no;
        // WHEP answers it with 405.
        if method == .post || method == .put {
            let type = (request.headers[.contentType] ?? "").lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            // WHEP's own types (an SDP offer, a trickle fragment) are not ones a form can send either.
            let sdp = request.uri.path.hasPrefix("/whep/") && (type == "application/sdp" || type == "application/trickle-ice-sdpfrag")
            guard type == "application/json" || sdp else {
                return Self.refuse(.unsupportedMediaType, "send this request with Content-Type: application/json")
            }
        }
        if let token = policy.token {
            guard let presented = AccessPolicy.presentedToken(request), AccessPolicy.constantTimeEqual(presented, token) else {
                var r = Self.refuse(.unauthorized, "a token is required: Authorization: Bearer TOKEN, or ?token=TOKEN")
                r.headers[.wwwAuthenticate] = "Bearer realm=\"livegate\""
                return r
            }
            var response = try await next(request, context)
            // The page opened with ?token= keeps it in a cookie for its own requests (same site only).
            if request.uri.path == "/", request.uri.queryParameters["token"] != nil {
                response.headers[.setCookie] = "\(AccessPolicy.cookie)=\(token); Path=/; HttpOnly; SameSite=Strict"
            }
            return allowRead(response, request)
        }
        return allowRead(try await next(request, context), request)
    }

    /// A page of a listed origin may read what a GET answers (no wildcard: other pages may not).
    private func allowRead(_ response: Response, _ request: Request) -> Response {
        guard request.method == .get || request.method == .head, !policy.allowedOrigins.isEmpty,
              let origin = request.headers[.origin], let o = AccessPolicy.normalizedOrigin(origin),
              policy.allowedOrigins.contains(o) else { return response }
        var r = response
        r.headers[.accessControlAllowOrigin] = origin
        r.headers[.vary] = "Origin"
        return r
    }

    static func refuse(_ status: HTTPResponse.Status, _ message: String) -> Response {
        ControlAPI.json(ErrorBody(error: message), status: status)
    }
}
