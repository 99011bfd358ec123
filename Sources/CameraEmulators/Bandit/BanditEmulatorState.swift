import Foundation
import LiveViewCore
import NIOCore
import NIOHTTP1

/// The emulated Bandit's settings, status and REST dispatch (bandit.md §2). Thread-safe.
final class BanditEmulatorState: Sendable {
    struct Camera {
        var serialNumber = "EMU-BANDIT-0001"
        var bleCameraID = "5c1a93e0"
        var bleVerificationCode = "20161234"
        var bools: [String: Bool] = [
            "gnss_enabled": true, "sound_enabled": true, "lights_enabled": true, "image_rotation_enabled": false,
            "external_microphone_enabled": false, "video_stabilisation_enabled": false,
        ]
        var metering = "normal"
        var whiteBalance = "auto"
    }

    struct Scene {
        var mode = "auto"
        var values: [String: Int] = ["brightness": 50, "contrast": 50, "hue": 50, "saturation": 50, "sharpness": 50]
    }

    struct Video {
        var mode = "normal"
        var resolution = "1080p"
        var framerate = 30
        var fov = "wide"
        var slowMotionRate = 1
        var intervalSecs = 0.0
    }

    /// A photo mode (`settings.image`).
    struct Image: Equatable {
        var mode = "single"
        var resolution = "16MP"
        var count = 10
    }

    struct Values {
        var camera = Camera()
        var scene = Scene()
        var video = Video()
        /// Set while the camera takes photos (image type), nil in video type.
        var image: Image?
        /// The image mode `PUT settings/image` switches back to.
        var lastImage = Image()
        var recording = false
        var recordingStartNanos: UInt64 = 0
        var recordedFrames = 0
        var viewfinderActive = false
        var viewfinderPort = 0
        var viewfinderDestination: SocketAddress?
        var videos = 0
    }

    static let whiteBalanceModes = ["auto", "7500K", "5000K", "4000K", "3000K", "2000K"]
    static let meteringModes = ["center", "normal", "wide"]
    static let sceneModes = ["auto", "bright", "night", "underwater"]

    /// Every (mode, resolution, framerate, fov) the emulated camera records.
    static var videoCapabilities: [[String: Any]] {
        var out: [[String: Any]] = []
        func add(_ mode: String, _ res: String, _ fps: Int, _ fovs: [String], rate: Int = 1, interval: Double = 0) {
            for fov in fovs {
                out.append(["mode": mode, "resolution": res, "framerate_fps": fps, "fov": fov,
                            "slow_motion_rate": rate, "interval_secs": interval])
            }
        }
        add("normal", "4k", 15, ["wide"])
        add("normal", "2.7k", 30, ["wide"])
        add("normal", "1080p", 30, ["normal", "wide"])
        add("normal", "1080p", 60, ["normal", "wide"])
        add("normal", "720p", 60, ["normal", "wide"])
        add("normal", "720p", 120, ["wide"])
        add("normal", "wvga", 180, ["wide"])
        add("slow_motion", "1080p", 60, ["wide"], rate: 2)
        add("slow_motion", "720p", 120, ["wide"], rate: 4)
        add("slow_motion", "wvga", 180, ["wide"], rate: 6)
        add("time_lapse", "4k", 15, ["wide"], interval: 1)
        add("night_lapse", "4k", 15, ["wide"], interval: 5)
        return out
    }

    static var imageCapabilities: [[String: Any]] {
        [
            ["mode": "single", "resolution": "16MP"], ["mode": "single", "resolution": "8MP"],
            ["mode": "burst", "resolution": "8MP", "burst_count": 10, "count": 10],
            ["mode": "continuous", "resolution": "8MP", "interval_secs": 1],
        ]
    }

    let values = Mutex(Values())
    /// Prompt, or slow and moody like a real body (EmulatorMood.moody): after a recording stops
    /// (the file is finalised) and after a switch between video and photo type, 503 to everything
    /// but status, settings and version for `mood.modeSwitch`; the viewfinder's first frame
    /// `firstFrameDelay` after it starts; every n-th settings write 503 once; slow listings.
    let mood: EmulatorMood
    private let moodState = Mutex<(busyUntil: UInt64, busyWhy: String, writes: Int)>((0, "", 0))

    init(mood: EmulatorMood = .prompt) {
        self.mood = mood
    }

    /// Starts a moody body's busy spell (nothing for a prompt one).
    private func becomeBusy(_ why: String) {
        guard mood.modeSwitch > .zero else { return }
        let until = MonotonicClock.nanos() + mood.modeSwitchNanos
        moodState.withLock {
            $0.busyUntil = until
            $0.busyWhy = why
        }
    }

    /// The 503 a moody body answers now to `method path`, or nil.
    private func moodyRefusal(_ method: String, _ path: String) -> Reply? {
        guard mood.isMoody else { return nil }
        let now = MonotonicClock.nanos()
        let reads = ["/api/version", "/api/2/status", "/api/2/settings"]
        if method == "GET" && reads.contains(path) { return nil }
        if let why = moodState.withLock({ now < $0.busyUntil ? $0.busyWhy : nil }) {
            return .error(.serviceUnavailable, "busy: \(why)")
        }
        let write = (method == "PUT" && (path == "/api/2/settings/camera" || path == "/api/2/settings/scene"))
            || (method == "POST" && (path == "/api/2/settings/video" || path == "/api/2/settings/image"))
        if write, moodState.withLock({ mood.refusesSet(counting: &$0.writes) }) { return .error(.serviceUnavailable, "busy") }
        return nil
    }
    private let log = Mutex<[(method: String, path: String, body: String)]>([])
    let backchannelPort = Atomic<Int>(0)
    /// In image type, `POST record` takes photos (true) or, the other reading of the notes, starts
    /// a recording as in video type (false).
    let recordIsShutter = Atomic<Bool>(true)
    /// A burst's photos in one `photo_captured` (true) or one notification each.
    let burstInOneNotification = Atomic<Bool>(true)
    /// Photos on the card: id, path, bytes.
    let images = Mutex<[(id: String, path: String, jpeg: [UInt8])]>([])

    /// Stores photo number n (from 1, made by `jpeg(n)` under the lock, so two shots at once get
    /// numbers and bytes of their own); returns its image object (bandit.md §5).
    func addImage(_ make: (Int) -> [UInt8]) -> [String: Any] {
        images.withLock { list -> [String: Any] in
            let n = list.count + 1
            let id = String(format: "IMG%05X", n)
            let path = "DCIM/100TTCAM/TT\(String(format: "%05d", n)).JPG"
            list.append((id, path, make(n)))
            return Self.imageJSON(id: id, path: path)
        }
    }

    static func imageJSON(id: String, path: String) -> [String: Any] {
        ["id": id, "path": path, "created": "2016-05-01T12:00:00Z", "lat_deg": 0.0, "lon_deg": 0.0, "mode": "normal",
         "resolution": "16MP", "aspect_ratio": "4:3", "is_valid": true]
    }

    var requests: [(method: String, path: String, body: String)] { log.withLock { $0 } }

    /// What the REST handler answers.
    struct Reply {
        var status: HTTPResponseStatus
        var body: [UInt8]
        static func json(_ o: Any, _ status: HTTPResponseStatus = .ok) -> Reply {
            let d = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data("{}".utf8)
            return Reply(status: status, body: Array(d))
        }
        static let empty = Reply(status: .ok, body: [])
        static func error(_ status: HTTPResponseStatus, _ message: String) -> Reply {
            json(["error": message], status)
        }
    }

    /// Side effects a request asks the emulator to carry out (outside the lock).
    enum Effect {
        case notify(name: String, payload: Any)
        /// Take `count` photos and announce them in one `photo_captured`.
        case shoot(count: Int)
    }

    /// Handles one request. `peer` is the HTTP client's address (the viewfinder's destination IP).
    func handle(method: String, uri: String, body: [UInt8], peer: SocketAddress?) -> (Reply, [Effect]) {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        log.withLock { $0.append((method, path, String(decoding: body, as: UTF8.self))) }
        var obj: [String: Any] = [:]
        if !body.isEmpty, !body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D }) {
            guard let o = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                return (.error(.badRequest, "body is not a JSON object"), [])
            }
            obj = o
        }
        if let refusal = moodyRefusal(method, path) { return (refusal, []) }
        switch (method, path) {
        case ("GET", "/api/version"):
            return (.json(["version": "2", "revision": "1", "supported_versions": ["2"]]), [])
        case ("GET", "/api/2/status"):
            return (.json(status()), [])
        case ("GET", "/api/2/settings"):
            return (.json(settings()), [])
        case ("GET", "/api/2/capabilities/recording"):
            return (.json(["video": Self.videoCapabilities, "image": Self.imageCapabilities]), [])
        case ("PUT", "/api/2/settings/camera"):
            return (putCamera(obj), [])
        case ("PUT", "/api/2/settings/scene"):
            return (putScene(obj), [])
        case ("POST", "/api/2/settings/video"):
            return (postVideo(obj), [])
        case ("PUT", "/api/2/settings/video"):
            // "Switch to video mode with last used settings".
            guard !values.withLock({ $0.recording }) else { return (.error(.conflict, "recording"), []) }
            let (video, switched) = values.withLock { v in
                defer { v.image = nil }
                return (v.video, v.image != nil)
            }
            if switched { becomeBusy("switching to video") }
            return (.json(videoJSON(video)), [])
        case ("PUT", "/api/2/settings/image"):
            // "Switch to image mode with last used settings".
            guard !values.withLock({ $0.recording }) else { return (.error(.conflict, "recording"), []) }
            let (image, switched) = values.withLock { v in
                defer { v.image = v.lastImage }
                return (v.lastImage, v.image == nil)
            }
            if switched { becomeBusy("switching to photos") }
            return (.json(Self.imageModeJSON(image)), [])
        case ("POST", "/api/2/settings/image"):
            return (postImage(obj), [])
        case ("POST", "/api/2/viewfinder"):
            return postViewfinder(obj, peer: peer)
        case ("POST", "/api/2/record"):
            return postRecord(obj)
        case ("GET", "/api/2/images"):
            let all = images.withLock { $0.map { Self.imageJSON(id: $0.id, path: $0.path) } }
            return (.json(["total": all.count, "items": all]), [])
        case ("GET", "/api/2/videos"):
            // Recordings are counted but not kept as files: the card lists none.
            return (.json(["total": 0, "items": [Any]()]), [])
        case ("GET", _) where path.hasPrefix("/api/2/images/"):
            let rest = path.dropFirst("/api/2/images/".count).split(separator: "/", omittingEmptySubsequences: false)
            guard let id = rest.first.map(String.init), let image = images.withLock({ $0.first { $0.id == id } }) else {
                return (.error(.notFound, "no such image"), [])
            }
            if rest.count == 1 { return (.json(Self.imageJSON(id: image.id, path: image.path)), []) }
            // The emulator's thumbnail is the photo itself.
            if rest.count == 2 && (rest[1] == "contents" || rest[1] == "thumb") { return (Reply(status: .ok, body: image.jpeg), []) }
            return (.error(.notFound, "no such resource: \(path)"), [])
        case ("GET", _), ("POST", _), ("PUT", _), ("DELETE", _):
            return (.error(.notFound, "no such resource: \(path)"), [])
        default:
            return (.error(.methodNotAllowed, "method \(method)"), [])
        }
    }

    func status() -> [String: Any] {
        values.withLock { v in
            let secs = v.recording ? Int(MonotonicClock.elapsed(from: v.recordingStartNanos, to: MonotonicClock.nanos()) / 1_000_000_000) : 0
            return [
                "recording_active": v.recording, "recording_secs": secs, "recoding_secs": secs,
                "battery_level_pct": 87, "battery_charging": false, "gnss_fix": false, "gnss_strength_pct": 0,
                "heart_rate_sensor_connected": false, "cadence_sensor_connected": false, "preview_active": false,
                "viewfinder_active": v.viewfinderActive, "viewfinder_streaming_port": v.viewfinderPort,
                "backchannel_port": backchannelPort.load(ordering: .relaxed), "memory_free_bytes": Int64(24) << 30,
                "remaining_time_secs": 14_400 - secs, "remaining_photos": 2_000, "transcoding_active": false,
                "transcoding_progress": 0,
            ]
        }
    }

    func settings() -> [String: Any] {
        values.withLock { v in
            var camera: [String: Any] = [
                "serial_number": v.camera.serialNumber, "ble_camera_id": v.camera.bleCameraID,
                "ble_verification_code": v.camera.bleVerificationCode, "metering": v.camera.metering,
                "white_balance_mode": v.camera.whiteBalance,
            ]
            for (k, b) in v.camera.bools { camera[k] = b }
            var scene: [String: Any] = ["mode": v.scene.mode]
            for (k, n) in v.scene.values { scene[k] = n }
            var out: [String: Any] = ["camera": camera, "wifi": ["ssid": "Bandit-EMU1"], "scene": scene]
            if let image = v.image { out["image"] = Self.imageModeJSON(image) } else { out["video"] = videoJSON(v.video) }
            return out
        }
    }

    func videoJSON(_ m: Video) -> [String: Any] {
        ["mode": m.mode, "resolution": m.resolution, "framerate_fps": m.framerate, "fov": m.fov,
         "slow_motion_rate": m.slowMotionRate, "interval_secs": m.intervalSecs, "scenes_disabled": [String]()]
    }

    static func imageModeJSON(_ m: Image) -> [String: Any] {
        ["mode": m.mode, "resolution": m.resolution, "burst_count": m.count, "count": m.count,
         "duration_secs": 0, "interval_secs": m.mode == "continuous" ? 1 : 0]
    }

    /// `POST settings/image`: an offered (mode, resolution); switches to image type.
    private func postImage(_ o: [String: Any]) -> Reply {
        guard let mode = o["mode"] as? String, let res = o["resolution"] as? String else {
            return .error(.badRequest, "mode and resolution are required")
        }
        guard Self.imageCapabilities.contains(where: { $0["mode"] as? String == mode && $0["resolution"] as? String == res }) else {
            return .error(.badRequest, "image mode \(mode) \(res) not supported")
        }
        let count = (o["burst_count"] as? NSNumber ?? o["count"] as? NSNumber)?.intValue ?? 10
        return values.withLock { v -> Reply in
            guard !v.recording else { return .error(.conflict, "recording") }
            let m = Image(mode: mode, resolution: res, count: max(1, min(count, 30)))
            v.image = m
            v.lastImage = m
            return .empty
        }
    }

    /// `PUT settings/camera`: a partial camera object; every key must be known and every value valid,
    /// or nothing changes (400). Read-only keys are accepted only with their current value.
    private func putCamera(_ o: [String: Any]) -> Reply {
        var c = values.withLock { $0.camera }
        for (k, v) in o {
            switch k {
            case "white_balance_mode":
                guard let s = v as? String, Self.whiteBalanceModes.contains(s) else {
                    return .error(.badRequest, "white_balance_mode must be one of \(Self.whiteBalanceModes)")
                }
                c.whiteBalance = s
            case "metering":
                guard let s = v as? String, Self.meteringModes.contains(s) else {
                    return .error(.badRequest, "metering must be one of \(Self.meteringModes)")
                }
                c.metering = s
            case "serial_number", "ble_camera_id", "ble_verification_code":
                let current = k == "serial_number" ? c.serialNumber : k == "ble_camera_id" ? c.bleCameraID : c.bleVerificationCode
                guard v as? String == current else { return .error(.badRequest, "\(k) is read-only") }
            default:
                guard c.bools[k] != nil else { return .error(.badRequest, "unknown camera setting \(k)") }
                guard let b = v as? Bool else {
                    return .error(.badRequest, "\(k) must be a boolean")
                }
                c.bools[k] = b
            }
        }
        values.withLock { $0.camera = c }
        return .empty
    }

    private func putScene(_ o: [String: Any]) -> Reply {
        var s = values.withLock { $0.scene }
        for (k, v) in o {
            if k == "mode" {
                guard let m = v as? String, Self.sceneModes.contains(m) else {
                    return .error(.badRequest, "scene mode must be one of \(Self.sceneModes)")
                }
                s.mode = m
            } else if s.values[k] != nil {
                guard let n = (v as? NSNumber)?.intValue, n >= 0, n <= 100 else {
                    return .error(.badRequest, "\(k) must be an integer 0…100")
                }
                s.values[k] = n
            } else {
                return .error(.badRequest, "unknown scene setting \(k)")
            }
        }
        values.withLock { $0.scene = s }
        var out: [String: Any] = ["mode": s.mode]
        for (k, n) in s.values { out[k] = n }
        return .json(out)
    }

    /// `POST settings/video`: must name an offered (mode, resolution, framerate, fov) combination.
    private func postVideo(_ o: [String: Any]) -> Reply {
        guard let mode = o["mode"] as? String, let res = o["resolution"] as? String,
              let fps = (o["framerate_fps"] as? NSNumber)?.intValue else {
            return .error(.badRequest, "mode, resolution and framerate_fps are required")
        }
        let fov = o["fov"] as? String ?? "normal"
        guard let cap = Self.videoCapabilities.first(where: {
            $0["mode"] as? String == mode && $0["resolution"] as? String == res
                && $0["framerate_fps"] as? Int == fps && $0["fov"] as? String == fov
        }) else {
            return .error(.badRequest, "video mode \(mode) \(res)@\(fps) \(fov) not supported")
        }
        let recording = values.withLock { $0.recording }
        guard !recording else { return .error(.conflict, "recording") }
        values.withLock {
            $0.image = nil
            $0.video = Video(mode: mode, resolution: res, framerate: fps, fov: fov,
                             slowMotionRate: cap["slow_motion_rate"] as? Int ?? 1,
                             intervalSecs: cap["interval_secs"] as? Double ?? 0)
        }
        return .empty
    }

    /// `POST viewfinder`: start needs a port 1…65535 and no active viewfinder (409 otherwise); stop is
    /// accepted with or without `viewfinder_streaming_port` (iOS omits it, Android sends -1).
    private func postViewfinder(_ o: [String: Any], peer: SocketAddress?) -> (Reply, [Effect]) {
        guard let active = o["viewfinder_active"] as? Bool else {
            return (.error(.badRequest, "viewfinder_active (bool) is required"), [])
        }
        if active {
            guard let port = (o["viewfinder_streaming_port"] as? NSNumber)?.intValue, (1...65535).contains(port) else {
                return (.error(.badRequest, "viewfinder_streaming_port must be 1…65535"), [])
            }
            guard let ip = peer?.ipAddress, let dest = try? SocketAddress(ipAddress: ip, port: port) else {
                return (.error(.internalServerError, "no peer address"), [])
            }
            let started = values.withLock { v -> Bool in
                guard !v.viewfinderActive else { return false }
                v.viewfinderActive = true
                v.viewfinderPort = port
                v.viewfinderDestination = dest
                return true
            }
            guard started else { return (.error(.conflict, "viewfinder already active"), []) }
            return (.empty, [.notify(name: "viewfinder_started", payload: ["viewfinder_active": true])])
        }
        let wasActive = stopViewfinder()
        return (.empty, wasActive ? [.notify(name: "viewfinder_stopped", payload: ["viewfinder_active": false])] : [])
    }

    /// Stops the viewfinder; true when it was running.
    @discardableResult
    func stopViewfinder() -> Bool {
        values.withLock { v in
            let was = v.viewfinderActive
            v.viewfinderActive = false
            v.viewfinderPort = 0
            v.viewfinderDestination = nil
            return was
        }
    }

    private func postRecord(_ o: [String: Any]) -> (Reply, [Effect]) {
        guard let active = o["recording_active"] as? Bool else {
            return (.error(.badRequest, "recording_active (bool) is required"), [])
        }
        if let image = values.withLock({ $0.image }), recordIsShutter.load(ordering: .relaxed) {
            // Image type: the record call is the shutter (the notes name no other; UNCONFIRMED).
            guard active else { return (.empty, []) }
            switch image.mode {
            case "single": return (.empty, [.shoot(count: 1)])
            case "burst": return (.empty, [.shoot(count: image.count)])
            default: return (.error(.conflict, "continuous photo runs are not emulated"), [])
            }
        }
        if active {
            let ok = values.withLock { v -> Bool in
                guard !v.recording else { return false }
                v.recording = true
                v.recordedFrames = 0
                v.recordingStartNanos = MonotonicClock.nanos()
                return true
            }
            guard ok else { return (.error(.conflict, "already recording"), []) }
            return (.empty, [.notify(name: "recording_started", payload: ["recording_active": true])])
        }
        let video = values.withLock { v -> [String: Any]? in
            guard v.recording else { return nil }
            v.recording = false
            v.videos += 1
            let length = Double(v.recordedFrames) / Double(max(v.video.framerate, 1))
            return ["id": String(format: "%08X", v.videos), "path": "DCIM/100TTCAM/TT\(v.videos).MP4",
                    "created": "2016-05-01T12:00:00Z", "size_bytes": v.recordedFrames * 200_000,
                    "length_secs": length, "nr_highlights": 0, "mode": v.video.mode, "aspect_ratio": "16:9",
                    "resolution": v.video.resolution, "framerate_fps": v.video.framerate, "is_valid": true]
        }
        guard let video else { return (.empty, []) }
        becomeBusy("finalising the recording")
        return (.empty, [.notify(name: "recording_stopped", payload: [video])])
    }
}
