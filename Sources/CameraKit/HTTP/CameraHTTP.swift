import AsyncHTTPClient
import LiveViewCore
public import NIOCore
import NIOHTTP1
import NIOPosix

/// Why an exchange with a camera failed: no connection, no answer in time, a broken or oversized
/// answer, or the camera closed the connection.
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
    /// Largest response body accepted by `request`. Control replies are a few kilobytes; card
    /// listings and image downloads set their own.
    public var maxBodyBytes: Int

    public init(maxBodyBytes: Int = 1024 * 1024) {
        self.maxBodyBytes = maxBodyBytes
    }

    /// The clients' settings (the clients live on NIO's shared event loops for the whole process).
    private static func configuration(idleRead: TimeAmount?) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: idleRead),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        // A refused or failed connect is reported at once: the drivers reconnect with their own
        // back-off and show why (the client would otherwise retry until the deadline).
        configuration.connectionPool.retryConnectionEstablishment = false
        // Connections are not kept (one request each); the pool's limit only queues requests beyond
        // it, and the old client had none.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        return configuration
    }

    /// The client of `request` (whose deadline bounds everything).
    private static let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                                           configuration: configuration(idleRead: nil))

    /// The clients of `stream`, by their idle-read timeout (one in practice: the default).
    private static let streamClients = Mutex<[Int64: HTTPClient]>([:])

    private static func streamClient(idle: TimeAmount) -> HTTPClient {
        streamClients.withLock { clients in
            if let c = clients[idle.nanoseconds] { return c }
            let c = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration(idleRead: idle))
            clients[idle.nanoseconds] = c
            return c
        }
    }

    private static func prepare(_ method: String, _ url: HTTPURL, _ headers: [(String, String)]) -> HTTPClientRequest {
        var r = HTTPClientRequest(url: url.requestString)
        r.method = HTTPMethod(rawValue: method)
        r.headers.add(name: "Connection", value: "close")
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        return r
    }

    /// Sends one request and returns the whole response, or throws `CameraHTTPError`.
    ///
    /// The exchange runs to its answer or its deadline even when the calling task is cancelled:
    /// a camera has usually acted on a request once it is sent (started its stream, taken the
    /// picture), and the drivers' goodbyes and hand-overs are made while they are being stopped.
    /// `timeout` bounds the whole exchange, the body included.
    public func request(
        _ method: String, _ url: HTTPURL, headers: [(String, String)] = [], body: [UInt8]? = nil,
        timeout: TimeAmount = .seconds(5)
    ) async throws -> HTTPResponse {
        var r = Self.prepare(method, url, headers)
        if let body { r.body = .bytes(ByteBuffer(bytes: body)) }
        let request = r
        let limit = maxBodyBytes
        let what = "\(method) \(url)"
        let exchange = Task {
            try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
                group.addTask { try await Self.exchange(request, what, url: url, deadline: .now() + timeout, limit: limit) }
                group.addTask {
                    try await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                    throw CameraHTTPError.timedOut(what)
                }
                // The first to finish wins; the other is cancelled (a late body: its connection closed).
                defer { group.cancelAll() }
                return try await group.next()!
            }
        }
        return try await exchange.value
    }

    private static func exchange(_ request: HTTPClientRequest, _ what: String, url: HTTPURL, deadline: NIODeadline,
                                 limit: Int) async throws -> HTTPResponse {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw describe(error, what, url: url)
        }
        do {
            let bytes = try await response.body.collect(upTo: limit)
            return HTTPResponse(status: Int(response.status.code),
                                headers: response.headers.map { ($0.name, $0.value) },
                                body: Array(bytes.readableBytesView))
        } catch is NIOTooManyBytesError {
            throw CameraHTTPError.badResponse("body larger than \(limit) bytes")
        } catch {
            throw describeBody(error)
        }
    }

    /// A GET whose body is handed to `body` piece by piece as it arrives: memory stays bounded
    /// whatever the size (the socket is read again only when `body` has returned). `head` gets
    /// the status and headers first and may throw to refuse the answer. A camera that sends nothing
    /// for `idleTimeout` ends it with `CameraHTTPError.timedOut`. The timer also runs while `body`
    /// waits on a slow reader; the default (30 s) is well above the gateway's stalled-reader limit
    /// (`HTTPLimits.stallSeconds`, 10 s), so a reader is closed by the gateway before that happens.
    public func stream(_ url: HTTPURL, headers: [(String, String)] = [], idleTimeout: TimeAmount = .seconds(30),
                       head: (_ status: Int, _ headers: [(String, String)]) async throws -> Void,
                       body: (ByteBuffer) async throws -> Void) async throws {
        let response: HTTPClientResponse
        do {
            response = try await Self.streamClient(idle: idleTimeout).execute(Self.prepare("GET", url, headers), timeout: idleTimeout)
        } catch {
            throw Self.describe(error, "GET \(url)", url: url)
        }
        try await head(Int(response.status.code), response.headers.map { ($0.name, $0.value) })
        var pieces = response.body.makeAsyncIterator()
        while true {
            let piece: ByteBuffer?
            do { piece = try await pieces.next() } catch { throw Self.describeBody(error) }
            guard let piece else { return }
            try await body(piece)
        }
    }

    /// An error before the response head: connecting, sending, waiting.
    private static func describe(_ error: any Error, _ what: String, url: HTTPURL) -> any Error {
        if error is CameraHTTPError || error is CancellationError { return error }
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return CameraHTTPError.timedOut(what)
            case .connectTimeout: return CameraHTTPError.connectFailed("\(url.host):\(url.port): timed out")
            case .remoteConnectionClosed: return CameraHTTPError.closed
            case .cancelled: return CancellationError()
            default: return CameraHTTPError.badResponse("\(e)")
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return CameraHTTPError.connectFailed("\(url.host):\(url.port): \(error)")
        }
        return CameraHTTPError.badResponse("\(error)")
    }

    /// An error while the body comes: the camera closed or broke the connection, went silent, or
    /// sent garbage.
    private static func describeBody(_ error: any Error) -> any Error {
        if error is CameraHTTPError || error is CancellationError { return error }
        if let e = error as? HTTPClientError {
            if e == .cancelled { return CancellationError() }
            if e == .remoteConnectionClosed { return CameraHTTPError.closed }
            if e == .readTimeout { return CameraHTTPError.timedOut("no data from the camera") }
        }
        return CameraHTTPError.badResponse("body: \(error)")
    }
}
