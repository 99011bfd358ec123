/// A parsed `cam.cgi` reply (panasonic.md §3): either XML (`<camrply><result>…</result>…`) or the
/// plain CSV some modes answer with (`accctrl`, `getinfo&type=lens`, `camctrl&type=focus`).
public struct PanasonicReply: Sendable, Hashable {
    /// `ok`, `err_busy`, `ok_under_research_no_msg`, … (for CSV: the first field).
    public var result: String
    /// True when the body was XML.
    public var isXML: Bool
    /// CSV fields (empty for XML).
    public var fields: [String]
    /// Attributes of `<settingvalue …>` (getsetting).
    public var settings: [String: String]
    /// Text of leaf elements (`<cammode>rec</cammode>` → `cammode: rec`); the first occurrence wins.
    public var elements: [String: String]
    /// The whole body as text.
    public var text: String

    public var isOK: Bool { result == "ok" }

    /// Parses a reply body. Never fails: an unrecognisable body gives `result` = the trimmed text.
    public init(body: [UInt8]) {
        let text = String(decoding: body, as: UTF8.self)
        self.init(text: text)
    }

    public init(text: String) {
        self.text = text
        let trimmed = text.panaTrimmed(" \r\n\t\u{FEFF}")
        if trimmed.hasPrefix("<") {
            isXML = true
            fields = []
            let scan = PanasonicXML.scan(trimmed)
            elements = scan.leaves
            result = scan.leaves["result"] ?? ""
            settings = scan.tags.first { $0.name == "settingvalue" }?.attributes ?? [:]
        } else {
            isXML = false
            fields = trimmed.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            result = fields.first ?? ""
            settings = [:]
            elements = [:]
        }
    }
}

extension String {
    /// Trims the given characters, compared per Unicode scalar (so "\r\n" and a lone "\n" both go).
    func panaTrimmed(_ set: String) -> String {
        let drop = Set(set.unicodeScalars)
        var scalars = Substring(self).unicodeScalars[...]
        while let f = scalars.first, drop.contains(f) { scalars = scalars.dropFirst() }
        while let l = scalars.last, drop.contains(l) { scalars = scalars.dropLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}

/// A small scanner for the flat XML the cameras send: start tags with their attributes and the text
/// of leaf elements. No DTDs, no namespaces resolution (prefixes are kept in names).
public enum PanasonicXML {
    public struct Tag: Sendable, Hashable {
        public var name: String
        public var attributes: [String: String]
    }

    public struct Scan: Sendable {
        public var tags: [Tag] = []
        public var leaves: [String: String] = [:]
        /// Every leaf in document order (name, text), for repeated elements.
        public var leafList: [(String, String)] = []
    }

    public static func scan(_ text: String) -> Scan {
        var out = Scan()
        let b = Array(text.utf8)
        var i = 0
        var lastOpen: (name: String, contentStart: Int)?
        while i < b.count {
            guard b[i] == UInt8(ascii: "<") else { i += 1; continue }
            // Comments, declarations, processing instructions.
            if i + 1 < b.count, b[i + 1] == UInt8(ascii: "?") || b[i + 1] == UInt8(ascii: "!") {
                if let end = find(b, "-->", from: i), b.count > i + 3, b[i + 2] == UInt8(ascii: "-") {
                    i = end + 3
                } else {
                    i = (firstIndex(b, UInt8(ascii: ">"), from: i) ?? b.count) + 1
                }
                lastOpen = nil
                continue
            }
            guard let close = firstIndex(b, UInt8(ascii: ">"), from: i) else { break }
            let inner = b[(i + 1)..<close]
            if inner.first == UInt8(ascii: "/") {
                let name = String(decoding: inner.dropFirst(), as: UTF8.self).panaTrimmed(" \t\r\n")
                if let open = lastOpen, open.name == name {
                    let content = unescape(String(decoding: b[open.contentStart..<i], as: UTF8.self))
                    if out.leaves[name] == nil { out.leaves[name] = content }
                    out.leafList.append((name, content))
                }
                lastOpen = nil
            } else {
                let selfClosing = inner.last == UInt8(ascii: "/")
                let body = selfClosing ? inner.dropLast() : inner
                let tag = parseTag(body)
                out.tags.append(tag)
                lastOpen = selfClosing ? nil : (tag.name, close + 1)
            }
            i = close + 1
        }
        return out
    }

    static func parseTag(_ body: ArraySlice<UInt8>) -> Tag {
        var i = body.startIndex
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
        while i < body.endIndex, !isSpace(body[i]) { i += 1 }
        let name = String(decoding: body[body.startIndex..<i], as: UTF8.self)
        var attrs: [String: String] = [:]
        while i < body.endIndex {
            while i < body.endIndex, isSpace(body[i]) { i += 1 }
            let ks = i
            while i < body.endIndex, body[i] != UInt8(ascii: "="), !isSpace(body[i]) { i += 1 }
            let key = String(decoding: body[ks..<i], as: UTF8.self)
            while i < body.endIndex, isSpace(body[i]) { i += 1 }
            guard i < body.endIndex, body[i] == UInt8(ascii: "=") else {
                if !key.isEmpty { attrs[key] = "" }
                if i < body.endIndex, !isSpace(body[i]) { i += 1 }
                continue
            }
            i += 1
            while i < body.endIndex, isSpace(body[i]) { i += 1 }
            guard i < body.endIndex else { break }
            let q = body[i]
            if q == UInt8(ascii: "\"") || q == UInt8(ascii: "'") {
                let vs = i + 1
                var e = vs
                while e < body.endIndex, body[e] != q { e += 1 }
                attrs[key] = unescape(String(decoding: body[vs..<e], as: UTF8.self))
                i = e + 1
            } else {
                let vs = i
                while i < body.endIndex, !isSpace(body[i]) { i += 1 }
                attrs[key] = unescape(String(decoding: body[vs..<i], as: UTF8.self))
            }
        }
        return Tag(name: name, attributes: attrs)
    }

    static func firstIndex(_ b: [UInt8], _ c: UInt8, from: Int) -> Int? {
        var i = from
        while i < b.count { if b[i] == c { return i }; i += 1 }
        return nil
    }

    static func find(_ b: [UInt8], _ s: String, from: Int) -> Int? {
        let p = Array(s.utf8)
        guard p.count <= b.count else { return nil }
        var i = from
        while i + p.count <= b.count {
            if b[i] == p[0], Array(b[i..<(i + p.count)]) == p { return i }
            i += 1
        }
        return nil
    }

    /// Decodes the five predefined entities and numeric references.
    public static func unescape(_ s: String) -> String {
        guard s.contains("&") else { return s }
        var out = ""
        var rest = Substring(s)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semi) <= 10 else {
                out += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let ent = rest[rest.index(after: amp)..<semi]
            switch ent {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                var scalar: Unicode.Scalar?
                if ent.hasPrefix("#x") || ent.hasPrefix("#X") { scalar = UInt32(ent.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init) }
                else if ent.hasPrefix("#") { scalar = UInt32(ent.dropFirst()).flatMap(Unicode.Scalar.init) }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += "&\(ent);" }
            }
            rest = rest[rest.index(after: semi)...]
        }
        out += rest
        return out
    }

    /// `setsetting` values per `cmd_type` listed in a `getinfo&type=allmenu` reply, in menu order,
    /// without duplicates.
    public static func menuValues(_ text: String) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for tag in scan(text).tags where tag.name == "item" {
            guard tag.attributes["cmd_mode"] == "setsetting", let t = tag.attributes["cmd_type"],
                  let v = tag.attributes["cmd_value"] else { continue }
            if !(out[t]?.contains(v) ?? false) { out[t, default: []].append(v) }
        }
        return out
    }
}

/// The `cam.cgi` result codes and how they map to the control API's errors.
public enum PanasonicResult {
    /// Stable numeric codes for `CameraControlError.camera(code:…)` (HTTP-level failures use the
    /// HTTP status instead, always ≥ 400).
    public static func code(_ result: String) -> Int {
        switch result {
        case "err_param": return 1
        case "err_reject": return 2
        case "err_busy": return 3
        case "err_critical": return 4
        case "err_unsuitable_app": return 5
        case "err_already_connected": return 6
        case "err_non_support": return 7
        case "err_user_refused": return 8
        case "err_others_requesting": return 9
        default: return 99
        }
    }

    static func explanation(_ result: String) -> String {
        switch result {
        case "err_param": return "the camera does not accept this parameter or value"
        case "err_reject": return "the camera refused the request"
        case "err_busy": return "the camera is busy"
        case "err_critical": return "no valid session or the camera is in the wrong state"
        case "err_unsuitable_app": return "this client is not registered for remote control (accctrl not granted)"
        case "err_already_connected": return "another app is already connected to the camera"
        case "err_non_support": return "not supported by this camera"
        case "err_user_refused": return "the connection was refused on the camera"
        case "err_others_requesting": return "another client is pairing with the camera"
        case "": return "unrecognised reply"
        default: return "camera error"
        }
    }

    /// The control error for a non-ok result of `request` (e.g. "setsetting whitebalance").
    public static func error(_ result: String, request: String) -> CameraControlError {
        if result == "err_non_support" {
            return .notSupported("\(request) (camera replied err_non_support)")
        }
        let shown = result.isEmpty ? "?" : result
        return .camera(code: code(result), message: "\(shown): \(explanation(result)) [\(request)]")
    }
}
