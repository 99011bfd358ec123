import CameraWire
import Foundation
public import NIOCore

/// ObjectInfo (ptp.md §8.1, `ptp-pack.c` PTP_oi_* offsets): what the card listing needs of it.
struct PTPObjectInfo: Sendable, Hashable {
    var storage: UInt32
    var format: UInt16
    var size: UInt32
    var parent: UInt32
    var name: String
    var captureDate: String

    /// An association (a folder): format 0x3001.
    var isFolder: Bool { format == 0x3001 }

    init(_ bytes: [UInt8]) throws {
        var r = PTPReader(bytes)
        storage = try r.u32()
        format = try r.u16()
        _ = try r.u16()                       // ProtectionStatus
        size = try r.u32()                    // ObjectCompressedSize
        r = PTPReader(bytes, at: 38)
        parent = try r.u32()                  // ParentObject
        r = PTPReader(bytes, at: 52)
        name = try r.string()                 // Filename
        captureDate = (try? r.string()) ?? ""
    }

    /// "YYYYMMDDThhmmss" (optionally with fractions or a zone) as a UTC date.
    var date: Date? {
        let d = Array(captureDate.utf8)
        guard d.count >= 15, d[8] == UInt8(ascii: "T") else { return nil }
        func n(_ a: Int, _ b: Int) -> Int? { Int(String(decoding: d[a..<b], as: UTF8.self)) }
        guard let y = n(0, 4), let mo = n(4, 6), let day = n(6, 8), let h = n(9, 11), let mi = n(11, 13), let s = n(13, 15) else { return nil }
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour, c.minute, c.second) = (y, mo, day, h, mi, s)
        c.timeZone = TimeZone(identifier: "UTC")
        return Calendar(identifier: .gregorian).date(from: c)
    }
}

/// The card through the standard PTP operations (ptp.md §8.1): every object from
/// GetObjectHandles(all storages, any format, all levels), its ObjectInfo, paths built from the
/// folders (associations) above it; a file comes with GetPartialObject in 1 MiB blocks when the
/// camera offers it (memory stays bounded), else with one GetObject.
extension PTPDriver: CardBrowsing {
    /// Largest block asked for with GetPartialObject ("the EOS R does not like 5MB, but likes 1MB").
    static let cardBlock = 1 << 20

    public func listFiles() async throws -> [CameraFile] {
        // A young listing of this session is answered without the camera (a Sony stays shooting).
        if let base = sessionBox.withLock({ $0 }) as? PTPVendorBase, let kept = keptListing(of: base) { return kept }
        return try await withCard { base in try await list(on: base) }
    }

    /// The card as `base`'s session sees it: the kept listing while it is young and that session's,
    /// else every object's ObjectInfo. Two objects with one path (both cards of a dual-slot body in
    /// backup mode) are one file: the lower handle.
    private func list(on base: PTPVendorBase) async throws -> [CameraFile] {
        if let kept = keptListing(of: base) { return kept }
        let ticket = cardListing.ticket
        var infos: [UInt32: PTPObjectInfo] = [:]
        for h in try await base.objectHandles() {
            infos[h] = try PTPObjectInfo(try await base.callOKWhenReady(PTPOperation.getObjectInfo, [h]).data)
        }
        var files: [CameraFile] = []
        var handles: [String: UInt32] = [:]
        for h in infos.keys.sorted() {
            guard let info = infos[h], !info.isFolder else { continue }
            var parts = [info.name]
            var up = info.parent, depth = 0
            while let p = infos[up], p.isFolder, depth < 32 {
                parts.insert(p.name, at: 0)
                up = p.parent
                depth += 1
            }
            let path = "/" + parts.joined(separator: "/")
            guard handles[path] == nil else { continue }
            handles[path] = h
            files.append(CameraFile(path: path, size: Int(info.size), date: info.date))
        }
        cardHandles.withLock { $0 = PTPCardHandles(session: base, byPath: handles) }
        cardListing.store(files, path: \.path, since: ticket)
        return files.sorted { $0.path < $1.path }
    }

    /// The listing kept while it is young, if `base`'s session made it.
    private func keptListing(of base: PTPVendorBase) -> [CameraFile]? {
        guard cardHandles.withLock({ $0.session === base }), let fresh = cardListing.fresh else { return nil }
        return fresh.values.sorted { $0.path < $1.path }
    }

    /// The handle the last listing of this session gave `path`, asked for its ObjectInfo (one
    /// transaction): still a file of that name → it, with its size now. Otherwise (another session,
    /// whose handles may mean other objects; a path not listed; an object gone) the card is listed.
    public func file(at path: String) async throws -> CameraFile? {
        try await withCard { base in
            if let h = cardHandles.withLock({ $0.handle(path, in: base) }) {
                // A broken connection or a busy camera is an error now (not a reason to list the
                // whole card); an answer that names another object, or none, means the listing is old.
                let answer: PTPResult
                do { answer = try await base.call(PTPOperation.getObjectInfo, [h]) } catch let e where ptpConnectionBroke(e) {
                    throw CameraControlError.unavailable("\(e)")
                }
                guard answer.code != PTPResponse.deviceBusy else {
                    throw CameraControlError.unavailable("the camera is busy; try again")
                }
                if answer.ok, let info = try? PTPObjectInfo(answer.data), !info.isFolder,
                   info.name == (path as NSString).lastPathComponent {
                    return CameraFile(path: path, size: Int(info.size), date: info.date)
                }
                cardListing.invalidate()  // the listing is out of date
            }
            return try await list(on: base).first { $0.path == path }
        }
    }

    /// Reads the object this session's listing gave `file.path` (listed first when it has none),
    /// on that one session.
    public func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws {
        try await withCard { base in
            if cardHandles.withLock({ $0.handle(file.path, in: base) }) == nil { _ = try await list(on: base) }
            guard let handle = cardHandles.withLock({ $0.handle(file.path, in: base) }) else {
                throw CameraControlError.notFound("\(file.path) (no longer on the card)")
            }
            if base.info.operations.contains(PTPOperation.getPartialObject) {
                try await base.readPartial(handle, size: file.size, block: Self.cardBlock, what: file.path) {
                    try await body(ByteBuffer(bytes: $0))
                }
            } else {
                try await body(ByteBuffer(bytes: try await base.callOKWhenReady(PTPOperation.getObject, [handle]).data))
            }
        }
    }

    /// Runs card operations on the open session (transport failures become `unavailable`).
    private func withCard<T: Sendable>(_ body: (PTPVendorBase) async throws -> T) async throws -> T {
        await sessionUp(within: .seconds(5))  // a reconnect under way
        guard let base = try current() as? PTPVendorBase else { throw CameraControlError.notSupported("the card") }
        do {
            if base is SonyPTPSession { return try await withSonyCard { try await body($0) } }
            return try await body(base)
        } catch let e as PTPTransportError {
            throw CameraControlError.unavailable("\(e)")
        }
    }
}

/// Object handles by card path, as one session's listing gave them (handles are the session's:
/// another session's may name other objects).
struct PTPCardHandles {
    weak var session: (any PTPVendorBase)?
    var byPath: [String: UInt32] = [:]

    func handle(_ path: String, in current: (any PTPVendorBase)?) -> UInt32? {
        guard let current, let session, session === current else { return nil }
        return byPath[path]
    }
}

extension PTPVendorBase {
    /// `size` bytes of object `handle` through GetPartialObject in blocks of at most `block`, each
    /// handed to `body` as it comes; a camera that sends nothing or more than asked is an error.
    func readPartial(_ handle: UInt32, size: Int, block: Int, what: String, _ body: ([UInt8]) async throws -> Void) async throws {
        var offset = 0
        while offset < size {
            let want = min(block, size - offset)
            let part = try await callOK(PTPOperation.getPartialObject, [handle, UInt32(offset), UInt32(want)]).data
            guard !part.isEmpty, part.count <= want else {
                throw CameraControlError.camera(code: 0, message: "\(what): \(part.count) bytes at \(offset) where \(want) were asked")
            }
            try await body(part)
            offset += part.count
        }
    }

    /// GetObjectHandles of every storage, format and level (the card listing, and the lists a
    /// capture compares).
    func objectHandles() async throws -> [UInt32] {
        var r = PTPReader(try await callOKWhenReady(PTPOperation.getObjectHandles, [0xFFFF_FFFF, 0, 0]).data)
        let n = Int(try r.u32())
        guard n <= r.remaining / 4 else { throw PTPTransportError.protocolError("object handle list too long") }
        return try (0..<n).map { _ in try r.u32() }
    }
}
