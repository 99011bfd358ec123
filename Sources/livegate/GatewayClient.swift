import AsyncHTTPClient
import Foundation
import GatewayAPI
import NIOCore
import NIOHTTP1

/// The CLI's side of the control API: typed requests and answers (GatewayAPI) over async-http-client.
struct GatewayClient {
    /// `http://host:port`, no trailing slash.
    let base: String
    let token: String?

    /// Largest answer read whole (file downloads and events are streamed instead).
    static let maxAnswer = 64 * 1024 * 1024

    func request(_ method: HTTPMethod, _ path: String) -> HTTPClientRequest {
        var r = HTTPClientRequest(url: base + path)
        r.method = method
        if let token, !token.isEmpty { r.headers.add(name: "Authorization", value: "Bearer \(token)") }
        return r
    }

    /// Sends a request with an optional JSON body and decodes the answer as `R`; a non-2xx answer
    /// becomes a `CLIError` with the API's message.
    func send<R: Decodable>(_ method: HTTPMethod, _ path: String, body: (any Encodable)? = nil,
                            as type: R.Type = R.self) async throws -> R {
        var r = request(method, path)
        // The API takes state changes as JSON only; an empty JSON object says "no options".
        if method != .GET {
            r.headers.add(name: "Content-Type", value: "application/json")
            r.body = .bytes(ByteBuffer(data: try body.map { try APIJSON.encoder.encode($0) } ?? Data("{}".utf8)))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await HTTPClient.shared.execute(r, timeout: .seconds(30))
            bytes = try await response.body.collect(upTo: Self.maxAnswer)
        } catch {
            throw CLIError("cannot reach the gateway at \(base): \(Self.words(error))")
        }
        let data = Data(bytes.readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            throw Self.failure(status: Int(response.status.code), body: data)
        }
        do {
            return try JSONDecoder().decode(R.self, from: data)
        } catch {
            throw CLIError("unexpected answer from \(path): \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
    }

    /// Streams a GET: `head` gets the status and Content-Length (nil when not sent) before any body
    /// bytes, `chunk` each piece of the body as it arrives.
    func stream(_ path: String, head: (Int, Int?) throws -> Void, chunk: (ByteBuffer) throws -> Void) async throws {
        let response = try await HTTPClient.shared.execute(request(.GET, path), timeout: .hours(24 * 365))
        try head(Int(response.status.code), response.headers.first(name: "Content-Length").flatMap { Int($0) })
        for try await piece in response.body { try chunk(piece) }
    }

    /// The API's error body in one line: its message, the allowed values, the camera's own code.
    static func failure(status: Int, body: Data) -> CLIError {
        guard let e = try? JSONDecoder().decode(ErrorBody.self, from: body) else {
            return CLIError("HTTP \(status): \(String(decoding: body.prefix(500), as: UTF8.self))")
        }
        var message = e.error
        if let valid = e.valid { message += "\nvalid values: \(valid.joined(separator: ", "))" }
        if let code = e.cameraCode { message += " (camera code \(code))" }
        return CLIError("HTTP \(status): \(message)")
    }

    /// A connection failure in words (async-http-client's errors print as type names).
    static func words(_ error: any Error) -> String {
        let text = "\(error)"
        let lower = text.lowercased()
        if lower.contains("refused") { return "connection refused (is livegate running, and is --api right?)" }
        if lower.contains("timeout") || lower.contains("deadline") { return "no answer (timeout)" }
        return text
    }
}

extension JSONEncoder {
    /// The CLI's pretty output: indented, keys sorted.
    static let pretty: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}
