public import Foundation

/// A property value in the API: a word of the common vocabulary ("tungsten", "1/250", "af-c") or a
/// number (ISO 400, aperture 5.6, exposure -0.7). JSON true/false is neither.
public enum APIValue: Codable, Sendable, Hashable, CustomStringConvertible {
    case text(String)
    case number(Double)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            self = .text(s)
        } else if (try? c.decode(Bool.self)) == nil, let d = try? c.decode(Double.self) {
            self = .number(d)
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "a value is a string or a number")
        }
    }

    /// Whole numbers go out as integers (ISO 400, not 400.0).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .text(let s): try c.encode(s)
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e9 { try c.encode(Int(d)) } else { try c.encode(d) }
        }
    }

    public var description: String {
        switch self {
        case .text(let s): return s
        case .number(let d): return d == d.rounded() && abs(d) < 1e9 ? String(Int(d)) : String(d)
        }
    }
}

/// How the API writes JSON, on both ends: keys sorted, slashes as they are.
public enum APIJSON {
    public static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}

/// The body of every error answer: `{"error": "…"}`, with the allowed values of a refused property
/// value, the camera's own code of a refusal, or the camera's state when it has no frame yet.
public struct ErrorBody: Codable, Sendable, Hashable {
    public var error: String
    public var valid: [String]?
    public var cameraCode: Int?
    public var state: String?

    public init(error: String, valid: [String]? = nil, cameraCode: Int? = nil, state: String? = nil) {
        self.error = error
        self.valid = valid
        self.cameraCode = cameraCode
        self.state = state
    }
}

/// Keys of objects whose keys are data (used to tell a JSON object from anything else).
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Decodes only when the JSON text is an object (whatever its keys).
public struct AnyJSONObject: Decodable, Sendable {
    public init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: AnyKey.self)
    }
}

extension KeyedEncodingContainer {
    /// Encodes `nil` as JSON null (the synthesized encoders leave the key out).
    mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
