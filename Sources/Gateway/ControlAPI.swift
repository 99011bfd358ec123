public import CameraKit
import Foundation
public import GatewayAPI
public import Hummingbird
import JPEGKit
import LiveViewCore
public import MediaKit
import Logging
import NIOCore
import Vendors
import HTTPTypes

/// What the control API needs from the gateway (the real `Gateway`, or a test double).
public protocol ControlModel: Sendable {
    var cameras: [CameraRuntime] { get }
    /// Prometheus text exposition of every counter.
    func metricsText() -> String
    /// Folder holding `<camera>/index.m3u8` and segments, when HLS is on.
    var hlsRoot: String? { get }
    /// The URLs a user opens for a camera (rtsp, hls).
    func urls(for camera: CameraRuntime) -> [String: String]
    /// A player asked for a camera's HLS playlist (`playlist: true`) or a segment: start HLS on
    /// demand and tell whether the playlist is there.
    func hlsRequest(camera: String, playlist: Bool) async -> HLSOutput.Readiness
    /// What runs for a camera: its media-graph branches ("jpeg", "picture", "encoder", "hls") and "slate".
    func branches(camera: String) -> [String: Bool]
    /// A new viewer of a camera's JPEGs as they came (MJPEG), nil when the camera has no media graph.
    func mjpegSubscribe(camera: String) -> JPEGSubscription?
    /// A WebRTC viewer's SDP offer for a camera (WHEP): the answer and the session id.
    func whepOffer(camera: String, sdp: String) async throws(WHEPOutput.Failure) -> WHEPOutput.Answer
    /// Ends a camera's WebRTC session; false when there is no such session.
    func whepEnd(camera: String, session: String) -> Bool
    /// A new listener of the camera events (Server-Sent Event texts), nil when not offered.
    func eventStream(lastEventID: Int?) -> AsyncStream<String>?
    /// A property was set through the API (for the event stream).
    func propertyWasSet(camera: String, name: String, value: APIValue)
    /// Fires the camera's shutter and saves what the shot produced.
    func capture(camera: CameraRuntime, autofocus: Bool) async throws -> [SavedCapture]
    /// The files saved from a camera (shots from the API and from the body), oldest first.
    func captures(camera: String) -> [SavedCapture]
    /// Reads the configuration again: cameras added, removed and left alone.
    func reload() async throws -> GatewayAPI.ReloadResult
    /// A camera's pushes to media servers (url, state, reason).
    func pushes(camera: String) -> [PushState]
    /// Fired when the gateway closes: long-lived answers end on it (nil: never).
    var closing: ClosingSignal? { get }
}

extension ControlModel {
    public func mjpegSubscribe(camera: String) -> JPEGSubscription? { nil }
    public func whepOffer(camera: String, sdp: String) async throws(WHEPOutput.Failure) -> WHEPOutput.Answer {
        throw .failed("WebRTC is not available here")
    }
    public func whepEnd(camera: String, session: String) -> Bool { false }
    public func eventStream(lastEventID: Int?) -> AsyncStream<String>? { nil }
    public func propertyWasSet(camera: String, name: String, value: APIValue) {}
    public func capture(camera: CameraRuntime, autofocus: Bool) async throws -> [SavedCapture] {
        throw APIError(.notImplemented, "capture is not available here")
    }
    public func captures(camera: String) -> [SavedCapture] { [] }
    public func reload() async throws -> GatewayAPI.ReloadResult {
        throw APIError(.conflict, "nothing to reload here")
    }
    public func pushes(camera: String) -> [PushState] { [] }
    public var closing: ClosingSignal? { nil }
}

/// The HTTP JSON control API (Hummingbird): cameras, properties, touch-AF, metrics and HLS files.
public enum ControlAPI {
    /// Largest request body accepted.
    static let maxBody = 16 * 1024

    public static func buildRouter(model: any ControlModel, access: AccessPolicy = AccessPolicy()) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: AccessMiddleware(policy: access))
        router.add(middleware: ErrorJSONMiddleware())
        router.get("/") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: WebPage.html(model: model))))
        }
        router.get("/api/v1/cameras") { _, _ in
            json(model.cameras.map { summary($0, model: model) })
        }
        router.get("/api/v1/cameras/:id") { _, context in
            let cam = try camera(context, model)
            return json(summary(cam, model: model))
        }
        router.get("/api/v1/cameras/:id/properties") { _, context in
            let cam = try camera(context, model)
            let props = try await mapErrors { try await cam.driver.properties() }
            return json(props.map(propertyInfo))
        }
        router.get("/api/v1/cameras/:id/properties/:name") { _, context in
            let cam = try camera(context, model)
            let name = try propertyName(context)
            let props = try await mapErrors { try await cam.driver.properties() }
            guard let p = props.first(where: { $0.name == name }) else {
                throw APIError(.notFound, "\(cam.id) does not support \(name.rawValue)")
            }
            return json(propertyInfo(p))
        }
        router.put("/api/v1/cameras/:id/properties/:name") { request, context in
            let cam = try camera(context, model)
            let name = try propertyName(context)
            let body = try await readJSON(request, as: SetPropertyRequest.self,
                                          "body must be {\"value\": …}; \"value\" must be a string or a number")
            let value: PropertyValue
            switch body.value {
            case .number(let d): value = .number(d)
            case .text(let s):
                guard !s.isEmpty, s.count <= 64 else { throw APIError(.badRequest, "\"value\" must be a string or a number") }
                value = CommonValues.parse(s, for: name)
            }
            try await mapErrors { try await cam.driver.setProperty(name, to: value) }
            model.propertyWasSet(camera: cam.id, name: name.rawValue, value: APIValue(value))
            return json(SetPropertyResult(name: name.rawValue, value: APIValue(value)))
        }
        router.post("/api/v1/cameras/:id/focus") { request, context in
            let cam = try camera(context, model)
            try require(.touchAF, of: cam)
            let point = try await readJSON(request, as: FocusRequest.self,
                                           "body must be {\"x\": pixels, \"y\": pixels} in output-image pixels")
            let (x, y) = (point.x, point.y)
            let size = cam.frameSize
            guard size.width > 0, size.height > 0 else { throw APIError(.serviceUnavailable, "no frame yet from \(cam.id)") }
            guard x >= 0, y >= 0, x <= Double(size.width), y <= Double(size.height) else {
                throw APIError(.badRequest, "point (\(x), \(y)) is outside the \(size.width)x\(size.height) image")
            }
            try await mapErrors(unsupported: .notImplemented) { try await cam.driver.touchFocus(x: x, y: y, imageWidth: size.width, imageHeight: size.height) }
            return json(FocusResult(x: x, y: y))
        }
        router.post("/api/v1/cameras/:id/capture") { request, context in
            let cam = try camera(context, model)
            try require(.shutter, of: cam)
            var autofocus = false
            if (request.headers[.contentLength].flatMap(Int.init) ?? 0) > 0 || request.headers[.transferEncoding] != nil {
                let body = try await readJSON(request, as: CaptureRequest.self, "\"autofocus\" must be true or false")
                autofocus = body.autofocus ?? false
            }
            let files = try await mapErrors(unsupported: .notImplemented) { try await model.capture(camera: cam, autofocus: autofocus) }
            return json(SavedFileList(files: files.map(\.api)))
        }
        router.get("/api/v1/cameras/:id/captures") { _, context in
            let cam = try camera(context, model)
            return json(SavedFileList(files: model.captures(camera: cam.id).map(\.api)))
        }
        router.post("/api/v1/reload") { _, _ in
            try await json(model.reload())
        }
        router.get("/api/v1/openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"],
                     body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml + "\n")))
        }
        addFileRoutes(router, model: model)
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: model.metricsText())))
        }
        router.get("/hls/:id/:file") { _, context in
            try await hlsFile(context, model: model)
        }
        router.post("/whep/:id") { request, context in
            try await whepOffer(request, context, model: model)
        }
        router.on("/whep/:id", method: .options) { _, _ in
            Response(status: .noContent, headers: whepCORS)
        }
        router.delete("/whep/:id/sessions/:session") { _, context in
            let cam = try camera(context, model)
            let session = context.parameters.get("session") ?? ""
            guard model.whepEnd(camera: cam.id, session: session) else {
                throw APIError(.notFound, "no WebRTC session '\(session.prefix(64))' of \(cam.id)")
            }
            return Response(status: .ok, headers: whepCORS)
        }
        router.patch("/whep/:id/sessions/:session") { _, _ in
            // Non-trickle: the answer already carries every candidate.
            var headers = whepCORS
            headers[.allow] = "DELETE"
            return Response(status: .methodNotAllowed, headers: headers)
        }
        router.on("/whep/:id/sessions/:session", method: .options) { _, _ in
            Response(status: .noContent, headers: whepCORS)
        }
        router.get("/api/v1/events") { request, _ in
            let only: String? = request.uri.queryParameters.get("camera").map { String($0) }
            if let only, !model.cameras.contains(where: { $0.id == only }) {
                throw APIError(.notFound, "no camera '\(only.prefix(64))'")
            }
            let lastID = HTTPField.Name("Last-Event-ID").flatMap { request.headers[$0] }.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let events = model.eventStream(lastEventID: lastID) else { throw APIError(.notFound, "no event stream here") }
            var headers: HTTPFields = [.contentType: "text/event-stream"]
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: ": livegate camera events (state, property, af)\n\n"))
                for await text in events where only == nil || eventCamera(text) == only {
                    try await writer.write(ByteBuffer(string: text))
                }
                try await writer.finish(nil)
            })
        }
        router.get("/mjpeg/:id") { request, context in
            try mjpegStream(request, context, model: model)
        }
        router.get("/snapshot/:file") { _, context in
            try snapshot(context, model: model)
        }
        return router
    }

    /// The `camera` of an event's data (nil when it has none).
    static func eventCamera(_ text: String) -> String? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { return nil }
        return (try? JSONDecoder().decode(EventCamera.self, from: Data(line.dropFirst(6).utf8)))?.camera
    }

    // No Access-Control-Allow-Origin: only this server's own page (same origin) may use WHEP from
    // a browser; players outside a browser (OBS) do not ask.
    static let whepCORS: HTTPFields = [
        .accessControlAllowMethods: "POST, DELETE, PATCH, OPTIONS",
        .accessControlAllowHeaders: "Content-Type",
        .accessControlExposeHeaders: "Location",
    ]

    /// `POST /whep/{camera}` (RFC 9725): an SDP offer in, `201 Created` with the answer and the
    /// session's `Location` out.
    static func whepOffer(_ request: Request, _ context: BasicRequestContext, model: any ControlModel) async throws -> Response {
        let cam = try camera(context, model)
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/sdp" else {
            throw APIError(.unsupportedMediaType, "a WHEP offer is Content-Type: application/sdp")
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: WHEPOffer.maxBytes)
        } catch is NIOTooManyBytesError {
            throw APIError(.contentTooLarge, "an SDP offer is at most \(WHEPOffer.maxBytes) bytes")
        }
        let offer = String(buffer: body)
        let answer: WHEPOutput.Answer
        do {
            answer = try await model.whepOffer(camera: cam.id, sdp: offer)
        } catch {
            switch error {
            case .unknownCamera: throw APIError(.notFound, error.description)
            case .badOffer: throw APIError(.badRequest, error.description)
            case .noH264: throw APIError(.notAcceptable, error.description)
            case .tooManySessions: throw APIError(.serviceUnavailable, error.description)
            case .failed: throw APIError(.serviceUnavailable, error.description)
            }
        }
        var headers = whepCORS
        headers[.contentType] = "application/sdp"
        headers[.location] = "/whep/\(cam.id)/sessions/\(answer.session)"
        return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.sdp)))
    }

    /// The part boundary of `/mjpeg/{camera}`.
    static let mjpegBoundary = "livegate-mjpeg-frame"

    /// `multipart/x-mixed-replace`: every part one JPEG exactly as the camera sent it (or the offline
    /// slate while the camera is away), the newest one each time the client is ready for the next.
    /// `?overlay=af` draws the camera's AF areas into the frames that have some (decoded and encoded
    /// again for these viewers only, once per frame however many ask).
    static func mjpegStream(_ request: Request, _ context: BasicRequestContext, model: any ControlModel) throws -> Response {
        let cam = try camera(context, model)
        let overlay = request.uri.queryParameters.get("overlay").map { String($0) } ?? "none"
        guard overlay == "af" || overlay == "none" else {
            throw APIError(.badRequest, "overlay must be af or none, not '\(overlay.prefix(32))'")
        }
        let annotator: AFJPEGAnnotator? = overlay == "af" ? cam.afJPEG : nil
        guard let sub = model.mjpegSubscribe(camera: cam.id) else {
            throw APIError(.serviceUnavailable, "\(cam.id) has no media outputs (started with --no-outputs?)")
        }
        var headers: HTTPFields = [.contentType: "multipart/x-mixed-replace; boundary=\(mjpegBoundary)"]
        headers[.cacheControl] = "no-cache, no-store"
        let closing = model.closing
        let body = ResponseBody { writer in
            // Closing ends the subscription: `next()` answers nil and the part stream ends cleanly.
            let token = closing?.onClose { sub.cancel() }
            defer {
                closing?.forget(token)
                sub.cancel()
            }
            while let frame = await sub.next() {
                let drawn = annotator?.annotate(frame)
                let count = drawn?.count ?? frame.count
                var part = ByteBuffer()
                part.reserveCapacity(count + 128)
                part.writeString("--\(mjpegBoundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(count)\r\n\r\n")
                if let drawn { part.writeBytes(drawn) } else { part.writeBytes(frame.bytes) }
                frame.release()
                part.writeString("\r\n")
                try await writer.write(part)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `GET /snapshot/{camera}.jpg`: the newest frame the camera sent (or the slate it shows).
    static func snapshot(_ context: BasicRequestContext, model: any ControlModel) throws -> Response {
        let file = context.parameters.get("file") ?? ""
        guard file.hasSuffix(".jpg"), file.count > 4 else {
            throw APIError(.notFound, "snapshots are /snapshot/{camera}.jpg")
        }
        let cam = try camera(id: String(file.dropLast(4)), model)
        guard let frame = cam.hub.latest() else {
            throw APIError(.serviceUnavailable, "no frame yet from \(cam.id)", state: cam.driver.state.rawValue)
        }
        defer { frame.release() }
        let age = frame.arrivalNanos > 0 ? (MonotonicClock.nanos() &- frame.arrivalNanos) / 1_000_000 : 0
        var headers: HTTPFields = [.contentType: "image/jpeg"]
        headers[.cacheControl] = "no-cache, no-store"
        if let name = HTTPField.Name("X-Frame-Age-Ms") { headers[name] = "\(age)" }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: frame.bytes)))
    }

    // MARK: Helpers

    static func camera(_ context: BasicRequestContext, _ model: any ControlModel) throws -> CameraRuntime {
        try camera(id: context.parameters.get("id") ?? "", model)
    }

    static func camera(id: String, _ model: any ControlModel) throws -> CameraRuntime {
        guard let cam = model.cameras.first(where: { $0.id == id }) else {
            throw APIError(.notFound, "no camera '\(id.prefix(64))'; cameras: \(model.cameras.map(\.id).joined(separator: ", "))")
        }
        return cam
    }

    static func propertyName(_ context: BasicRequestContext) throws -> PropertyName {
        let n = context.parameters.get("name") ?? ""
        guard let name = PropertyName(rawValue: n) else {
            throw APIError(.notFound, "unknown property '\(n.prefix(64))'; properties: \(PropertyName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return name
    }

    /// The request's JSON body as `T`: 413 when larger than `maxBody`, 400 "must be a JSON object"
    /// when it is not one, 400 `wrongShape` when it is an object `T` cannot be read from.
    static func readJSON<T: Decodable>(_ request: Request, as type: T.Type, _ wrongShape: String) async throws -> T {
        var req = request
        let buf: ByteBuffer
        do {
            buf = try await req.collectBody(upTo: maxBody)
        } catch is NIOTooManyBytesError {
            throw APIError(.contentTooLarge, "request body larger than \(maxBody) bytes")
        }
        let data = Data(buf.readableBytesView)
        if let value = try? JSONDecoder().decode(T.self, from: data) { return value }
        // Which of the two mistakes: not an object at all, or an object of the wrong shape.
        guard (try? JSONDecoder().decode(AnyJSONObject.self, from: data)) != nil else {
            throw APIError(.badRequest, "request body must be a JSON object")
        }
        throw APIError(.badRequest, wrongShape)
    }

    /// 501 with the vendor's reason when the camera's plug-in lacks `capability`.
    static func require(_ capability: CameraCapabilities, of cam: CameraRuntime) throws {
        guard cam.vendor.capabilities.contains(capability) else {
            throw APIError(.notImplemented, "\(cam.id): \(cam.vendor.unsupportedReason(capability))")
        }
    }

    /// A camera's refusals as API errors. What the camera turns out not to support is a bad request
    /// for a property (400), and 501 for what a body lacks as a whole (`unsupported`: its card,
    /// its shutter, touch-AF).
    static func mapErrors<T>(unsupported: HTTPResponse.Status = .badRequest, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let e as CameraControlError {
            switch e {
            case .invalidValue(let p, let v, let valid):
                throw APIError(.badRequest, "\(p.rawValue): '\(v)' is not offered by the camera", valid: valid)
            case .notSupported(let what):
                throw APIError(unsupported, "not supported by this camera: \(what)")
            case .camera(let code, let message):
                throw APIError(.badGateway, "camera refused: \(message)", cameraCode: code)
            case .unavailable(let why):
                throw APIError(.serviceUnavailable, plain(why))
            case .refused(let why):
                throw APIError(.conflict, "camera refused: \(why)")
            case .notFound(let what):
                throw APIError(.notFound, "not on the camera: \(what)")
            }
        }
    }

    /// A network failure in words, without the internal error texts (NIO types, errno, addresses
    /// of sockets) that mean nothing to an API client; other reasons pass as they are.
    static func plain(_ why: String) -> String {
        let lower = why.lowercased()
        let internals = ["errno", "nio", "singleconnectionfailure", "connection errors", "channelerror", "ioerror"]
        guard internals.contains(where: { lower.contains($0) }) else { return why }
        switch NetworkFailure(why) {
        case .refused: return "the camera refused the connection (is it on, and in remote mode?)"
        case .timeout: return "the camera does not answer (timeout)"
        case .closed: return "the camera closed the connection"
        case .unreachable: return "the camera cannot be reached (network unreachable)"
        case nil: return "the camera cannot be reached"
        }
    }

    /// Why a camera shows the slate: the driver's last error, or no frames while it says streaming.
    static func reason(_ cam: CameraRuntime, branches: [String: Bool]) -> String? {
        if let r = OutputSet.reason(cam.driver) { return r }
        return branches["slate"] == true ? "no frames from the camera" : nil
    }

    static func summary(_ cam: CameraRuntime, model: any ControlModel) -> CameraSummary {
        let size = cam.frameSize
        let branches = model.branches(camera: cam.id)
        let storage = (cam.driver as? any StorageReporting)?.storage
        return CameraSummary(
            id: cam.id, vendor: cam.driver.vendor, url: cam.url, state: cam.driver.state.rawValue,
            fps: (cam.driver.stats.fps * 10).rounded() / 10, frames: cam.driver.stats.frames,
            drops: cam.driver.stats.drops, reconnects: cam.driver.stats.reconnects,
            width: size.width, height: size.height, rotation: cam.frameRotation, outputs: model.urls(for: cam),
            reason: reason(cam, branches: branches), branches: branches, push: model.pushes(camera: cam.id),
            capabilities: Dictionary(uniqueKeysWithValues: cam.vendor.capabilities.byName),
            properties: cam.vendor.properties.map(\.rawValue),
            storage: storage.map(\.api))
    }

    static func propertyInfo(_ p: CameraProperty) -> PropertyInfo {
        PropertyInfo(name: p.name.rawValue, value: p.value.map(APIValue.init), displayText: p.displayText,
                     choices: p.choices.map(APIValue.init), writable: p.writable)
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: jsonBytes(value)))
    }

    /// A JSON answer's bytes: the API's encoder (sorted keys), then a newline.
    static func jsonBytes(_ value: some Encodable) -> ByteBuffer {
        var buf = ByteBuffer(bytes: (try? APIJSON.encoder.encode(value)) ?? Data("{}".utf8))
        buf.writeString("\n")
        return buf
    }

    /// Serves `<hlsRoot>/<id>/<file>`; only plain file names of the playlist and its segments. A
    /// request starts the camera's HLS when it is not running; a playlist is answered once it exists
    /// (or 503 with Retry-After while HLS is still starting).
    static func hlsFile(_ context: BasicRequestContext, model: any ControlModel) async throws -> Response {
        guard let root = model.hlsRoot else { throw APIError(.notFound, "HLS is off") }
        let cam = try camera(context, model)
        let file = context.parameters.get("file") ?? ""
        let allowed = file.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }
        guard allowed, !file.hasPrefix("."), file.hasSuffix(".m3u8") || file.hasSuffix(".ts"), file.count <= 64 else {
            throw APIError(.notFound, "no such HLS file")
        }
        let isPlaylist = file.hasSuffix(".m3u8")
        if await model.hlsRequest(camera: cam.id, playlist: isPlaylist) == .starting {
            var r = json(ErrorBody(error: "HLS is starting; retry in a second"), status: .serviceUnavailable)
            r.headers[.retryAfter] = "1"
            return r
        }
        let path = "\(root)/\(cam.id)/\(file)"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APIError(.notFound, file.hasSuffix(".m3u8") ? "playlist not written yet; try again in a few seconds" : "segment gone")
        }
        let type = file.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : "video/mp2t"
        var headers: HTTPFields = [.contentType: type]
        headers[.cacheControl] = file.hasSuffix(".m3u8") ? "no-cache" : "max-age=60"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension APIValue {
    /// A driver's value as the API writes it (the CLI uses it too).
    public init(_ value: PropertyValue) {
        switch value {
        case .text(let s): self = .text(s)
        case .number(let d): self = .number(d)
        }
    }
}

/// An error the API answers with a JSON body `{"error": message, …}` (`ErrorBody`).
struct APIError: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let body: ErrorBody
    /// Headers the answer carries besides the JSON body (e.g. Content-Range of a 416).
    let headers: HTTPFields

    init(_ status: HTTPResponse.Status, _ message: String, valid: [String]? = nil, cameraCode: Int? = nil,
         state: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.body = ErrorBody(error: message, valid: valid, cameraCode: cameraCode, state: state)
        self.headers = headers
    }

    var message: String { body.error }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var r = ControlAPI.json(body, status: status)
        for f in headers { r.headers.append(f) }
        return r
    }
}

/// Turns Hummingbird's own errors (404 route, bad method) into the same JSON shape.
struct ErrorJSONMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as APIError {
            throw e
        } catch let e as HTTPError {
            throw APIError(e.status, e.body ?? e.status.reasonPhrase)
        }
    }
}
