import CameraKit
import Foundation
import GatewayAPI
import Hummingbird
import HTTPTypes
import JPEGKit
import LiveViewCore
import MediaKit
import NIOCore

/// The card over HTTP: `GET /api/v1/cameras/{id}/files` (paged listing) and
/// `GET /api/v1/cameras/{id}/files/{path}` (the file streamed from the camera, with Range) and
/// `GET /api/v1/cameras/{id}/thumbnails/{path}` (the camera's preview of it).
/// Only a path the camera lists can be downloaded: anything else — `..`, encoded or not — is 400 or 404.
extension ControlAPI {
    static func addFileRoutes(_ router: Router<BasicRequestContext>, model: any ControlModel) {
        addThumbnailRoute(router, model: model)
        router.get("/api/v1/cameras/:id/files") { request, context in
            let (_, card) = try browsing(context, model)
            let offset = try queryInt(request, "offset", default: 0, range: 0...Int.max)
            let limit = try queryInt(request, "limit", default: 100, range: 1...1000)
            let all = try await mapErrors(unsupported: .notImplemented) { try await card.listFiles() }.sorted { $0.path < $1.path }
            let page = all.dropFirst(offset).prefix(limit)
            return json(CardFileList(total: all.count, offset: offset, limit: limit, files: page.map(cardFile)))
        }
        router.get("/api/v1/cameras/:id/files/**") { request, context in
            let (cam, card) = try browsing(context, model)
            let path = try cardPath(context.parameters.getCatchAll())
            guard let listed = try await mapErrors(unsupported: .notImplemented, { try await card.file(at: path) }) else {
                throw APIError(.notFound, "\(cam.id) has no file \(path)")
            }
            let query = request.uri.queryParameters
            if query.get("thumbnail") != nil { return try await thumbnail(cam, card, listed) }
            let file = try await mapErrors(unsupported: .notImplemented) { try await card.resolve(listed) }
            if query.get("preview") != nil { return try await preview(cam, card, file) }
            var headers: HTTPFields = [.contentType: file.contentType]
            let shownName = file.name.map { $0 == "\"" || $0 == "\\" || $0.isNewline ? "_" : $0 }
            headers[.contentDisposition] = "attachment; filename=\"\(String(shownName))\""
            guard file.size > 0 else {
                // Size unknown (the camera gave none): the whole file, as it comes, without ranges.
                return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                    try await card.download(file) { try await writer.write($0) }
                    try await writer.finish(nil)
                })
            }
            headers[.acceptRanges] = "bytes"
            let range = try byteRange(request.headers[.range], size: file.size)
            let status: HTTPResponse.Status
            let wanted: ClosedRange<Int>
            if let range {
                status = .partialContent
                wanted = range
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(file.size)"
            } else {
                status = .ok
                wanted = 0...(file.size - 1)
            }
            let body = ResponseBody(contentLength: wanted.count) { writer in
                var offset = 0
                try await card.download(file) { buf in
                    // The camera sends the whole file: pass on only the wanted bytes.
                    let start = offset, end = offset + buf.readableBytes
                    offset = end
                    let lo = max(start, wanted.lowerBound), hi = min(end, wanted.upperBound + 1)
                    if lo < hi, let slice = buf.getSlice(at: buf.readerIndex + lo - start, length: hi - lo) {
                        try await writer.write(slice)
                    }
                }
                guard offset == file.size else {
                    throw APIError(.badGateway, "\(file.path): the camera sent \(offset) bytes, its listing says \(file.size)")
                }
                try await writer.finish(nil)
            }
            return Response(status: status, headers: headers, body: body)
        }
    }

    /// `GET /api/v1/cameras/{id}/thumbnails/{path}`: the camera's small preview of a listed file.
    static func addThumbnailRoute(_ router: Router<BasicRequestContext>, model: any ControlModel) {
        router.get("/api/v1/cameras/:id/thumbnails/**") { _, context in
            let (cam, card) = try browsing(context, model)
            guard card.hasThumbnails else { throw APIError(.notImplemented, "\(cam.id) makes no thumbnails; download the file") }
            let path = try cardPath(context.parameters.getCatchAll())
            guard let file = try await mapErrors(unsupported: .notImplemented, { try await card.file(at: path) }) else {
                throw APIError(.notFound, "\(cam.id) has no file \(path)")
            }
            return try await thumbnail(cam, card, file)
        }
    }

    /// The camera's thumbnail of a listed file (`…/thumbnails/{path}`, `…/files/{path}?thumbnail`).
    static func thumbnail(_ cam: CameraRuntime, _ card: any CardBrowsing, _ file: CameraFile) async throws -> Response {
        guard card.hasThumbnails else { throw APIError(.notImplemented, "\(cam.id) makes no thumbnails; download the file") }
        let bytes = try await mapErrors(unsupported: .notImplemented) { try await card.thumbnail(of: file) }
        guard JPEGScanner.hasSOI(bytes, at: bytes.startIndex) else {
            throw APIError(.badGateway, "\(cam.id) sent no JPEG as the thumbnail of \(file.path)")
        }
        return jpegResponse(bytes)
    }

    /// Largest picture `?preview` reads from the camera.
    static let previewSourceLimit = 64 << 20
    /// Previews made at once (each holds its picture in memory); more are told to come back.
    static let previewsAtOnce = 2
    static let previewsRunning = Atomic<Int>(0)

    /// `…/files/{path}?preview`: a screen-sized JPEG (longer side ≥ 1280 where the picture has it)
    /// made from a JPEG on the card by decoding it reduced; for other files (RAW, movies) the
    /// camera's thumbnail where it makes one.
    static func preview(_ cam: CameraRuntime, _ card: any CardBrowsing, _ file: CameraFile) async throws -> Response {
        guard file.contentType == "image/jpeg" else {
            guard card.hasThumbnails else {
                throw APIError(.notImplemented, "\(cam.id) makes no thumbnails and livegate makes previews of JPEG pictures only; download the file")
            }
            return try await thumbnail(cam, card, file)
        }
        guard file.size <= previewSourceLimit else {
            throw APIError(.contentTooLarge, "\(file.path) is \(file.size) bytes; livegate makes previews of pictures up to \(previewSourceLimit >> 20) MiB")
        }
        guard previewsRunning.wrappingAdd(1, ordering: .relaxed).newValue <= previewsAtOnce else {
            previewsRunning.wrappingSubtract(1, ordering: .relaxed)
            throw APIError(.serviceUnavailable, "livegate is making \(previewsAtOnce) previews already; try again in a moment")
        }
        defer { previewsRunning.wrappingSubtract(1, ordering: .relaxed) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(file.size)
        try await mapErrors(unsupported: .notImplemented) {
            try await card.download(file) { buf in
                guard bytes.count + buf.readableBytes <= previewSourceLimit else {
                    throw APIError(.contentTooLarge, "\(file.path) is larger than \(previewSourceLimit >> 20) MiB")
                }
                bytes += buf.readableBytesView
            }
        }
        guard file.size == 0 || bytes.count == file.size else {
            throw APIError(.badGateway, "\(file.path): the camera sent \(bytes.count) bytes, its listing says \(file.size)")
        }
        let source = bytes
        let made: [UInt8]
        do {
            made = try await blocking("preview") { try JPEGPreview.make(source) }  // off the cooperative pool
        } catch {
            throw APIError(.badGateway, "\(file.path) is not a JPEG livegate can make a preview of: \(error)")
        }
        return jpegResponse(made)
    }

    static func jpegResponse(_ bytes: [UInt8]) -> Response {
        var headers: HTTPFields = [.contentType: "image/jpeg"]
        headers[.cacheControl] = "max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func browsing(_ context: BasicRequestContext, _ model: any ControlModel) throws -> (CameraRuntime, any CardBrowsing) {
        let cam = try camera(context, model)
        try require(.files, of: cam)
        guard let card = cam.driver as? any CardBrowsing else {
            throw APIError(.notImplemented, "\(cam.id): \(cam.vendor.unsupportedReason(.files))")
        }
        return (cam, card)
    }

    /// `/A/B/C` from the request's path components, each percent-decoded once; `.`, `..`, empty
    /// components, separators and control characters inside a component are refused.
    static func cardPath(_ parts: [Substring]) throws -> String {
        guard !parts.isEmpty, parts.count <= 16 else { throw APIError(.badRequest, "a file path is /FOLDER/…/NAME") }
        var out: [String] = []
        for raw in parts {
            guard let p = String(raw).removingPercentEncoding, !p.isEmpty, p != ".", p != "..", p.count <= 255,
                  !p.contains("/"), !p.contains("\\"), !p.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else {
                throw APIError(.badRequest, "'\(raw.prefix(64))' is not a file or folder name")
            }
            out.append(p)
        }
        return "/" + out.joined(separator: "/")
    }

    /// The one range of a `Range: bytes=…` header (nil: the whole file); 416 when unsatisfiable.
    static func byteRange(_ header: String?, size: Int) throws -> ClosedRange<Int>? {
        guard let header else { return nil }
        func unsatisfiable() -> APIError {
            APIError(.rangeNotSatisfiable, "range '\(header.prefix(64))' does not fit a \(size)-byte file",
                     headers: [.contentRange: "bytes */\(size)"])
        }
        let h = header.trimmingCharacters(in: .whitespaces)
        guard h.hasPrefix("bytes="), !h.contains(",") else { throw unsatisfiable() }
        let spec = h.dropFirst("bytes=".count).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2, size > 0 else { throw unsatisfiable() }
        if spec[0].isEmpty {
            guard let n = Int(spec[1]), n > 0 else { throw unsatisfiable() }
            return max(0, size - n)...(size - 1)
        }
        guard let a = Int(spec[0]), a >= 0, a < size else { throw unsatisfiable() }
        if spec[1].isEmpty { return a...(size - 1) }
        guard let b = Int(spec[1]), b >= a else { throw unsatisfiable() }
        return a...min(b, size - 1)
    }

    static func queryInt(_ request: Request, _ name: String, default d: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return d }
        guard let v = Int(text), range.contains(v) else {
            throw APIError(.badRequest, "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return v
    }

    static func cardFile(_ f: CameraFile) -> CardFile {
        CardFile(path: f.path, name: f.name, folder: f.folder, size: f.size, kind: f.kind.rawValue,
                 date: f.date.map { ISO8601DateFormatter().string(from: $0) })
    }
}
