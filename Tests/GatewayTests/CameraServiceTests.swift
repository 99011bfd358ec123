import CameraKit
import Foundation
@testable import Gateway
import Logging
import ServiceLifecycle
import Testing
import TestSupport

/// Each camera and its media graph are services of the application's group, as are the RTSP
/// server and HLS/WebRTC: a graceful shutdown stops the cameras and graphs before the services the
/// group was built with (the outputs, then the gateway that finishes recordings), and a camera
/// removed by a reload is stopped at once without ending the group (its service idles until the
/// group's shutdown reaches it, which then ends cleanly).
@Suite(.timeLimit(.minutes(2)), .tags(.integration, .sanitized)) struct CameraServiceTests {
    /// A service of the group, shut down after every camera service: what each camera's driver
    /// said when its turn came.
    struct Witness: Service {
        let gateway: Gateway
        let seen: Collected<[String: CameraState]?>
        func run() async throws {
            try? await gracefulShutdown()
            let states = Dictionary(uniqueKeysWithValues: gateway.cameras.map { ($0.id, $0.driver.state) })
            seen.withLock { $0 = states }
        }
    }

    /// A gateway (not started) with in-process emulated cameras, no HLS, a free RTSP port.
    static func gateway(_ cameras: [String], logLevel: Logger.Level) throws -> (Gateway, GatewayOptions, Logger) {
        var options = GatewayOptions()
        options.cameras = try cameras.enumerated().map { try CameraSpec.parse($0.element, index: $0.offset) }
        options.rtspPort = 0
        options.hls = false
        options.capturesDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("livegate-captures-\(UUID().uuidString)").path
        var logger = Logger(label: "services")
        logger.logLevel = logLevel
        return (Gateway(options: options, logger: logger), options, logger)
    }

    @Test func camerasStopFirstOnAGracefulShutdownAndARemovedCameraStopsWithoutEndingTheGroup() async throws {
        let (gateway, options, logger) = try Self.gateway(["a=emulator:sony", "b=emulator:sony"], logLevel: .warning)
        let seen = Collected<[String: CameraState]?>(nil)
        let group = ServiceGroup(configuration: .init(services: [.init(service: gateway)] + gateway.outputServices
                                                          + [.init(service: Witness(gateway: gateway, seen: seen))],
                                                      logger: logger))
        gateway.runCameras(in: group)
        try await gateway.start()
        let running = Task { try await group.run() }

        let streaming = await waitUntil(timeout: 20) { gateway.cameras.allSatisfy { $0.driver.state == .streaming } }
        #expect(streaming, "cameras: \(gateway.cameras.map { "\($0.id) \($0.driver.state)" })")

        // A reload that drops camera b stops it at once; its service idles and the group runs on.
        let b = try #require(gateway.cameras.first { $0.id == "b" })
        let a = try #require(options.cameras.first)
        gateway.reloadSource = { [a] }
        let result = try await gateway.reload()
        #expect(result.removed == ["b"] && result.unchanged == ["a"])
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.withLock { $0 } == nil, "removing a camera shut the whole group down")
        #expect(gateway.cameras.map(\.id) == ["a"] && gateway.cameras.first?.driver.state == .streaming)
        #expect(b.driver.state == .stopped)

        await group.triggerGracefulShutdown()
        try await running.value
        // Camera a's service had stopped its driver when the witness's turn came.
        #expect(seen.withLock { $0 } == ["a": .stopped], "states at the witness's shutdown: \(String(describing: seen.withLock { $0 }))")
        // Every part is a service, stopped in the group's reverse order: each camera, then its
        // media graph (b's service had stopped b when the reload removed it), then HLS/WebRTC, the
        // RTSP server and last the gateway.
        #expect(gateway.stoppedInOrder == ["camera b", "graph b", "camera a", "graph a", "http-media", "rtsp", "gateway"],
                "\(gateway.stoppedInOrder)")
    }

    /// A reload before the gateway has started (its outputs not up yet) or once it is stopping is
    /// refused with a 409 and the reason, and changes nothing.
    @Test func aReloadOutsideTheRunningTimeIsRefused() async throws {
        let (gateway, _, _) = try Self.gateway(["a=emulator:sony"], logLevel: .critical)
        let b = try CameraSpec.parse("b=emulator:sony", index: 1)
        gateway.reloadSource = { [b] }
        func refusal() async -> APIError? {
            do { _ = try await gateway.reload() } catch let e as APIError { return e } catch { return nil }
            return nil
        }
        let before = await refusal()
        #expect(before?.status == .conflict && before?.body.error.contains("starting or stopping") == true)
        #expect(gateway.cameras.isEmpty)
        try await gateway.start()
        #expect(await refusal() == nil, "a running gateway refused the reload")
        #expect(gateway.cameras.map(\.id) == ["b"])
        await gateway.stop()
        #expect(await refusal()?.status == .conflict)
    }
}
