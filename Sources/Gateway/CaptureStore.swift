import LiveViewCore
import CameraKit
import CameraWire
public import Foundation
import GatewayAPI
#if canImport(Glibc)
import Glibc
#endif

/// One file saved from a camera.
public struct SavedCapture: Sendable, Hashable {
    public var camera: String
    /// The name it was saved under (the camera's name, with `-N` added when that name was taken).
    public var name: String
    /// The camera's own name for it.
    public var cameraName: String
    public var path: String
    public var bytes: Int
    public var sha256: String
    public var fromBody: Bool
    public var savedAt: Date

    var api: SavedFile {
        SavedFile(camera: camera, name: name, cameraName: cameraName, path: path, bytes: bytes, sha256: sha256,
                  fromBody: fromBody, savedAt: ISO8601DateFormatter().string(from: savedAt))
    }
}

extension CameraStorage {
    /// As the API shows it (the fields the camera did not report are left out).
    var api: StorageState {
        StorageState(mounted: mounted, full: full, writeProtected: writeProtected, error: error, writing: writing,
                     remainingShots: remainingShots)
    }
}

/// Why a capture could not be saved.
struct CaptureStoreError: Error, CustomStringConvertible {
    let description: String
}

/// Saves the images cameras send under `ROOT/<camera>/`: written to a hidden temporary file, fsynced,
/// then linked under its final name (never replacing an existing file: a name that is taken gets
/// `-1`, `-2`, … before its extension) and the folder fsynced. A failure leaves no file under a
/// final name.
final class CaptureStore: Sendable {
    let root: URL
    private let saved = Mutex<[String: [SavedCapture]]>([:])
    private let counter = Atomic<Int>(0)
    /// Newest saves kept per camera for the API.
    static let listLimit = 1000

    init(root: String) {
        self.root = URL(fileURLWithPath: root, isDirectory: true).standardizedFileURL
    }

    /// The files saved from `camera` (oldest first, at most `listLimit`).
    func list(camera: String) -> [SavedCapture] { saved.withLock { $0[camera] ?? [] } }

    /// A safe file name from whatever the camera calls the file: its last path component, with
    /// anything but letters, digits, `.`, `-` and `_` replaced, no leading dots, at most 128 characters.
    static func safeName(_ cameraName: String) -> String {
        let last = cameraName.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var s = String(last.unicodeScalars.map { c -> Character in
            c.isASCII && (CharacterSet.alphanumerics.contains(c) || c == "." || c == "-" || c == "_") ? Character(c) : "_"
        })
        while s.hasPrefix(".") { s.removeFirst() }
        if s.count > 128 { s = String(s.suffix(128)) }
        return s.isEmpty ? "image" : s
    }

    /// `NAME`, `NAME-1.EXT`, `NAME-2.EXT`, …
    static func candidate(_ name: String, _ n: Int) -> String {
        guard n > 0 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot])-\(n)\(name[dot...])"
        }
        return "\(name)-\(n)"
    }

    func save(camera: String, image: CameraImage) throws -> SavedCapture {
        let dir = root.appendingPathComponent(camera, isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let name = Self.safeName(image.name)
        let temp = dir.appendingPathComponent(".\(name).partial-\(getpid())-\(counter.wrappingAdd(1, ordering: .relaxed).newValue)").path
        let fd = open(temp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CaptureStoreError(description: "cannot create \(temp): \(String(cString: strerror(errno)))") }
        var ok = false
        defer {
            if !ok { close(fd) }
            unlink(temp)
        }
        try image.bytes.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CaptureStoreError(description: "writing \(name): \(String(cString: strerror(errno)))")
                }
                off += n
            }
        }
        guard fsync(fd) == 0 else { throw CaptureStoreError(description: "fsync \(name): \(String(cString: strerror(errno)))") }
        ok = true
        close(fd)
        var finalName = name
        for n in 0..<10_000 {
            finalName = Self.candidate(name, n)
            if link(temp, dir.appendingPathComponent(finalName).path) == 0 { break }
            guard errno == EEXIST, n < 9_999 else {
                throw CaptureStoreError(description: "saving \(finalName): \(String(cString: strerror(errno)))")
            }
        }
        let dfd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
        let file = SavedCapture(camera: camera, name: finalName, cameraName: image.name,
                                path: dir.appendingPathComponent(finalName).path, bytes: image.bytes.count,
                                sha256: SHA256.hex(image.bytes), fromBody: image.fromBody, savedAt: Date())
        saved.withLock { all in
            all[camera, default: []].append(file)
            if all[camera]!.count > Self.listLimit { all[camera]!.removeFirst(all[camera]!.count - Self.listLimit) }
        }
        return file
    }
}
