import Foundation
import LiveViewCore
public import NIOCore

/// How far livegate knows the card: the item count of a flat card (items at its root), or, on
/// bodies that group the card in one container per shooting day, each container's. Items past
/// these counts are shots not handed on yet.
struct PanasonicCensus: Sendable, Equatable {
    /// One container: the index its new items start at (its `TotalMatches` when livegate last read
    /// it; nil when never read) and the `childCount` the root listed for it then (a change says the
    /// container changed; nil when the body lists none).
    struct Container: Sendable, Equatable {
        var items: Int?
        var childCount: Int?
    }
    /// The root's `TotalMatches`: the items of a flat card.
    var top: Int
    var containers: [String: Container] = [:]
    /// The containers in the root's order (the order new items are handed on in).
    var order: [String] = []

    var isFlat: Bool { containers.isEmpty }

    /// What a listing found, taken into the known census: counts only go down (files deleted on the
    /// body) — anything above the known counts stays new for the next look, and the old
    /// `childCount` is kept so that look reads the container again — a container the census did not
    /// know counts as empty, and one the listing did not reach stays as it was.
    func lowered(to listed: PanasonicCensus) -> PanasonicCensus {
        var out = self
        out.top = min(top, listed.top)
        for id in listed.order {
            guard let l = listed.containers[id] else { continue }
            if let k = containers[id] {
                let items: Int? = switch (k.items, l.items) {
                case let (a?, b?): min(a, b)
                case let (a, b): a ?? b
                }
                out.containers[id] = Container(items: items, childCount: k.childCount)
            } else {
                out.containers[id] = Container(items: 0, childCount: nil)
                out.order.append(id)
            }
        }
        return out
    }
}

/// What the driver knows of the card between requests.
final class PanasonicCardState: Sendable {
    struct Entry: Sendable {
        var file: CameraFile
        var resource: PanasonicCardItem.Resource
        var thumbnail: PanasonicCardItem.Resource?
    }
    private struct State {
        /// The card's counts when livegate last looked: items beyond them are new.
        var census: PanasonicCensus?
        var sink: CameraImageSink?
        /// The last `remaincapacity` / `sd_access` a keep-alive saw (a change = a shot on the body).
        var remaining: String?
        var pendingBodyShot = false
    }
    private let state = Mutex(State())
    /// The card's files as last listed.
    let listing = CardListing<Entry>()

    var sink: CameraImageSink? { state.withLock { $0.sink } }
    func setSink(_ s: @escaping CameraImageSink) { state.withLock { $0.sink = s } }
    var census: PanasonicCensus? { state.withLock { $0.census } }
    func setCensus(_ c: PanasonicCensus?) { state.withLock { $0.census = c } }

    /// A new session: the card may have changed while the camera was away (the counts are kept:
    /// shots taken meanwhile are new).
    func reset() {
        listing.invalidate()
        state.withLock {
            $0.remaining = nil
            $0.pendingBodyShot = false
        }
    }

    /// A listing. Counts move only down or from unknown (`PanasonicCensus.lowered`): items past
    /// the known counts are shots not handed on yet, which leaving play mode looks for.
    func store(_ entries: [Entry], census listed: PanasonicCensus, since ticket: UInt64) -> [String: Entry] {
        state.withLock {
            if let known = $0.census, $0.sink != nil { $0.census = known.lowered(to: listed) } else { $0.census = listed }
        }
        return listing.store(entries, path: \.file.path, since: ticket)
    }

    /// A keep-alive's state: true when it tells of a shot on the body (the remaining-shots count
    /// changed, or the card is being written) while livegate was not using the card itself.
    func observe(remaining: String?, cardAccess: String?, cardInUse: Bool) -> Bool {
        state.withLock { s in
            let changed = remaining != nil && s.remaining != nil && remaining != s.remaining
            if let remaining { s.remaining = remaining }
            if !cardInUse && (changed || cardAccess == "on") && s.sink != nil && s.census != nil { s.pendingBodyShot = true }
            return s.pendingBodyShot
        }
    }

    func takePendingBodyShot() -> Bool {
        state.withLock { s in
            defer { s.pendingBodyShot = false }
            return s.pendingBodyShot
        }
    }
}

extension PanasonicDriver {
    // MARK: Play mode for the card

    /// Runs `body` with the camera in play mode, one card operation at a time. The live view
    /// pauses; the session loop brings record mode and the stream back `linger` after the last
    /// card operation.
    func withCard<T: Sendable>(linger: Duration = .seconds(3), _ body: () async throws -> T) async throws -> T {
        guard await lifecycle.streaming(within: .seconds(5)) else { throw CameraControlError.unavailable("camera not connected") }
        return try await playMode.run(linger: linger) {
            try await enterPlayMode()
            return try await body()
        }
    }

    /// `camcmd&value=playmode`, retried while the camera is busy (it may still be writing a shot),
    /// then waits until `getstate` says `play`: a body answers err_busy to everything else, and
    /// serves no card, while it switches (a second or more).
    func enterPlayMode() async throws {
        guard !playMode.inCardMode else { return }
        // Marked first: the session loop must not take the camera back to record mode meanwhile.
        playMode.entered()
        do {
            try await busyRetrying { try await self.camcgi.call(mode: "camcmd", value: "playmode", timeout: .seconds(10)) }
            try await waitForCameraMode(play: true)
        } catch {
            playMode.left()
            throw error
        }
    }

    /// `getstate` every 250 ms until its `cammode` is `play` (or, with `play` false, anything but
    /// `play`) — a read, which bodies answer while they switch — for up to `limit`. The last reply
    /// (a body that reports no `cammode` counts as there at once).
    @discardableResult
    func waitForCameraMode(play: Bool, limit: Duration = .seconds(10)) async throws -> PanasonicReply {
        let deadline = ContinuousClock.now + limit
        while true {
            if let r = try? await camcgi.call(mode: "getstate", timeout: .seconds(2)) {
                let mode = r.elements["cammode"]
                if mode == nil || (mode == "play") == play { return r }
            }
            guard ContinuousClock.now < deadline else {
                throw CameraControlError.camera(code: 0, message: "the camera did not switch to \(play ? "play" : "record") mode within \(limit.components.seconds) s")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    /// `camcmd&value=recmode`, then waits until `getstate` says `rec` (S5II: answers err_critical
    /// while switching, takes ~5 s).
    func enterRecordMode() async throws {
        _ = try? await camcgi.call(mode: "camcmd", value: "recmode", timeout: .seconds(10))
        let r = try await waitForCameraMode(play: false)
        // What the card looks like after livegate's own work: the next change is the body's.
        // Unless the card is being written right now (livegate's own shots are written by then): a
        // shot on the body while livegate switched back. The count seen before the card work then
        // stays the reference, so the next keep-alive sees the change (and, for livegate's own
        // shot, one look finds nothing new).
        if r.elements["sd_access"] != "on" || r.elements["rec"] == "on" {
            _ = card.observe(remaining: r.elements["remaincapacity"], cardAccess: nil, cardInUse: true)
        }
        playMode.left()
    }

    /// Back to the live view after card work: record mode and `startstream` on the bound port.
    /// Called by the session loop, holding the card's lock.
    func leavePlayMode(streamPort port: Int) async {
        // Shots taken while the card was in use (a listing does not hand them on): fetched now,
        // while the camera still shows its card.
        await fetchItemsPastKnownCount()
        do {
            try await enterRecordMode()
        } catch {
            logger.warning("panasonic \(endpoint): \(error); asking for the stream anyway")
            playMode.left()
        }
        _ = try? await camcgi.call(mode: "startstream", value: String(port), timeout: .seconds(2))
    }

    /// Runs `body` again while the camera answers err_busy: after 0.5 s, then 1 s, then every 2 s,
    /// for up to 8 s in all (a body switching modes or writing a shot). Never at once: S5II bodies
    /// lock up when commands keep coming after err_busy. A camera still busy then is not pressed
    /// further: the API client gets 503 "the camera is busy".
    @discardableResult
    func busyRetrying<T>(_ body: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(8)
        var pause = Duration.milliseconds(500)
        while true {
            do {
                return try await body()
            } catch CameraControlError.camera(let code, let message) where code == PanasonicResult.code("err_busy") {
                guard ContinuousClock.now + pause < deadline, !Task.isCancelled else {
                    throw CameraControlError.unavailable("the camera is still busy: \(message) for 8 s")
                }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
    }

    // MARK: ContentDirectory

    /// One Browse page of `objectID` from `start`.
    func browse(objectID: String = "0", start: Int, count: Int = PanasonicCard.pageSize) async throws -> PanasonicBrowsePage {
        var client = camcgi.http
        client.maxBodyBytes = 8 << 20
        let url = HTTPURL(host: endpoint.host, port: endpoint.dlnaPort, target: "/Server0/CDS_control")
        let response: HTTPResponse
        do {
            response = try await client.request("POST", url, headers: PanasonicCard.browseHeaders,
                                                body: PanasonicCard.browseBody(objectID: objectID, start: start, count: count),
                                                timeout: .seconds(15))
        } catch {
            throw CameraControlError.unavailable("card listing (\(url)): \(error)")
        }
        let text = String(decoding: response.body, as: UTF8.self)
        do {
            let page = try PanasonicCard.parseBrowse(text)
            guard response.status == 200 else { throw PanasonicCardError("HTTP \(response.status)") }
            return page
        } catch {
            throw CameraControlError.camera(code: response.status, message: "card listing: \(error)")
        }
    }

    /// Every item from index `start` of `objectID` on (pages of 50; the root's containers browsed
    /// one level down); the counts the camera gave (`TotalMatches`: a listing's census) and how far
    /// the walk of `objectID` got (where the next look starts). Bounded: at most
    /// `PanasonicCard.maxItems` items, 1 000 containers and as many pages as those need; a page that
    /// brings nothing ends a walk (a camera whose counts never add up does not hold the card forever).
    func browseAll(from start: Int = 0, in objectID: String = "0") async throws
        -> (items: [PanasonicCardItem], census: PanasonicCensus, reached: Int) {
        var items: [PanasonicCardItem] = []
        var containers: [PanasonicContainer] = []
        var pagesLeft = PanasonicCard.maxItems / PanasonicCard.pageSize + 1_000
        func walk(_ objectID: String, from first: Int) async throws -> (reached: Int, total: Int) {
            var index = first
            var total = 0
            while items.count < PanasonicCard.maxItems && pagesLeft > 0 {
                pagesLeft -= 1
                let page = try await browse(objectID: objectID, start: index)
                total = page.total
                items += page.items.prefix(PanasonicCard.pageSize)
                if objectID == "0" { containers += page.containers.prefix(max(0, 1_000 - containers.count)) }
                let returned = min(page.returned, PanasonicCard.pageSize)
                guard returned > 0, !(page.items.isEmpty && page.containers.isEmpty) else { break }
                index += returned
                if index >= total { break }
            }
            return (index, total)
        }
        let root = try await walk(objectID, from: start)
        var census = PanasonicCensus(top: root.total)
        for container in containers where items.count < PanasonicCard.maxItems && pagesLeft > 0 {
            census.containers[container.id] = .init(items: try await walk(container.id, from: 0).total, childCount: container.childCount)
            census.order.append(container.id)
        }
        return (items, census, root.reached)
    }

    /// The card's counts now. A flat card (its first entry an item, or nothing): the root's count.
    /// A card grouped in containers: the root's containers (at most 1 000), each read again (one
    /// Browse of one item for its `TotalMatches`) only when it may have changed since `previous` —
    /// a new container, one whose `childCount` moved, or, on bodies that list no `childCount`, the
    /// first and last in the root's order (today's is at one end); the others keep what `previous`
    /// knew. Without `previous`, only those two ends are read: an older day's container gets no
    /// index, and should it ever grow, its new items are not told apart (logged where the body's
    /// `childCount` shows the growth).
    func census(after previous: PanasonicCensus?) async throws -> PanasonicCensus {
        let probe = try await browse(start: 0, count: 1)
        var census = PanasonicCensus(top: probe.total)
        if probe.containers.isEmpty { return census }
        var containers: [PanasonicContainer] = []
        var index = 0
        var pagesLeft = 1_000
        while containers.count < 1_000 && pagesLeft > 0 {
            pagesLeft -= 1
            let page = try await browse(start: index, count: PanasonicCard.pageSize)
            census.top = page.total
            containers += page.containers.prefix(max(0, 1_000 - containers.count))
            let returned = min(page.returned, PanasonicCard.pageSize)
            guard returned > 0, !(page.items.isEmpty && page.containers.isEmpty) else { break }
            index += returned
            if index >= page.total { break }
        }
        let ends = Set([containers.first?.id, containers.last?.id].compactMap { $0 })
        for c in containers where census.containers[c.id] == nil {
            let known = previous?.containers[c.id]
            let read: Bool
            if let previous, !previous.isFlat {
                if let known {
                    read = c.childCount == nil ? ends.contains(c.id) : (c.childCount != known.childCount || known.items == nil)
                } else {
                    read = true
                }
            } else {
                read = ends.contains(c.id) || previous != nil
            }
            var items = known?.items
            // A refused read fails the look (the counts stay as they were, so its items are still
            // new next time); taking it for an empty container would hand old shots on again.
            if read { items = try await browse(objectID: c.id, start: 0, count: 1).total }
            census.containers[c.id] = .init(items: items, childCount: c.childCount)
            census.order.append(c.id)
        }
        return census
    }

    /// The card's files; a listing of the last few seconds is reused.
    func cardEntries() async throws -> [String: PanasonicCardState.Entry] {
        if let fresh = card.listing.fresh { return fresh }
        let ticket = card.listing.ticket
        return try await withCard {
            let (items, census, _) = try await browseAll()
            let entries = items.flatMap { item in
                item.files.map { f in
                    PanasonicCardState.Entry(file: CameraFile(path: f.path, size: f.resource.size ?? 0, date: item.date),
                                             resource: f.resource, thumbnail: item.thumbnail ?? item.preview)
                }
            }
            return card.store(entries, census: census, since: ticket)
        }
    }

    /// Where a listed resource is fetched: the camera's host (never another), the listed port and path.
    func resourceURL(_ r: PanasonicCardItem.Resource) throws -> HTTPURL {
        guard let url = HTTPURL.listed(r.url, onHost: endpoint.host) else {
            throw CameraControlError.camera(code: 0, message: "the card lists an unusable address: \(r.url.prefix(100))")
        }
        return url
    }

    /// Streams a resource; `head` sees the headers first.
    func fetch(_ r: PanasonicCardItem.Resource, head: ([(String, String)]) throws -> Void = { _ in },
               body: (ByteBuffer) async throws -> Void) async throws {
        let url = try resourceURL(r)
        try await camcgi.http.download(url, what: "GET \(url.target)", headers: [("Accept", "*/*")], head: head, body: body)
    }

    /// A resource whole, checked against the size the camera gives for it (the listed size only
    /// for originals: previews carry placeholders). Originals up to 512 MB, previews up to 8 MB.
    func fetchWhole(_ r: PanasonicCardItem.Resource) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        var announced: Int?
        let limit = r.isOriginal ? 512 << 20 : 8 << 20
        try await fetch(r, head: { announced = PanasonicCard.fileSize($0) }) { piece in
            guard bytes.count + piece.readableBytes <= limit else {
                throw CameraControlError.camera(code: 0, message: "\(r.urlName) is larger than \(limit >> 20) MB")
            }
            bytes += piece.readableBytesView
        }
        if let n = announced ?? (r.isOriginal ? r.size : nil), n != bytes.count {
            throw CameraControlError.camera(code: 0, message: "\(r.urlName): got \(bytes.count) bytes, the camera announced \(n)")
        }
        return bytes
    }

    /// The new items' originals, fetched whole (each with retries: a Wi-Fi drop mid-transfer).
    func fetchNew(_ items: [PanasonicCardItem], fromBody: Bool) async -> (images: [CameraImage], lost: [(String, String)]) {
        var images: [CameraImage] = []
        var lost: [(String, String)] = []
        for item in items {
            for f in item.files {
                let name = f.path.split(separator: "/").last.map(String.init) ?? f.resource.urlName
                do {
                    let bytes = try await retrying { try await self.fetchWhole(f.resource) }
                    images.append(CameraImage(name: name, bytes: bytes, fromBody: fromBody))
                } catch {
                    lost.append((name, "\(error)"))
                }
            }
        }
        return (images, lost)
    }

    /// The items added since the card held `before`: on a flat card those past its count, on a
    /// card grouped by day those past each container's count (a new container's all). A count
    /// that went down means files were deleted on the body, and which are new cannot be told from
    /// it: none are taken there rather than old ones handed on again. The known counts move on
    /// only once every walk has succeeded, and only as far as the walks got.
    func itemsAdded(since before: PanasonicCensus) async throws -> [PanasonicCardItem] {
        let now = try await census(after: before)
        var known = now
        var items: [PanasonicCardItem] = []
        if now.isFlat && before.isFlat {
            if before.top < now.top {
                let walked = try await browseAll(from: before.top)
                items = walked.items
                known.top = walked.reached
            }
            card.setCensus(known)
            return items
        }
        for id in now.order {
            guard let count = now.containers[id]?.items else { continue }
            let had: Int? = before.containers[id] == nil ? 0 : before.containers[id]?.items
            guard let had else {
                if before.containers[id]?.childCount != now.containers[id]?.childCount {
                    logger.warning("panasonic \(endpoint): the card's container \(id) changed but was never read before; its new items cannot be told apart")
                }
                continue
            }
            if had < count {
                let walked = try await browseAll(from: had, in: id)
                items += walked.items
                known.containers[id]?.items = walked.reached
            }
        }
        card.setCensus(known)
        return items
    }

    /// `get_content_info` until it stops answering err_busy (the camera writes the shot), ≤ 20 s.
    func waitForCardWrite() async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            do {
                try await camcgi.call(mode: "get_content_info", timeout: .seconds(3))
                return
            } catch CameraControlError.camera(let code, _) where code == PanasonicResult.code("err_busy") {
                guard ContinuousClock.now < deadline else {
                    throw CameraControlError.camera(code: code, message: "the camera was still writing the shot after 20 s")
                }
                try await Task.sleep(for: .milliseconds(500))
            } catch CameraControlError.notSupported {
                return
            }
        }
    }

    // MARK: Shots taken on the body

    /// When the camera starts in play mode, the card's item count is read before record mode, so
    /// that shots taken on the body later are known as new. Only when someone takes the images.
    func takeCardBaseline() async {
        card.reset()
        guard card.sink != nil, let r = try? await camcgi.call(mode: "getstate", timeout: .seconds(3)) else { return }
        _ = card.observe(remaining: r.elements["remaincapacity"], cardAccess: nil, cardInUse: true)
        guard card.census == nil, r.elements["cammode"] == "play", let counts = try? await census(after: nil) else { return }
        card.setCensus(counts)
    }

    /// A keep-alive saw the card change without livegate: the new items are fetched in a task of
    /// their own (the session loop goes on keeping the camera's session alive) and handed on.
    func startBodyShotPass() {
        bodyShotPass.withLock { task in
            guard task == nil else { return }
            task = Task {
                defer { self.bodyShotPass.withLock { $0 = nil } }
                guard self.card.takePendingBodyShot() else { return }
                do {
                    try await self.withCard(linger: .zero) {
                        try await self.waitForCardWrite()
                        await self.fetchItemsPastKnownCount()
                    }
                } catch {
                    self.logger.warning("panasonic \(self.endpoint): could not look for shots taken on the body: \(error)")
                }
            }
        }
    }

    /// In play mode: items past the card's known count are shots nobody has handed on; fetched and
    /// given to the sink (or reported lost).
    func fetchItemsPastKnownCount() async {
        guard let sink = card.sink, let before = card.census else { return }
        do {
            let fresh = try await itemsAdded(since: before)
            let (images, lost) = await fetchNew(fresh, fromBody: true)
            for image in images { await sink(.image(image)) }
            for (name, why) in lost { await sink(.lost(name: name, reason: why)) }
        } catch {
            logger.warning("panasonic \(endpoint): could not look for shots taken on the body: \(error)")
        }
    }
}

extension PanasonicDriver: CardBrowsing {
    /// The ContentDirectory's items (play mode; the live view pauses and comes back by itself).
    public func listFiles() async throws -> [CameraFile] {
        try await cardEntries().values.map(\.file).sorted { $0.path < $1.path }
    }

    public func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws {
        guard let entry = try await cardEntries()[file.path] else { throw CameraControlError.notFound(file.path) }
        try await withCard { try await self.fetch(entry.resource, body: body) }
    }

    /// Older bodies list no sizes: the download's `X-FILE_SIZE` gives it.
    public func resolve(_ file: CameraFile) async throws -> CameraFile {
        guard file.size == 0, let entry = try await cardEntries()[file.path] else { return file }
        let url = try resourceURL(entry.resource)
        let size = try await withCard { () -> Int? in
            let r = try? await self.camcgi.http.request("HEAD", url, timeout: .seconds(10))
            return r.flatMap { PanasonicCard.fileSize($0.headers) }
        }
        var out = file
        if let size { out.size = size }
        return out
    }

    public var hasThumbnails: Bool { true }

    /// The camera's `DT…` thumbnail (or its `DL…` preview when it lists no thumbnail).
    public func thumbnail(of file: CameraFile) async throws -> [UInt8] {
        guard let thumb = try await cardEntries()[file.path]?.thumbnail else { throw CameraControlError.notFound("a thumbnail of \(file.path)") }
        return try await withCard { try await self.fetchWhole(thumb) }
    }
}

extension PanasonicDriver: StillCapturing {
    /// `camcmd&value=capture` in record mode (after `oneshot_af` when asked), then play mode: the
    /// camera writes the shot (`get_content_info` busy until done) and the items past the card's
    /// previous count are the shot's files (JPEG and RAW), fetched whole. Record mode and the live
    /// view come back right after.
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        guard await lifecycle.streaming(within: .seconds(5)) else { throw CameraControlError.unavailable("camera not connected") }
        defer { card.listing.invalidate() }
        return try await playMode.run(linger: .zero) {
            var before = card.census
            if before == nil || playMode.inCardMode {
                try await enterPlayMode()
                if before == nil {
                    before = try await census(after: nil)
                } else {
                    // Shots taken while the card was in use go to the sink first, not into this shot.
                    await fetchItemsPastKnownCount()
                    before = card.census
                }
            }
            if playMode.inCardMode { try await enterRecordMode() }
            if autofocus { _ = try? await camcgi.call(mode: "camcmd", value: "oneshot_af", timeout: .seconds(5)) }
            do {
                try await camcgi.call(mode: "camcmd", value: "capture", timeout: .seconds(30))
            } catch CameraControlError.camera(let code, let message) where code < 100 {
                throw CameraControlError.refused(message)
            }
            try await enterPlayMode()
            try await waitForCardWrite()
            let fresh = try await itemsAdded(since: before ?? PanasonicCensus(top: 0))
            guard !fresh.isEmpty else {
                throw CameraControlError.camera(code: 0, message: "the shot was taken but no new item appeared on the card "
                    + "(or files were deleted on the camera meanwhile); it is on the card")
            }
            let (images, lost) = await fetchNew(fresh, fromBody: false)
            if let (name, why) = lost.first, images.isEmpty {
                throw CameraControlError.camera(code: 0, message: "the shot \(name) is on the card but could not be fetched: \(why)")
            }
            // A RAW that failed beside a JPEG that came: reported, still on the card.
            if let sink = card.sink {
                for (name, why) in lost { await sink(.lost(name: name, reason: why)) }
            }
            return images
        }
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { card.setSink(sink) }
}
