import Foundation
import Logging

/// What a recording left behind when livegate was killed: its last frames may never have reached the
/// Matroska file while their lines were already in the AF sidecar. At the next start the recorder
/// trims the sidecar of its camera's newest segment (the only one a kill can have cut: each start
/// repairs the one before) to the frames its file holds (whole blocks, counted without decoding),
/// so a sidecar never describes a frame the file lacks.
enum RecordingRepair {
    /// Trims the sidecar of `camera`'s newest segment in `directory`; returns the file when trimmed.
    @discardableResult
    static func trimNewestSidecar(directory: String, camera: String, logger: Logger) -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let sidecars = names.filter {
            $0.hasPrefix(camera + "-") && $0.hasSuffix(".af.jsonl") && $0.dropFirst(camera.count + 1).first?.isNumber == true
        }
        let modified = { (name: String) -> Date in
            ((try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)"))?[.modificationDate] as? Date) ?? .distantPast
        }
        guard let name = sidecars.max(by: { modified($0) < modified($1) }) else { return nil }
        let sidecar = "\(directory)/\(name)"
        let mkv = String(sidecar.dropLast(".af.jsonl".count)) + ".mkv"
        guard let text = try? String(contentsOfFile: sidecar, encoding: .utf8),
              let blocks = MatroskaBlocks.count(path: mkv) else { return nil }
        // Whole lines only: a line cut by the kill has no newline.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last?.isEmpty == true { lines.removeLast() }
        let complete = text.hasSuffix("\n") ? lines.count : max(0, lines.count - 1)
        guard complete > blocks || complete < lines.count else { return nil }
        let kept = lines.prefix(min(complete, blocks)).map { $0 + "\n" }.joined()
        let temporary = "\(directory)/.\(name).repair"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(kept.utf8)),
              let handle = FileHandle(forWritingAtPath: temporary) else { return nil }
        try? handle.synchronize()
        try? handle.close()
        guard rename(temporary, sidecar) == 0 else {
            unlink(temporary)
            return nil
        }
        logger.notice("AF sidecar trimmed to the frames its recording holds",
                      metadata: ["file": "\(name)", "lines": "\(lines.count)", "frames": "\(blocks)"])
        return sidecar
    }
}

/// Counts the frames (SimpleBlock and BlockGroup elements) stored whole in a Matroska file, reading
/// only element headers; the Segment and Cluster containers are entered, everything else skipped by
/// its size. A file cut short (a crash) is counted up to its last whole block.
enum MatroskaBlocks {
    static let segment: UInt32 = 0x1853_8067
    static let cluster: UInt32 = 0x1F43_B675
    static let simpleBlock: UInt32 = 0xA3
    static let blockGroup: UInt32 = 0xA0

    static func count(path: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return nil }
        var position: UInt64 = 0
        var blocks = 0
        while position < end {
            try? handle.seek(toOffset: position)
            guard let head = try? handle.read(upToCount: 12), let (id, size, headerLength) = header(Array(head)) else { break }
            let dataStart = position + UInt64(headerLength)
            if id == segment || id == cluster {
                position = dataStart
                continue
            }
            guard let size, dataStart + size <= end else { break }
            if id == simpleBlock || id == blockGroup { blocks += 1 }
            position = dataStart + size
        }
        return blocks
    }

    /// An element's ID, data size (nil: unknown) and header length.
    static func header(_ b: [UInt8]) -> (UInt32, UInt64?, Int)? {
        guard let first = b.first, first != 0 else { return nil }
        let idLength = first.leadingZeroBitCount + 1
        guard idLength <= 4, b.count >= idLength + 1 else { return nil }
        var id: UInt32 = 0
        for k in 0..<idLength { id = id << 8 | UInt32(b[k]) }
        let s0 = b[idLength]
        guard s0 != 0 else { return nil }
        let sizeLength = s0.leadingZeroBitCount + 1
        guard b.count >= idLength + sizeLength else { return nil }
        var size = UInt64(s0) & ((1 << UInt64(8 - sizeLength)) - 1)
        var allOnes = size == (1 << UInt64(8 - sizeLength)) - 1
        for k in 1..<sizeLength {
            let byte = b[idLength + k]
            size = size << 8 | UInt64(byte)
            allOnes = allOnes && byte == 0xFF
        }
        return (id, allOnes ? nil : size, idLength + sizeLength)
    }
}
