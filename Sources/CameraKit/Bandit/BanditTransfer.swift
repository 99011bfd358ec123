import Foundation
import LiveViewCore
import NIOCore

extension BanditREST {
    /// The bytes of `GET /api/2/images/<id>/contents` (the photo as the camera stored it).
    func imageContents(_ id: String, maxBytes: Int) async throws -> [UInt8] {
        var c = client
        c.maxBodyBytes = maxBytes
        let target = try await apiPath("images/\(Self.pathComponent(id))/contents")
        let r: HTTPResponse
        do {
            r = try await c.request("GET", endpoint.url(target), timeout: .seconds(60))
        } catch {
            throw CameraControlError.unavailable("GET \(target): \(error)")
        }
        guard r.status == 200 else { throw CameraControlError.camera(code: r.status, message: "HTTP \(r.status) for GET \(target)") }
        return r.body
    }

    /// An id as one URL path component (ids come from the camera: never let one add a path).
    static func pathComponent(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_."))) ?? "_"
    }
}

/// Photos the Bandit announces on its backchannel (`photo_captured`, also for shots taken with the
/// button on the camera): each is fetched once, with retries, and handed to the image sink.
final class BanditTransfer: Sendable {
    private let sink = Mutex<CameraImageSink?>(nil)
    private let handled = Mutex(HandledImages())

    func setSink(_ s: @escaping CameraImageSink) { sink.withLock { $0 = s } }

    func photosCaptured(_ ids: [String], rest: BanditREST) async {
        guard let sink = sink.withLock({ $0 }) else { return }
        for id in ids {
            guard handled.withLock({ $0.claim(id) }) else { continue }
            var name = "\(id).JPG"
            if let obj = try? await rest.call("GET", "images/\(BanditREST.pathComponent(id))"),
               let path = obj["path"] as? String, let last = path.split(separator: "/").last {
                name = String(last)
            }
            do {
                let bytes = try await retrying { try await rest.imageContents(id, maxBytes: 256 * 1024 * 1024) }
                await sink(.image(CameraImage(name: name, bytes: bytes, fromBody: true)))
            } catch {
                await sink(.lost(name: name, reason: "\(error)"))
            }
        }
    }
}

extension BanditDriver: StillCapturing {
    /// The Bandit's REST API has no shutter (photos are taken with its button in image mode).
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        throw CameraControlError.notSupported("shutter (the Bandit takes photos with its button)")
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { transfer.setSink(sink) }
}
