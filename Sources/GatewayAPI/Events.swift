// The data of the events of `GET /api/v1/events` (Server-Sent Events; the event's name is the SSE
// `event:` field, its data one of these as JSON).

/// `state`: a camera connected, streams, lost its connection…
public struct StateEvent: Codable, Sendable, Hashable {
    public var camera: String
    public var state: String
    public var reason: String?
    public init(camera: String, state: String, reason: String?) {
        self.camera = camera
        self.state = state
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey { case camera, state, reason }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(camera, forKey: .camera)
        try c.encode(state, forKey: .state)
        try c.encodeOrNull(reason, forKey: .reason)
    }
}

/// `property`: a property's value (on a change, and to every new listener).
public struct PropertyEvent: Codable, Sendable, Hashable {
    public var camera: String
    public var name: String
    public var value: APIValue?
    public var displayText: String?
    public init(camera: String, name: String, value: APIValue?, displayText: String?) {
        self.camera = camera
        self.name = name
        self.value = value
        self.displayText = displayText
    }

    enum CodingKeys: String, CodingKey { case camera, name, value, displayText }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(camera, forKey: .camera)
        try c.encode(name, forKey: .name)
        try c.encodeOrNull(value, forKey: .value)
        try c.encodeOrNull(displayText, forKey: .displayText)
    }
}

/// `af`: the AF areas of the newest frame, in that frame's pixels.
public struct AFEvent: Codable, Sendable, Hashable {
    public var camera: String
    public var width: Int
    public var height: Int
    public var rotation: Int
    public var areas: [AFBox]
    public init(camera: String, width: Int, height: Int, rotation: Int, areas: [AFBox]) {
        self.camera = camera
        self.width = width
        self.height = height
        self.rotation = rotation
        self.areas = areas
    }
}

/// One AF area in image pixels.
public struct AFBox: Codable, Sendable, Hashable {
    public var x: Int
    public var y: Int
    public var w: Int
    public var h: Int
    public var kind: String
    public var state: String
    public init(x: Int, y: Int, w: Int, h: Int, kind: String, state: String) {
        self.x = x
        self.y = y
        self.w = w
        self.h = h
        self.kind = kind
        self.state = state
    }
}

/// `storage`: the camera's card, its fields beside `camera`.
public struct StorageEvent: Codable, Sendable, Hashable {
    public var camera: String
    public var storage: StorageState
    public init(camera: String, storage: StorageState) {
        self.camera = camera
        self.storage = storage
    }

    enum CodingKeys: String, CodingKey { case camera }

    public init(from decoder: any Decoder) throws {
        camera = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .camera)
        storage = try StorageState(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(camera, forKey: .camera)
        try storage.encode(to: encoder)
    }
}

/// `recording`: a segment started or finished.
public struct RecordingEvent: Codable, Sendable, Hashable {
    public var camera: String
    /// started or finished.
    public var change: String
    public var path: String
    public var frames: Int
    /// False when its end was not clean (it plays; its index may be missing).
    public var clean: Bool
    public init(camera: String, change: String, path: String, frames: Int, clean: Bool) {
        self.camera = camera
        self.change = change
        self.path = path
        self.frames = frames
        self.clean = clean
    }
}

/// `capture-failed`: an image the camera produced that could not be fetched or saved.
public struct CaptureFailedEvent: Codable, Sendable, Hashable {
    public var camera: String
    public var name: String
    public var reason: String
    public init(camera: String, name: String, reason: String) {
        self.camera = camera
        self.name = name
        self.reason = reason
    }
}

/// `config`: the configuration was reloaded.
public struct ConfigEvent: Codable, Sendable, Hashable {
    public var added: [String]
    public var removed: [String]
    public init(added: [String], removed: [String]) {
        self.added = added
        self.removed = removed
    }
}

/// The `camera` of any event's data (nil for events of the whole gateway).
public struct EventCamera: Decodable, Sendable {
    public var camera: String?
}
