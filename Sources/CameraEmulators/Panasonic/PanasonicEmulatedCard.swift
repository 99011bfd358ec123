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
        var id: String { String(format: "100%04d", number) }
        var jpegName: String { String(format: "P100%04d.JPG", number) }
        var rawName: String { String(format: "P100%04d.RW2", number) }
    }

    struct Options: Sendable {
        /// Newer bodies list sizes and file names (`size`, `OriginalFileName`); older ones neither.
        var listsNamesAndSizes = true
        var writeSeconds = 0.4
        var rawPlusJPEG = false
    }

    private struct State {
        var items: [Item] = []
        var options = Options()
        /// Shots refused with this result (`err_reject`: card full, wrong mode).
        var refuseShots: String?
        /// A movie is being recorded (the card is written all along).
        var recording = false
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

    /// Writes a shot (its JPEG as given, a RAW beside it when so set); returns the JPEG's name.
    @discardableResult
    func add(jpeg: [UInt8], now: UInt64 = MonotonicClock.nanos()) -> String {
        state.withLock { s in
            let n = s.items.count + 1
            let thumb = EmulatedThumbnail.jpeg(showing: n) ?? []
            let raw: [UInt8]? = s.options.rawPlusJPEG ? Array("IIU\u{0}RW2 emulated raw \(n)".utf8) + [UInt8](repeating: UInt8(n & 0xFF), count: 4096) : nil
            let item = Item(number: n, jpeg: jpeg, raw: raw, thumbnail: thumb, date: Date(),
                            writtenAtNanos: now + UInt64(max(0, s.options.writeSeconds) * 1e9))
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

    /// `Result` of a Browse of the root: items `start ..< start+count` (at most 50), escaped DIDL-Lite.
    func browse(start: Int, count: Int, base: String) -> (didl: String, returned: Int, total: Int) {
        let all = written()
        let options = self.options
        let slice = start < all.count ? Array(all[start..<min(all.count, start + min(50, max(0, count)))]) : []
        var didl = "<DIDL-Lite xmlns=\"urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\""
            + " xmlns:upnp=\"urn:schemas-upnp-org:metadata-1-0/upnp/\">"
        let iso = ISO8601DateFormatter()
        for i in slice {
            didl += "<item id=\"\(i.id)\" parentID=\"0\" restricted=\"0\"><dc:title>100-\(String(format: "%04d", i.number))</dc:title>"
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
        guard element("ObjectID") == "0", let start = element("StartingIndex").flatMap({ Int($0) }),
              let count = element("RequestedCount").flatMap({ Int($0) }), start >= 0 else {
            return fault(701, "No such object")
        }
        let (didl, returned, total) = browse(start: start, count: count, base: base)
        return (200, """
        <?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" \
        s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:BrowseResponse \
        xmlns:u="urn:schemas-upnp-org:service:ContentDirectory:1"><Result>\(didl)</Result><NumberReturned>\(returned)</NumberReturned>\
        <TotalMatches>\(total)</TotalMatches><UpdateID>\(total)</UpdateID></u:BrowseResponse></s:Body></s:Envelope>
        """)
    }
}
