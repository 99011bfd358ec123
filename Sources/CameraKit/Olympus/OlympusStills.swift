import LiveViewCore
import Foundation

/// One line of `get_imglist.cgi`: `DIR,NAME,SIZE,ATTRIBUTE,DATE,TIME` (FAT date and time).
struct OlympusCardEntry: Sendable, Hashable {
    var directory: String
    var name: String
    var size: Int
    var attributes: Int
    /// FAT-packed date and time.
    var fatDate: Int = 0
    var fatTime: Int = 0
    var isDirectory: Bool { attributes & 16 != 0 }
    var path: String { directory + "/" + name }

    /// Parses a listing (first line `VER_100`); malformed lines are skipped.
    static func parse(_ text: String) -> [OlympusCardEntry] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count >= 6, f[0].hasPrefix("/"), let size = Int(f[2]), let attr = Int(f[3]), !f[1].isEmpty,
                  !f[1].contains("/"), f[1] != "..", f[1] != "." else { return nil }
            return OlympusCardEntry(directory: String(f[0]), name: String(f[1]), size: size, attributes: attr,
                                    fatDate: Int(f[4]) ?? 0, fatTime: Int(f[5]) ?? 0)
        }
    }
}

extension OlympusCGI {
    /// GET of a file's bytes (a card file, up to `maxBytes`).
    func download(_ path: String, maxBytes: Int) async throws -> [UInt8] {
        var client = http
        client.maxBodyBytes = maxBytes
        let url = HTTPURL(host: endpoint.host, port: endpoint.port, target: HTTPURL.encodePath(path))
        let r: HTTPResponse
        do {
            r = try await client.request("GET", url, headers: [("User-Agent", Self.userAgent)], body: nil, timeout: .seconds(120))
        } catch {
            throw CameraControlError.unavailable("GET \(path): \(error)")
        }
        guard r.status == 200 else { throw CameraControlError.camera(code: r.status, message: "GET \(path): HTTP \(r.status)") }
        return r.body
    }

    /// A card file whole, checked against the size the listing gives.
    func download(_ f: OlympusCardEntry) async throws -> [UInt8] {
        let bytes = try await download(f.path, maxBytes: 512 * 1024 * 1024)
        guard bytes.count == f.size else {
            throw CameraControlError.camera(code: 0, message: "\(f.name): got \(bytes.count) bytes, the card lists \(f.size)")
        }
        return bytes
    }

    /// Every file under `/DCIM` (one level of DCF folders); an empty card (404) is no files.
    func cardFiles() async throws -> [OlympusCardEntry] {
        func list(_ dir: String) async throws -> [OlympusCardEntry] {
            do {
                return OlympusCardEntry.parse(try await get("get_imglist", [("DIR", dir)], maxBytes: Self.listingMaxBytes))
            } catch CameraControlError.camera(let code, _) where code == 404 {
                return []
            }
        }
        var files: [OlympusCardEntry] = []
        for folder in try await list("/DCIM") where folder.isDirectory {
            files += try await list(folder.path).filter { !$0.isDirectory }
        }
        return files
    }
}

/// OI.Share bodies announce nothing, so the cheapest way to learn of a shot taken on the body is
/// to look at the card: every 2 s while live view runs and a sink is installed, new files are
/// fetched (each once) and handed on. The first look only learns what is already there. Captures
/// of livegate's own pause the watch and claim their files; a file a capture could not read is
/// handed over (`unread`) and read by the following looks that reach the camera, at most
/// `unreadAttempts` of them, then reported lost.
final class OlympusCardWatch: Sendable {
    static let interval: Duration = .seconds(2)
    static let unreadAttempts = 5
    private struct State {
        var sink: CameraImageSink?
        var known = Set<String>()
        var baseline = false
        var capturing = 0
        var unread: [(entry: OlympusCardEntry, attempts: Int)] = []
    }
    private let state = Mutex(State())

    func setSink(_ s: @escaping CameraImageSink) { state.withLock { $0.sink = s } }
    func beginCapture() { state.withLock { $0.capturing += 1 } }
    /// The files still unread and the sink (livegate stops: they are reported).
    func closeUnread() -> ([OlympusCardEntry], CameraImageSink?) {
        state.withLock { s in
            defer { s.unread.removeAll() }
            return (s.unread.map(\.entry), s.sink)
        }
    }

    func endCapture(claiming paths: [String], unread: [OlympusCardEntry] = []) {
        state.withLock { s in
            s.capturing -= 1
            s.known.formUnion(paths)
            s.known.formUnion(unread.map(\.path))
            s.unread += unread.map { ($0, 0) }
        }
    }

    /// Runs until cancelled: a first look at once (what is on the card when live view starts is
    /// not new), then one every `interval`.
    func run(cgi: OlympusCGI) async {
        var first = true
        while !Task.isCancelled {
            if !first { try? await Task.sleep(for: Self.interval) }
            first = false
            guard !Task.isCancelled else { return }
            guard let sink = state.withLock({ $0.capturing == 0 ? $0.sink : nil }) else { continue }
            guard let files = try? await cgi.cardFiles() else { continue }
            let fresh = state.withLock { s -> [OlympusCardEntry] in
                guard s.capturing == 0 else { return [] }
                defer {
                    s.known.formUnion(files.map(\.path))
                    s.baseline = true
                }
                return s.baseline ? files.filter { !s.known.contains($0.path) } : []
            }
            for f in fresh {
                do {
                    let bytes = try await retrying { try await cgi.download(f) }
                    await sink(.image(CameraImage(name: f.name, bytes: bytes, fromBody: true)))
                } catch {
                    await sink(.lost(name: f.name, reason: "\(error)"))
                }
            }
            await readUnread(cgi: cgi, listed: Set(files.map(\.path)), sink: sink)
        }
    }

    /// The files livegate's captures could not read: tried once per look that reached the camera.
    private func readUnread(cgi: OlympusCGI, listed: Set<String>, sink: CameraImageSink) async {
        let todo = state.withLock { s -> [(entry: OlympusCardEntry, attempts: Int)] in
            defer { s.unread.removeAll() }
            return s.unread
        }
        for u in todo {
            guard listed.contains(u.entry.path) else {
                // The listing may predate the shot (a capture ended while this look was reading).
                if u.attempts + 1 < Self.unreadAttempts {
                    state.withLock { $0.unread.append((u.entry, u.attempts + 1)) }
                } else {
                    await sink(.lost(name: u.entry.name, reason: "it is no longer on the card"))
                }
                continue
            }
            do {
                let bytes = try await cgi.download(u.entry)
                await sink(.image(CameraImage(name: u.entry.name, bytes: bytes, fromBody: false)))
            } catch where u.attempts + 1 < Self.unreadAttempts {
                state.withLock { $0.unread.append((u.entry, u.attempts + 1)) }
            } catch {
                await sink(.lost(name: u.entry.name, reason: "\(error) (it is on the card)"))
            }
        }
    }
}

extension OlympusDriver: StillCapturing {
    /// `exec_takemotion.cgi?com=starttake` (the body focuses as set; OI.Share has no separate
    /// half-press), then the new files that appear on the card are downloaded whole. Shots taken on
    /// the body are found by `OlympusCardWatch`.
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        guard await lifecycle.streaming(within: .seconds(5)) else { throw CameraControlError.unavailable("camera not connected") }
        cardWatch.beginCapture()
        var claimed: [String] = []
        var unread: [OlympusCardEntry] = []
        defer { cardWatch.endCapture(claiming: claimed, unread: unread) }
        let before = Set(try await cgi.cardFiles().map(\.path))
        let answer: String
        do {
            answer = try await cgi.get("exec_takemotion", [("com", "starttake")], timeout: .seconds(60))
        } catch CameraControlError.camera(let code, let message) where code == 520 || code == 503 {
            throw CameraControlError.refused(message)
        }
        if let take = OlympusXML.element("take", in: answer), take != "ok" {
            throw CameraControlError.refused("the camera answered take=\(take)")
        }
        // The body writes the file after answering: wait for it (and for a RAW written beside it).
        let deadline = ContinuousClock.now + .seconds(15)
        var fresh: [OlympusCardEntry] = []
        while ContinuousClock.now < deadline {
            fresh = try await cgi.cardFiles().filter { !before.contains($0.path) }
            if !fresh.isEmpty {
                try await Task.sleep(for: .milliseconds(300))
                fresh = try await cgi.cardFiles().filter { !before.contains($0.path) }
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        guard !fresh.isEmpty else {
            throw CameraControlError.camera(code: 0, message: "the shot was taken but no new file appeared on the card within 15 s")
        }
        // A download that fails (retried) goes to the card watch, which reads it on its next looks.
        var images: [CameraImage] = []
        var failed: [String] = []
        for f in fresh {
            do {
                images.append(CameraImage(name: f.name, bytes: try await retrying { try await cgi.download(f) }, fromBody: false))
                claimed.append(f.path)
            } catch {
                failed.append("\(f.name): \(error)")
                unread.append(f)
            }
        }
        guard !images.isEmpty else {
            throw CameraControlError.unavailable("the shot is on the card, but reading it failed (\(failed.joined(separator: "; "))); livegate fetches it when it can")
        }
        return images
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { cardWatch.setSink(sink) }
}
