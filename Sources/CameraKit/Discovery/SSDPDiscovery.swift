import LiveViewCore
public import NIOCore
import NIOPosix

/// A camera (or other UPnP device) found by SSDP, classified into a ready-to-use `--camera` URL.
public struct DiscoveredDevice: Sendable, Hashable, CustomStringConvertible {
    /// The vendor plug-in that recognised the device (`unknown` for anything else).
    public struct Kind: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Some other UPnP device.
        public static let unknown = Kind(rawValue: "unknown")
    }

    public var kind: Kind
    /// `sony://HOST:PORT`, `panasonic://HOST`, or nil for unknown devices.
    public var cameraURL: String?
    /// The SSDP LOCATION (device description URL).
    public var location: String
    /// The address the SSDP reply came from.
    public var address: String
    public var friendlyName: String?
    public var manufacturer: String?
    public var modelName: String?
    /// `modelNumber` (Panasonic: e.g. `DC-G9`), when given.
    public var modelNumber: String?
    public var udn: String?
    /// The SSDP `SERVER` and `ST` headers.
    public var server: String?
    public var searchTarget: String?
    /// Why the device could not be classified or described, if so.
    public var note: String?

    public var description: String {
        let name = friendlyName ?? modelName ?? "?"
        return "\(kind.rawValue)\t\(cameraURL ?? "-")\t\(name)\t\(location)"
    }
}

/// SSDP discovery of Wi-Fi cameras: M-SEARCH for Sony's ScalarWebAPI, Panasonic's MediaServer and
/// generic `ssdp:all`, replies collected for `timeout`, each LOCATION's device description fetched
/// (bounded in size and time) and classified.
///
/// The multicast address, port and the local bind address are injectable: tests send to a fake
/// responder on 127.0.0.1 instead of the real network.
public struct SSDPDiscovery: Sendable {
    public static let allST = "ssdp:all"

    public let group: any EventLoopGroup
    /// Where M-SEARCH goes (default the SSDP multicast group).
    public var targetHost = "239.255.255.250"
    public var targetPort = 1900
    /// Local address of the search socket (default every interface).
    public var bindHost = "0.0.0.0"
    /// The vendors' recognisers, tried in order on every device.
    public var matchers: [SSDPMatcher]
    /// Search targets: the matchers' own, then `ssdp:all`.
    public var searchTargets: [String]
    /// How long replies are collected.
    public var timeout: Duration = .seconds(3)
    /// Each M-SEARCH is sent this many times, `repeatInterval` apart (UDP is lossy).
    public var repeats = 2
    public var repeatInterval: Duration = .milliseconds(200)
    /// `MX` header (seconds the devices may wait before answering).
    public var mx = 1
    /// Bounds of one device-description fetch.
    public var maxDescriptionBytes = 256 * 1024
    public var descriptionTimeout: TimeAmount = .seconds(3)
    /// At most this many distinct LOCATIONs are fetched.
    public var maxDevices = 64

    public init(group: any EventLoopGroup, matchers: [SSDPMatcher]) {
        self.group = group
        self.matchers = matchers
        var targets: [String] = []
        for st in matchers.flatMap(\.searchTargets) + [Self.allST] where !targets.contains(st) { targets.append(st) }
        self.searchTargets = targets
    }

    /// The M-SEARCH request for one search target.
    public func mSearch(_ st: String) -> String {
        "M-SEARCH * HTTP/1.1\r\nHOST: \(targetHost):\(targetPort)\r\nMAN: \"ssdp:discover\"\r\nMX: \(mx)\r\nST: \(st)\r\n"
            + "USER-AGENT: livegate/1.0 UPnP/1.1\r\n\r\n"
    }

    /// Runs one discovery round and returns the devices found, cameras first.
    public func discover() async throws -> [DiscoveredDevice] {
        let replies = try await collectReplies()
        // One entry per LOCATION; the first reply's headers win.
        var seen: [String: SSDPReply] = [:]
        var order: [String] = []
        for r in replies {
            guard let loc = r.headers["location"], seen[loc] == nil else { continue }
            seen[loc] = r
            order.append(loc)
            if order.count >= maxDevices { break }
        }
        let http = CameraHTTP()
        var out: [DiscoveredDevice] = []
        for loc in order {
            let reply = seen[loc]!
            guard let url = HTTPURL(loc) else {
                out.append(classify(description: nil, location: loc, reply: reply, note: "LOCATION is not an http URL"))
                continue
            }
            var client = http
            client.maxBodyBytes = maxDescriptionBytes
            do {
                let resp = try await client.request("GET", url, timeout: descriptionTimeout)
                guard resp.status == 200 else {
                    out.append(classify(description: nil, location: loc, reply: reply, note: "HTTP \(resp.status)"))
                    continue
                }
                out.append(classify(description: String(decoding: resp.body, as: UTF8.self), location: loc, reply: reply))
            } catch {
                out.append(classify(description: nil, location: loc, reply: reply, note: "\(error)"))
            }
        }
        func rank(_ d: DiscoveredDevice) -> Int { d.kind == .unknown ? 1 : 0 }
        return out.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }

    /// Sends the M-SEARCHes and collects the replies for `timeout`.
    public func collectReplies() async throws -> [SSDPReply] {
        let collector = SSDPReplyCollector()
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 8192))
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(collector) }
            }
            .bind(host: bindHost, port: 0).get()
        defer { channel.close(promise: nil) }
        let target = try SocketAddress.makeAddressResolvingHost(targetHost, port: targetPort)
        let start = ContinuousClock.now
        for round in 0..<max(1, repeats) {
            if round > 0 { try await Task.sleep(for: repeatInterval) }
            for st in searchTargets {
                let buf = channel.allocator.buffer(string: mSearch(st))
                try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: buf))
            }
        }
        let remaining = timeout - (ContinuousClock.now - start)
        if remaining > .zero { try await Task.sleep(for: remaining) }
        return collector.replies
    }

    // MARK: Classification

    /// Classifies a device from its description (nil when it could not be fetched) and SSDP reply.
    public func classify(description: String?, location: String, reply: SSDPReply, note: String? = nil) -> DiscoveredDevice {
        Self.classify(description: description, location: location, reply: reply, note: note, matchers: matchers)
    }

    /// Classifies a device with `matchers` (the first that recognises it wins).
    public static func classify(description: String?, location: String, reply: SSDPReply, note: String? = nil,
                                matchers: [SSDPMatcher]) -> DiscoveredDevice {
        let leaves = description.map { PanasonicXML.scan($0).leafList } ?? []
        func leaf(_ name: String) -> String? {
            leaves.first { $0.0 == name || $0.0.hasSuffix(":" + name) }?.1
        }
        var d = DiscoveredDevice(
            kind: .unknown, cameraURL: nil, location: location, address: reply.address,
            friendlyName: leaf("friendlyName"), manufacturer: leaf("manufacturer"), modelName: leaf("modelName"),
            modelNumber: leaf("modelNumber"), udn: leaf("UDN"), server: reply.headers["server"],
            searchTarget: reply.headers["st"], note: note)
        let facts = SSDPDeviceFacts(device: d, description: description, leaves: leaves,
                                    locationHost: HTTPURL(location)?.host ?? reply.address)
        for m in matchers {
            if let url = m.match(facts) {
                d.kind = DiscoveredDevice.Kind(rawValue: m.vendor)
                d.cameraURL = url
                break
            }
        }
        return d
    }
}

/// What a vendor's recogniser sees of one SSDP device.
public struct SSDPDeviceFacts: Sendable {
    /// The device as described (kind still `unknown`).
    public var device: DiscoveredDevice
    /// The device description XML, when it could be fetched.
    public var description: String?
    /// Its leaf elements, `(name, text)` in document order (names may carry a namespace prefix).
    public var leaves: [(String, String)]
    /// The host of the SSDP LOCATION (or the reply's sender).
    public var locationHost: String

    /// `host` as it goes into a URL (IPv6 in brackets).
    public static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

/// A vendor's SSDP recogniser: its search targets and a function that gives the `--camera` URL
/// of a device it recognises (nil otherwise).
public struct SSDPMatcher: Sendable {
    public var vendor: String
    public var searchTargets: [String]
    public var match: @Sendable (SSDPDeviceFacts) -> String?

    public init(vendor: String, searchTargets: [String], match: @escaping @Sendable (SSDPDeviceFacts) -> String?) {
        self.vendor = vendor
        self.searchTargets = searchTargets
        self.match = match
    }
}

/// One SSDP reply: the sender and the headers (names lower-cased).
public struct SSDPReply: Sendable, Hashable {
    public var address: String
    public var headers: [String: String]

    public init(address: String, headers: [String: String]) {
        self.address = address
        self.headers = headers
    }

    /// Parses an `HTTP/1.1 200 OK` search reply (NOTIFYs and requests give nil).
    public static func parse(_ text: String, from address: String) -> SSDPReply? {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        guard let first = lines.first, first.uppercased().hasPrefix("HTTP/1."),
              first.split(separator: " ").dropFirst().first == "200" else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased().panaTrimmed(" \t")
            let value = String(line[line.index(after: colon)...]).panaTrimmed(" \t")
            if headers[name] == nil { headers[name] = value }
        }
        return SSDPReply(address: address, headers: headers)
    }
}

final class SSDPReplyCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let box = Mutex<[SSDPReply]>([])

    var replies: [SSDPReply] { box.withLock { $0 } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let env = unwrapInboundIn(data)
        let text = String(decoding: env.data.readableBytesView, as: UTF8.self)
        guard let reply = SSDPReply.parse(text, from: env.remoteAddress.ipAddress ?? "?") else { return }
        box.withLock { if $0.count < 1024 { $0.append(reply) } }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
