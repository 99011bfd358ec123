import Foundation
public import NIOCore

/// The Bandit's media (bandit.md §2.2): `GET images` and `GET videos` list `{"total", "items"}`
/// in pages (`offset`, `count`); each item has its `id` and its `path` on the card; the bytes come
/// from `images/<id>/contents` / `videos/<id>/contents`, a small JPEG from `…/thumb`.
struct BanditMedia: Sendable, Hashable {
    enum Kind: String, Sendable { case images, videos }
    var kind: Kind
    var id: String
    var file: CameraFile

    /// The card path of an item (`DCIM/100BANDT/IMG_0001.JPG` → `/DCIM/100BANDT/IMG_0001.JPG`);
    /// nil when a component is no plain file or folder name.
    static func path(_ raw: String) -> String? {
        let parts = raw.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !parts.isEmpty, parts.count <= 16, parts.allSatisfy(CameraFile.isPlainName) else { return nil }
        return "/" + parts.joined(separator: "/")
    }

    /// One listed item; nil without an id (`.` and `..` are none) or a usable path.
    static func item(_ o: [String: Any], kind: Kind, dates: ISO8601DateFormatter) -> BanditMedia? {
        guard let id = o["id"] as? String, !id.isEmpty, id != ".", id != "..", let raw = o["path"] as? String, let path = path(raw)
        else { return nil }
        let size = (o["size_bytes"] as? NSNumber)?.intValue ?? 0
        let date = (o["created"] as? String).flatMap { dates.date(from: $0) }
        return BanditMedia(kind: kind, id: id, file: CameraFile(path: path, size: max(0, size), date: date))
    }
}

extension BanditREST {
    /// Every item of `kind`, page by page (at most 10 000 of each kind), each id once. Ends at the
    /// camera's `total`, at a short page when it gives none, or at a page that brings nothing new
    /// (a camera that ignores `offset`).
    func media(_ kind: BanditMedia.Kind) async throws -> [BanditMedia] {
        var out: [BanditMedia] = []
        var seen = Set<String>()
        var offset = 0
        let dates = ISO8601DateFormatter()
        while offset < 10_000 {
            let page = try await call("GET", "\(kind.rawValue)?offset=\(offset)&count=100")
            let items = page["items"] as? [[String: Any]] ?? []
            let fresh = items.compactMap { BanditMedia.item($0, kind: kind, dates: dates) }.filter { seen.insert($0.id).inserted }
            out += fresh
            offset += items.count
            let total = (page["total"] as? NSNumber)?.intValue
            if items.isEmpty || fresh.isEmpty || offset >= (total ?? .max) || (total == nil && items.count < 100) { break }
        }
        return out
    }

    func mediaURL(_ m: BanditMedia, _ what: String) async throws -> HTTPURL {
        endpoint.url(try await apiPath("\(m.kind.rawValue)/\(Self.pathComponent(m.id))/\(what)"))
    }
}

extension BanditDriver: CardBrowsing {
    /// The camera's images and videos.
    public func listFiles() async throws -> [CameraFile] {
        try await cardMedia().map(\.file)
    }

    private func cardMedia() async throws -> [BanditMedia] {
        if let fresh = cardListing.fresh { return fresh.values.sorted { $0.file.path < $1.file.path } }
        let ticket = cardListing.ticket
        var all: [BanditMedia] = []
        var paths = Set<String>()
        for m in try await rest.media(.images) + rest.media(.videos) where paths.insert(m.file.path).inserted { all.append(m) }
        cardIndex.withLock { $0 = Dictionary(uniqueKeysWithValues: all.map { ($0.file.path, $0) }) }
        cardListing.store(all, path: \.file.path, since: ticket)
        return all
    }

    /// The item the last listing of this session gave `path`, asked for by its id (one request):
    /// still at that path → it. Otherwise (not listed, gone, its id now another file's) the card
    /// is listed again.
    public func file(at path: String) async throws -> CameraFile? {
        if let m = cardIndex.withLock({ $0[path] }) {
            if let obj = try? await rest.call("GET", "\(m.kind.rawValue)/\(BanditREST.pathComponent(m.id))"),
               let raw = obj["path"] as? String, BanditMedia.path(raw) == path {
                return m.file
            }
            cardListing.invalidate()  // the listing is out of date
        }
        return try await cardMedia().first { $0.file.path == path }?.file
    }

    private func media(for file: CameraFile) async throws -> BanditMedia {
        if let m = cardIndex.withLock({ $0[file.path] }) { return m }
        guard let m = try await cardMedia().first(where: { $0.file.path == file.path }) else {
            throw CameraControlError.camera(code: 404, message: "\(file.path) is no longer on the camera")
        }
        return m
    }

    public var hasThumbnails: Bool { true }

    /// `…/<id>/thumb`: the camera's small JPEG.
    public func thumbnail(of file: CameraFile) async throws -> [UInt8] {
        let url = try await rest.mediaURL(try await media(for: file), "thumb")
        var c = rest.client
        c.maxBodyBytes = 4 << 20
        let r: HTTPResponse
        do { r = try await c.request("GET", url, timeout: .seconds(20)) } catch {
            throw CameraControlError.unavailable("the thumbnail of \(file.path): \(error)")
        }
        guard r.status == 200 else { throw CameraControlError.camera(code: r.status, message: "HTTP \(r.status) for the thumbnail of \(file.path)") }
        return r.body
    }

    /// Images carry no size in their listing: a HEAD of the contents says it.
    public func resolve(_ file: CameraFile) async throws -> CameraFile {
        guard file.size == 0 else { return file }
        let url = try await rest.mediaURL(try await media(for: file), "contents")
        var out = file
        if let r = try? await rest.client.request("HEAD", url, timeout: .seconds(10)), r.status == 200,
           let n = r.headers.first(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }), n > 0 {
            out.size = n
        }
        return out
    }

    /// `…/<id>/contents`, streamed.
    public func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws {
        let url = try await rest.mediaURL(try await media(for: file), "contents")
        try await rest.client.download(url, what: "GET \(file.path)", body: body)
    }
}
