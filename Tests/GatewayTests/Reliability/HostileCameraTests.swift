import Foundation
import Testing
import TestSupport

/// A camera whose answers are hostile — a 100 MB reply (sized, or ended by closing), 200 000 nested
/// JSON arrays, or silence after accepting the request — costs livegate bounded memory and no
/// crash; the camera shows as not streaming with a reason in the API, and the gateway keeps
/// answering. For every vendor that speaks HTTP (the PTP family's binary framing is fuzzed instead).
@Suite(.serialized, .tags(.integration)) struct HostileCameraTests {
    static func rssMiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    struct Camera: Decodable {
        let state: String
        let reason: String?
    }

    @Test(arguments: [("sony", "huge"), ("sony", "unsized"), ("sony", "nested"), ("sony", "silent"),
                      ("panasonic", "unsized"), ("panasonic", "silent"), ("olympus", "unsized"), ("olympus", "silent"),
                      ("bandit", "unsized"), ("bandit", "silent")])
    func hostileAnswersCostBoundedMemoryAndGiveAReason(vendor: String, mode: String) async throws {
        let camera = Process()
        camera.executableURL = URL(fileURLWithPath: Locations.program("python3")!)
        camera.arguments = [Locations.repository.appendingPathComponent("Tests/Scripts/hostile_camera.py").path, mode]
        let pipe = Pipe()
        camera.standardOutput = pipe
        camera.standardError = FileHandle.nullDevice
        try camera.run()
        defer { kill(camera.processIdentifier, SIGKILL) }
        let portLine = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        let port = try #require(Int(portLine.trimmingCharacters(in: .whitespacesAndNewlines)), "no port: \(portLine)")

        let gw = try GatewayProcess(["--camera", "\(vendor)://127.0.0.1:\(port)"])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        var peak = 0
        var cam: Camera?
        for _ in 0..<30 {
            peak = max(peak, Self.rssMiB(gw.process.processIdentifier))
            if let r = await httpGet("\(gw.api)/api/v1/cameras/cam0"), let c = try? JSONDecoder().decode(Camera.self, from: Data(r.body.utf8)) {
                cam = c
                if c.reason != nil { break }
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        for _ in 0..<10 {
            peak = max(peak, Self.rssMiB(gw.process.processIdentifier))
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(gw.process.isRunning, "livegate died: \(gw.output.suffix(2000))")
        #expect(cam?.state != "streaming" && cam?.reason != nil, "camera: \(String(describing: cam))")
        #expect(peak < 200, "livegate's memory reached \(peak) MiB")
        #expect(await httpGet("\(gw.api)/api/v1/cameras")?.status == 200, "the API stopped answering")
        print("hostile camera (\(vendor), \(mode)): peak RSS \(peak) MiB, reason: \(cam?.reason ?? "-")")
        await gw.stop()
    }
}
