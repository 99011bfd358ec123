import Foundation

/// One object of a LUMIX body's UPnP ContentDirectory (panasonic.md §5): a picture or movie and the
/// resources the camera serves for it on its download port (`DO…` original, `DT…` thumbnail,
/// `DL…` large preview).
struct PanasonicCardItem: Sendable, Hashable {
    struct Resource: Sendable, Hashable {
        /// The URL as listed (`http://192.168.54.1:50001/DO1030822.JPG`).
        var url: String
        /// `PANASONIC.COM_PN` of the protocolInfo: `CAM_ORG`, `CAM_RAW_JPG`, `CAM_RAW`, `CAM_TN`,
        /// `CAM_LRGTN`, `CAM_AVC_MP4_…` (empty when absent).
        var profile: String
        /// The `size` attribute (newer bodies; previews carry placeholders).
        var size: Int?
        /// `OriginalFileName='PANA1793.JPG'` of the protocolInfo (newer bodies).
        var originalName: String?

        /// The last path component of the URL.
        var urlName: String { url.split(separator: "/").last.map(String.init) ?? url }
        var isThumbnail: Bool { profile == "CAM_TN" || (profile.isEmpty && urlName.hasPrefix("DT")) }
        var isPreview: Bool { profile == "CAM_LRGTN" || profile == "CAM_FULLTN" || (profile.isEmpty && urlName.hasPrefix("DL")) }
        /// A file of the card itself (not a preview the camera makes).
        var isOriginal: Bool {
            profile.isEmpty ? urlName.hasPrefix("DO") : profile.hasPrefix("CAM_") && !isThumbnail && !isPreview
        }
    }

    /// `1030822` (older bodies: folder 103, file 0822) or `01111793` (newer: eight digits).
    var id: String
    var title: String
    var date: Date?
    var resources: [Resource]

    /// The DCF folder number the id starts with (`103`), nil when the id is not one.
    var folder: Int? {
        guard id.count >= 7, id.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int(id.dropLast(4))
    }

    /// The card files of this item: each original resource, named by the camera's file name when the
    /// listing gives it (`OriginalFileName`, or a title that is a file name with the resource's
    /// extension: `P1000001.JPG`), else by its download name (`DO1030822.JPG`), in the item's
    /// folder (`/103/…`).
    var files: [(path: String, resource: Resource)] {
        resources.filter(\.isOriginal).compactMap { r in
            let name = r.originalName ?? titleName(for: r) ?? r.urlName
            guard CameraFile.isPlainName(name) else { return nil }
            return (folder.map { "/\($0)/\(name)" } ?? "/\(name)", r)
        }
    }

    /// The name the title gives `r`: the title itself when it is a plain file name with `r`'s
    /// extension, or the title's stem with `r`'s extension when the title names another original of
    /// the item (a RAW beside the JPEG the title names: `P1000001.JPG` → `P1000001.RW2`); only when
    /// no other original of the item has either extension (how a body may name the files on its
    /// card; panasonic.md does not say what the title holds).
    func titleName(for r: Resource) -> String? {
        func ext(_ s: String) -> Substring? { s.lastIndex(of: ".").map { s[$0...] } }
        guard title.count > 4, CameraFile.isPlainName(title), let titleExt = ext(title), let ownExt = ext(r.urlName) else { return nil }
        let originals = resources.filter(\.isOriginal)
        func single(_ e: Substring) -> Bool { originals.filter { ext($0.urlName)?.uppercased() == e.uppercased() }.count == 1 }
        guard single(titleExt), single(ownExt) else { return nil }
        if titleExt.uppercased() == ownExt.uppercased() { return title }
        return String(title.dropLast(titleExt.count)) + ownExt
    }

    var thumbnail: Resource? { resources.first(where: \.isThumbnail) }
    var preview: Resource? { resources.first(where: \.isPreview) }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// A container of the card's top level: its id and, when the camera lists it, `childCount`.
struct PanasonicContainer: Sendable, Equatable {
    var id: String
    var childCount: Int?
}

/// One page of a ContentDirectory Browse answer.
struct PanasonicBrowsePage: Sendable {
    var items: [PanasonicCardItem]
    /// Containers (newer bodies group by date, `01111980DIR`): browsed in turn.
    var containers: [PanasonicContainer]
    var returned: Int
    var total: Int
}

/// The SOAP side of the card (panasonic.md §5): Browse requests and the DIDL-Lite answers.
enum PanasonicCard {
    /// Most items a body returns per Browse (the G9II gives at most 50 whatever is asked).
    static let pageSize = 50
    /// A card listing stops here (a camera that keeps answering must not hold the gateway).
    static let maxItems = 50_000

    /// The Browse envelope: direct children of `objectID` from `start`, with the `X_FromCP` element
    /// the bodies expect after `SortCriteria`.
    static func browseBody(objectID: String = "0", start: Int, count: Int) -> [UInt8] {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">\
        <s:Body><u:Browse xmlns:u="urn:schemas-upnp-org:service:ContentDirectory:1" xmlns:pana="urn:schemas-panasonic-com:pana">\
        <ObjectID>\(escape(objectID))</ObjectID><BrowseFlag>BrowseDirectChildren</BrowseFlag><Filter>*</Filter>\
        <StartingIndex>\(start)</StartingIndex><RequestedCount>\(count)</RequestedCount><SortCriteria></SortCriteria>\
        <pana:X_FromCP>LumixLink2.0</pana:X_FromCP></u:Browse></s:Body></s:Envelope>
        """
        return Array(xml.utf8)
    }

    static let browseHeaders: [(String, String)] = [
        ("Content-Type", "text/xml; charset=\"utf-8\""),
        ("SOAPACTION", "\"urn:schemas-upnp-org:service:ContentDirectory:1#Browse\""),
        ("Accept", "text/xml"),
    ]

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Parses a BrowseResponse: `Result` holds the DIDL-Lite as escaped text, followed by
    /// `NumberReturned` and `TotalMatches`. Throws on a SOAP fault or an answer without a Result.
    static func parseBrowse(_ text: String) throws(PanasonicCardError) -> PanasonicBrowsePage {
        let scan = PanasonicXML.scan(text)
        func leaf(_ local: String) -> String? {
            scan.leafList.first { $0.0 == local || $0.0.hasSuffix(":" + local) }?.1
        }
        guard let didl = leaf("Result") else {
            if let fault = leaf("errorDescription") ?? leaf("faultstring") {
                throw PanasonicCardError("the camera refused the card listing: \(fault)")
            }
            throw PanasonicCardError("the card listing has no Result")
        }
        let (items, containers) = parseDIDL(didl)
        let returned = leaf("NumberReturned").flatMap { Int($0.panaTrimmed(" \r\n\t")) } ?? (items.count + containers.count)
        let total = leaf("TotalMatches").flatMap { Int($0.panaTrimmed(" \r\n\t")) } ?? returned
        return PanasonicBrowsePage(items: items, containers: containers, returned: max(0, returned), total: max(0, total))
    }

    /// The items and containers of a DIDL-Lite document. Items without an id or without any
    /// resource are skipped; element prefixes are ignored (`dc:title` = `title`).
    static func parseDIDL(_ text: String) -> (items: [PanasonicCardItem], containers: [PanasonicContainer]) {
        var items: [PanasonicCardItem] = []
        var containers: [PanasonicContainer] = []
        var item: PanasonicCardItem?
        var element: (name: String, attributes: [String: String])?
        var content = ""
        for event in PanasonicXML.events(text) {
            switch event {
            case .open(let tag):
                let name = localName(tag.name)
                switch name {
                case "item":
                    item = PanasonicCardItem(id: tag.attributes["id"] ?? "", title: "", date: nil, resources: [])
                case "container":
                    if let id = tag.attributes["id"], !id.isEmpty {
                        let n = tag.attributes["childCount"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
                        containers.append(PanasonicContainer(id: id, childCount: n))
                    }
                default:
                    element = (name, tag.attributes)
                    content = ""
                }
            case .text(let t):
                if element != nil { content += t }
            case .close(let closing):
                let name = localName(closing)
                if name == "item" {
                    if let i = item, !i.id.isEmpty, !i.resources.isEmpty { items.append(i) }
                    item = nil
                    continue
                }
                guard let e = element, e.name == name, item != nil else { continue }
                element = nil
                let value = content.panaTrimmed(" \r\n\t")
                switch name {
                case "title": item?.title = value
                case "date": item?.date = parseDate(value)
                case "res":
                    guard !value.isEmpty else { continue }
                    let info = e.attributes["protocolInfo"] ?? ""
                    item?.resources.append(.init(url: value, profile: field("PANASONIC.COM_PN=", in: info) ?? "",
                                                 size: e.attributes["size"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil },
                                                 originalName: field("OriginalFileName=", in: info)))
                default: break
                }
            }
        }
        return (items, containers)
    }

    static func localName(_ name: String) -> String {
        name.split(separator: ":").last.map(String.init) ?? name
    }

    /// The value after `key` in a protocolInfo, up to `;` or `,`, without quotes.
    static func field(_ key: String, in info: String) -> String? {
        guard let r = info.range(of: key) else { return nil }
        var v = info[r.upperBound...].prefix { $0 != ";" && $0 != "," }
        if v.hasPrefix("'") || v.hasPrefix("\"") { v = v.dropFirst() }
        if v.hasSuffix("'") || v.hasSuffix("\"") { v = v.dropLast() }
        let s = String(v).panaTrimmed(" ")
        return s.isEmpty ? nil : s
    }

    /// `2024-12-10T15:12:19+08:00`, or without a zone (taken as UTC), or a date alone.
    static func parseDate(_ s: String) -> Date? {
        let iso = ISO8601DateFormatter()
        if let d = iso.date(from: s) { return d }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
            f.dateFormat = format
            if let d = f.date(from: s) { return d }
        }
        return nil
    }

    /// `X-FILE_SIZE` of a download, nil when absent or one of the "unknown" values.
    static func fileSize(_ headers: [(String, String)]) -> Int? {
        guard let v = headers.first(where: { $0.0.caseInsensitiveCompare("X-FILE_SIZE") == .orderedSame })?.1,
              v.count < 20, let n = Int(v.panaTrimmed(" ")), n >= 0, n != 4_294_967_295 else { return nil }
        return n
    }
}

/// A card listing the gateway could not read.
struct PanasonicCardError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

extension PanasonicXML {
    /// A piece of an XML document, in order.
    enum Event: Sendable {
        case open(Tag)
        case close(String)
        case text(String)
    }

    /// The document as a sequence of start tags (a self-closing one is followed by its close), end
    /// tags and entity-decoded text; comments, declarations and processing instructions are skipped.
    static func events(_ text: String) -> [Event] {
        var out: [Event] = []
        let b = Array(text.utf8)
        var i = 0
        var textStart = 0
        func flushText(upTo end: Int) {
            if end > textStart { out.append(.text(unescape(String(decoding: b[textStart..<end], as: UTF8.self)))) }
        }
        while i < b.count {
            guard b[i] == UInt8(ascii: "<") else { i += 1; continue }
            flushText(upTo: i)
            if i + 3 < b.count, b[i + 1] == UInt8(ascii: "!"), b[i + 2] == UInt8(ascii: "-"), b[i + 3] == UInt8(ascii: "-") {
                i = (find(b, "-->", from: i + 4) ?? b.count) + 3
            } else if i + 1 < b.count, b[i + 1] == UInt8(ascii: "?") || b[i + 1] == UInt8(ascii: "!") {
                i = (firstIndex(b, UInt8(ascii: ">"), from: i) ?? b.count) + 1
            } else {
                guard let close = firstIndex(b, UInt8(ascii: ">"), from: i) else { i = b.count; textStart = i; break }
                let inner = b[(i + 1)..<close]
                if inner.first == UInt8(ascii: "/") {
                    out.append(.close(String(decoding: inner.dropFirst(), as: UTF8.self).panaTrimmed(" \t\r\n")))
                } else {
                    let selfClosing = inner.last == UInt8(ascii: "/")
                    let tag = parseTag(selfClosing ? inner.dropLast() : inner)
                    out.append(.open(tag))
                    if selfClosing { out.append(.close(tag.name)) }
                }
                i = close + 1
            }
            textStart = min(i, b.count)
        }
        flushText(upTo: b.count)
        return out
    }
}
