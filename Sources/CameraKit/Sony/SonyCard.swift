import Foundation
import LiveViewCore
public import NIOCore

/// One original file of a Sony card listing (`getContentList`, sony.md §8.3).
struct SonyCardEntry: Sendable {
    var file: CameraFile
    /// The original's URL as listed, and the content's thumbnail URL ("" when none).
    var url: String
    var thumbnailURL: String
}

/// The card of a Sony body through the avContent service: the camera's "Contents Transfer"
/// function (the live view stops meanwhile; `CardModeLease` lends it and the session loop
/// restarts the live view afterwards), the storage source, then the flat content list in pages of
/// 100; each content's originals (a RAW beside its JPEG) are files `/<folderNo>/<fileName>`.
enum SonyCard {
    static let pageSize = 100
    static let maxItems = 50_000

    /// The entries of one `getContentList` page; folders and contents without originals give none.
    static func entries(_ page: [Any]) -> [SonyCardEntry] {
        var out: [SonyCardEntry] = []
        for case let item as [String: Any] in page.prefix(pageSize) {
            guard let content = item["content"] as? [String: Any],
                  let originals = content["original"] as? [[String: Any]] else { continue }
            let folder = (item["folderNo"] as? String).flatMap { $0.allSatisfy { $0.isASCII && $0.isNumber } && !$0.isEmpty ? $0 : nil }
            let date = (item["createdTime"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) }
            let thumb = content["thumbnailUrl"] as? String ?? ""
            for o in originals.prefix(4) {
                guard let name = o["fileName"] as? String, CameraFile.isPlainName(name),
                      let url = o["url"] as? String, !url.isEmpty else { continue }
                let path = folder.map { "/\($0)/\(name)" } ?? "/\(name)"
                out.append(SonyCardEntry(file: CameraFile(path: path, size: 0, date: date), url: url, thumbnailURL: thumb))
            }
        }
        return out
    }

    /// `{"count": N}` with N an integer or a string (the reference disagrees with itself).
    static func count(_ result: [Any]) -> Int? {
        guard let obj = result.first as? [String: Any] else { return nil }
        if let n = obj["count"] as? NSNumber { return n.intValue }
        if let s = obj["count"] as? String { return Int(s) }
        return nil
    }
}

extension SonyDriver {
    static let remoteShooting = "Remote Shooting"
    static let contentsTransfer = "Contents Transfer"

    /// Runs `body` with the camera in Contents Transfer, one card operation at a time.
    func withCard<T: Sendable>(linger: Duration = .seconds(3), _ body: () async throws -> T) async throws -> T {
        // Right after card work or a capture the live view is started again: wait for it.
        if !cardMode.inCardMode, !(await lifecycle.streaming(within: .seconds(5))) {
            throw CameraControlError.unavailable("camera not connected")
        }
        return try await cardMode.run(linger: linger) {
            try await switchFunction(to: Self.contentsTransfer)
            return try await body()
        }
    }

    /// `setCameraFunction`, then `getCameraFunction` until the camera has switched (≤ 10 s). A body
    /// without the function says so (501).
    func switchFunction(to function: String) async throws {
        let toCard = function == Self.contentsTransfer
        if toCard {
            guard !cardMode.inCardMode else { return }
            cardMode.entered()
        }
        do {
            do {
                // A body still busy with its last switch answers "Not Available Now": wait for it.
                _ = try await rpc.callWhenReady("setCameraFunction", [function], timeout: .seconds(10))
            } catch CameraControlError.camera(let code, _) where code == 12 || code == 14 || code == 15 || code == 3 {
                throw CameraControlError.notSupported("the card of this camera (no \"\(Self.contentsTransfer)\" function)")
            }
            let by = ContinuousClock.now + .seconds(10)
            while (try? await rpc.call("getCameraFunction", timeout: .seconds(3)))?.first as? String != function {
                guard ContinuousClock.now < by else {
                    throw CameraControlError.camera(code: 0, message: "the camera did not switch to \(function) within 10 s")
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        } catch {
            if toCard { cardMode.left() }
            throw error
        }
        if !toCard { cardMode.left() }
    }

    /// Back to shooting after card work (called by the session loop holding the card's lock); the
    /// live view is then started again by a new session.
    func leaveContentsTransfer() async {
        do {
            try await switchFunction(to: Self.remoteShooting)
        } catch {
            logger.warning("sony \(rpc.endpoint): \(error); starting the live view anyway")
            cardMode.left()
        }
    }

    /// The avContent service beside the camera service (`…/sony/avContent`).
    var avContent: SonyRPC {
        var target = rpc.endpoint.target
        if let slash = target.lastIndex(of: "/") { target = String(target[..<slash]) }
        return SonyRPC(endpoint: HTTPURL(host: rpc.endpoint.host, port: rpc.endpoint.port, target: target + "/avContent"), busy: rpc.busy)
    }

    /// Every original on the card (a listing of the last few seconds is reused).
    func cardEntries() async throws -> [String: SonyCardEntry] {
        if let fresh = cardCache.fresh { return fresh }
        let ticket = cardCache.ticket
        return try await withCard {
            let av = avContent
            // The body may say it switched while its card is not ready yet ("Not Available Now" for a
            // second or more): each card call waits for it (sony.md §8.3).
            let sources = try await av.callWhenReady("getSourceList", [["scheme": "storage"]], timeout: .seconds(10))
            let uris = ((sources.first as? [[String: Any]]) ?? []).compactMap { $0["source"] as? String }
            var entries: [SonyCardEntry] = []
            for uri in (uris.isEmpty ? ["storage:memoryCard1"] : Array(uris.prefix(2))) {
                let counted = SonyCard.count(try await av.callWhenReady("getContentCount", [["uri": uri, "view": "flat"]], version: "1.2",
                                                                       timeout: .seconds(10)))
                let total = min(counted ?? SonyCard.maxItems, SonyCard.maxItems)
                var index = 0
                while index < total && entries.count < SonyCard.maxItems {
                    let page = try await av.callWhenReady("getContentList", [["uri": uri, "stIdx": index, "cnt": SonyCard.pageSize,
                                                                               "view": "flat", "sort": "ascending"]],
                                                          version: "1.3", timeout: .seconds(15))
                    let items = (page.first as? [Any]) ?? []
                    guard !items.isEmpty else { break }
                    entries += SonyCard.entries(items)
                    index += min(items.count, SonyCard.pageSize)
                }
            }
            return cardCache.store(entries, path: \.file.path, since: ticket)
        }
    }

    /// A listed URL on the camera's own host (never another), the listed port and path.
    func cardURL(_ text: String) throws -> HTTPURL {
        guard let url = HTTPURL.listed(text, onHost: rpc.endpoint.host) else {
            throw CameraControlError.camera(code: 0, message: "the card lists an unusable address: \(text.prefix(100))")
        }
        return url
    }
}

extension SonyDriver: CardBrowsing {
    /// The avContent flat list (Contents Transfer; the live view pauses and comes back by itself).
    public func listFiles() async throws -> [CameraFile] {
        try await cardEntries().values.map(\.file).sorted { $0.path < $1.path }
    }

    public func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws {
        guard let entry = try await cardEntries()[file.path] else { throw CameraControlError.notFound(file.path) }
        let url = try cardURL(entry.url)
        try await withCard { try await stillClient.download(url, what: "GET \(url.target)", body: body) }
    }

    /// The listing gives no sizes: a HEAD of the original (when the camera answers one with a
    /// Content-Length) gives it; otherwise the download streams whole.
    public func resolve(_ file: CameraFile) async throws -> CameraFile {
        guard file.size == 0, let entry = try await cardEntries()[file.path] else { return file }
        let url = try cardURL(entry.url)
        let size = try await withCard { () -> Int? in
            guard let r = try? await self.stillClient.request("HEAD", url, timeout: .seconds(10)), r.status == 200 else { return nil }
            return r.headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) }
        }
        var out = file
        if let size, size > 0 { out.size = size }
        return out
    }

    public var hasThumbnails: Bool { true }

    public func thumbnail(of file: CameraFile) async throws -> [UInt8] {
        guard let entry = try await cardEntries()[file.path], !entry.thumbnailURL.isEmpty else {
            throw CameraControlError.notFound("a thumbnail of \(file.path)")
        }
        let url = try cardURL(entry.thumbnailURL)
        return try await withCard {
            var client = CameraHTTP()
            client.maxBodyBytes = 8 << 20
            let r: HTTPResponse
            do { r = try await client.request("GET", url, timeout: .seconds(20)) } catch {
                throw CameraControlError.unavailable("GET \(url.target): \(error)")
            }
            guard r.status == 200 else { throw CameraControlError.camera(code: r.status, message: "GET \(url.target): HTTP \(r.status)") }
            return r.body
        }
    }
}
