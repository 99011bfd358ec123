import Foundation
public import NIOCore

extension OlympusCardEntry {
    /// The FAT date and time of the listing (the camera's clock, taken as UTC); nil when invalid.
    var modified: Date? {
        var c = DateComponents()
        c.year = 1980 + (fatDate >> 9)
        c.month = (fatDate >> 5) & 15
        c.day = fatDate & 31
        c.hour = fatTime >> 11
        c.minute = (fatTime >> 5) & 63
        c.second = (fatTime & 31) * 2
        guard let m = c.month, (1...12).contains(m), let d = c.day, (1...31).contains(d) else { return nil }
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC") ?? cal.timeZone
        return cal.date(from: c)
    }
}

extension OlympusCGI {
    /// Streams a card file (a GET of its path) to `body`.
    func stream(_ path: String, body: (ByteBuffer) async throws -> Void) async throws {
        let url = HTTPURL(host: endpoint.host, port: endpoint.port, target: HTTPURL.encodePath(path))
        try await http.download(url, what: "GET \(path)", headers: [("User-Agent", Self.userAgent)], body: body)
    }
}

extension OlympusDriver: CardBrowsing {
    /// `get_imglist.cgi` of `/DCIM` and each DCF folder in it.
    public func listFiles() async throws -> [CameraFile] {
        try await cgi.cardFiles().map { CameraFile(path: $0.path, size: $0.size, date: $0.modified) }
    }

    public var hasThumbnails: Bool { true }

    /// `get_thumbnail.cgi?DIR=<path>` (olympus.md §4.6: a small JPEG, 160×120 on the OPC bodies).
    public func thumbnail(of file: CameraFile) async throws -> [UInt8] {
        try await cgi.getData("get_thumbnail", [("DIR", file.path)])
    }

    /// A plain GET of the file's path (the whole file; Range is not known to work on these bodies).
    public func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws {
        try await cgi.stream(file.path, body: body)
    }
}
