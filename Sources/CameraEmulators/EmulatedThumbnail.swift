import JPEGKit
import LiveViewCore

/// The small preview the emulated cameras give of a card file: the test pattern at 160×120 showing
/// the file's number (so two files' previews differ).
enum EmulatedThumbnail {
    static func jpeg(showing number: Int) -> [UInt8]? {
        guard let pattern = try? TestPattern(width: 160, height: 120) else { return nil }
        let f = Frame(copying: [UInt8]())
        guard (try? pattern.render(frameNumber: number, into: f)) != nil else { return nil }
        return Array(f.bytes)
    }
}
