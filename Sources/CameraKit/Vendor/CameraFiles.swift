public import Foundation
public import NIOCore

/// A file on the camera's card.
public struct CameraFile: Sendable, Hashable {
    public enum Kind: String, Sendable {
        case image, raw, video, other
    }

    /// The camera's path (`/DCIM/100OLYMP/P6130005.JPG`): what the API addresses the file by.
    public var path: String
    public var size: Int
    public var date: Date?

    public init(path: String, size: Int, date: Date?) {
        self.path = path
        self.size = size
        self.date = date
    }

    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }

    /// A file name a camera listing may give and the gateway can use as one path component: no
    /// separators or quotes, no dot-only names, no control characters.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 255 && name != "." && name != ".." && !name.contains("/") && !name.contains("\\")
            && !name.contains("\"") && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
    public var folder: String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    public var kind: Kind {
        switch name.split(separator: ".").last?.uppercased() ?? "" {
        case "JPG", "JPEG", "HEIF", "HIF", "MPO": return .image
        case "ORF", "ARW", "NEF", "NRW", "CR2", "CR3", "RAF", "RW2", "DNG", "SRW", "PEF": return .raw
        case "MOV", "MP4", "AVI", "MTS", "M2TS", "MKV": return .video
        default: return .other
        }
    }

    /// MIME type for a download.
    public var contentType: String {
        switch name.split(separator: ".").last?.uppercased() ?? "" {
        case "JPG", "JPEG": return "image/jpeg"
        case "MOV": return "video/quicktime"
        case "MP4": return "video/mp4"
        case "AVI": return "video/x-msvideo"
        default: return "application/octet-stream"
        }
    }
}

/// Browsing and downloading the card.
public protocol CardBrowsing: AnyObject, Sendable {
    /// Every file on the card.
    func listFiles() async throws -> [CameraFile]
    /// Streams a listed file's bytes to `body` as the camera sends them (bounded memory).
    func download(_ file: CameraFile, body: (ByteBuffer) async throws -> Void) async throws
    /// True when the camera makes small previews of its files (`thumbnail(of:)`).
    var hasThumbnails: Bool { get }
    /// The camera's own small JPEG preview of a listed file.
    func thumbnail(of file: CameraFile) async throws -> [UInt8]
    /// The listed file with what a download needs that the listing may lack (its size: 0 in a
    /// listing means the camera did not say).
    func resolve(_ file: CameraFile) async throws -> CameraFile
    /// The file the card lists at `path`, nil when there is none. The default lists the whole card;
    /// a vendor that can look one file up (a PTP object handle, a media id from its last listing)
    /// asks the camera about that file only, so a download from a card of thousands of files does
    /// not list them all again.
    func file(at path: String) async throws -> CameraFile?
}

extension CardBrowsing {
    public var hasThumbnails: Bool { false }
    public func thumbnail(of file: CameraFile) async throws -> [UInt8] {
        throw CameraControlError.notSupported("thumbnails")
    }
    public func resolve(_ file: CameraFile) async throws -> CameraFile { file }
    public func file(at path: String) async throws -> CameraFile? {
        try await listFiles().first { $0.path == path }
    }
}
