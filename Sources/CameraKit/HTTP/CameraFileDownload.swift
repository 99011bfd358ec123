import NIOCore

extension CameraHTTP {
    /// A file from the camera streamed to `body` (bounded memory): an answer other than 200 is the
    /// camera's error, a transport failure `unavailable`; both named by `what` (`GET /DCIM/…`).
    /// `head` sees the headers of a 200 first.
    func download(_ url: HTTPURL, what: String, headers: [(String, String)] = [],
                  head: ([(String, String)]) throws -> Void = { _ in },
                  body: (ByteBuffer) async throws -> Void) async throws {
        do {
            try await stream(url, headers: headers, head: { status, answer in
                guard status == 200 else { throw CameraControlError.camera(code: status, message: "\(what): HTTP \(status)") }
                try head(answer)
            }, body: body)
        } catch let e as CameraControlError {
            throw e
        } catch {
            throw CameraControlError.unavailable("\(what): \(error)")
        }
    }
}
