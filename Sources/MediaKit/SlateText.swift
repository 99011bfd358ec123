/// A tiny bitmap-font text renderer that draws into 8-bit planes (the offline slate's camera name, state,
/// reason and time).
///
/// Glyphs are 5×8 pixel cells, advanced by 6 pixels (5 + 1 spacing) and enlarged by an integer scale: capitals and
/// digits use rows 0–6, lowercase has a 5-row x-height, and row 7 holds descenders. Every printable ASCII character
/// has its own glyph; any other character (controls, non-ASCII) draws as a hollow box. Scales below 1 count as 1.
enum SlateText {
    /// Glyph cell width in font pixels.
    static let glyphWidth = 5
    /// Glyph cell height in font pixels, descender row included.
    static let glyphHeight = 8
    /// Horizontal distance from one glyph to the next, in font pixels.
    static let advance = glyphWidth + 1
    /// Blank font pixels between one line's cells and the next line's.
    static let lineGap = 2

    /// Width in pixels of `text` drawn at integer `scale`: one 6-pixel cell (glyph 5 wide + 1 spacing) per
    /// character, times scale. Equals what `draw` advances by.
    static func width(of text: String, scale: Int) -> Int {
        text.count * advance * max(scale, 1)
    }

    /// Distance in pixels from one line's top to the next line's top at integer `scale`.
    static func lineHeight(scale: Int) -> Int {
        (glyphHeight + lineGap) * max(scale, 1)
    }

    /// Draws `text` with its top-left at (x, y) into a plane of `width`×`height` pixels with `stride` bytes per row,
    /// setting covered pixels to `value`. Clips at the plane's edges (never writes outside). Returns the x after the
    /// last glyph (`x + width(of: text, scale: scale)`).
    @discardableResult
    static func draw(_ text: String, x: Int, y: Int, scale: Int, value: UInt8,
                     into plane: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int) -> Int {
        let scale = max(scale, 1)
        let cellWidth = advance * scale
        guard width > 0, height > 0, y < height, y + glyphHeight * scale > 0 else {
            return x + text.count * cellWidth
        }
        var penX = x
        for character in text {
            defer { penX += cellWidth }
            guard penX < width, penX + cellWidth > 0 else { continue }
            let glyph = glyphIndex(of: character) * glyphHeight
            for row in 0..<glyphHeight {
                let mask = glyphRows[glyph + row]
                let top = max(y + row * scale, 0), bottom = min(y + (row + 1) * scale, height)
                guard mask != 0, top < bottom else { continue }
                for column in 0..<glyphWidth where mask & (0b10000 >> column) != 0 {
                    let left = max(penX + column * scale, 0), right = min(penX + (column + 1) * scale, width)
                    guard left < right else { continue }
                    for pixelY in top..<bottom {
                        (plane + pixelY * stride + left).update(repeating: value, count: right - left)
                    }
                }
            }
        }
        return penX
    }

    /// Largest integer scale (≥1, ≤ `maxScale` unless that is below 1) at which `text` fits `maxWidth` pixels;
    /// 1 when even scale 1 does not fit.
    static func fittingScale(for text: String, maxWidth: Int, maxScale: Int) -> Int {
        let unscaledWidth = width(of: text, scale: 1)
        guard unscaledWidth > 0 else { return max(maxScale, 1) }
        return max(1, min(maxScale, maxWidth / unscaledWidth))
    }

    /// Truncates `text` with "..." so it fits `maxWidth` at `scale` (trailing whitespace before the dots is dropped).
    /// Text that fits comes back unchanged; a width too narrow for the dots gets as many dots as fit.
    static func truncated(_ text: String, maxWidth: Int, scale: Int) -> String {
        let ellipsis = "..."
        let capacity = max(maxWidth, 0) / (advance * max(scale, 1))
        guard text.count > capacity else { return text }
        guard capacity > ellipsis.count else { return String(ellipsis.prefix(capacity)) }
        var kept = text.prefix(capacity - ellipsis.count)
        while kept.last?.isWhitespace == true { kept.removeLast() }
        return String(kept) + ellipsis
    }

    /// Index in `glyphRows` (in glyphs) of `character`'s glyph: printable ASCII in code order, then the box.
    private static func glyphIndex(of character: Character) -> Int {
        guard let ascii = character.asciiValue, (32...126).contains(ascii) else { return 95 }
        return Int(ascii) - 32
    }

    /// The font: 8 row masks per glyph, top row first, bit 4 (0b10000) the leftmost column. Glyphs for ASCII 32–126
    /// in code order, then the fallback box.
    private static let glyphRows: [UInt8] = [
        0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000,  // space
        0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000, 0b00100, 0b00000,  // !
        0b01010, 0b01010, 0b01010, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000,  // quote
        0b01010, 0b01010, 0b11111, 0b01010, 0b11111, 0b01010, 0b01010, 0b00000,  // #
        0b00100, 0b01111, 0b10100, 0b01110, 0b00101, 0b11110, 0b00100, 0b00000,  // $
        0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011, 0b00000,  // %
        0b01100, 0b10010, 0b10100, 0b01000, 0b10101, 0b10010, 0b01101, 0b00000,  // &
        0b00100, 0b00100, 0b00100, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000,  // apostrophe
        0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010, 0b00000,  // (
        0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000, 0b00000,  // )
        0b00000, 0b00100, 0b10101, 0b01110, 0b10101, 0b00100, 0b00000, 0b00000,  // *
        0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000, 0b00000,  // +
        0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000,  // ,
        0b00000, 0b00000, 0b00000, 0b01110, 0b00000, 0b00000, 0b00000, 0b00000,  // -
        0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100, 0b00000,  // .
        0b00001, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b10000, 0b00000,  // /
        0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110, 0b00000,  // 0
        0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0b00000,  // 1
        0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111, 0b00000,  // 2
        0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110, 0b00000,  // 3
        0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010, 0b00000,  // 4
        0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110, 0b00000,  // 5
        0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110, 0b00000,  // 6
        0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00000,  // 7
        0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110, 0b00000,  // 8
        0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100, 0b00000,  // 9
        0b00000, 0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000,  // :
        0b00000, 0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b00100, 0b01000,  // ;
        0b00010, 0b00100, 0b01000, 0b10000, 0b01000, 0b00100, 0b00010, 0b00000,  // <
        0b00000, 0b00000, 0b11111, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000,  // =
        0b01000, 0b00100, 0b00010, 0b00001, 0b00010, 0b00100, 0b01000, 0b00000,  // >
        0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100, 0b00000,  // ?
        0b01110, 0b10001, 0b10111, 0b10101, 0b10111, 0b10000, 0b01111, 0b00000,  // @
        0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001, 0b00000,  // A
        0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110, 0b00000,  // B
        0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110, 0b00000,  // C
        0b11110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b11110, 0b00000,  // D
        0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111, 0b00000,  // E
        0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000, 0b00000,  // F
        0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111, 0b00000,  // G
        0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001, 0b00000,  // H
        0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0b00000,  // I
        0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100, 0b00000,  // J
        0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001, 0b00000,  // K
        0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111, 0b00000,  // L
        0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001, 0b00000,  // M
        0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001, 0b00000,  // N
        0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110, 0b00000,  // O
        0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000, 0b00000,  // P
        0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101, 0b00000,  // Q
        0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001, 0b00000,  // R
        0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110, 0b00000,  // S
        0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000,  // T
        0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110, 0b00000,  // U
        0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00000,  // V
        0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010, 0b00000,  // W
        0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001, 0b00000,  // X
        0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000,  // Y
        0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111, 0b00000,  // Z
        0b01110, 0b01000, 0b01000, 0b01000, 0b01000, 0b01000, 0b01110, 0b00000,  // [
        0b10000, 0b10000, 0b01000, 0b00100, 0b00010, 0b00001, 0b00001, 0b00000,  // backslash
        0b01110, 0b00010, 0b00010, 0b00010, 0b00010, 0b00010, 0b01110, 0b00000,  // ]
        0b00100, 0b01010, 0b10001, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000,  // ^
        0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111,  // _
        0b01000, 0b00100, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000,  // `
        0b00000, 0b00000, 0b01110, 0b00001, 0b01111, 0b10001, 0b01111, 0b00000,  // a
        0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b11110, 0b00000,  // b
        0b00000, 0b00000, 0b01110, 0b10000, 0b10000, 0b10001, 0b01110, 0b00000,  // c
        0b00001, 0b00001, 0b01101, 0b10011, 0b10001, 0b10001, 0b01111, 0b00000,  // d
        0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110, 0b00000,  // e
        0b00110, 0b01001, 0b01000, 0b11100, 0b01000, 0b01000, 0b01000, 0b00000,  // f
        0b00000, 0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110,  // g
        0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001, 0b00000,  // h
        0b00100, 0b00000, 0b01100, 0b00100, 0b00100, 0b00100, 0b01110, 0b00000,  // i
        0b00010, 0b00000, 0b00110, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100,  // j
        0b10000, 0b10000, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b00000,  // k
        0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0b00000,  // l
        0b00000, 0b00000, 0b11010, 0b10101, 0b10101, 0b10001, 0b10001, 0b00000,  // m
        0b00000, 0b00000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001, 0b00000,  // n
        0b00000, 0b00000, 0b01110, 0b10001, 0b10001, 0b10001, 0b01110, 0b00000,  // o
        0b00000, 0b00000, 0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000,  // p
        0b00000, 0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b00001,  // q
        0b00000, 0b00000, 0b10110, 0b11001, 0b10000, 0b10000, 0b10000, 0b00000,  // r
        0b00000, 0b00000, 0b01111, 0b10000, 0b01110, 0b00001, 0b11110, 0b00000,  // s
        0b01000, 0b01000, 0b11100, 0b01000, 0b01000, 0b01001, 0b00110, 0b00000,  // t
        0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101, 0b00000,  // u
        0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00000,  // v
        0b00000, 0b00000, 0b10001, 0b10001, 0b10101, 0b10101, 0b01010, 0b00000,  // w
        0b00000, 0b00000, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b00000,  // x
        0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110,  // y
        0b00000, 0b00000, 0b11111, 0b00010, 0b00100, 0b01000, 0b11111, 0b00000,  // z
        0b00011, 0b00100, 0b00100, 0b01000, 0b00100, 0b00100, 0b00011, 0b00000,  // {
        0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100,  // |
        0b11000, 0b00100, 0b00100, 0b00010, 0b00100, 0b00100, 0b11000, 0b00000,  // }
        0b00000, 0b00000, 0b01000, 0b10101, 0b00010, 0b00000, 0b00000, 0b00000,  // ~
        0b11111, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b11111, 0b00000,  // fallback box
    ]
}
