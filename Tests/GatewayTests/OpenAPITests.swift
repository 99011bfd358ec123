import Foundation
import Testing
import TestSupport

/// docs/openapi.yaml is what the gateway serves and what it does: the document served at
/// /api/v1/openapi.yaml is the file, the file is valid OpenAPI 3.1, and real answers of a running
/// `livegate run` (statuses, JSON bodies, event data) match its schemas.
@Suite(.serialized, .tags(.integration)) struct OpenAPITests {
    static let document = Locations.repository.appendingPathComponent("docs/openapi.yaml")

    @Test func theServedDocumentIsTheFileAndRealAnswersMatchIt() async throws {
        let gw = try GatewayProcess([])
        defer { if gw.process.isRunning { kill(gw.process.processIdentifier, SIGKILL) } }
        #expect(await gw.waitReady(), "livegate did not start: \(gw.output)")
        // Frames first, so that snapshots and AF events exist.
        var snapshot = 0
        for _ in 0..<40 where snapshot != 200 {
            let r = try await runProcessAsync(Locations.program("curl")!, ["-s", "-o", "/dev/null", "-w", "%{http_code}",
                                                               "\(gw.api)/snapshot/cam0.jpg"], timeout: 15)
            snapshot = Int(r.output) ?? 0
            if snapshot != 200 { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(snapshot == 200, "no frame within 20 s")

        let served = try #require(await httpGet("\(gw.api)/api/v1/openapi.yaml"))
        let file = try String(contentsOf: Self.document, encoding: .utf8)
        #expect(served.status == 200)
        #expect(served.body + "\n" == file || served.body == file,
                "the served document differs from docs/openapi.yaml: run `make openapi`")

        let check = try await runProcessAsync(Locations.program("python3")!, [
            Locations.repository.appendingPathComponent("Tests/Scripts/openapi_check.py").path, gw.api, Self.document.path, "cam0",
        ], timeout: 120)
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("events checked"), "\(check.output)")
        await gw.stop()
    }
}
