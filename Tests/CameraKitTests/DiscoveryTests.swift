import CameraEmulators
import CameraKit
import Foundation
import LiveViewCore
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport

/// Real Sony DSC-QX100 device description, from tonytonyjan/sonycam:spec/fixtures/DeviceDescription.xml
/// @ d7ff1208b3be809227c729812729dce120d0df8f (MIT licence; also ../shared/fixtures/sony/).
let discoveryQX100Description = """
<?xml version="1.0" encoding="utf-8"?><root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:dlna="urn:schemas-dlna-org:device-1-0" xmlns:av="urn:schemas-sony-com:av"><specVersion><major>1</major><minor>0</minor></specVersion><device><dlna:X_DLNADOC xmlns:dlna="urn:schemas-dlna-org:device-1-0">DMS-1.50</dlna:X_DLNADOC><deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType><friendlyName>DSC-QX100</friendlyName><manufacturer>Sony Corporation</manufacturer><manufacturerURL>http://www.sony.com/</manufacturerURL><modelDescription>SonyDigitalMediaServer</modelDescription><modelName>SonyImagingDevice</modelName><modelURL>http://www.sony.net/</modelURL><UDN>uuid:00000000-0005-0010-8000-1c994c993998</UDN><serviceList><service><serviceType>urn:schemas-upnp-org:service:ContentDirectory:1</serviceType><serviceId>urn:upnp-org:serviceId:ContentDirectory</serviceId><SCPDURL>/CdsDesc.xml</SCPDURL><controlURL>/upnp/control/ContentDirectory</controlURL><eventSubURL>/upnp/event/ContentDirectory</eventSubURL></service><service><serviceType>urn:schemas-upnp-org:service:ConnectionManager:1</serviceType><serviceId>urn:upnp-org:serviceId:ConnectionManager</serviceId><SCPDURL>/CmsDesc.xml</SCPDURL><controlURL>/upnp/control/ConnectionManager</controlURL><eventSubURL>/upnp/event/ConnectionManager</eventSubURL></service><service><serviceType>urn:schemas-sony-com:service:ScalarWebAPI:1</serviceType><serviceId>urn:schemas-sony-com:serviceId:ScalarWebAPI</serviceId><SCPDURL>/ScalarWebApiDesc.xml</SCPDURL><controlURL></controlURL><eventSubURL></eventSubURL></service><service><serviceType>urn:schemas-sony-com:service:DigitalImaging:1</serviceType><serviceId>urn:schemas-sony-com:serviceId:DigitalImaging</serviceId><SCPDURL>/DigitalImagingDesc.xml</SCPDURL><controlURL>/upnp/control/DigitalImaging</controlURL><eventSubURL></eventSubURL></service></serviceList><iconList><icon><mimetype>image/jpeg</mimetype><width>48</width><height>48</height><depth>24</depth><url>/DLNA_camera_48.jpg</url></icon><icon><mimetype>image/jpeg</mimetype><width>120</width><height>120</height><depth>24</depth><url>/DLNA_camera_120.jpg</url></icon><icon><mimetype>image/png</mimetype><width>48</width><height>48</height><depth>24</depth><url>/DLNA_camera_48.png</url></icon><icon><mimetype>image/png</mimetype><width>120</width><height>120</height><depth>24</depth><url>/DLNA_camera_120.png</url></icon></iconList><av:X_ScalarWebAPI_DeviceInfo xmlns:av="urn:schemas-sony-com:av"><av:X_ScalarWebAPI_Version>1.0</av:X_ScalarWebAPI_Version><av:X_ScalarWebAPI_ServiceList><av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_ServiceType>guide</av:X_ScalarWebAPI_ServiceType><av:X_ScalarWebAPI_ActionList_URL>http://10.0.0.1:10000/sony</av:X_ScalarWebAPI_ActionList_URL><av:X_ScalarWebAPI_AccessType /></av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_ServiceType>system</av:X_ScalarWebAPI_ServiceType><av:X_ScalarWebAPI_ActionList_URL>http://10.0.0.1:10000/sony</av:X_ScalarWebAPI_ActionList_URL><av:X_ScalarWebAPI_AccessType /></av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_ServiceType>accessControl</av:X_ScalarWebAPI_ServiceType><av:X_ScalarWebAPI_ActionList_URL>http://10.0.0.1:10000/sony</av:X_ScalarWebAPI_ActionList_URL><av:X_ScalarWebAPI_AccessType /></av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_Service><av:X_ScalarWebAPI_ServiceType>camera</av:X_ScalarWebAPI_ServiceType><av:X_ScalarWebAPI_ActionList_URL>http://10.0.0.1:10000/sony</av:X_ScalarWebAPI_ActionList_URL><av:X_ScalarWebAPI_AccessType /></av:X_ScalarWebAPI_Service></av:X_ScalarWebAPI_ServiceList><av:X_ScalarWebAPI_ImagingDevice><av:X_ScalarWebAPI_LiveView_URL>http://10.0.0.1:60152/liveview.JPG?%211234%21http%2dget%3a%2a%3aimage%2fjpeg%3a%2a%21%21%21%21%21</av:X_ScalarWebAPI_LiveView_URL><av:X_ScalarWebAPI_DefaultFunction>RemoteShooting</av:X_ScalarWebAPI_DefaultFunction></av:X_ScalarWebAPI_ImagingDevice></av:X_ScalarWebAPI_DeviceInfo></device></root>
"""

/// A Panasonic description shaped after panasonic.md §5 (no real one was captured).
let discoveryLumixDescription = """
<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:pana="urn:schemas-panasonic-com:pana">
<specVersion><major>1</major><minor>0</minor></specVersion>
<device><pana:X_FirmVersion>2.5</pana:X_FirmVersion>
<deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType><friendlyName>S5M2-E86421</friendlyName>
<manufacturer>Panasonic</manufacturer><modelName>LUMIX</modelName><modelNumber>DC-S5M2</modelNumber>
<UDN>uuid:4D454930-0100-1000-8000-0123456789AB</UDN></device></root>
"""

let discoveryRouterDescription = """
<?xml version="1.0"?><root xmlns="urn:schemas-upnp-org:device-1-0"><device>
<deviceType>urn:schemas-upnp-org:device:InternetGatewayDevice:1</deviceType><friendlyName>Home router</friendlyName>
<manufacturer>Acme</manufacturer><modelName>R1</modelName><UDN>uuid:1234</UDN></device></root>
"""

/// A tiny HTTP server on 127.0.0.1 serving fixed documents.
final class DiscoveryHTTPServer: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let docs: [String: String]
    init(docs: [String: String]) { self.docs = docs }

    static func start(docs: [String: String]) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    try ch.pipeline.syncOperations.configureHTTPServerPipeline()
                    try ch.pipeline.syncOperations.addHandler(DiscoveryHTTPServer(docs: docs))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let body = docs[head.uri]
        var h = HTTPHeaders()
        h.add(name: "Content-Length", value: String(body?.utf8.count ?? 0))
        h.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: body == nil ? .notFound : .ok, headers: h))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body ?? "")))), promise: nil)
        let ch = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in ch.close(promise: nil) }
    }
}

/// A fake SSDP responder on 127.0.0.1 (unicast): answers M-SEARCHes whose ST it knows.
final class FakeSSDPResponder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    /// ST → [(LOCATION, SERVER)]
    let answers: [String: [(String, String)]]
    let searches = Mutex<[String]>([])
    init(answers: [String: [(String, String)]]) { self.answers = answers }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let env = unwrapInboundIn(data)
        let text = String(decoding: env.data.readableBytesView, as: UTF8.self)
        guard text.hasPrefix("M-SEARCH * HTTP/1.1\r\n"), text.contains("MAN: \"ssdp:discover\"\r\n") else { return }
        guard let stLine = text.split(separator: "\r\n").first(where: { $0.hasPrefix("ST: ") }) else { return }
        let st = String(stLine.dropFirst(4))
        searches.withLock { $0.append(st) }
        for (loc, server) in answers[st] ?? [] {
            let reply = "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nEXT:\r\nLOCATION: \(loc)\r\nSERVER: \(server)\r\nST: \(st)\r\nUSN: uuid:x::\(st)\r\n\r\n"
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: env.remoteAddress,
                                                                    data: context.channel.allocator.buffer(string: reply))), promise: nil)
        }
        // Also some noise a real network carries: a NOTIFY must be ignored.
        let notify = "NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nNT: upnp:rootdevice\r\nNTS: ssdp:alive\r\nLOCATION: http://127.0.0.1:1/x\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: env.remoteAddress,
                                                                data: context.channel.allocator.buffer(string: notify))), promise: nil)
    }

    static func start(_ responder: FakeSSDPResponder) async throws -> any Channel {
        try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { ch in ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(responder) } }
            .bind(host: "127.0.0.1", port: 0).get()
    }
}

@Suite(.tags(.integration, .sanitized)) struct DiscoveryTests {
    @Test func findsSonyPanasonicAndUnknownDevicesOverLoopback() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let web = try await DiscoveryHTTPServer.start(docs: [
            "/DmsRmtDesc.xml": discoveryQX100Description, "/router.xml": discoveryRouterDescription,
        ])
        let webPort = web.localAddress!.port!
        var config = PanasonicEmulator.Configuration()
        config.modelName = "DC-G9"
        let lumix = try PanasonicEmulator(configuration: config, group: group)
        let lumixPort = try await lumix.start()
        let sonyLoc = "http://127.0.0.1:\(webPort)/DmsRmtDesc.xml"
        let lumixLoc = "http://127.0.0.1:\(lumixPort)/Server0/ddd"
        let routerLoc = "http://127.0.0.1:\(webPort)/router.xml"
        let goneLoc = "http://127.0.0.1:\(webPort)/gone.xml"
        let responder = FakeSSDPResponder(answers: [
            SSDPDiscovery.sonyST: [(sonyLoc, "Android/4.4 UPnP/1.0 SonyImagingDevice/1.0")],
            SSDPDiscovery.panasonicST: [(lumixLoc, "Panasonic UPnP/1.0")],
            SSDPDiscovery.allST: [(sonyLoc, "x"), (lumixLoc, "Panasonic UPnP/1.0"), (routerLoc, "Linux UPnP/1.0"), (goneLoc, "x")],
        ])
        let ssdp = try await FakeSSDPResponder.start(responder)

        var discovery = SSDPDiscovery(group: group, matchers: [.sony, .panasonic])
        discovery.targetHost = "127.0.0.1"
        discovery.targetPort = ssdp.localAddress!.port!
        discovery.bindHost = "127.0.0.1"
        discovery.timeout = .milliseconds(600)
        let t0 = ContinuousClock.now
        let found = try await discovery.discover()
        let took = ContinuousClock.now - t0
        try? await ssdp.close()
        try? await web.close()
        await lumix.stop()

        #expect(took < .seconds(3), "bounded by the timeout plus the description fetches: \(took)")
        // Each search target was asked (twice: repeats = 2).
        let searches = responder.searches.withLock { $0 }
        #expect(searches.filter { $0 == SSDPDiscovery.sonyST }.count == 2)
        #expect(searches.filter { $0 == SSDPDiscovery.panasonicST }.count == 2)
        #expect(searches.filter { $0 == SSDPDiscovery.allST }.count == 2)
        // One entry per LOCATION, cameras first.
        #expect(found.count == 4, "\(found)")
        let sony = try #require(found.first { $0.kind == .sony })
        #expect(sony.cameraURL == "sony://10.0.0.1:10000")
        #expect(sony.friendlyName == "DSC-QX100")
        #expect(sony.location == sonyLoc)
        let pana = try #require(found.first { $0.kind == .panasonic })
        #expect(pana.cameraURL == "panasonic://127.0.0.1")
        #expect(pana.modelNumber == "DC-G9")
        #expect(pana.server == "Panasonic UPnP/1.0")
        #expect(found.prefix(2).allSatisfy { $0.kind != .unknown })
        let router = try #require(found.first { $0.location == routerLoc })
        #expect(router.kind == .unknown && router.cameraURL == nil && router.friendlyName == "Home router")
        let gone = try #require(found.first { $0.location == goneLoc })
        #expect(gone.kind == .unknown && gone.note == "HTTP 404")
        // The ready-made URL parses as a driver endpoint.
        #expect(PanasonicEndpoint.parse(url: pana.cameraURL!) != nil)
    }

    @Test func noReplyMeansAnEmptyListWithinTheTimeout() async throws {
        // A loopback port nobody answers on.
        let silent = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        var discovery = SSDPDiscovery(group: MultiThreadedEventLoopGroup.singleton, matchers: [.sony, .panasonic])
        discovery.targetHost = "127.0.0.1"
        discovery.targetPort = silent.localAddress!.port!
        discovery.bindHost = "127.0.0.1"
        discovery.timeout = .milliseconds(400)
        let t0 = ContinuousClock.now
        let found = try await discovery.discover()
        let took = ContinuousClock.now - t0
        try? await silent.close()
        #expect(found.isEmpty)
        #expect(took >= .milliseconds(400) && took < .seconds(2))
    }

    @Test func classifiesTheRealQX100Description() {
        let reply = SSDPReply(address: "10.0.0.1", headers: ["location": "http://10.0.0.1:64321/DmsRmtDesc.xml"])
        let d = SSDPDiscovery.classify(description: discoveryQX100Description, location: "http://10.0.0.1:64321/DmsRmtDesc.xml", reply: reply, matchers: [.sony, .panasonic])
        #expect(d.kind == .sony)
        #expect(d.cameraURL == "sony://10.0.0.1:10000")
        #expect(d.manufacturer == "Sony Corporation")
        #expect(d.udn == "uuid:00000000-0005-0010-8000-1c994c993998")
        let p = SSDPDiscovery.classify(description: discoveryLumixDescription, location: "http://192.168.54.1:60606/Server0/ddd",
                                       reply: SSDPReply(address: "192.168.54.1", headers: [:]), matchers: [.sony, .panasonic])
        #expect(p.kind == .panasonic && p.cameraURL == "panasonic://192.168.54.1" && p.friendlyName == "S5M2-E86421")
        // A Sony media server without the camera service is not a Remote-API camera.
        let dms = discoveryQX100Description.replacingOccurrences(of: ">camera<", with: ">other<")
        #expect(SSDPDiscovery.classify(description: dms, location: "http://10.0.0.1:1/x", reply: reply, matchers: [.sony, .panasonic]).kind == .unknown)
    }

    @Test(.enabled(if: Locations.sharedHas("fixtures/sony/sonycam-DSC-QX100-DeviceDescription.xml"),
                   "needs ../shared/fixtures/sony"))
    func embeddedFixtureIsTheRealFile() throws {
        let data = try #require(FileManager.default.contents(atPath: Locations.shared("fixtures/sony/sonycam-DSC-QX100-DeviceDescription.xml")))
        #expect(String(decoding: data, as: UTF8.self) == discoveryQX100Description)
    }

    @Test func parsesSearchRepliesAndIgnoresNotifies() {
        let r = SSDPReply.parse("HTTP/1.1 200 OK\r\nLOCATION: http://192.168.54.1:60606/0123456789AB/Server0/ddd\r\nServer: Panasonic\r\nST: ssdp:all\r\n\r\n", from: "192.168.54.1")
        #expect(r?.headers["location"] == "http://192.168.54.1:60606/0123456789AB/Server0/ddd")
        #expect(r?.headers["server"] == "Panasonic")
        #expect(SSDPReply.parse("NOTIFY * HTTP/1.1\r\nLOCATION: x\r\n\r\n", from: "1.2.3.4") == nil)
        #expect(SSDPReply.parse("HTTP/1.1 404 Not Found\r\n\r\n", from: "1.2.3.4") == nil)
        let d = SSDPDiscovery(group: MultiThreadedEventLoopGroup.singleton, matchers: [.sony, .panasonic])
        let m = d.mSearch(SSDPDiscovery.sonyST)
        #expect(m.hasPrefix("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n"))
        #expect(m.contains("MAN: \"ssdp:discover\"\r\n") && m.contains("ST: urn:schemas-sony-com:service:ScalarWebAPI:1\r\n"))
        #expect(m.hasSuffix("\r\n\r\n"))
    }
}

extension SSDPDiscovery {
    static let sonyST = SSDPMatcher.sony.searchTargets[0]
    static let panasonicST = SSDPMatcher.panasonic.searchTargets[0]
}
