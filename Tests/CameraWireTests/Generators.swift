import JPEGKit
import LiveViewCore
@testable import CameraWire

/// Generated streams for every format with the frames a correct parser must deliver.
struct Generated {
    var input: [UInt8]
    var frames: [FrameRecord]
}

enum Gen {
    static func jpeg(_ rng: inout SplitMix64, small: Bool = false) -> [UInt8] {
        let w = Int.random(in: 16...1280, using: &rng), h = Int.random(in: 16...960, using: &rng)
        let n = small ? Int.random(in: 20...300, using: &rng) : Int.random(in: 100...3000, using: &rng)
        return SyntheticJPEG.make(width: w, height: h, entropyBytes: n, rng: &rng,
                                  subsampling: Bool.random(using: &rng) ? .yuv420 : .yuv422,
                                  restartEvery: Bool.random(using: &rng) ? 0 : 3,
                                  fakeMarkersInComment: Bool.random(using: &rng),
                                  fillBeforeEOI: Int.random(in: 0...2, using: &rng))
    }

    static func junk(_ n: Int, _ rng: inout SplitMix64) -> [UInt8] {
        var j = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
        if n >= 4 { j[0] = 0xFF; j[1] = 0xD9; j[n - 2] = 0xFF; j[n - 1] = 0xD8 }
        return j
    }

    static func record(_ jpeg: [UInt8], offset: Int?, pts: Int64? = nil, seq: Int64? = nil, af: [AFArea] = [])
        -> FrameRecord
    {
        let info = try! JPEGScanner.scan(jpeg)
        return FrameRecord(WireFrame(jpeg: jpeg[...], jpegOffset: offset, info: info, pts: pts, seq: seq, af: af))
    }

    static func sonyRemote(_ rng: inout SplitMix64, small: Bool = false) -> Generated {
        var out: [UInt8] = []
        var frames: [FrameRecord] = []
        var seq = UInt16.random(in: 0xFFF0...0xFFFF, using: &rng)
        var ts = UInt32.random(in: 0...UInt32.max - 100_000, using: &rng)
        var sticky: [SonyRemoteFrameRecord] = []
        for _ in 0..<Int.random(in: 1...(small ? 4 : 10), using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0, 1, 2:
                let j = jpeg(&rng, small: small)
                let pad = junk(Int.random(in: 0...40, using: &rng), &rng)
                let start = out.count
                SonyRemotePacket.appendJPEG(j, seq: seq, timestampMs: ts, padding: pad, to: &out)
                let info = try! JPEGScanner.scan(j)
                let af = sticky.map {
                    AFArea(camera: $0.cameraRect, in: .sonyRemote, imageWidth: info.width, imageHeight: info.height,
                           kind: $0.kind, state: $0.state)
                }
                frames.append(record(j, offset: start + 136, pts: Int64(ts) * 1_000_000, seq: Int64(seq), af: af))
            case 3, 4:
                let recs = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    let x1 = UInt16.random(in: 0...9000, using: &rng), y1 = UInt16.random(in: 0...9000, using: &rng)
                    return SonyRemoteFrameRecord(x1: x1, y1: y1, x2: x1 + UInt16.random(in: 0...1000, using: &rng),
                                                 y2: y1 + UInt16.random(in: 0...1000, using: &rng),
                                                 category: UInt8.random(in: 0...6, using: &rng),
                                                 status: UInt8.random(in: 0...6, using: &rng))
                }
                let v1 = Int.random(in: 0..<5, using: &rng) != 0
                SonyRemotePacket.appendFrameInfo(recs, seq: seq, timestamp: ts, version: v1 ? (1, 0) : (2, 0),
                                                 padding: junk(Int.random(in: 0...20, using: &rng), &rng), to: &out)
                if v1 { sticky = recs }
            default:
                SonyRemotePacket.appendOther(type: 0x12, payload: junk(32, &rng), seq: seq, timestamp: ts, to: &out)
            }
            seq &+= 1
            ts &+= 33
        }
        return Generated(input: out, frames: frames)
    }

    static func sonyPTP(_ rng: inout SplitMix64, small: Bool = false) -> Generated {
        var out: [UInt8] = []
        var frames: [FrameRecord] = []
        let lines = Bool.random(using: &rng)
        for _ in 0..<Int.random(in: 1...(small ? 3 : 6), using: &rng) {
            let j = jpeg(&rng, small: small)
            if lines && Bool.random(using: &rng) { out += [0x0D, 0x0A] }   // stray CRLF before a header
            let start = out.count
            let reserved = Int.random(in: 0...8, using: &rng)
            let ff = Bool.random(using: &rng) ? SonyPTPDataset.emptyFocalFrame(version: 101) : []
            SonyPTPDataset.append(jpeg: j, focalFrame: ff, reserved: reserved,
                                  padding: junk(Int.random(in: 0...30, using: &rng), &rng), chunkLines: lines, to: &out)
            _ = start
            frames.append(record(j, offset: nil))
        }
        // Recompute the offsets robustly: the JPEG is where its bytes are.
        var pos = 0
        for i in frames.indices {
            let j = frames[i].jpeg
            var k = pos
            while !(out[k] == 0xFF && out[k + 1] == 0xD8 && Array(out[k..<(k + j.count)]) == j) { k += 1 }
            frames[i].offset = k
            pos = k + j.count
        }
        return Generated(input: out, frames: frames)
    }

    static func nikon(_ rng: inout SplitMix64, small: Bool = false) -> Generated {
        var out: [UInt8] = []
        var frames: [FrameRecord] = []
        for _ in 0..<Int.random(in: 1...(small ? 3 : 5), using: &rng) {
            let j = jpeg(&rng, small: small)
            let info = try! JPEGScanner.scan(j)
            let boxes = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                Int.random(in: 0..<5, using: &rng) == 0 ? NikonLiveViewObject.Box(w: 0, h: 0, cx: 0, cy: 0)
                    : NikonLiveViewObject.Box(w: UInt16.random(in: 1...1000, using: &rng),
                                              h: UInt16.random(in: 1...1000, using: &rng),
                                              cx: UInt16.random(in: 0...6048, using: &rng),
                                              cy: UInt16.random(in: 0...3400, using: &rng))
            }
            let driving = Bool.random(using: &rng), judge = UInt8.random(in: 0...3, using: &rng)
            let mode = UInt8.random(in: 0...2, using: &rng)
            let hs = Bool.random(using: &rng) ? 1024 : 512
            let start = out.count
            NikonLiveViewObject.appendEx(jpeg: j, headerSize: hs, boxes: boxes, focusDriving: driving,
                                         focusJudgement: judge, afModeState: mode, to: &out)
            let state: AFState = driving ? .focusing : judge == 2 ? .focused : judge == 1 ? .notFocused : .normal
            let space = AFCoordinateSpace(width: 6048, height: 3400)
            var af: [AFArea] = []
            for (i, b) in boxes.enumerated() where !(b.w == 0 && b.h == 0 && b.cx == 0 && b.cy == 0) {
                let kind: AFKind = mode == 1 && i == 1 ? .subject : mode == 1 && i == 2 ? .eye : .af
                let r = CameraRect(x: Double(b.cx) - Double(b.w) / 2, y: Double(b.cy) - Double(b.h) / 2,
                                   width: Double(b.w), height: Double(b.h))
                af.append(AFArea(camera: r, in: space, imageWidth: info.width, imageHeight: info.height, kind: kind,
                                 state: state))
            }
            frames.append(record(j, offset: start + hs, af: af))
        }
        return Generated(input: out, frames: frames)
    }

    static func canon(_ rng: inout SplitMix64, small: Bool = false) -> Generated {
        var out: [UInt8] = []
        var frames: [FrameRecord] = []
        for _ in 0..<Int.random(in: 1...(small ? 3 : 5), using: &rng) {
            let j = jpeg(&rng, small: small)
            let start = out.count
            CanonEVFData.append(jpeg: j, extra: [(4, [1, 0, 0, 0]), (14, [0x28, 0x14, 0, 0, 0x74, 0x0D, 0, 0])], to: &out)
            frames.append(record(j, offset: start + 8))
            if Bool.random(using: &rng) {
                // USB response container + zero padding, as in the vcam dump.
                out.putLE32(20); out.putLE16(3); out.putLE16(0x2001); out.putLE32(0x13); out.putLE32(0)
                out.putLE32(UInt32(j.count))
                out.putZeros(4 * Int.random(in: 0...3, using: &rng))
            }
        }
        return Generated(input: out, frames: frames)
    }

    static func fuji(_ rng: inout SplitMix64, small: Bool = false) -> Generated {
        var out: [UInt8] = []
        var frames: [FrameRecord] = []
        for _ in 0..<Int.random(in: 1...(small ? 3 : 6), using: &rng) {
            let j = jpeg(&rng, small: small)
            let start = out.count
            FujiLiveViewFrame.append(jpeg: j, to: &out)
            frames.append(record(j, offset: start + 18))
        }
        return Generated(input: out, frames: frames)
    }

    static func stream(_ f: WireFormat, _ rng: inout SplitMix64, small: Bool = false) -> Generated {
        switch f {
        case .sonyRemote: return sonyRemote(&rng, small: small)
        case .sonyPTP: return sonyPTP(&rng, small: small)
        case .nikonLV: return nikon(&rng, small: small)
        case .canonEVF: return canon(&rng, small: small)
        case .fujiLV: return fuji(&rng, small: small)
        default: fatalError()
        }
    }

    static let streamFormats: [WireFormat] = [.sonyRemote, .sonyPTP, .nikonLV, .canonEVF, .fujiLV]
}
