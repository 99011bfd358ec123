import Foundation
import LiveViewCore

/// The emulated body's card (panasonic.md §5): shots in DCF folder 100, each a ContentDirectory
/// item `100nnnn` whose original (`DO…`), thumbnail (`DT…`) and — when shooting RAW+JPEG — RAW are
/// served on the emulator's HTTP port. A shot is written for `writeSeconds`: meanwhile
/// `get_content_info` answers err_busy, `getstate` says `sd_access` on, and the item is not listed.
final class PanasonicEmulatedCard: Sendable {
    struct Item: Sendable {
        var number: Int
        var jpeg: [UInt8]
        var raw: [UInt8]?
        var thumbnail: [UInt8]
        var date: Date
        var writtenAtNanos: UInt64
        /// The shooting day (its container on a card grouped by day).
        var day: Int
        var id: String { String(format: "100%04d", number) }
        /// The day's container: month, day, year and `DIR`, as the bodies name them.
        var containerID: String { PanasonicEmulatedCard.containerID(day: day) }
        var jpegName: String { String(format: "P100%04d.JPG", number) }
        var rawName: String { String(format: "P100%04d.RW2", number) }
    }

    struct Options: Sendable {
        /// Newer bodies list sizes and file names (`size`, `OriginalFileName`); older ones neither.
        var listsNamesAndSizes = true
        var writeSeconds = 0.4
        var rawPlusJPEG = false
        /// The root lists one container per day, items inside; with or without `childCount`.
        var groupsByDay = false
        var listsChildCount = true
    }

    static func containerID(day: Int) -> String { String(format: "11%02d2026DIR", 25 + day) }

    private struct State {
        var items: [Item] = []
        var options = Options()
        /// Shots refused with this result (`err_reject`: card full, wrong mode).
        var refuseShots: String?
        /// A movie is being recorded (the card is written all along).
        var recording = false
        var day = 1
    }
    private let state = Mutex(State())

    var options: Options {
        get { state.withLock { $0.options } }
        set { state.withLock { $0.options = newValue } }
    }
    var refuseShots: String? {
        get { state.withLock { $0.refuseShots } }
        set { state.withLock { $0.refuseShots = newValue } }
    }
    var day: Int {
        get { state.withLock { $0.day } }
        set { state.withLock { $0.day = newValue } }
    }

    /// Writes a shot (its JPEG as given, a RAW beside it when so set); returns the JPEG's name.
    @discardableResult
    func add(jpeg: [UInt8], now: UInt64 = MonotonicClock.nanos()) -> String {
        state.withLock { s in
            let n = s.items.count + 1
            let thumb = EmulatedThumbnail.jpeg(showing: n) ?? []
            let raw: [UInt8]? = s.options.rawPlusJPEG ? Array("IIU\u{0}RW2 emulated raw \(n)".utf8) + [UInt8](repeating: UInt8(n & 0xFF), count: 4096) : nil
            let item = Item(number: n, jpeg: jpeg, raw: raw, thumbnail: thumb, date: Date(),
                            writtenAtNanos: now + UInt64(max(0, s.options.writeSeconds) * 1e9), day: s.day)
            s.items.append(item)
            return item.jpegName
        }
    }

    /// Items whose writing has finished.
    func written(now: UInt64 = MonotonicClock.nanos()) -> [Item] {
        state.withLock { $0.items.filter { $0.writtenAtNanos <= now } }
    }

    var isWriting: Bool {
        let now = MonotonicClock.nanos()
        return state.withLock { $0.recording || $0.items.contains { $0.writtenAtNanos > now } }
    }

    var recording: Bool {
        get { state.withLock { $0.recording } }
        set { state.withLock { $0.recording = newValue } }
    }

    var count: Int { state.withLock { $0.items.count } }

    /// The card's files by name (JPEGs and RAWs).
    func file(named name: String) -> [UInt8]? {
        state.withLock { s in
            for i in s.items {
                if i.jpegName == name { return i.jpeg }
                if i.rawName == name { return i.raw }
            }
            return nil
        }
    }

    var fileNames: [String] {
        state.withLock { s in s.items.flatMap { i in [i.jpegName] + (i.raw == nil ? [] : [i.rawName]) } }
    }

    /// The bytes behind a download name (`DO1000001.JPG`, `DO1000001.RW2`, `DT1000001.JPG`) of a
    /// written item.
    func download(_ name: String) -> [UInt8]? {
        guard name.count > 2 else { return nil }
        let prefix = name.prefix(2), rest = name.dropFirst(2)
        let parts = rest.split(separator: ".")
        guard parts.count == 2 else { return nil }
        guard let item = written().first(where: { $0.id == parts[0] }) else { return nil }
        switch (prefix, parts[1]) {
        case ("DO", "JPG"): return item.jpeg
        case ("DO", "RW2"): return item.raw
        case ("DT", "JPG"): return item.thumbnail
        default: return nil
        }
    }

    /// `Result` of a Browse of `objectID`: its entries `start ..< start+count` (at most 50) as
    /// escaped DIDL-Lite — the root's items on a flat card, the day containers on a card grouped
    /// by day and then each container's items; nil for an object that does not exist.
    func browse(objectID: String, start: Int, count: Int, base: String) -> (didl: String, returned: Int, total: Int)? {
        let written = written()
        let options = self.options
        var didl = "<DIDL-Lite xmlns=\"urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\""
            + " xmlns:upnp=\"urn:schemas-upnp-org:metadata-1-0/upnp/\">"
        func page<T>(_ all: [T]) -> [T] {
            start < all.count ? Array(all[start..<min(all.count, start + min(50, max(0, count)))]) : []
        }
        if options.groupsByDay && objectID == "0" {
            let days = Array(Set(written.map(\.day))).sorted()
            let slice = page(days)
            for d in slice {
                // childCount counts files here (a RAW+JPEG item is two): a body's count need not be
                // the container's TotalMatches.
                let n = written.filter { $0.day == d }.reduce(0) { $0 + ($1.raw == nil ? 1 : 2) }
                let childCount = options.listsChildCount ? " childCount=\"\(n)\"" : ""
                didl += "<container id=\"\(Self.containerID(day: d))\" parentID=\"0\" restricted=\"1\"\(childCount)>"
                    + "<dc:title>2026-11-\(25 + d)</dc:title><upnp:class>object.container</upnp:class></container>"
            }
            return (Self.escape(didl + "</DIDL-Lite>"), slice.count, days.count)
        }
        let all: [Item]
        if options.groupsByDay {
            all = written.filter { $0.containerID == objectID }
            guard !all.isEmpty else { return nil }
        } else {
            guard objectID == "0" else { return nil }
            all = written
        }
        let slice = page(all)
        let parent = options.groupsByDay ? objectID : "0"
        let iso = ISO8601DateFormatter()
        for i in slice {
            didl += "<item id=\"\(i.id)\" parentID=\"\(parent)\" restricted=\"0\"><dc:title>100-\(String(format: "%04d", i.number))</dc:title>"
            if options.listsNamesAndSizes { didl += "<dc:date>\(iso.string(from: i.date))</dc:date>" }
            didl += "<upnp:class name=\"imageItem\">object.item.imageItem</upnp:class>"
            func res(_ mime: String, _ profile: String, _ file: String, size: Int, name: String?) {
                var info = "http-get:*:\(mime);PANASONIC.COM_PN=\(profile)"
                var attrs = ""
                if options.listsNamesAndSizes {
                    if let name { info += ";OriginalFileName='\(name)'" }
                    attrs = " size=\"\(size)\""
                }
                didl += "<res protocolInfo=\"\(info)\"\(attrs)>\(base)/\(file)</res>"
            }
            if let raw = i.raw {
                res("application/octet-stream", "CAM_RAW_JPG", "DO\(i.id).JPG", size: i.jpeg.count, name: i.jpegName)
                res("application/octet-stream", "CAM_RAW", "DO\(i.id).RW2", size: raw.count, name: i.rawName)
            } else {
                res("image/jpeg:DLNA.ORG_PN=JPEG_LRG", "CAM_ORG", "DO\(i.id).JPG", size: i.jpeg.count, name: i.jpegName)
            }
            res("image/jpeg:DLNA.ORG_PN=JPEG_TN", "CAM_TN", "DT\(i.id).JPG", size: 5000, name: nil)
            didl += "</item>"
        }
        didl += "</DIDL-Lite>"
        return (Self.escape(didl), slice.count, all.count)
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// The SOAP answer to a Browse (`body` is the request), or a UPnP fault (HTTP 500) outside play
    /// mode or for an unknown object.
    func soapAnswer(request body: String, playMode: Bool, base: String) -> (status: Int, body: String) {
        func element(_ name: String) -> String? {
            guard let a = body.range(of: "<\(name)>"), let b = body.range(of: "</\(name)>", range: a.upperBound..<body.endIndex) else { return nil }
            return String(body[a.upperBound..<b.lowerBound])
        }
        func fault(_ code: Int, _ text: String) -> (Int, String) {
            (500, """
            <?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault>\
            <faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0">\
            <errorCode>\(code)</errorCode><errorDescription>\(text)</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>
            """)
        }
        guard playMode else { return fault(720, "Cannot process the request") }
        guard let objectID = element("ObjectID"), let start = element("StartingIndex").flatMap({ Int($0) }),
              let count = element("RequestedCount").flatMap({ Int($0) }), start >= 0,
              let (didl, returned, total) = browse(objectID: objectID, start: start, count: count, base: base) else {
            return fault(701, "No such object")
        }
        return (200, """
        <?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" \
        s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:BrowseResponse \
        xmlns:u="urn:schemas-upnp-org:service:ContentDirectory:1"><Result>\(didl)</Result><NumberReturned>\(returned)</NumberReturned>\
        <TotalMatches>\(total)</TotalMatches><UpdateID>\(total)</UpdateID></u:BrowseResponse></s:Body></s:Envelope>
        """)
    }
}
