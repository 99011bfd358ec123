import CameraWire
import LiveViewCore
import NIOCore

/// The outcome of one PTP transaction.
public struct PTPResult: Sendable {
    public var code: UInt16
    public var params: [UInt32]
    public var data: [UInt8]
    /// The transaction's ID.
    public var transactionID: UInt32 = 0
    public var ok: Bool { code == PTPResponse.ok }
}

/// An event from the camera (PTP/IP event socket).
public struct PTPEventRecord: Sendable, Hashable {
    public var code: UInt16
    public var params: [UInt32]
}

/// A command channel to a camera: PTP/IP, or Fujifilm's USB-container dialect.
protocol PTPTransport: AnyObject, Sendable {
    /// One transaction; `dataOut` non-nil makes it a data-out transaction.
    func transact(_ code: UInt16, _ params: [UInt32], dataOut: [UInt8]?, timeout: Duration) async throws -> PTPResult
    /// Events received since the last call (never waits).
    func drainEvents() -> [PTPEventRecord]
    func close()
}

/// Random initiator GUID, kept for the process (cameras that pair remember the GUID).
enum PTPInitiator {
    static let guid: [UInt8] = (0..<16).map { _ in UInt8.random(in: 0...255) }
    static let friendlyName = "livegate"
}

/// PTP/IP initiator over two TCP connections (ptp.md §1.1–1.3).
final class PTPIPTransport: PTPTransport, Sendable {
    let command: PTPSocket
    let event: PTPSocket
    let connectionNumber: UInt32
    let cameraName: String
    private let mutex = AsyncMutex()
    private let tid = Mutex<UInt32>(0)
    private let failed = Mutex<(any Error)?>(nil)

    private init(command: PTPSocket, event: PTPSocket, connectionNumber: UInt32, cameraName: String) {
        self.command = command
        self.event = event
        self.connectionNumber = connectionNumber
        self.cameraName = cameraName
    }

    /// The handshake: Init_Command_Request → Ack, then the event socket's Init_Event_Request → Ack.
    static func connect(host: String, port: Int, group: any EventLoopGroup, timeout: Duration) async throws -> PTPIPTransport {
        let cmd = try await PTPSocket.connect(host: host, port: port, group: group, mode: .ptpip, name: "command",
                                              timeout: timeout)
        do {
            try await cmd.send(.initCommandRequest(guid: PTPInitiator.guid, friendlyName: PTPInitiator.friendlyName,
                                                   protocolVersion: PTPIPPacket.protocolVersion1))
            let conn: UInt32, name: String
            switch try await cmd.receive(timeout: timeout) {
            case .packet(.initCommandAck(let c, _, let n, _)): conn = c; name = n
            case .packet(.initFail(let reason)):
                throw PTPTransportError.refused("Init_Fail reason \(reason) (not paired, or the camera is busy)")
            default: throw PTPTransportError.protocolError("expected Init_Command_Ack")
            }
            let evt = try await PTPSocket.connect(host: host, port: port, group: group, mode: .ptpip, name: "event",
                                                  timeout: timeout)
            do {
                try await evt.send(.initEventRequest(connectionNumber: conn))
                switch try await evt.receive(timeout: timeout) {
                case .packet(.initEventAck): break
                case .packet(.initFail(let reason)): throw PTPTransportError.refused("event Init_Fail reason \(reason)")
                default: throw PTPTransportError.protocolError("expected Init_Event_Ack")
                }
            } catch {
                evt.close()
                throw error
            }
            return PTPIPTransport(command: cmd, event: evt, connectionNumber: conn, cameraName: name)
        } catch {
            cmd.close()
            throw error
        }
    }

    func transact(_ code: UInt16, _ params: [UInt32], dataOut: [UInt8]?, timeout: Duration) async throws -> PTPResult {
        await mutex.lock()
        do {
            let r = try await locked(code, params, dataOut: dataOut, timeout: timeout)
            await mutex.unlock()
            return r
        } catch is CancellationError {
            // The caller gave up; late packets of this transaction are skipped by their TID.
            await mutex.unlock()
            throw CancellationError()
        } catch {
            // A transaction cut in the middle leaves the connection unusable.
            failed.withLock { if $0 == nil { $0 = error } }
            close()
            await mutex.unlock()
            throw error
        }
    }

    private func locked(_ code: UInt16, _ params: [UInt32], dataOut: [UInt8]?, timeout: Duration) async throws -> PTPResult {
        if let e = failed.withLock({ $0 }) { throw PTPTransportError.closed("earlier failure: \(e)") }
        // OpenSession is transaction 0; every later request increments.
        let t = tid.withLock { v -> UInt32 in
            let o = v
            v &+= 1
            return o
        }
        var out: [UInt8] = []
        PTPIPPacket.operationRequest(dataPhase: dataOut == nil ? PTPIPPacket.dataPhaseNoneOrIn : PTPIPPacket.dataPhaseOut,
                                     code: code, transactionID: t, params: params).serialize(into: &out)
        if let d = dataOut {
            for p in PTPIPDataPhase.packets(transactionID: t, data: d) { p.serialize(into: &out) }
        }
        try await command.send(out)
        var phase = PTPIPDataPhase()
        var data: [UInt8] = []
        while true {
            let incoming = try await command.receive(timeout: timeout)
            guard case .packet(let p) = incoming else { continue }
            switch p {
            case .startData(let pt, _), .data(let pt, _), .endData(let pt, _):
                // Leftovers of an abandoned (cancelled) transaction are skipped.
                guard pt == t else { continue }
                switch phase.ingest(p) {
                case .incomplete: continue
                case .complete: data = phase.payload
                case .error(let why): throw PTPTransportError.protocolError(why)
                }
            case .operationResponse(let rc, let rt, let rp):
                guard rt == t else { continue }
                return PTPResult(code: rc, params: rp, data: data, transactionID: t)
            case .probeRequest:
                try await command.send(.probeResponse)
            default:
                continue
            }
        }
    }

    func drainEvents() -> [PTPEventRecord] {
        var out: [PTPEventRecord] = []
        while let item = try? event.inbox.poll() {
            if case .packet(.event(let c, _, let p)) = item { out.append(PTPEventRecord(code: c, params: p)) }
            if case .packet(.probeRequest) = item { event.channel.writeAndFlush(event.channel.allocator.buffer(bytes: PTPIPPacket.probeResponse.bytes), promise: nil) }
        }
        return out
    }

    func close() {
        command.close()
        event.close()
    }
}

/// Fujifilm's Wi-Fi dialect (ptp.md §2.4): an 82-byte init packet, then USB bulk containers on the
/// command socket, a separate event port and a pushed live-view port.
final class FujiTransport: PTPTransport, Sendable {
    let command: PTPSocket
    private let mutex = AsyncMutex()
    private let tid = Mutex<UInt32>(0)
    private let failed = Mutex<(any Error)?>(nil)
    static let initMagic: UInt32 = 0x8F53_E4F2

    private init(command: PTPSocket) { self.command = command }

    /// The fixed 82-byte init packet.
    static func initPacket() -> [UInt8] {
        var b: [UInt8] = []
        b.ptpPutLE32(0x52); b.ptpPutLE32(1); b.ptpPutLE32(initMagic)
        b += PTPInitiator.guid
        for u in PTPInitiator.friendlyName.utf16 { b.append(UInt8(truncatingIfNeeded: u)); b.append(UInt8(u >> 8)) }
        while b.count < 82 { b.append(0) }
        return Array(b.prefix(82))
    }

    static func connect(host: String, port: Int, group: any EventLoopGroup, timeout: Duration) async throws -> FujiTransport {
        var lastError: (any Error)?
        for attempt in 0..<2 {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(500)) }
            let cmd = try await PTPSocket.connect(host: host, port: port, group: group, mode: .lengthPrefixed,
                                                  name: "fuji command", timeout: timeout)
            do {
                try await cmd.send(initPacket())
                guard case .message(let m) = try await cmd.receive(timeout: timeout), m.count >= 12 else {
                    throw PTPTransportError.protocolError("fuji init reply")
                }
                var r = PTPReader(m, at: 4)
                switch try r.u32() {
                case 2: return FujiTransport(command: cmd)
                case 5: throw PTPTransportError.refused("fuji Init_Fail")
                default: throw PTPTransportError.protocolError("fuji init reply type")
                }
            } catch {
                cmd.close()
                lastError = error
            }
        }
        throw lastError ?? PTPTransportError.refused("fuji init")
    }

    func transact(_ code: UInt16, _ params: [UInt32], dataOut: [UInt8]?, timeout: Duration) async throws -> PTPResult {
        await mutex.lock()
        do {
            let r = try await locked(code, params, dataOut: dataOut, timeout: timeout)
            await mutex.unlock()
            return r
        } catch is CancellationError {
            // The caller gave up (live view stopping); late containers of this transaction are
            // skipped by their TID, so the session can still be closed properly.
            await mutex.unlock()
            throw CancellationError()
        } catch {
            failed.withLock { if $0 == nil { $0 = error } }
            close()
            await mutex.unlock()
            throw error
        }
    }

    static func container(type: UInt16, code: UInt16, tid: UInt32, params: [UInt32] = [], payload: [UInt8] = []) -> [UInt8] {
        var b: [UInt8] = []
        b.ptpPutLE32(UInt32(12 + 4 * params.count + payload.count))
        b.append(UInt8(truncatingIfNeeded: type)); b.append(UInt8(type >> 8))
        b.append(UInt8(truncatingIfNeeded: code)); b.append(UInt8(code >> 8))
        b.ptpPutLE32(tid)
        for p in params { b.ptpPutLE32(p) }
        b += payload
        return b
    }

    private func locked(_ code: UInt16, _ params: [UInt32], dataOut: [UInt8]?, timeout: Duration) async throws -> PTPResult {
        if let e = failed.withLock({ $0 }) { throw PTPTransportError.closed("earlier failure: \(e)") }
        let t = tid.withLock { v -> UInt32 in
            let o = v
            v &+= 1
            return o
        }
        var out = Self.container(type: 1, code: code, tid: t, params: params)
        if let d = dataOut { out += Self.container(type: 2, code: code, tid: t, payload: d) }
        try await command.send(out)
        var data: [UInt8] = []
        while true {
            guard case .message(let m) = try await command.receive(timeout: timeout), m.count >= 12 else { continue }
            var r = PTPReader(m, at: 4)
            let type = try r.u16()
            let rc = try r.u16()
            let rt = try r.u32()
            guard rt == t else { continue }
            switch type {
            case 2: data = Array(m[12...])
            case 3:
                var ps: [UInt32] = []
                while r.remaining >= 4 { ps.append(try r.u32()) }
                return PTPResult(code: rc, params: ps, data: data, transactionID: t)
            default: continue
            }
        }
    }

    func drainEvents() -> [PTPEventRecord] { [] }

    func close() { command.close() }
}

extension Array where Element == UInt8 {
    mutating func ptpPutLE32(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 24))
    }

    mutating func ptpPutLE16(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(v >> 8))
    }
}
