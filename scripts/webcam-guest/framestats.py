#!/usr/bin/env python3
"""Per-frame picture statistics of a raw RGB24 stream on stdin (ffmpeg -f rawvideo -pix_fmt rgb24).

    ffmpeg -f v4l2 -i /dev/video10 -vf fps=4,scale=64:36 -f rawvideo -pix_fmt rgb24 - | framestats.py 64 36 OUT

Appends one line per frame to OUT: `<uptime seconds> <kind> chroma=<c> luma=<l> band=<b>`, where chroma
is the mean of max(R,G,B)-min(R,G,B) (0 for grey), luma the mean of (R+G+B)/3, band how much darker
the middle sixth of the picture is than the rest, and kind:
  live   the emulators' test pattern: four tinted quadrants and an orange subject (chroma ~70, luma ~120)
  slate  livegate's offline card: the camera graph's dark "cam0 - RECONNECTING" card (dark grey, navy
         band, white text; chroma ~17, luma ~34) or VirtualWebcamOutput's own mid-grey card with a
         darker band (chroma ~0, luma ~105)
  other  anything else
"""
import sys


def uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def classify(frame: bytes, w: int, h: int) -> tuple[str, float, float, float]:
    chroma = luma = 0.0
    band_sum = rest_sum = 0.0
    band_n = rest_n = 0
    b0, b1 = h * 5 // 12, h * 7 // 12
    for y in range(h):
        row = frame[y * w * 3:(y + 1) * w * 3]
        in_band = b0 <= y < b1
        for x in range(0, w * 3, 3):
            r, g, b = row[x], row[x + 1], row[x + 2]
            chroma += max(r, g, b) - min(r, g, b)
            v = (r + g + b) / 3
            luma += v
            if in_band:
                band_sum += v
                band_n += 1
            else:
                rest_sum += v
                rest_n += 1
    n = w * h
    chroma /= n
    luma /= n
    band = rest_sum / max(1, rest_n) - band_sum / max(1, band_n)
    if chroma >= 40 and luma >= 70:
        kind = "live"
    elif chroma < 30 and luma < 70:
        kind = "slate"  # the dark reconnecting card
    elif chroma < 6 and 60 <= luma <= 160 and band > 20:
        kind = "slate"  # the grey card
    else:
        kind = "other"
    return kind, chroma, luma, band


def main() -> int:
    w, h, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    size = w * h * 3
    src = sys.stdin.buffer
    with open(out, "a", buffering=1) as f:
        while True:
            frame = src.read(size)
            if len(frame) < size:
                return 0
            kind, c, l, b = classify(frame, w, h)
            f.write(f"{uptime():.2f} {kind} chroma={c:.1f} luma={l:.1f} band={b:.1f}\n")


if __name__ == "__main__":
    sys.exit(main())
