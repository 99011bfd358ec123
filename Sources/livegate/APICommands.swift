import ArgumentParser
import CameraKit
import Foundation
import NIOPosix

/// Options shared by the API client commands.
struct APIOptions: ParsableArguments {
    @Option(name: .long, help: "Base URL of the gateway's control API.")
    var api: String = "http://127.0.0.1:8080"
    @Option(name: .long, help: ArgumentHelp("The gateway's token (default: $LIVEGATE_TOKEN).", valueName: "TOKEN"))
    var token: String?

    /// The Authorization header when a token is known (flag, else LIVEGATE_TOKEN).
    var authHeaders: [(String, String)] {
        guard let t = token ?? ProcessInfo.processInfo.environment["LIVEGATE_TOKEN"], !t.isEmpty else { return [] }
        return [("Authorization", "Bearer \(t)")]
    }

    func url(_ path: String) throws -> HTTPURL {
        var base = api
        while base.hasSuffix("/") { base.removeLast() }
        guard let u = HTTPURL(base + path) else { throw ValidationError("--api must be an http:// URL, got '\(api)'") }
        return u
    }

    /// Sends a request; returns the JSON body, or exits non-zero with the API's message.
    func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> Any {
        let client = HTTPClient(group: MultiThreadedEventLoopGroup.singleton)
        let data = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        let target = try url(path)
        let response: HTTPResponse
        do {
            response = try await client.request(method, target, headers: [("Content-Type", "application/json")] + authHeaders, body: data,
                                                timeout: .seconds(30))
        } catch {
            throw CLIError("cannot reach the gateway at \(api): \(error)")
        }
        let json = try? JSONSerialization.jsonObject(with: Data(response.body))
        guard (200..<300).contains(response.status) else {
            var message = (json as? [String: Any])?["error"] as? String ?? String(decoding: response.body, as: UTF8.self)
            if let valid = (json as? [String: Any])?["valid"] as? [String] {
                message += "\nvalid values: \(valid.joined(separator: ", "))"
            }
            if let code = (json as? [String: Any])?["cameraCode"] { message += " (camera code \(code))" }
            throw CLIError("HTTP \(response.status): \(message)")
        }
        return json ?? [:]
    }
}

/// An error printed as is, exit status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

func printJSON(_ v: Any) {
    if let data = try? JSONSerialization.data(withJSONObject: v, options: [.prettyPrinted, .sortedKeys]) {
        print(String(decoding: data, as: UTF8.self))
    }
}

/// `livegate get CAMERA [PROPERTY]`.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a camera's properties (or one of them) through the control API.")

    @OptionGroup var options: APIOptions
    @Argument(help: "Camera id (cam0, …).") var camera: String
    @Argument(help: "Property: \(PropertyName.allCases.map(\.rawValue).joined(separator: ", ")).") var property: String?

    func run() async throws {
        if let property {
            guard PropertyName(rawValue: property) != nil else {
                throw ValidationError("unknown property '\(property)'; expected one of: \(PropertyName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let v = try await options.call("GET", "/api/v1/cameras/\(escape(camera))/properties/\(property)")
            if let o = v as? [String: Any] {
                print("\(o["name"] ?? property) = \(o["value"] ?? "?")  (camera: \(o["displayText"] ?? "?"))")
                if let c = o["choices"] as? [Any] { print("choices: \(c.map { "\($0)" }.joined(separator: ", "))") }
            }
        } else {
            let v = try await options.call("GET", "/api/v1/cameras/\(escape(camera))/properties")
            for case let o as [String: Any] in (v as? [Any]) ?? [] {
                let name = "\(o["name"] ?? "")".padding(toLength: 22, withPad: " ", startingAt: 0)
                print("\(name)\(o["value"] ?? "?")")
            }
        }
    }
}

/// `livegate set CAMERA PROPERTY VALUE`.
struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set a camera property through the control API (exits non-zero with the API's message when refused).")

    @OptionGroup var options: APIOptions
    @Argument(help: "Camera id (cam0, …).") var camera: String
    @Argument(help: "Property: \(PropertyName.allCases.map(\.rawValue).joined(separator: ", ")).") var property: String
    /// Collected as "all unrecognized" so that a negative number (`-0.7`) is a value, not an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Value in the common vocabulary, e.g. tungsten, 400, 1/250, 5.6, -0.7, af-c.", valueName: "value"))
    var values: [String] = []

    var value: String { values.first ?? "" }

    func validate() throws {
        guard values.count == 1 else {
            throw ValidationError(values.isEmpty ? "missing the value to set" : "one value only, got: \(values.joined(separator: " "))")
        }
    }

    func run() async throws {
        guard let name = PropertyName(rawValue: property) else {
            throw ValidationError("unknown property '\(property)'; expected one of: \(PropertyName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let v: Any
        switch CommonValues.parse(value, for: name) {
        case .number(let d): v = d
        case .text(let s): v = s
        }
        _ = try await options.call("PUT", "/api/v1/cameras/\(escape(camera))/properties/\(property)", body: ["value": v])
        print("\(camera) \(property) = \(value)")
    }
}

/// `livegate capture CAMERA`: fires the shutter and prints the saved files.
struct Capture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a picture with a camera through the control API; prints the files the gateway saved.",
        discussion: "The gateway saves them under its --captures folder, per camera. Exits non-zero with the camera's reason when it refuses.")

    @OptionGroup var options: APIOptions
    @Argument(help: "Camera id (cam0, …).") var camera: String
    @Flag(name: .long, help: "Focus first (half-press) where the camera has one.") var autofocus = false

    func run() async throws {
        let v = try await options.call("POST", "/api/v1/cameras/\(escape(camera))/capture", body: ["autofocus": autofocus])
        printJSON(v)
    }
}

func escape(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? s
}
