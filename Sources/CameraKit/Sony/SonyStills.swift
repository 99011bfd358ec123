import Foundation
import LiveViewCore

/// Still capture over the Camera Remote API: `actHalfPressShutter` when focusing first is asked,
/// `setPostviewImageSize ["Original"]`, `actTakePicture` (with `awaitTakePicture` while the
/// camera answers 40403, a long exposure), then a plain GET of each postview URL. Shots taken on the
/// body arrive as postview URLs in getEvent index 5; each URL is fetched once, and URLs seen while a
/// capture of livegate's own is in flight wait until it has claimed its own.
final class SonyStills: Sendable {
    static let maxImageBytes = 256 * 1024 * 1024

    private struct State {
        var sink: CameraImageSink?
        var handled = HandledImages()
        var capturing = 0
        var deferred: [String] = []
    }
    private let state = Mutex(State())

    func setSink(_ sink: @escaping CameraImageSink) { state.withLock { $0.sink = sink } }

    /// Marks `url` as handled; false when it was already.
    private func claim(_ url: String) -> Bool { state.withLock { $0.handled.claim(url) } }

    /// The camera's file name of a postview URL.
    static func name(of url: String) -> String {
        let path = url.split(separator: "?").first.map(String.init) ?? url
        return path.split(separator: "/").last.map(String.init) ?? "image.jpg"
    }

    /// GET with retries; throws the last error.
    static func fetch(_ url: String, client: CameraHTTP) async throws -> [UInt8] {
        guard let target = HTTPURL(url) else { throw CameraControlError.camera(code: 6, message: "unusable postview URL \(url)") }
        return try await retrying {
            let r = try await client.request("GET", target, timeout: .seconds(60))
            guard r.status == 200 else {
                throw CameraControlError.camera(code: r.status, message: "postview GET \(target.target): HTTP \(r.status)")
            }
            return r.body
        }
    }

    /// A capture of livegate's own: the shot, then its pictures.
    func capture(rpc: SonyRPC, client: CameraHTTP, autofocus: Bool) async throws -> [CameraImage] {
        state.withLock { $0.capturing += 1 }
        defer { finishCapture(client: client) }
        // The postview is what livegate saves: ask for the original size, not a 2 MP copy (the
        // default is per model, sony.md §8.1). Bodies without the call keep theirs. Before the
        // half-press, so nothing comes between focus and release.
        _ = try? await rpc.call("setPostviewImageSize", ["Original"], timeout: .seconds(5))
        // Half-press first when asked (bodies without it answer 12 "No Such Method": shoot anyway).
        var halfPressed = false
        if autofocus {
            do {
                // "Not Available Now" (a body still switching modes) is waited out.
                _ = try await rpc.callWhenReady("actHalfPressShutter", timeout: .seconds(10), cameraNotReady: false)
                halfPressed = true
            } catch CameraControlError.camera(let code, _) where code == 12 || code == 40401 {
                halfPressed = false
            }
        }
        defer {
            if halfPressed { Task { _ = try? await rpc.call("cancelHalfPressShutter", timeout: .seconds(5)) } }
        }
        var result: [Any]
        do {
            // A body not ready yet (switching modes, still saving) answers 1 / 40401: waited out.
            result = try await rpc.callWhenReady("actTakePicture", timeout: .seconds(60))
        } catch CameraControlError.camera(let code, _) where code == 40403 {
            // A long exposure: ask again until the camera has the picture.
            var tries = 0
            while true {
                do {
                    result = try await rpc.call("awaitTakePicture", timeout: .seconds(60))
                    break
                } catch CameraControlError.camera(let c, _) where c == 40403 && tries < 30 {
                    tries += 1
                }
            }
        } catch CameraControlError.camera(let code, let message) where code == 40400 || code == 40401 || code == 1 {
            throw CameraControlError.refused("\(message) (\(code))")
        }
        let urls = (result.first as? [String]) ?? []
        guard !urls.isEmpty else {
            throw CameraControlError.camera(code: 6, message: "actTakePicture gave no picture URL: \(result)")
        }
        var images: [CameraImage] = []
        for url in urls where claim(url) {
            images.append(CameraImage(name: Self.name(of: url), bytes: try await Self.fetch(url, client: client), fromBody: false))
        }
        return images
    }

    private func finishCapture(client: CameraHTTP) {
        let waiting = state.withLock { s -> [String] in
            s.capturing -= 1
            guard s.capturing == 0 else { return [] }
            defer { s.deferred.removeAll() }
            return s.deferred
        }
        if !waiting.isEmpty { Task { await self.announced(waiting, client: client) } }
    }

    /// URLs from getEvent: fetched and handed to the sink, each once.
    func announced(_ urls: [String], client: CameraHTTP) async {
        let (sink, now) = state.withLock { s -> (CameraImageSink?, [String]) in
            if s.capturing > 0 {
                s.deferred.append(contentsOf: urls)
                return (s.sink, [])
            }
            return (s.sink, urls)
        }
        for url in now where claim(url) {
            do {
                let bytes = try await Self.fetch(url, client: client)
                await sink?(.image(CameraImage(name: Self.name(of: url), bytes: bytes, fromBody: true)))
            } catch {
                await sink?(.lost(name: Self.name(of: url), reason: "\(error)"))
            }
        }
    }
}

extension SonyDriver: StillCapturing {
    public func capture(autofocus: Bool) async throws -> [CameraImage] {
        guard await lifecycle.streaming(within: .seconds(5)) else { throw CameraControlError.unavailable("camera not connected") }
        if cardMode.isOpen {
            // The card is being shown (Contents Transfer): after the card work in progress, the
            // camera shoots again, then takes the picture.
            await cardMode.serial.withLock {
                if cardMode.inCardMode {
                    await leaveContentsTransfer()
                    _ = try? await rpc.callWhenReady("startRecMode", timeout: .seconds(5))
                }
            }
        }
        defer { cardCache.invalidate() }
        return try await stills.capture(rpc: rpc, client: stillClient, autofocus: autofocus)
    }

    public func setImageSink(_ sink: @escaping CameraImageSink) { stills.setSink(sink) }
}
