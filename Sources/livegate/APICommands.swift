import ArgumentParser
import CameraKit
import Foundation
import Gateway
import GatewayAPI

/// Options shared by the API client commands.
struct APIOptions: ParsableArguments {
    @Option(name: .long, help: "Base URL of the gateway's control API.")
    var api: String = "http://127.0.0.1:8080"
    @Option(name: .long, help: ArgumentHelp("The gateway's token (default: $LIVEGATE_TOKEN).", valueName: "TOKEN"))
    var token: String?

    /// The client for `--api`, with the token from the flag, else LIVEGATE_TOKEN.
    func client() throws -> GatewayClient {
        var base = api
        while base.hasSuffix("/") { base.removeLast() }
        guard let u = URL(string: base), u.scheme == "http", let host = u.host, !host.isEmpty, u.query == nil else {
            throw ValidationError("--api must be an http:// URL, got '\(api)'")
        }
        return GatewayClient(base: base, token: token ?? ProcessInfo.processInfo.environment["LIVEGATE_TOKEN"])
    }
}

/// An error printed as is, exit status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

func printJSON(_ v: some Encodable) {
    if let data = try? JSONEncoder.pretty.encode(v) {
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
            let p = try await options.client().send(.GET, "/api/v1/cameras/\(escape(camera))/properties/\(property)",
                                                    as: PropertyInfo.self)
            print("\(p.name) = \(p.value?.description ?? "?")  (camera: \(p.displayText ?? "?"))")
            if !p.choices.isEmpty { print("choices: \(p.choices.map(\.description).joined(separator: ", "))") }
        } else {
            let list = try await options.client().send(.GET, "/api/v1/cameras/\(escape(camera))/properties",
                                                       as: [PropertyInfo].self)
            for p in list {
                print("\(p.name.padding(toLength: 22, withPad: " ", startingAt: 0))\(p.value?.description ?? "?")")
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
        _ = try await options.client().send(.PUT, "/api/v1/cameras/\(escape(camera))/properties/\(property)",
                                            body: SetPropertyRequest(value: APIValue(CommonValues.parse(value, for: name))),
                                            as: SetPropertyResult.self)
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
        let saved = try await options.client().send(.POST, "/api/v1/cameras/\(escape(camera))/capture",
                                                     body: CaptureRequest(autofocus: autofocus), as: SavedFileList.self)
        printJSON(saved)
    }
}

func escape(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? s
}
