/// One camera as `GET /api/v1/cameras` and `GET /api/v1/cameras/{id}` show it.
public struct CameraSummary: Codable, Sendable, Hashable {
    public var id: String
    public var vendor: String
    public var url: String
    /// connecting, streaming, reconnecting, stopped, failed.
    public var state: String
    public var fps: Double
    public var frames: Int
    public var drops: Int
    public var reconnects: Int
    public var width: Int
    public var height: Int
    /// Degrees clockwise the camera is turned (0, 90, 180, 270).
    public var rotation: Int
    /// What a user opens or finds: rtsp, rtspRaw, whep, hls, mjpeg, snapshot, v4l2, pipewire, recording.
    public var outputs: [String: String]
    /// Why the camera shows the offline card (nil while it streams).
    public var reason: String?
    /// Media-graph branches running now ("jpeg", "picture", "encoder", "hls", …) and "slate".
    public var branches: [String: Bool]
    public var push: [PushState]
    public var capabilities: [String: Bool]
    public var properties: [String]
    /// The card as the camera last reported it (nil when the driver does not report one).
    public var storage: StorageState?

    public init(id: String, vendor: String, url: String, state: String, fps: Double, frames: Int, drops: Int,
                reconnects: Int, width: Int, height: Int, rotation: Int, outputs: [String: String], reason: String?,
                branches: [String: Bool], push: [PushState], capabilities: [String: Bool], properties: [String],
                storage: StorageState?) {
        self.id = id
        self.vendor = vendor
        self.url = url
        self.state = state
        self.fps = fps
        self.frames = frames
        self.drops = drops
        self.reconnects = reconnects
        self.width = width
        self.height = height
        self.rotation = rotation
        self.outputs = outputs
        self.reason = reason
        self.branches = branches
        self.push = push
        self.capabilities = capabilities
        self.properties = properties
        self.storage = storage
    }

    enum CodingKeys: String, CodingKey {
        case id, vendor, url, state, fps, frames, drops, reconnects, width, height, rotation, outputs, reason,
             branches, push, capabilities, properties, storage
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(vendor, forKey: .vendor)
        try c.encode(url, forKey: .url)
        try c.encode(state, forKey: .state)
        try c.encode(fps, forKey: .fps)
        try c.encode(frames, forKey: .frames)
        try c.encode(drops, forKey: .drops)
        try c.encode(reconnects, forKey: .reconnects)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(rotation, forKey: .rotation)
        try c.encode(outputs, forKey: .outputs)
        try c.encodeOrNull(reason, forKey: .reason)
        try c.encode(branches, forKey: .branches)
        try c.encode(push, forKey: .push)
        try c.encode(capabilities, forKey: .capabilities)
        try c.encode(properties, forKey: .properties)
        try c.encodeOrNull(storage, forKey: .storage)
    }
}

/// A push to a media server.
public struct PushState: Codable, Sendable, Hashable {
    /// Without credentials.
    public var url: String
    /// connecting, live, retrying, stopped.
    public var state: String
    public var reason: String?
    public var attempts: Int
    /// ISO 8601 time of the last change of state.
    public var since: String
    /// Set on events only: the camera it belongs to.
    public var camera: String?

    public init(url: String, state: String, reason: String?, attempts: Int, since: String, camera: String? = nil) {
        self.url = url
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.since = since
        self.camera = camera
    }

    enum CodingKeys: String, CodingKey { case url, state, reason, attempts, since, camera }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encode(state, forKey: .state)
        try c.encodeOrNull(reason, forKey: .reason)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(since, forKey: .since)
        try c.encodeIfPresent(camera, forKey: .camera)
    }
}

/// What a camera says about its card; a field is absent when the camera does not say.
public struct StorageState: Codable, Sendable, Hashable {
    public var mounted: Bool?
    public var full: Bool?
    public var writeProtected: Bool?
    public var error: Bool?
    public var writing: Bool?
    public var remainingShots: Int?

    public init(mounted: Bool? = nil, full: Bool? = nil, writeProtected: Bool? = nil, error: Bool? = nil,
                writing: Bool? = nil, remainingShots: Int? = nil) {
        self.mounted = mounted
        self.full = full
        self.writeProtected = writeProtected
        self.error = error
        self.writing = writing
        self.remainingShots = remainingShots
    }
}

/// A camera property: its value, the camera's own text for it, the values offered, and whether it
/// can be set.
public struct PropertyInfo: Codable, Sendable, Hashable {
    public var name: String
    public var value: APIValue?
    public var displayText: String?
    public var choices: [APIValue]
    public var writable: Bool

    public init(name: String, value: APIValue?, displayText: String?, choices: [APIValue], writable: Bool) {
        self.name = name
        self.value = value
        self.displayText = displayText
        self.choices = choices
        self.writable = writable
    }

    enum CodingKeys: String, CodingKey { case name, value, displayText, choices, writable }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeOrNull(value, forKey: .value)
        try c.encodeOrNull(displayText, forKey: .displayText)
        try c.encode(choices, forKey: .choices)
        try c.encode(writable, forKey: .writable)
    }
}

/// `PUT /api/v1/cameras/{id}/properties/{name}`.
public struct SetPropertyRequest: Codable, Sendable, Hashable {
    public var value: APIValue
    public init(value: APIValue) { self.value = value }
}

/// The answer to a property change the camera accepted.
public struct SetPropertyResult: Codable, Sendable, Hashable {
    public var name: String
    public var value: APIValue
    public var status: String
    public init(name: String, value: APIValue, status: String = "accepted") {
        self.name = name
        self.value = value
        self.status = status
    }
}

/// `POST /api/v1/cameras/{id}/focus`: a point in output-image pixels.
public struct FocusRequest: Codable, Sendable, Hashable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// The answer to a touch-AF the camera accepted.
public struct FocusResult: Codable, Sendable, Hashable {
    public var x: Double
    public var y: Double
    public var status: String
    public init(x: Double, y: Double, status: String = "accepted") {
        self.x = x
        self.y = y
        self.status = status
    }
}

/// `POST /api/v1/cameras/{id}/capture` (the body is optional).
public struct CaptureRequest: Codable, Sendable, Hashable {
    /// Half-press first where the camera has one.
    public var autofocus: Bool?
    public init(autofocus: Bool? = nil) { self.autofocus = autofocus }
}

/// A file saved from a camera (a capture, or a shot taken on the body).
public struct SavedFile: Codable, Sendable, Hashable {
    public var camera: String
    /// The name it was saved under (the camera's name, with `-N` added when that name was taken).
    public var name: String
    /// The camera's own name for it.
    public var cameraName: String
    /// Where it is on the gateway's disk.
    public var path: String
    public var bytes: Int
    public var sha256: String
    /// Shot with the camera's own button, not through livegate.
    public var fromBody: Bool
    /// ISO 8601.
    public var savedAt: String

    public init(camera: String, name: String, cameraName: String, path: String, bytes: Int, sha256: String,
                fromBody: Bool, savedAt: String) {
        self.camera = camera
        self.name = name
        self.cameraName = cameraName
        self.path = path
        self.bytes = bytes
        self.sha256 = sha256
        self.fromBody = fromBody
        self.savedAt = savedAt
    }
}

/// `{"files": […]}`: what a capture saved, or every file saved from a camera.
public struct SavedFileList: Codable, Sendable, Hashable {
    public var files: [SavedFile]
    public init(files: [SavedFile]) { self.files = files }
}

/// `POST /api/v1/reload`: cameras added, removed and left alone (a camera whose entry changed is
/// removed and added).
public struct ReloadResult: Codable, Sendable, Hashable {
    public var added: [String]
    public var removed: [String]
    public var unchanged: [String]
    public init(added: [String] = [], removed: [String] = [], unchanged: [String] = []) {
        self.added = added
        self.removed = removed
        self.unchanged = unchanged
    }
}

/// One file on a camera's card.
public struct CardFile: Codable, Sendable, Hashable {
    /// The path to download it by (`/DCIM/100MSDCF/DSC00001.JPG`).
    public var path: String
    public var name: String
    public var folder: String
    /// Bytes.
    public var size: Int
    /// image, video or other.
    public var kind: String
    /// ISO 8601, when the camera gives one.
    public var date: String?

    public init(path: String, name: String, folder: String, size: Int, kind: String, date: String?) {
        self.path = path
        self.name = name
        self.folder = folder
        self.size = size
        self.kind = kind
        self.date = date
    }

    enum CodingKeys: String, CodingKey { case path, name, folder, size, kind, date }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(name, forKey: .name)
        try c.encode(folder, forKey: .folder)
        try c.encode(size, forKey: .size)
        try c.encode(kind, forKey: .kind)
        try c.encodeOrNull(date, forKey: .date)
    }
}

/// A page of the card's listing.
public struct CardFileList: Codable, Sendable, Hashable {
    public var total: Int
    public var offset: Int
    public var limit: Int
    public var files: [CardFile]
    public init(total: Int, offset: Int, limit: Int, files: [CardFile]) {
        self.total = total
        self.offset = offset
        self.limit = limit
        self.files = files
    }
}
