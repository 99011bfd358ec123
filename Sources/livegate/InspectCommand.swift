import ArgumentParser
import CameraWire
import Foundation
import Vendors

/// `livegate inspect --format FORMAT FILE`: JSON Lines, one object per complete frame.
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the frames of a live-view capture as JSON Lines (one object per complete frame).",
        discussion: """
            FORMAT is one of: \(Vendors.wireFormats.map(\.rawValue).joined(separator: ", ")), or auto to guess \
            from the bytes. UDP formats (\(Vendors.wireFormats.filter(\.isPcap).map(\.rawValue).joined(separator: ", "))) read a classic libpcap file or an RFC 4571 dump (each datagram after its 16-bit big-endian length). Diagnostics, \
            with the byte offset and what was expected, go to stderr; damaged frames are skipped.
            """)

    @Option(name: .long, help: "Wire format of FILE, or 'auto'.")
    var format: String = "auto"

    @Argument(help: "Capture file ('-' for standard input).")
    var file: String

    func run() throws {
        let bytes: [UInt8]
        if file == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read '\(file)'")
            }
            bytes = Array(data)
        }
        let chosen: WireFormat
        if format == "auto" {
            guard let g = WireFormat.guess(bytes, among: Vendors.wireFormats) else {
                throw ValidationError("cannot guess the format of '\(file)'; pass --format (\(Vendors.wireFormats.map(\.rawValue).joined(separator: ", ")))")
            }
            chosen = g
            FileHandle.standardError.write(Data("inspect: format guessed as \(g.rawValue)\n".utf8))
        } else {
            guard let f = Vendors.wireFormat(named: format) else {
                throw ValidationError("unknown format '\(format)'; expected one of: auto, \(Vendors.wireFormats.map(\.rawValue).joined(separator: ", "))")
            }
            chosen = f
        }
        var out = Data()
        out.reserveCapacity(64 * 1024)
        let stdout = FileHandle.standardOutput
        Inspector.run(format: chosen, input: bytes, emit: { line in
            out.append(contentsOf: line.utf8)
            out.append(0x0A)
            if out.count > 60 * 1024 {
                stdout.write(out)
                out.removeAll(keepingCapacity: true)
            }
        }, diagnostic: { message in
            FileHandle.standardError.write(Data("inspect: \(message)\n".utf8))
        })
        stdout.write(out)
    }
}
