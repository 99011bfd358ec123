public import NIOCore

/// One property as `get_camprop.cgi?com=desc` describes it.
public struct OlympusPropertyDesc: Sendable, Hashable {
    public var name: String
    /// `get` or `getset`.
    public var attribute: String
    public var value: String?
    /// Allowed values (empty when the camera gives no `<enum>`).
    public var allowed: [String]
    public var writable: Bool { attribute == "getset" }

    public init(name: String, attribute: String, value: String?, allowed: [String]) {
        self.name = name
        self.attribute = attribute
        self.value = value
        self.allowed = allowed
    }
}

/// The `*.cgi` control channel of one body (olympus.md §2–4): requests with the headers the
/// cameras require (`Host`, `User-Agent: OI.Share v2`), options in the fixed order given, and the
/// answers mapped to `CameraControlError` (unreachable → `.unavailable`, 520 and other statuses →
/// `.camera` with the camera's `<errormsg>`).
public struct OlympusCGI: Sendable {
    public static let userAgent = "OI.Share v2"

    public let endpoint: OlympusEndpoint
    let http: CameraHTTP
    public let timeout: TimeAmount
    /// Requests the camera answered 503 (busy) and that were asked again.
    public let busy = BusyNotes()

    public init(endpoint: OlympusEndpoint, timeout: TimeAmount = .seconds(5)) {
        self.endpoint = endpoint
        self.http = CameraHTTP()
        self.timeout = timeout
    }

    /// `/name.cgi?k=v&…` with the options in the order given.
    public static func target(_ cgi: String, _ options: [(String, String)]) -> String {
        var t = "/\(cgi).cgi"
        for (i, (k, v)) in options.enumerated() {
            t += (i == 0 ? "?" : "&") + percentEncode(k) + "=" + percentEncode(v)
        }
        return t
    }

    /// Percent-encodes everything but unreserved characters.
    static func percentEncode(_ s: String) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%"
                out.unicodeScalars.append(hex[Int(b >> 4)])
                out.unicodeScalars.append(hex[Int(b & 15)])
            }
        }
        return out
    }

    /// The largest reply of a card listing (`get_imglist.cgi`, ~60 bytes a file); other replies
    /// are capped at `CameraHTTP`'s 1 MiB.
    public static let listingMaxBytes = 4 * 1024 * 1024

    /// GET; returns the body text of a 200/202 answer (up to `maxBytes` when given).
    @discardableResult
    public func get(_ cgi: String, _ options: [(String, String)] = [], timeout: TimeAmount? = nil,
                    maxBytes: Int? = nil) async throws -> String {
        String(decoding: try await exchange("GET", cgi, options, body: nil, timeout: timeout, maxBytes: maxBytes).body,
               as: UTF8.self)
    }

    /// GET; returns the body bytes of a 200 answer (a thumbnail, a resized image).
    public func getData(_ cgi: String, _ options: [(String, String)] = [], timeout: TimeAmount? = nil) async throws -> [UInt8] {
        try await exchange("GET", cgi, options, body: nil, timeout: timeout).body
    }

    /// POST with a body (Content-Length is always sent).
    @discardableResult
    public func post(_ cgi: String, _ options: [(String, String)], body: String, timeout: TimeAmount? = nil) async throws -> String {
        try await send("POST", cgi, options, body: Array(body.utf8), timeout: timeout)
    }

    private func send(_ method: String, _ cgi: String, _ options: [(String, String)], body: [UInt8]?,
                      timeout: TimeAmount?) async throws -> String {
        String(decoding: try await exchange(method, cgi, options, body: body, timeout: timeout).body, as: UTF8.self)
    }

    /// One request; a status other than 200/202 is the camera's error (its `errormsg` when it sent one).
    /// 503 (busy: a mode switch settling, olympus.md §3) is asked again with a back-off from 100 ms
    /// growing to 1 s, for at most 8 s, noted in `busy` meanwhile.
    private func exchange(_ method: String, _ cgi: String, _ options: [(String, String)], body: [UInt8]?,
                          timeout: TimeAmount?, maxBytes: Int? = nil) async throws -> HTTPResponse {
        var backoff = BusyBackoff(first: .milliseconds(100), growth: 1.5, cap: .seconds(1), patience: .seconds(8))
        while true {
            do {
                return try await exchangeOnce(method, cgi, options, body: body, timeout: timeout, maxBytes: maxBytes)
            } catch let e as CameraControlError {
                guard case .camera(503, _) = e else { throw e }
                busy.note(cgi)
                guard try await backoff.wait() else { throw e }
            }
        }
    }

    private func exchangeOnce(_ method: String, _ cgi: String, _ options: [(String, String)], body: [UInt8]?,
                              timeout: TimeAmount?, maxBytes: Int? = nil) async throws -> HTTPResponse {
        let url = HTTPURL(host: endpoint.host, port: endpoint.port, target: Self.target(cgi, options))
        var headers = [("User-Agent", Self.userAgent)]
        if body != nil { headers.append(("Content-Type", "text/plain;charset=utf-8")) }
        let r: HTTPResponse
        do {
            var client = http
            if let maxBytes { client.maxBodyBytes = maxBytes }
            r = try await client.request(method, url, headers: headers, body: body, timeout: timeout ?? self.timeout)
        } catch {
            throw CameraControlError.unavailable("\(cgi): \(error)")
        }
        guard r.status == 200 || r.status == 202 else {
            let text = String(decoding: r.body, as: UTF8.self)
            let message = OlympusXML.element("errormsg", in: text) ?? "HTTP \(r.status) for \(cgi)"
            throw CameraControlError.camera(code: r.status, message: message)
        }
        return r
    }
}

/// The little XML the cameras answer (one line, no attributes where values are read).
public enum OlympusXML {
    /// Text of the first `<name>…</name>`.
    public static func element(_ name: String, in xml: some StringProtocol) -> String? {
        let text = Substring(xml)
        guard let open = text.firstRange(of: "<\(name)>") else { return nil }
        let after = text[open.upperBound...]
        guard let close = after.firstRange(of: "</\(name)>") else { return nil }
        return String(after[..<close.lowerBound])
    }

    /// Every `<desc>` of a `desclist` (or a single `desc`) answer.
    public static func descs(_ xml: String) -> [OlympusPropertyDesc] {
        var out: [OlympusPropertyDesc] = []
        var rest = xml[...]
        while let open = rest.firstRange(of: "<desc>") {
            let after = rest[open.upperBound...]
            guard let close = after.firstRange(of: "</desc>") else { break }
            let d = after[..<close.lowerBound]
            if let name = element("propname", in: d) {
                let allowed = element("enum", in: d).map { $0.split(separator: " ").map(String.init) } ?? []
                out.append(OlympusPropertyDesc(name: name, attribute: element("attribute", in: d) ?? "get",
                                               value: element("value", in: d), allowed: allowed))
            }
            rest = after[close.upperBound...]
        }
        return out
    }

    /// The `set_camprop` body.
    public static func setBody(_ value: String) -> String {
        "<?xml version=\"1.0\"?>\r\n<set>\r\n<value>\(escape(value))</value>\r\n</set>"
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            default: out.append(c)
            }
        }
        return out
    }
}
