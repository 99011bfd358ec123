import Foundation
import NIOCore

/// A backchannel notification from the camera (bandit.md §5): one JSON object per line,
/// `{"<notification_id>": <payload>}`.
public enum BanditEvent: Sendable, Equatable, CustomStringConvertible {
    case recordingStarted
    /// `recording_stopped` carries the new video objects; their ids are kept.
    case recordingStopped(videoIDs: [String])
    case memoryLow(availableBytes: Int64)
    case memoryError
    case viewfinderStarted
    case viewfinderStopped
    case tagCreated(id: String)
    case photoCaptured(imageIDs: [String])
    case transcodingProgress(percent: Int)
    case wifiStopped
    case shuttingDown(batteryCritical: Bool, userInitiated: Bool, overTemperature: Bool)
    /// Any other notification, with its payload as compact JSON.
    case other(name: String, payload: String)

    public var description: String {
        switch self {
        case .recordingStarted: return "recording_started"
        case .recordingStopped(let ids): return "recording_stopped \(ids)"
        case .memoryLow(let b): return "memory_low (\(b) bytes available)"
        case .memoryError: return "memory_error"
        case .viewfinderStarted: return "viewfinder_started"
        case .viewfinderStopped: return "viewfinder_stopped"
        case .tagCreated(let id): return "tag_created \(id)"
        case .photoCaptured(let ids): return "photo_captured \(ids)"
        case .transcodingProgress(let p): return "transcoding_progress \(p)%"
        case .wifiStopped: return "wifi_stopped"
        case .shuttingDown(let b, let u, let o):
            return "shutting_down (battery_critical \(b), user_initiated \(u), overtemperature \(o))"
        case .other(let n, let p): return "\(n) \(p)"
        }
    }

    /// Decodes one notification line; a line with several keys gives several events. Unparseable
    /// text gives nothing.
    public static func parse(line: some Collection<UInt8>) -> [BanditEvent] {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { return [] }
        var out: [BanditEvent] = []
        // Android reads shutting_down's flags at the top level: accept both nestings.
        let flagKeys: Set<String> = ["battery_critical", "user_initiated", "overtemperature_shutdown"]
        for key in obj.keys.sorted() where !flagKeys.contains(key) {
            out.append(event(name: key, payload: obj[key] as Any, top: obj))
        }
        return out
    }

    private static func event(name: String, payload: Any, top: [String: Any]) -> BanditEvent {
        func ids(_ v: Any) -> [String] {
            ((v as? [Any]) ?? [v]).compactMap { ($0 as? [String: Any])?["id"].map { "\($0)" } }
        }
        let dict = payload as? [String: Any] ?? [:]
        switch name {
        case "recording_started": return .recordingStarted
        case "recording_stopped": return .recordingStopped(videoIDs: ids(payload))
        case "memory_low":
            return .memoryLow(availableBytes: (dict["available_bytes"] as? NSNumber)?.int64Value ?? -1)
        case "memory_error": return .memoryError
        case "viewfinder_started": return .viewfinderStarted
        case "viewfinder_stopped": return .viewfinderStopped
        case "tag_created": return .tagCreated(id: dict["id"].map { "\($0)" } ?? "")
        case "photo_captured": return .photoCaptured(imageIDs: ids(payload))
        case "transcoding_progress":
            return .transcodingProgress(percent: (dict["progress_pct"] as? NSNumber)?.intValue ?? 0)
        case "wifi_stopped": return .wifiStopped
        case "shutting_down":
            func flag(_ k: String) -> Bool { (dict[k] as? Bool) ?? (top[k] as? Bool) ?? false }
            return .shuttingDown(batteryCritical: flag("battery_critical"), userInitiated: flag("user_initiated"),
                                 overTemperature: flag("overtemperature_shutdown"))
        default:
            let text = (try? JSONSerialization.data(withJSONObject: payload, options: [.fragmentsAllowed, .sortedKeys]))
                .flatMap { String(data: $0, encoding: .utf8) } ?? "\(payload)"
            return .other(name: name, payload: text)
        }
    }
}

/// Reads the backchannel TCP stream: splits on `\n` (bounded line length), decodes each line and hands
/// the events over. Android-style tolerance: a line that is not yet valid JSON is kept and the next
/// line appended to it (up to the bound).
final class BanditBackchannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var pending: [UInt8] = []
    private var lineStart = 0
    private let onEvent: @Sendable (BanditEvent) -> Void
    private let onClose: @Sendable () -> Void
    static let maxLine = 256 * 1024

    init(onEvent: @escaping @Sendable (BanditEvent) -> Void, onClose: @escaping @Sendable () -> Void) {
        self.onEvent = onEvent
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buf = unwrapInboundIn(data)
        for byte in buf.readableBytesView {
            if byte == UInt8(ascii: "\n") {
                flushLine()
            } else if pending.count < Self.maxLine {
                pending.append(byte)
            }
        }
    }

    private func flushLine() {
        defer { lineStart = pending.count }
        let whole = BanditEvent.parse(line: pending)
        if !whole.isEmpty {
            pending.removeAll(keepingCapacity: true)
            for e in whole { onEvent(e) }
            return
        }
        // The newest line alone may be a whole object after junk: drop the junk.
        if lineStart > 0 {
            let last = BanditEvent.parse(line: pending[lineStart...])
            if !last.isEmpty {
                pending.removeAll(keepingCapacity: true)
                for e in last { onEvent(e) }
                return
            }
        }
        if pending.count >= Self.maxLine || pending.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x0A }) {
            pending.removeAll(keepingCapacity: true)
        } else {
            // Not (yet) a whole JSON object: keep it and join the next line (Android's tolerance).
            pending.append(UInt8(ascii: "\n"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        onClose()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
