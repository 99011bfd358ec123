import JPEGKit
import CameraEmulators
import CameraKit
import Foundation
@testable import Gateway
import Hummingbird
import HummingbirdTesting
import LiveViewCore
import Logging
import MediaKit
import Vendors
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// A control model around one real Sony driver talking to the real emulator over loopback.
final class TestModel: ControlModel, @unchecked Sendable {
    let cameras: [CameraRuntime]
    let emulator: SonyEmulator
    let hlsRoot: String?

    init(hlsRoot: String? = nil) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        emulator = SonyEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        let port = try await emulator.start()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let driver = SonyDriver(endpoint: HTTPURL(host: "127.0.0.1", port: port, target: "/sony/camera"), group: group, logger: logger)
        let cam = CameraRuntime(id: "cam0", index: 0, url: "sony://127.0.0.1:\(port)", driver: driver, hub: FrameHub(),
                                vendor: SonyRemoteVendor())
        driver.start(hub: cam.hub)
        cameras = [cam]
        self.hlsRoot = hlsRoot
    }

    func metricsText() -> String {
        "livegate_frames_received_total{camera=\"cam0\"} \(cameras[0].driver.stats.frames)\n"
    }

    func urls(for camera: CameraRuntime) -> [String: String] { ["rtsp": "rtsp://127.0.0.1:8554/\(camera.id)"] }

    func hlsRequest(camera: String, playlist: Bool) async -> HLSOutput.Readiness { .ready }

    func branches(camera: String) -> [String: Bool] { [:] }

    /// Property setters the camera received (the session's own setLiveviewFrameInfo is not one).
    var propertySets: [String] {
        emulator.calls.map(\.method).filter { $0.hasPrefix("set") && $0 != "setLiveviewFrameInfo" }
    }

    func waitForFrames() async {
        for _ in 0..<200 where cameras[0].hub.published < 3 { try? await Task.sleep(for: .milliseconds(20)) }
    }

    func shutdown() async {
        await cameras[0].driver.stop()
        await emulator.stop()
    }
}

func jsonBody(_ response: TestResponse) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct ControlAPITests {
    @Test func listsCamerasWithState() async throws {
        let model = try await TestModel()
        await model.waitForFrames()
        let app = Application(router: ControlAPI.buildRouter(model: model))
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras", method: .get) { r in
                #expect(r.status == .ok)
                let list = jsonBody(r) as? [[String: Any]]
                #expect(list?.count == 1)
                #expect(list?.first?["id"] as? String == "cam0")
                #expect(list?.first?["vendor"] as? String == "sony")
                #expect((list?.first?["frames"] as? Int ?? 0) > 0)
                #expect(list?.first?["width"] as? Int == 320)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0", method: .get) { r in
                #expect(r.status == .ok)
                let o = jsonBody(r) as? [String: Any]
                #expect(o?["state"] as? String == "streaming")
                #expect(o?["drops"] as? Int == 0)
            }
            try await client.execute(uri: "/api/v1/cameras/nope", method: .get) { r in
                #expect(r.status == .notFound)
                #expect((jsonBody(r) as? [String: Any])?["error"] as? String != nil)
            }
        }
        await model.shutdown()
    }

    @Test func propertiesAndSetting() async throws {
        let model = try await TestModel()
        let app = Application(router: ControlAPI.buildRouter(model: model))
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras/cam0/properties", method: .get) { r in
                #expect(r.status == .ok)
                let list = jsonBody(r) as? [[String: Any]] ?? []
                #expect(Set(list.compactMap { $0["name"] as? String }) == Set(PropertyName.allCases.map(\.rawValue)))
                let wb = list.first { $0["name"] as? String == "whiteBalance" }
                #expect(wb?["value"] as? String == "auto")
                #expect((wb?["choices"] as? [String])?.contains("tungsten") == true)
                #expect(wb?["writable"] as? Bool == true)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/whiteBalance", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": "tungsten"}"#)) { r in
                #expect(r.status == .ok)
            }
            #expect(model.emulator.calls.filter { $0.method == "setWhiteBalance" }.map(\.params) == [#"["Incandescent",false,-1]"#])
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/iso", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": 400}"#)) { r in
                #expect(r.status == .ok)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/iso", method: .get) { r in
                #expect((jsonBody(r) as? [String: Any])?["value"] as? Int == 400)
            }
            // A value the camera does not offer: 400 listing the valid ones, nothing sent.
            let setsBefore = model.propertySets.count
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/iso", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": 123}"#)) { r in
                #expect(r.status == .badRequest)
                let o = jsonBody(r) as? [String: Any]
                #expect((o?["valid"] as? [String])?.contains("400") == true)
                #expect((o?["error"] as? String)?.contains("123") == true)
            }
            #expect(model.propertySets.count == setsBefore)
        }
        await model.shutdown()
    }

    @Test func hostileRequestsGetClearErrors() async throws {
        let model = try await TestModel()
        let app = Application(router: ControlAPI.buildRouter(model: model))
        try await app.test(.router) { client in
            for body in ["not json", "[1,2]", "{}", #"{"value": true}"#, #"{"value": {"a": 1}}"#, #"{"value": ""}"#] {
                try await client.execute(uri: "/api/v1/cameras/cam0/properties/iso", method: .put, headers: [.contentType: "application/json"], body: ByteBuffer(string: body)) { r in
                    #expect(r.status == .badRequest, "body \(body)")
                }
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/iso", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(repeating: 0x20, count: 100_000)) { r in
                #expect(r.status == .contentTooLarge)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/colour", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": 1}"#)) { r in
                #expect(r.status == .notFound)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/focus", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"x": "a"}"#)) { r in
                #expect(r.status == .badRequest)
            }
            try await client.execute(uri: "/hls/cam0/..%2F..%2Fetc%2Fpasswd", method: .get) { r in
                #expect(r.status == .notFound)
            }
            try await client.execute(uri: "/hls/cam0/index.m3u8", method: .get) { r in
                #expect(r.status == .notFound)
            }
        }
        #expect(model.propertySets.isEmpty)
        await model.shutdown()
    }

    @Test func networkFailuresReachClientsInWordsWithoutInternalErrorTexts() {
        let nio = "startLiveview: connect failed: 127.0.0.1:41009: Connection errors: SingleConnectionFailure(target: "
            + "[IPv4]127.0.0.1/127.0.0.1:41009, error: connection reset (error set): Connection refused) (errno: 111))"
        #expect(ControlAPI.plain(nio) == "the camera refused the connection (is it on, and in remote mode?)")
        #expect(ControlAPI.plain("read failed: IOError: errno 110, timed out") == "the camera does not answer (timeout)")
        #expect(ControlAPI.plain("NIOCore.ChannelError.ioOnClosedChannel") == "the camera closed the connection")
        #expect(ControlAPI.plain("camera not connected") == "camera not connected")
    }

    @Test func cameraErrorIs502WithTheCode() async throws {
        let model = try await TestModel()
        let app = Application(router: ControlAPI.buildRouter(model: model))
        // The emulator accepts only 2500…9900 K in steps of 100: 5550K is refused before the camera
        // (400 naming the range); a camera that refuses what it offered gives 502 with its code.
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/whiteBalance", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": "5550K"}"#)) { r in
                #expect(r.status == .badRequest)
                #expect((jsonBody(r) as? [String: Any])?["valid"] as? [String] == ["2500K…9900K in steps of 100K"])
            }
            model.emulator.refuseSettings(code: 3, message: "Illegal Argument")
            try await client.execute(uri: "/api/v1/cameras/cam0/properties/whiteBalance", method: .put, headers: [.contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"value": "5500K"}"#)) { r in
                #expect(r.status == .badGateway)
                #expect((jsonBody(r) as? [String: Any])?["cameraCode"] as? Int == 3)
            }
        }
        await model.shutdown()
    }

    @Test func touchFocusTranslatesPixelsToTheCameraSpace() async throws {
        let model = try await TestModel()
        await model.waitForFrames()
        let app = Application(router: ControlAPI.buildRouter(model: model))
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/v1/cameras/cam0/focus", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"x": 80, "y": 180}"#)) { r in
                #expect(r.status == .ok)
            }
            try await client.execute(uri: "/api/v1/cameras/cam0/focus", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"x": 9999, "y": 1}"#)) { r in
                #expect(r.status == .badRequest)
            }
        }
        #expect(model.emulator.calls.filter { $0.method == "setTouchAFPosition" }.map(\.params) == ["[25,75]"])
        await model.shutdown()
    }

    @Test func metricsAndHLSFiles() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livegate-hls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("cam0"), withIntermediateDirectories: true)
        try Data("#EXTM3U\n".utf8).write(to: dir.appendingPathComponent("cam0/index.m3u8"))
        let model = try await TestModel(hlsRoot: dir.path)
        let app = Application(router: ControlAPI.buildRouter(model: model))
        try await app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { r in
                #expect(r.status == .ok)
                #expect(String(buffer: r.body).contains("livegate_frames_received_total{camera=\"cam0\"}"))
            }
            try await client.execute(uri: "/hls/cam0/index.m3u8", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.cacheControl] == "no-cache")
                #expect(String(buffer: r.body) == "#EXTM3U\n")
            }
        }
        await model.shutdown()
        try? FileManager.default.removeItem(at: dir)
    }
}
