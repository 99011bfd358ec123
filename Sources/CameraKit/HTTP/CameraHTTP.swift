import AsyncHTTPClient
public import NIOCore
import NIOHTTP1
import NIOPosix

/// Why an exchange with a camera failed before it answered with a status.
public enum CameraHTTPError: Error, Sendable, CustomStringConvertible {
    case connectFailed(String)
    case timedOut(String)
    case badResponse(String)
    case closed

    public var description: String {
        switch self {
        case .connectFailed(let s): return "connect failed: \(s)"
        case .timedOut(let s): return "timed out: \(s)"
        case .badResponse(let s): return "bad HTTP response: \(s)"
        case .closed: return "connection closed"
        }
    }
}

/// A whole HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
}

/// The cameras' control channels over async-http-client: one request per connection (the bodies
/// are small and many cameras mishandle kept-alive connections), a deadline for the whole
/// exchange, a bounded body, no redirects (a camera has no business sending the gateway
/// elsewhere), no decompression and no retried connects.
public struct CameraHTTP: Sendable {
    /// Largest response body accepted by `request`. Control replies are a few kilobytes; the
    /// default leaves room for a card listing of many thousand files. Image downloads set their own.
    public var maxBodyBytes: Int

    public init(maxBodyBytes: Int = 1024 * 1024) {
        self.maxBodyBytes = maxBodyBytes
    }

    /// One client for every camera, on NIO's shared event loops, alive for the whole process.
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5)),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        // A refused or failed connect is reported at once: the drivers reconnect with their own
        // back-off and show why (the client would otherwise retry until the deadline).
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    private static func prepare(_ method: String, _ url: HTTPURL, _ headers: [(String, String)]) -> HTTPClientRequest {
        var r = HTTPClientRequest(url: url.description)
        r.method = HTTPMethod(rawValue: method)
        r.headers.add(name: "Connection", value: "close")
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        return r
    }

    /// Sends one request and returns the whole response, or throws `CameraHTTPError`.
    public func request(
        _ method: String, _ url: HTTPURL, headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeout: TimeAmount = .seconds(5)
    ) async throws -> HTTPResponse {
        var r = Self.prepare(method, url, headers)
        if let body { r.body = .bytes(ByteBuffer(bytes: body)) }
        let what = "\(method) \(url)"
        do {
            let response = try await Self.client.execute(r, deadline: .now() + timeout)
            let bytes = try await response.body.collect(upTo: maxBodyBytes)
            return HTTPResponse(status: Int(response.status.code),
                                headers: response.headers.map { ($0.name, $0.value) },
                                body: Array(bytes.readableBytesView))
        } catch {
            throw Self.describe(error, what, url: url, limit: maxBodyBytes)
        }
    }

    /// A GET whose body is handed to `body` piece by piece as it arrives: memory stays bounded
    /// whatever the size (the socket is read again only when `body` has returned). `head` gets
    /// the status and headers first and may throw to refuse the answer.
    public func stream(_ url: HTTPURL, headers: [(String, String)] = [],
                       head: (_ status: Int, _ headers: [(String, String)]) async throws -> Void,
                       body: (ByteBuffer) async throws -> Void) async throws {
        let response: HTTPClientResponse
        do {
            response = try await Self.client.execute(Self.prepare("GET", url, headers), timeout: .hours(24))
        } catch {
            throw Self.describe(error, "GET \(url)", url: url, limit: 0)
        }
        try await head(Int(response.status.code), response.headers.map { ($0.name, $0.value) })
        do {
            for try await piece in response.body { try await body(piece) }
        } catch let e as HTTPClientError {
            throw Self.describe(e, "GET \(url)", url: url, limit: 0)
        }
    }

    private static func describe(_ error: any Error, _ what: String, url: HTTPURL, limit: Int) -> any Error {
        if error is CameraHTTPError || error is CancellationError { return error }
        if error is NIOTooManyBytesError { return CameraHTTPError.badResponse("body larger than \(limit) bytes") }
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return CameraHTTPError.timedOut(what)
            case .connectTimeout: return CameraHTTPError.connectFailed("\(url.host):\(url.port): timed out")
            case .remoteConnectionClosed: return CameraHTTPError.closed
            case .cancelled: return CancellationError()
            default: break
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return CameraHTTPError.connectFailed("\(url.host):\(url.port): \(error)")
        }
        return CameraHTTPError.badResponse("\(error)")
    }
}
