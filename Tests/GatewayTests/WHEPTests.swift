import Foundation
import Gateway
import MediaKit
import Testing
import TestSupport

/// WebRTC over WHEP with an independent client (aiortc, from requirements-test.txt) and curl:
/// Sony emulator → driver → hub → the camera's one H.264 encoder → webrtcbin → aiortc.
@Suite(.serialized, .tags(.integration)) struct WHEPTests {
    static let client = Locations.repository.appendingPathComponent("Tests/Scripts/whep_client.py").path
    static let usable: Bool = {
        guard let python = Locations.program("python3"), Locations.program("curl") != nil, GStreamerRuntime.hasElement("webrtcbin"),
              GStreamerRuntime.hasElement("nicesrc") else { return false }
        return (try? runProcess(python, ["-c", "import aiortc"], timeout: 60).status) == 0
    }()

    static func runClient(_ url: String, _ extra: [String] = []) throws -> [String: Any] {
        let r = try runProcess(Locations.program("python3")!, [client, url] + extra, timeout: 60)
        let line = r.output.split(separator: "\n").last { $0.hasPrefix("{") }
        guard let line, let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CLIFailure("whep_client.py printed no result: \(r.output.suffix(1500))")
        }
        return obj
    }

    static func sessions(_ gateway: Gateway) -> Int { metric(gateway, "livegate_output_clients") }

    /// A `webrtc` output series of cam0 in `/metrics` (-1 when absent).
    static func metric(_ gateway: Gateway, _ name: String) -> Int {
        let line = gateway.metricsText().split(separator: "\n").first { $0.hasPrefix("\(name){camera=\"cam0\",output=\"webrtc\"}") }
        return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) } ?? -1
    }

    static func post(_ url: String, file: String, type: String = "application/sdp") throws -> String {
        try runProcess(Locations.program("curl")!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: \(type)",
                                        "--data-binary", "@\(file)", url], timeout: 30).output
    }

    @Test(.enabled(if: usable, "needs python3 with aiortc (pip install -r requirements-test.txt), curl, webrtcbin and libnice (deploy/install-deps.sh)"))
    func anIndependentClientWatchesAndLeaves() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "whep")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let url = "\(base)/whep/cam0"

        let r = try Self.runClient(url, ["--seconds", "3", "--pli-after", "1"])
        #expect(r["status"] as? Int == 201, "\(r)")
        #expect((r["content_type"] as? String)?.hasPrefix("application/sdp") == true)
        #expect((r["location"] as? String)?.contains("/whep/cam0/sessions/") == true)
        let first = try #require(r["first_frame_ms"] as? Int, "no frame: \(r)")
        #expect(first <= 1000, "first frame \(first) ms after the answer")
        #expect(r["width"] as? Int == 320 && r["height"] as? Int == 240)
        // Every frame of the 30 fps camera arrived: frames per second of the stream's own RTP time (the
        // client's wall-clock rate is printed, not asserted).
        print("WHEP client: \(r["fps"] ?? "?") fps by the client's clock, \(r["fps_stream"] ?? "?") in RTP time")
        #expect((r["fps_stream"] as? Double ?? 0) >= 28, "frames \(r["frames"] ?? "?"), \(r["fps_stream"] ?? "?") per second of RTP time")
        #expect(r["delete"] as? Int == 200 && r["delete_again"] as? Int == 404)
        #expect(Self.sessions(gateway) == 0)
        // RTCP PLI sent 100 ms after a key frame: the next key frame comes long before the encoder's
        // 1 s grid would bring one (rate limit 250 ms + the 100 ms the session's watcher polls).
        #expect(r["pli_sent"] as? Bool == true, "\(r)")
        #expect(Self.metric(gateway, "livegate_output_keyframe_requests_total") >= 1, "the PLI was not seen")
        let pliKey = try #require(r["pli_keyframe_ms"] as? Int, "no key frame after the PLI: \(r)")
        #expect(pliKey <= 650, "key frame \(pliKey) ms after the PLI")

        // A peer that vanishes without DELETE: its session ends once it stops sending RTCP.
        let v = try Self.runClient(url, ["--seconds", "2", "--vanish"])
        #expect(v["status"] as? Int == 201)
        #expect(Self.sessions(gateway) == 1)
        let gone = await waitUntil(timeout: 25) { Self.sessions(gateway) == 0 }
        #expect(gone, "the vanished peer's session is still there")

        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }

    @Test(.enabled(if: usable, "needs python3 with aiortc (pip install -r requirements-test.txt), curl, webrtcbin and libnice (deploy/install-deps.sh)"))
    func hostileOffersGetClearErrorsAndFreeEverything() async throws {
        let (emulator, gateway) = try await startSonyGateway(fps: 30, label: "whep-hostile")
        let (server, base) = try await startAPIServer(gateway)
        defer { server.cancel() }
        let url = "\(base)/whep/cam0"
        let dir = try temporaryDirectory("livegate-whep")
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ text: String) throws -> String {
            let p = dir.appendingPathComponent(name).path
            try text.write(toFile: p, atomically: true, encoding: .utf8)
            return p
        }
        let garbage = try file("garbage.sdp", "hello, I am not SDP")
        let vp8 = try file("vp8.sdp", "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n")
        let audio = try file("audio.sdp", "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n")
        let big = try file("big.sdp", "v=0\r\n" + String(repeating: "a=x\r\n", count: 250_000))
        #expect(try Self.post(url, file: garbage) == "400")
        #expect(try Self.post(url, file: audio) == "400")
        #expect(try Self.post(url, file: vp8) == "406")
        #expect(try Self.post(url, file: big) == "413")
        #expect(try Self.post(url, file: vp8, type: "application/json") == "415")
        #expect(try Self.post("\(base)/whep/cam9", file: vp8) == "404")
        let patch = try runProcess(Locations.program("curl")!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "\(url)/sessions/x"], timeout: 30)
        #expect(patch.output == "405")
        let delete = try runProcess(Locations.program("curl")!, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "\(url)/sessions/x"], timeout: 30)
        #expect(delete.output == "404")

        // Offers from a client that is gone: at most 16 sessions, then 503; all of them end.
        let offer = try runProcess(Locations.program("python3")!, [Self.client, url, "--offer-only"], timeout: 60).output
        let offerFile = try file("offer.sdp", offer)
        var codes: [String] = []
        for _ in 0..<20 { codes.append(try Self.post(url, file: offerFile)) }
        #expect(codes.filter { $0 == "201" }.count == 16 && codes.suffix(4).allSatisfy { $0 == "503" }, "\(codes)")
        let freed = await waitUntil(timeout: 20) { Self.sessions(gateway) == 0 }
        #expect(freed, "\(Self.sessions(gateway)) sessions left of offers whose peer never answered")

        // The same 20 offers at once: offers still negotiating count too, so never more than 16.
        let burst = try runProcess(Locations.program("bash")!, ["-c", "seq 20 | xargs -P 20 -I{} curl -s -o /dev/null -w '%{http_code}\\n' "
                                                    + "-H 'Content-Type: application/sdp' --data-binary @\(offerFile) \(url)"], timeout: 60)
        let burstCodes = burst.output.split(separator: "\n").map(String.init)
        #expect(burstCodes.count == 20 && burstCodes.filter { $0 == "201" }.count <= 16
                && burstCodes.allSatisfy { $0 == "201" || $0 == "503" }, "\(burstCodes)")
        let drained = await waitUntil(timeout: 20) { Self.sessions(gateway) == 0 }
        #expect(drained, "\(Self.sessions(gateway)) sessions left after the burst")

        server.cancel()
        await gateway.stop()
        await emulator.stop()
    }
}

struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
