@testable import CameraKit
import Foundation
import Testing
import TestSupport

/// The LUMIX ContentDirectory as the bodies answer it (panasonic.md §5): the DIDL-Lite arrives
/// escaped inside the SOAP Result; older bodies list no names or sizes, newer ones put the file
/// name in the protocolInfo; RAW and RAW+JPEG resources must not be confused.
struct PanasonicCardTests {
    static func envelope(_ didl: String, returned: Int, total: Int) -> String {
        let escaped = didl.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        return "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
            + "<u:BrowseResponse xmlns:u=\"urn:schemas-upnp-org:service:ContentDirectory:1\"><Result>\(escaped)</Result>"
            + "<NumberReturned>\(returned)</NumberReturned><TotalMatches>\(total)</TotalMatches><UpdateID>1</UpdateID>"
            + "</u:BrowseResponse></s:Body></s:Envelope>"
    }

    /// A root grouped by day: containers with their `childCount` when listed (a negative or
    /// garbled one is none).
    @Test func dayContainersCarryTheirChildCount() throws {
        let didl = """
        <DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/"><container id="11262026DIR" parentID="0" childCount="12">        <dc:title>2026-11-26</dc:title></container><container id="11272026DIR" parentID="0"></container>        <container id="11282026DIR" childCount="-3"></container><container id="X" childCount="many"></container></DIDL-Lite>
        """
        let page = try PanasonicCard.parseBrowse(Self.envelope(didl, returned: 4, total: 4))
        #expect(page.items.isEmpty)
        #expect(page.containers == [PanasonicContainer(id: "11262026DIR", childCount: 12), PanasonicContainer(id: "11272026DIR", childCount: nil),
                                    PanasonicContainer(id: "11282026DIR", childCount: nil), PanasonicContainer(id: "X", childCount: nil)])
    }

    /// A listing lowers the known counts (files deleted on the body) but never raises them, and
    /// keeps the old childCount so that the next look reads the container again; a container the
    /// census did not know counts as empty; one the listing did not reach stays as it was.
    @Test func aListingOnlyLowersTheKnownCounts() {
        typealias C = PanasonicCensus.Container
        let known = PanasonicCensus(top: 3, containers: ["A": C(items: 5, childCount: 5), "B": C(items: 3, childCount: 3),
                                                         "D": C(items: 9, childCount: 9), "E": C(items: nil, childCount: 2)],
                                    order: ["A", "B", "D", "E"])
        let listed = PanasonicCensus(top: 4, containers: ["A": C(items: 7, childCount: 7), "B": C(items: 1, childCount: 1),
                                                          "C": C(items: 4, childCount: 4), "E": C(items: 2, childCount: 2)],
                                     order: ["A", "B", "C", "E"])
        let merged = known.lowered(to: listed)
        #expect(merged.top == 3)
        #expect(merged.containers == ["A": C(items: 5, childCount: 5), "B": C(items: 1, childCount: 3), "C": C(items: 0, childCount: nil),
                                      "D": C(items: 9, childCount: 9), "E": C(items: 2, childCount: 2)])
        #expect(merged.order == ["A", "B", "D", "E", "C"])
        #expect(PanasonicCensus(top: 10).lowered(to: PanasonicCensus(top: 8)) == PanasonicCensus(top: 8))
        #expect(PanasonicCensus(top: 8).lowered(to: PanasonicCensus(top: 10)) == PanasonicCensus(top: 8))
    }

    @Test func anOlderBodysItemHasItsDownloadNameAndNoSize() throws {
        let didl = """
        <DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" \
        xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="1030822" parentID="0" restricted="0">\
        <dc:title>103-0822</dc:title><upnp:writeStatus>WRITABLE</upnp:writeStatus>\
        <upnp:class name="imageItem">object.item.imageItem</upnp:class>\
        <res protocolInfo="http-get:*:image/jpeg:DLNA.ORG_PN=JPEG_LRG;DLNA.ORG_OP=01;DLNA.ORG_CI=0;PANASONIC.COM_PN=CAM_ORG">http://192.168.54.1:50001/DO1030822.JPG</res>\
        <res protocolInfo="http-get:*:image/jpeg:DLNA.ORG_PN=JPEG_TN;PANASONIC.COM_PN=CAM_TN">http://192.168.54.1:50001/DT1030822.JPG</res>\
        <res protocolInfo="http-get:*:image/jpeg:DLNA.ORG_PN=JPEG_MED;PANASONIC.COM_PN=CAM_LRGTN">http://192.168.54.1:50001/DL1030822.JPG</res>\
        </item></DIDL-Lite>
        """
        let page = try PanasonicCard.parseBrowse(Self.envelope(didl, returned: 1, total: 343))
        #expect(page.returned == 1 && page.total == 343)
        let item = try #require(page.items.first)
        #expect(item.id == "1030822" && item.title == "103-0822" && item.folder == 103 && item.date == nil)
        #expect(item.files.map(\.path) == ["/103/DO1030822.JPG"])
        #expect(item.files.first?.resource.size == nil)
        #expect(item.thumbnail?.url == "http://192.168.54.1:50001/DT1030822.JPG")
        #expect(item.preview?.url == "http://192.168.54.1:50001/DL1030822.JPG")
    }

    @Test func aNewerBodysRawPlusJPEGIsTwoFilesWithTheirNamesAndSizes() throws {
        let didl = """
        <DIDL-Lite><item id="01111793" parentID="0"><dc:title>111-1793</dc:title><dc:date>2024-12-10T15:12:19+08:00</dc:date>\
        <res protocolInfo="http-get:*:application/octet-stream;PANASONIC.COM_PN=CAM_RAW_JPG;OriginalFileName='PANA1793.JPG'" size="9607680">http://192.168.54.1:50001/DO01111793.JPG</res>\
        <res protocolInfo="http-get:*:application/octet-stream;PANASONIC.COM_PN=CAM_RAW;OriginalFileName='PANA1793.RW2'" size="39478272">http://192.168.54.1:50001/DO01111793.RW2</res>\
        <res protocolInfo="http-get:*:image/jpeg;PANASONIC.COM_PN=CAM_TN" size="5000">http://192.168.54.1:50001/DT01111793.JPG</res>\
        </item><item id="01111794" parentID="0"><dc:title>111-1794</dc:title>\
        <res protocolInfo="http-get:*:application/octet-stream:DLNA.ORG_OP=01;PANASONIC.COM_PN=CAM_AVC_MP4_ORG;OriginalFileName='PANA1794.MP4'" size="123">http://192.168.54.1:50001/DO01111794.MP4</res>\
        </item></DIDL-Lite>
        """
        let page = try PanasonicCard.parseBrowse(Self.envelope(didl, returned: 2, total: 2))
        #expect(page.items.count == 2)
        let still = page.items[0]
        #expect(still.folder == 111)
        #expect(still.files.map(\.path) == ["/111/PANA1793.JPG", "/111/PANA1793.RW2"])
        #expect(still.files.map(\.resource.profile) == ["CAM_RAW_JPG", "CAM_RAW"])
        #expect(still.files.map(\.resource.size) == [9_607_680, 39_478_272])
        #expect(still.date == Date(timeIntervalSince1970: 1_733_814_739))
        #expect(page.items[1].files.map(\.path) == ["/111/PANA1794.MP4"])
        let movie = CameraFile(path: page.items[1].files[0].path, size: 123, date: nil)
        #expect(movie.kind == .video)
    }

    @Test func faultsHostileNamesAndSizesAreHandled() {
        let fault = "<s:Envelope><s:Body><s:Fault><detail><UPnPError><errorCode>720</errorCode>"
            + "<errorDescription>Cannot process the request</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>"
        #expect(throws: PanasonicCardError.self) { try PanasonicCard.parseBrowse(fault) }
        #expect(throws: PanasonicCardError.self) { try PanasonicCard.parseBrowse("garbage") }
        // A name that would leave the folder, and a resource without a URL, give no file.
        let didl = "<DIDL-Lite><item id=\"1000001\"><res protocolInfo=\"x;PANASONIC.COM_PN=CAM_ORG;OriginalFileName='../../x'\">"
            + "http://h/DO1000001.JPG</res><res protocolInfo=\"PANASONIC.COM_PN=CAM_ORG\"></res></item>"
            + "<item><res>http://h/DO1.JPG</res></item></DIDL-Lite>"
        let page = try? PanasonicCard.parseBrowse(Self.envelope(didl, returned: 2, total: 2))
        #expect(page?.items.count == 1)
        #expect(page?.items.first?.files.isEmpty == true)
        #expect(PanasonicCard.fileSize([("X-FILE_SIZE", "41639")]) == 41639)
        #expect(PanasonicCard.fileSize([("x-file_size", "4294967295")]) == nil)
        #expect(PanasonicCard.fileSize([("X-FILE_SIZE", "18446744073709551615")]) == nil)
        #expect(PanasonicCard.fileSize([("X-FILE_SIZE", "-1")]) == nil)
        #expect(PanasonicCard.fileSize([]) == nil)
    }

    /// A title that is a file name with the resource's extension names the file (what the
    /// independent LUMIX camera lists); any other title leaves the download name.
    @Test func aTitleThatIsTheFileNameNamesTheFile() {
        func paths(_ title: String) -> [String] {
            let didl = "<DIDL-Lite><item id=\"1000001\"><dc:title>\(title)</dc:title>"
                + "<res protocolInfo=\"http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_ORG\">http://h/DO1000001.JPG</res>"
                + "<res protocolInfo=\"http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_TN\">http://h/DT1000001.JPG</res></item></DIDL-Lite>"
            return PanasonicCard.parseDIDL(didl).items.flatMap { $0.files.map(\.path) }
        }
        #expect(paths("P1000001.JPG") == ["/100/P1000001.JPG"])
        #expect(paths("p1000001.jpg") == ["/100/p1000001.jpg"])
        #expect(paths("100-0001") == ["/100/DO1000001.JPG"])
        #expect(paths("P1000001.MP4") == ["/100/DO1000001.JPG"])
        #expect(paths("../../x.JPG") == ["/100/DO1000001.JPG"])
        #expect(paths(".JPG") == ["/100/DO1000001.JPG"])
    }

    @Test func aRAWBesideTheJPEGTheTitleNamesTakesTheTitlesStem() {
        func paths(_ title: String, raws: Int = 1) -> [String] {
            var didl = "<DIDL-Lite><item id=\"1000001\"><dc:title>\(title)</dc:title>"
                + "<res protocolInfo=\"http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_RAW_JPG\">http://h/DO1000001.JPG</res>"
            for i in 0..<raws {
                didl += "<res protocolInfo=\"http-get:*:application/octet-stream:PANASONIC.COM_PN=CAM_RAW\">http://h/DO100000\(i + 1).RW2</res>"
            }
            didl += "<res protocolInfo=\"http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_TN\">http://h/DT1000001.JPG</res></item></DIDL-Lite>"
            return PanasonicCard.parseDIDL(didl).items.flatMap { $0.files.map(\.path) }
        }
        #expect(paths("P1000001.JPG") == ["/100/P1000001.JPG", "/100/P1000001.RW2"])
        #expect(paths("P1000001.RW2") == ["/100/P1000001.JPG", "/100/P1000001.RW2"])
        // Two RAWs: the title cannot tell which is which; they keep their download names.
        #expect(paths("P1000001.JPG", raws: 2) == ["/100/P1000001.JPG", "/100/DO1000001.RW2", "/100/DO1000002.RW2"])
        #expect(paths("100-0001") == ["/100/DO1000001.JPG", "/100/DO1000001.RW2"])
    }

    @Test func theBrowseRequestCarriesWhatTheBodiesExpect() {
        let body = String(decoding: PanasonicCard.browseBody(start: 50, count: 50), as: UTF8.self)
        #expect(body.contains("<ObjectID>0</ObjectID><BrowseFlag>BrowseDirectChildren</BrowseFlag>"))
        #expect(body.contains("<StartingIndex>50</StartingIndex><RequestedCount>50</RequestedCount><SortCriteria></SortCriteria>"
            + "<pana:X_FromCP>LumixLink2.0</pana:X_FromCP></u:Browse>"))
        #expect(PanasonicCard.browseHeaders.contains { $0.0 == "SOAPACTION" && $0.1.contains("ContentDirectory:1#Browse") })
        #expect(PanasonicEndpoint.parse(url: "panasonic://1.2.3.4")?.dlnaPort == 60606)
        #expect(PanasonicEndpoint.parse(url: "panasonic://1.2.3.4?dlnaport=8080")?.dlnaPort == 8080)
        #expect(PanasonicEndpoint.parse(url: "panasonic://1.2.3.4?dlnaport=0") == nil)
    }
}
