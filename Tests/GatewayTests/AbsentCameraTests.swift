import JPEGKit
import CameraEmulators
import Foundation
import Gateway
import LiveViewCore
import Logging
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// A TCP listener that accepts connections and never answers (a camera hanging mid-handshake).
final class SilentListener: Sendable {
    let channel: any Channel
    init() async throws {
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0).get()
    }
    var port: Int { channel.localAddress?.port ?? 0 }
    func close() async { try? await channel.close() }
}

@Suite(.serialized, .tags(.integration, .sanitized)) struct AbsentCameraTests {
    /// Three cameras: one live, one refusing connections, one accepting TCP and never answering.
    /// Every mount answers at once; the absent ones show the slate with a reason in the API; the
    /// live camera's clients are not held up.
    @Test(.enabled(if: EndToEndTests.ffmpegPresent, "ffmpeg is needed (deploy/install-deps.sh installs it)"))
    func absentCamerasShowTheSlateAndNeverBlockTheServer() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let emulator = SonyEmulator(port: 0, fps: 30, source: try TestPatternSource(width: 320, height: 240), group: group)
        let port = try await emulator.start()
        let silent = try await SilentListener()
        var options = GatewayOptions()
        options.cameras = [try CameraSpec.parse("live=sony://127.0.0.1:\(port)", index: 0),
                           try CameraSpec.parse("refused=sony://127.0.0.1:1", index: 1),
                           try CameraSpec.parse("hanging=sony://127.0.0.1:\(silent.port)", index: 2)]
        options.rtspPort = 0
        options.lingerSeconds = 1
        var logger = Logger(label: "absent")
        logger.logLevel = .error
        let gateway = Gateway(options: options, logger: logger)
        try await gateway.start()
        defer { Task { await gateway.stop(); await emulator.stop(); await silent.close() } }
        let base = "rtsp://127.0.0.1:\(gateway.rtspPort)"
        let ffmpeg = Locations.program("ffmpeg")!
        // Without stream probing, ffmpeg exits after one picture: RTSP handshake plus the first frame.
        for (id, raw) in [("refused", false), ("hanging", false), ("hanging", true), ("live", false), ("refused", true)] {
            let start = Date()
            let r = try runProcess(ffmpeg, ["-nostdin", "-v", "error", "-probesize", "32", "-analyzeduration", "0", "-rtsp_transport", "tcp",
                                            "-i", "\(base)/\(id)\(raw ? "/raw" : "")", "-frames:v", "1", "-f", "null", "-"], timeout: 20)
            let seconds = Date().timeIntervalSince(start)
            #expect(r.status == 0, "\(id)\(raw ? "/raw" : ""): \(r.output)")
            #expect(seconds < 3, "\(id)\(raw ? "/raw" : "") took \(seconds) s")
        }
        // The API tells why, and that the slate is showing.
        let cams = Dictionary(uniqueKeysWithValues: gateway.cameras.map { ($0.id, $0) })
        for id in ["refused", "hanging"] {
            let cam = try #require(cams[id])
            #expect(cam.driver.state != .streaming)
            #expect(gateway.branches(camera: id)["slate"] == true, "\(id): \(gateway.branches(camera: id))")
        }
        #expect(cams["refused"]?.driver.lastError?.lowercased().contains("refused") == true, "\(String(describing: cams["refused"]?.driver.lastError))")
        #expect(gateway.branches(camera: "live")["slate"] == false)
        let metrics = gateway.metricsText()
        #expect(metrics.contains(#"livegate_slate_showing{camera="hanging"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"livegate_slate_showing{camera="live"} 0"#))
    }
}
