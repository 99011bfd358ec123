#!/usr/bin/env python3
"""Independent Panasonic LUMIX Wi-Fi test camera (cam.cgi + UDP live view + DLNA card).

Clean-room: written only from ../shared/protocols/panasonic.md ("the notes"),
without looking at livegate's own Panasonic code.  Section numbers (§N) refer
to that file.  Python 3.11 standard library only; `ffmpeg` is run a few times
at start-up to make the live-view frames, the card pictures and the MP4.

    python3 Tests/Scripts/lumix_cam.py --http-port P [--dlna-port Q]
        [--host 127.0.0.1] [--size 640x480] [--fps 30] [--log REQUESTS.jsonl]
        [--frames-log FRAMES.jsonl] [--objects-log OBJECTS.jsonl]
        [--card-files N] [--group-by-day] [--capture-ms 300]
        [--pairing req_acc|none] [--accctrl-polls K] [--lv-timeout S]
        [--start-mode play|rec] [--after-capture rec|play]
        [--break-transfer-once[=NAME]] [--help-choices]

`--http-port 0` / `--dlna-port 0` (default 0) pick free ports (the camera's are
80 and 60606, §1).  Prints `ready http=P dlna=Q` once both listen; runs until
SIGTERM/SIGINT and exits 0.  SIGUSR1 = a shot with the body's shutter button.

The body pretends to be a DMC-G80 (fw D2.91), friendly name G80-5A3C1E.

Choices made where the notes are silent or say UNCONFIRMED:
  Pairing (§4)
  * Generation 2 (`req_acc`, G80 class) by default; `--pairing none` = GH3/GH4
    (every request accepted; accctrl answers XML err_non_support, §4.1).
  * `accctrl&type=req_acc&value=<id>&value2=<name>`: a name never granted
    before gets `ok_under_research_no_msg,G80-5A3C1E,remote` for the first
    K-1 polls and `ok,G80-5A3C1E,remote` on poll K (--accctrl-polls, default 2);
    a name granted earlier gets `ok,...` at once.  Missing value2 -> the name is
    `value`.  req_acc_g / req_acc_e / other types -> plain `err_param`.
    accctrl answers are text/plain CSV.
  * The grant belongs to the peer IP address; the most recent granted peer is
    the only controller (§1).  Any other peer gets err_unsuitable_app on every
    cam.cgi request except accctrl.  Grants never expire.
  * setsetting device_name and getsetting pa work in any mode; pa reads `0`.
  cam.cgi (§3)
  * HTTP 200 always; body `<?xml ...?>\\r\\n<camrply><result>R</result>...`
    (78 bytes for a bare ok, as in the capture), Content-Type text/xml,
    Server: Panasonic.  Paths other than /cam.cgi -> 404 empty body.
  * Missing/unknown mode, unknown type/verb, malformed value -> err_param;
    recognised but refused in the current state -> err_reject; camera
    settings in play mode -> err_busy (getsetting focal in play answers
    `32767/256`, as the S5 fixture); getinfo allmenu and lutctrl ->
    err_non_support.
  * The camera starts in play mode (--start-mode).  recmode/playmode switch
    at once; no drift back to play (S5II §2.1 not modelled).  playmode while a
    video records -> err_reject.
  * shtrspeed values `n/256` are echoed verbatim (out of range accepted);
    focal is clamped to the lens (768..2304 = f/2.8..f/22); exposure in thirds
    -15/3..15/3; iso auto|80..25600; enums as in §3.2.
  Live view (§2)
  * startstream is accepted in either mode; datagrams flow only while
    cammode=rec (a playmode pauses them, recmode resumes).  Source = an
    ephemeral UDP port; destination = the startstream requester's IP and
    `value`.  value2 is ignored.  A new startstream replaces the old target.
  * Keep-alive: the stream ends silently --lv-timeout s (default 10) after
    the last cam.cgi request (any mode) from the stream's IP; a new startstream
    is then needed.  ICMP errors are ignored (the notes say a body keeps
    sending into port-unreachable), so a client that vanishes is only
    noticed by the keep-alive.  stopstream ends it at once.
  * liveviewsize vga = --size, qvga = half of it; takes effect at the next
    startstream (§2.1).  30 distinct frames loop (testsrc2), baseline 4:2:2,
    standard Huffman tables, re-ordered like the GX7 payload: SOI, one DQT
    (two tables, 132 bytes: ffmpeg's shared table copied as table 1 for
    Cb/Cr), SOF0, one DHT (418 bytes), DRI(0), SOS (no APP0/COM, §2.4).  Quality is lowered until every
    datagram fits in 65507 bytes.
  * Basic header: totalSize, version=1, seqNo = n (global frame counter from
    0), pts = milliseconds since the stream started, everything else 0;
    exHeaderSize N = 232 (GH5S measurement).
  * Ex header type 1: zoomRatio 10 (1.0x), orientation byte 42 = 1, byte 46 =
    0xFF (12-byte AF entries), byte 47 = box count (1; 0 when focusmode=mf).
    Entry: x1,y1,x2,y2 on the 0..1000 grid with GMaster's aspect shift
    (4:3 none, 16:9 y 125, 3:2 y 58, 1:1 x 125), byte 8 = 0x00, byte 9 = 0xFF
    (not "AF failed"), bytes 10-11 = 0x0001 (one area).  Exposure block at
    GMaster's offsets + 12n: aperture, shutter numerators, mode 1 (P; 5 while
    recording video), focus mode (1/2/3/0xFF), AF mode; rest zero.
  * The box (in image thousandths) is 200x200 with top-left
    (100+25*(n%25), 100+25*((n//25)%25)); frames-log "af" = [x,y,w,h] in JPEG
    pixels computed back from the wire grid exactly as a GMaster-style parser
    would (round((g-shift)*W/(1000-2*shift))).  Extra keys: grid, seq, to.
  Card, capture, DLNA (§5)
  * Everything on the DLNA port: device description at /<MAC>/Server0/ddd
    (also /Lumix/Server0/ddd), CDS/CMS control, SCPD and event URLs at
    /Server0/... (a /<MAC> or /Lumix prefix is also accepted), and the media
    (the notes put media on :50001; only two ports are configurable here):
    /DO<id>.JPG|MP4 original (CAM_ORG / CAM_AVC_MP4_HD_1280_720_30p),
    /DT<id>.JPG 160x120 thumbnail (CAM_TN), /DL<id>.JPG 640x428 large
    thumbnail (CAM_LRGTN, JPEGs only).  protocolInfo =
    `http-get:*:<mime>:PANASONIC.COM_PN=<PN>`.  GET / -> 404.
  * pana:X_FirmVersion D2.91, pana:X_AdditionalFunction 0,
    pana:X_CamCategory DSC (values invented).  SUBSCRIBE/UNSUBSCRIBE answer
    200 with a SID and TIMEOUT: Second-1800; no NOTIFY is ever sent.
  * DLNA needs no accctrl grant.  Browse answers only in play mode; in rec
    mode it is a SOAP fault, HTTP 500, UPnPError 720 "Cannot process the
    request".  Bad XML / missing or non-numeric arguments -> 402 Invalid
    Args; unknown action -> 401; unknown ObjectID -> 701; BrowseDirectChildren
    on an item -> 710.  X_FromCP is optional.  The action is taken from the
    SOAP body element (SOAPACTION is only logged).  Supported CDS actions: Browse,
    GetSystemUpdateID, GetSearchCapabilities, GetSortCapabilities; CMS:
    GetProtocolInfo, GetCurrentConnectionIDs.  Search is not supported (401).
  * Object ids are the file numbers: P1000001.JPG has id 1000001.  The card
    starts with --card-files JPEGs 1616x1080 (with EXIF: Make, Model,
    Orientation, DateTimeOriginal, ImageUniqueID) and one 2 s 1280x720 H.264
    MP4, dated 2024-05-01 09:00 onwards, two objects per day.  Items are
    listed oldest first (newest LAST), by id.
  * --group-by-day: root holds one container per shooting day, id D<YYYYMMDD>,
    title YYYY-MM-DD, class object.container.album.dateAlbum, WITH childCount
    (the root container too), oldest day first.  Without it items sit
    directly under root "0".
  * Downloads work in any mode.  Headers: Content-Length, Accept-Ranges:
    bytes, X-FILE_SIZE (whole file, decimal), X-REC_DATE_TIME
    (YYYY-MM-DDTHH:MM:SS local), X-ROTATE_INFO 1.  Range: one `bytes=a-b`,
    `a-` or `-n` -> 206 + Content-Range; unsatisfiable -> 416; several ranges
    or junk -> the whole file (200).  HEAD supported.
  * camcmd capture (rec mode only, else err_reject; err_busy while an earlier
    camcmd shot is still being written): answers ok at once;
    remaincapacity drops by 1 at the shutter; sd_access is `on` from the
    shutter until the file is on the card --capture-ms later; then it
    appears in Browse (SystemUpdateID + 1).  Pictures are 1616x1080, made
    distinct by their EXIF ImageUniqueID.  --after-capture play switches to
    play mode after the shot (the VB/S5II remark in §2.1); default rec.
    SIGUSR1 does the same in any mode without changing the mode (never busy).
    video_recstart/recstop: rec on/off, progress_time counts, a distinct MP4
    (unique `free` box) appears after --capture-ms.
  * get_content_info counts the card objects; err_busy while sd_access=on.
  Broken download (--break-transfer-once, test aid, not in the notes)
  * Without NAME: the first GET of an original /DO<id>.JPG whose JPEG was
    written by a shot (camcmd capture or SIGUSR1; not the start-up card, not
    recorded MP4s) is cut.  With =NAME (e.g. P1000005.JPG, case-insensitive;
    any card object, also MP4s): the first GET of that object's /DO<id>.* is
    cut.  Only once per run.  The cut answer has the normal status line and
    headers (200, or 206 + Content-Range for a Range request) with the full
    Content-Length, then only the first half (floor) of that body; then the
    socket is closed.  The next download of the file is served whole.
    Thumbnails (/DT, /DL), HEAD and 416 answers are never cut.
  Objects log (--objects-log, JSON lines)
  * {"ev": "card"|"captured"|"body_shot", "id", "name", "size", "sha256"}
    (card at start-up; a shot / MP4 once written); every download answer
    adds "served" with "kind" (org|tn|lrgtn), "range", "method", "status",
    "length" (body bytes); "sha256"/"size" are of the whole resource (the
    whole original for org, also under Range).  A cut download writes
    "broken" instead of "served": same keys plus "sent" (body bytes actually
    sent) and "t" (epoch seconds).
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

MODEL = "DMC-G80"
FRIENDLY = "G80-5A3C1E"
MAC = "8cc1215a3c1e"
UDN = "uuid:4D454930-0100-1000-8000-" + MAC.upper()
FIRMWARE = "D2.91"
SERIAL = "WG6KA001234"
EX_N = 232                                  # exHeaderSize (GH5S measured)
LV_DISTINCT = 30
CARD_W, CARD_H = 1616, 1080
TN_W, TN_H = 160, 120
LTN_W, LTN_H = 640, 428
MP4_W, MP4_H, MP4_SECONDS = 1280, 720, 2
MP4_PN = "CAM_AVC_MP4_HD_1280_720_30p"
LENS_OPEN, LENS_CLOSED = 768, 2304          # f/2.8 .. f/22 (focal n/256)
XML_DECL = '<?xml version="1.0" encoding="UTF-8"?>\r\n'
CDS_NS = "urn:schemas-upnp-org:service:ContentDirectory:1"
CMS_NS = "urn:schemas-upnp-org:service:ConnectionManager:1"
UDP_MAX = 65507

ENUMS = {
    "whitebalance": {"auto", "daylight", "cloudy", "shade", "incandescent", "flash",
                     "white_set1", "white_set2", "white_set3", "white_set4", "color_temp"},
    "focusmode": {"afs", "aff", "afc", "mf"},
    "afmode": {"facedetection", "aftracking", "49area", "1area", "pinpoint", "custommulti"},
    "lightmetering": {"center", "spot", "multi"},
    "colormode": {"standard", "vivid", "natural", "bw"},
    "filter_setting": {"noeffect", "pop", "retro", "old_days"},
    "peaking": {"high", "low", "off"},
    "quality": {"fine", "standard", "raw_fine", "raw_standard", "raw"},
    "liveviewsize": {"vga", "qvga"},
    "lv_mode": {"photo", "video"},
}
ANY_MODE_SETTINGS = {"device_name", "pa", "liveviewsize", "lv_mode", "clock"}
FOCUS_CODE = {"afs": 1, "aff": 2, "afc": 3, "mf": 0xFF}
AFMODE_CODE = {"1area": 1, "facedetection": 3, "aftracking": 5, "pinpoint": 7,
               "49area": 6, "custommulti": 11}
CAMCMD_NOOP = {"capture_cancel", "oneshot_af", "touchafrelease", "autoreviewunlock",
               "menu_entry", "menu_exit", "tele-normal", "tele-fast", "wide-normal",
               "wide-fast", "zoomstop", "4kphoto_marking"}


class JsonLog:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None
        self.lock = threading.Lock()

    def write(self, obj):
        if not self.f:
            return
        line = json.dumps(obj, separators=(",", ":"))
        with self.lock:
            self.f.write(line + "\n")
            self.f.flush()


def diag(msg):
    sys.stderr.write("lumix_cam: %s\n" % msg)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# JPEG helpers

def jpeg_split(data):
    """([(marker, payload), ...] before SOS, bytes from the SOS marker on)."""
    if data[:2] != b"\xff\xd8":
        raise ValueError("no SOI")
    segs, i = [], 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise ValueError("bad marker at %d" % i)
        m = data[i + 1]
        if m == 0xFF:
            i += 1
            continue
        if m == 0xDA:
            return segs, data[i:]
        ln = struct.unpack(">H", data[i + 2:i + 4])[0]
        segs.append((m, data[i + 4:i + 2 + ln]))
        i += 2 + ln
    raise ValueError("no SOS")


def seg(marker, payload):
    return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload


def lv_style(jpeg):
    """SOI, one DQT, SOF0, one DHT, DRI(0), SOS... (§2.4)."""
    segs, scan = jpeg_split(jpeg)
    dqt = b"".join(p for m, p in segs if m == 0xDB)
    dht = b"".join(p for m, p in segs if m == 0xC4)
    sof = [p for m, p in segs if m == 0xC0]
    if not sof:
        raise ValueError("not baseline")
    sof = bytearray(sof[0])
    if len(dqt) == 65 and dqt[0] == 0 and sof[5] == 3:
        # ffmpeg shares one table; a body sends two (132-byte DQT): copy it as table 1 for Cb/Cr
        dqt = dqt + b"\x01" + dqt[1:]
        sof[6 + 3 + 2] = sof[6 + 6 + 2] = 1
    return (b"\xff\xd8" + seg(0xDB, dqt) + seg(0xC0, bytes(sof)) + seg(0xC4, dht)
            + seg(0xDD, b"\x00\x00") + scan)


def with_exif(jpeg, app1):
    segs, scan = jpeg_split(jpeg)
    keep = b"".join(seg(m, p) for m, p in segs if not (0xE0 <= m <= 0xEF or m == 0xFE))
    return b"\xff\xd8" + app1 + keep + scan


def jpeg_size(data):
    try:
        segs, _ = jpeg_split(data)
    except ValueError:
        return None
    for m, p in segs:
        if m in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", p[1:5])
            return w, h
    return None


def _ifd(entries, base):
    out, extra = b"", b""
    data_off = base + 2 + 12 * len(entries) + 4
    for tag, typ, count, data in sorted(entries):
        if len(data) <= 4:
            out += struct.pack(">HHI", tag, typ, count) + data.ljust(4, b"\0")
        else:
            out += struct.pack(">HHII", tag, typ, count, data_off + len(extra))
            extra += data + (b"\0" if len(data) % 2 else b"")
    return struct.pack(">H", len(entries)) + out + b"\0\0\0\0" + extra


def exif_app1(dt, unique, w, h):
    def asc(tag, s):
        b = s.encode() + b"\0"
        return (tag, 2, len(b), b)
    dts = dt.strftime("%Y:%m:%d %H:%M:%S")
    exif = [asc(0x9003, dts), (0xA002, 4, 1, struct.pack(">I", w)),
            (0xA003, 4, 1, struct.pack(">I", h)), asc(0xA420, unique)]
    ifd0 = [asc(0x010F, "Panasonic"), asc(0x0110, MODEL), (0x0112, 3, 1, struct.pack(">H", 1)),
            asc(0x0132, dts)]
    probe = _ifd(ifd0 + [(0x8769, 4, 1, b"\0\0\0\0")], 8)
    exif_off = 8 + len(probe)
    tiff = (b"MM\x00\x2a" + struct.pack(">I", 8)
            + _ifd(ifd0 + [(0x8769, 4, 1, struct.pack(">I", exif_off))], 8)
            + _ifd(exif, exif_off))
    return seg(0xE1, b"Exif\0\0" + tiff)


# --------------------------------------------------------------------------
# Media made once with ffmpeg

def ffmpeg(args):
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + args,
                   check=True)


def read_seq(tmp, pat, n):
    out = []
    for i in range(1, n + 1):
        with open(os.path.join(tmp, pat % i), "rb") as f:
            out.append(f.read())
    return out


def make_lv_frames(w, h, tmp, tag):
    for q in (5, 8, 12, 18, 25, 31):
        ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (w, h),
                "-frames:v", str(LV_DISTINCT), "-pix_fmt", "yuvj422p", "-q:v", str(q),
                "-huffman", "default", "-f", "image2", os.path.join(tmp, tag + "%03d.jpg")])
        frames = [lv_style(f) for f in read_seq(tmp, tag + "%03d.jpg", LV_DISTINCT)]
        if max(len(f) for f in frames) + 32 + EX_N <= UDP_MAX:
            break
    else:
        raise SystemExit("lumix_cam: live-view frames too large for one datagram; use a smaller --size")
    for f in frames:
        if jpeg_size(f) != (w, h) or f[-2:] != b"\xff\xd9":
            raise SystemExit("lumix_cam: bad live-view frame")
    if len({hashlib.sha256(f).digest() for f in frames}) != len(frames):
        raise SystemExit("lumix_cam: ffmpeg made identical live-view frames")
    return frames


def make_card_media(tmp):
    nb = 4
    ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (CARD_W, CARD_H),
            "-filter_complex",
            "[0:v]split=3[a][b][c];[b]scale=%d:%d[t];[c]scale=%d:%d[l]" % (TN_W, TN_H, LTN_W, LTN_H),
            "-map", "[a]", "-frames:v", str(nb), "-pix_fmt", "yuvj422p", "-q:v", "4",
            os.path.join(tmp, "o%d.jpg"),
            "-map", "[t]", "-frames:v", str(nb), "-pix_fmt", "yuvj420p", "-q:v", "5",
            os.path.join(tmp, "t%d.jpg"),
            "-map", "[l]", "-frames:v", str(nb), "-pix_fmt", "yuvj420p", "-q:v", "5",
            os.path.join(tmp, "l%d.jpg")])
    bases = list(zip(read_seq(tmp, "o%d.jpg", nb), read_seq(tmp, "t%d.jpg", nb),
                     read_seq(tmp, "l%d.jpg", nb)))
    mp4 = os.path.join(tmp, "v.mp4")
    src = "testsrc2=size=%dx%d:rate=30" % (MP4_W, MP4_H)
    try:
        ffmpeg(["-f", "lavfi", "-i", src, "-t", str(MP4_SECONDS), "-c:v", "libx264",
                "-preset", "ultrafast", "-crf", "32", "-pix_fmt", "yuv420p", "-movflags", "+faststart", mp4])
    except subprocess.CalledProcessError:
        ffmpeg(["-f", "lavfi", "-i", src, "-t", str(MP4_SECONDS), "-c:v", "mpeg4",
                "-movflags", "+faststart", mp4])
    ffmpeg(["-f", "lavfi", "-i", src, "-frames:v", "1", "-vf", "scale=%d:%d" % (TN_W, TN_H),
            "-pix_fmt", "yuvj420p", os.path.join(tmp, "vt.jpg")])
    with open(mp4, "rb") as f:
        mp4b = f.read()
    with open(os.path.join(tmp, "vt.jpg"), "rb") as f:
        vtn = f.read()
    return bases, mp4b, vtn


# --------------------------------------------------------------------------
# Card

class CardObject:
    def __init__(self, num, kind, data, tn, ltn, dt):
        self.id = str(num)
        self.kind = kind                                # "jpeg" | "mp4"
        self.name = "P%07d.%s" % (num, "JPG" if kind == "jpeg" else "MP4")
        self.data, self.tn, self.ltn, self.dt = data, tn, ltn, dt
        self.sha = hashlib.sha256(data).hexdigest()
        self.origin = "card"                            # | "captured" | "body_shot"

    @property
    def day(self):
        return self.dt.strftime("%Y%m%d")

    def ev(self, ev):
        return {"ev": ev, "id": self.id, "name": self.name, "size": len(self.data), "sha256": self.sha}


class Stream:
    def __init__(self, ip, port, size):
        self.ip, self.port, self.size = ip, port, size
        self.last = time.monotonic()
        self.t0 = self.last


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args, lv, bases, mp4, vtn, objlog, frameslog):
        self.args = args
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.lv = lv                                    # {"vga": (w, h, frames, shas), ...}
        self.bases, self.mp4, self.vtn = bases, mp4, vtn
        self.objlog, self.frameslog = objlog, frameslog
        self.cammode = args.start_mode
        self.granted_ip = None
        self.known_names = set()
        self.polls = {}
        self.settings = {"shtrspeed": "1792/256", "focal": "1024/256", "iso": "auto",
                         "exposure": "0", "whitebalance": "auto", "focusmode": "afs",
                         "afmode": "1area", "lightmetering": "multi", "colormode": "standard",
                         "filter_setting": "noeffect", "peaking": "off", "quality": "fine",
                         "liveviewsize": "vga", "lv_mode": "photo", "device_name": "",
                         "pa": "0", "clock": ""}
        self.stream = None
        self.n = 0
        self.pending = 0
        self.cmd_pending = 0
        self.remain = 999
        self.video_remain = 1799
        self.rec_t0 = None
        self.focus_pos = 512
        self.update_id = 1
        self.shots = 0
        self.broken_done = False                        # --break-transfer-once used up
        self.card = []
        base_dt = datetime.datetime(2024, 5, 1, 9, 0, 0)
        total = args.card_files + 1
        for j in range(total):
            dt = base_dt + datetime.timedelta(days=j // 2, minutes=7 * j)
            if j < args.card_files:
                obj = self._jpeg_obj(1000001 + j, dt)
            else:
                obj = CardObject(1000001 + j, "mp4", self._unique_mp4("card-%d" % j), self.vtn, None, dt)
            self.card.append(obj)
        self.next_num = 1000001 + total
        for o in self.card:
            self.objlog.write(o.ev("card"))

    def _jpeg_obj(self, num, dt):
        org, tn, ltn = self.bases[num % len(self.bases)]
        unique = hashlib.md5(("lumix-%d-%s" % (num, dt.isoformat())).encode()).hexdigest()
        data = with_exif(org, exif_app1(dt, unique, CARD_W, CARD_H))
        return CardObject(num, "jpeg", data, tn, ltn, dt)

    def _unique_mp4(self, tag):
        payload = ("lumix_cam %s" % tag).encode()
        return self.mp4 + struct.pack(">I4s", 8 + len(payload), b"free") + payload

    # ---- shots
    def shoot(self, ev, from_cmd):
        with self.lock:
            self.pending += 1
            self.cmd_pending += 1 if from_cmd else 0
            self.remain = max(0, self.remain - 1)
            dt = datetime.datetime.now().replace(microsecond=0)
        t = threading.Timer(self.args.capture_ms / 1000.0, self._written, args=(ev, dt, from_cmd, "jpeg"))
        t.daemon = True
        t.start()

    def body_shot(self):
        if not self.stopping.is_set():
            self.shoot("body_shot", False)

    def _written(self, ev, dt, from_cmd, kind):
        if self.stopping.is_set():
            return
        with self.lock:
            num = self.next_num
            self.next_num += 1
            if kind == "jpeg":
                obj = self._jpeg_obj(num, dt)
            else:
                obj = CardObject(num, "mp4", self._unique_mp4("video-%d" % num), self.vtn, None, dt)
            obj.origin = ev
            self.card.append(obj)
            self.pending -= 1
            if from_cmd:
                self.cmd_pending -= 1
            self.update_id += 1
        self.objlog.write(obj.ev(ev))

    def take_break(self, o):
        """True once: this GET of original `o` is the one to cut (--break-transfer-once)."""
        want = self.args.break_transfer_once
        if want is None:
            return False
        if want:
            if o.name.upper() != os.path.basename(want).upper():
                return False
        elif not (o.kind == "jpeg" and o.origin in ("captured", "body_shot")):
            return False
        with self.lock:
            if self.broken_done:
                return False
            self.broken_done = True
        return True

    def find(self, oid):
        with self.lock:
            for o in self.card:
                if o.id == oid:
                    return o
        return None

    # ---- live view
    def lv_loop(self):
        socks = {}
        next_t = None
        period = 1.0 / self.args.fps
        while not self.stopping.is_set():
            now = time.monotonic()
            with self.lock:
                st = self.stream
                if st is not None and now - st.last >= self.args.lv_timeout:
                    diag("ev=stream_timeout to=%s:%d" % (st.ip, st.port))
                    self.stream = st = None
                active = st is not None and self.cammode == "rec"
                if active:
                    n = self.n
                    self.n += 1
                    settings = dict(self.settings)
                    recording = self.rec_t0 is not None
            if not active:
                next_t = None
                time.sleep(0.01)
                continue
            if next_t is None or now - next_t > 1.0:
                next_t = now
            w, h, frames, shas = self.lv[st.size]
            k = n % len(frames)
            dgram, box, grid = build_datagram(n, frames[k], w, h, settings, recording,
                                              int((now - st.t0) * 1000) & 0x7FFFFFFF)
            fam = socket.AF_INET6 if ":" in st.ip else socket.AF_INET
            s = socks.get(fam)
            if s is None:
                s = socks[fam] = socket.socket(fam, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            try:
                s.sendto(dgram, (st.ip, st.port))
            except OSError as e:
                diag("ev=udp_send_error %r" % e)         # ignored, like a body (§2.1)
            self.frameslog.write({"n": n, "sha256": shas[k], "af": box, "grid": grid,
                                  "seq": n, "to": "%s:%d" % (st.ip, st.port)})
            next_t += period
            d = next_t - time.monotonic()
            if d > 0:
                time.sleep(d)
        for s in socks.values():
            s.close()


def af_shift(w, h):
    return {13: (0, 0), 17: (0, 125), 15: (0, 58), 10: (125, 0)}.get(w * 10 // h, (0, 0))


def build_datagram(n, jpeg, w, h, settings, recording, pts):
    ex = bytearray(EX_N)
    struct.pack_into(">HH", ex, 0, 1, 10)          # type 1, zoom 1.0x
    ex[42 - 32] = 1                                 # orientation normal
    ex[46 - 32] = 0xFF                              # 12-byte AF entries + aspect fix
    box = grid = None
    nbox = 0
    if settings["focusmode"] != "mf":
        sx, sy = af_shift(w, h)
        ux = 100 + 25 * (n % 25)
        uy = 100 + 25 * ((n // 25) % 25)
        g = [sx + round(u * (1000 - 2 * sx) / 1000) for u in (ux, ux + 200)]
        gy = [sy + round(u * (1000 - 2 * sy) / 1000) for u in (uy, uy + 200)]
        grid = [g[0], gy[0], g[1], gy[1]]
        px = [round((v - sx) * w / (1000 - 2 * sx)) for v in g]
        py = [round((v - sy) * h / (1000 - 2 * sy)) for v in gy]
        box = [px[0], py[0], px[1] - px[0], py[1] - py[0]]
        struct.pack_into(">HHHHBBH", ex, 48 - 32, grid[0], grid[1], grid[2], grid[3], 0x00, 0xFF, 0x0001)
        nbox = 1
    ex[47 - 32] = nbox
    sh = 12 * nbox - 32
    try:
        ap = int(settings["focal"].split("/")[0]) & 0xFFFF
        ss = int(settings["shtrspeed"].split("/")[0]) & 0xFFFF
    except ValueError:
        ap, ss = 1024, 1792
    struct.pack_into(">H", ex, 56 + sh, ap)
    struct.pack_into(">H", ex, 68 + sh, ss)
    ex[92 + sh] = 5 if recording else 1
    ex[107 + sh] = FOCUS_CODE.get(settings["focusmode"], 1)
    ex[109 + sh] = 0 if settings["focusmode"] == "mf" else AFMODE_CODE.get(settings["afmode"], 1)
    total = 32 + EX_N + len(jpeg)
    head = struct.pack(">HHib6sbbbi8sH", total, 1, n & 0x7FFFFFFF, 0, b"\0" * 6, 0, 0, 0, pts,
                       b"\0" * 8, EX_N)
    return head + bytes(ex) + jpeg, box, grid


# --------------------------------------------------------------------------
# cam.cgi

def camrply(result, extra=""):
    return (XML_DECL + "<camrply><result>%s</result>%s</camrply>" % (result, extra)).encode()


def csv(text):
    return ("text/plain", text.encode())


def xml(result, extra=""):
    return ("text/xml", camrply(result, extra))


def valid_setting(typ, v):
    if typ in ENUMS:
        return v in ENUMS[typ]
    if typ in ("shtrspeed", "focal"):
        return re.fullmatch(r"-?\d{1,6}/256", v) is not None
    if typ == "iso":
        return v == "auto" or (v.isdigit() and 80 <= int(v) <= 25600)
    if typ == "exposure":
        m = re.fullmatch(r"(-?\d{1,3})(/3)?", v)
        return bool(m) and -15 <= int(m.group(1)) * (1 if m.group(2) else 3) <= 15
    if typ == "clock":
        return re.fullmatch(r"\d{14}[+-]\d{4}", v) is not None
    if typ in ("device_name", "pa"):
        return len(v) <= 64
    return False


class Control:
    def __init__(self, cam):
        self.cam = cam

    def handle(self, q, peer):
        cam, args = self.cam, self.cam.args
        mode = q.get("mode")
        if mode == "accctrl":
            return self.accctrl(q, peer)
        with cam.lock:
            if args.pairing == "req_acc" and peer != cam.granted_ip:
                return xml("err_unsuitable_app")
            if cam.stream is not None and cam.stream.ip == peer:
                cam.stream.last = time.monotonic()
        fn = {"getstate": self.getstate, "getinfo": self.getinfo, "getsetting": self.getsetting,
              "setsetting": self.setsetting, "camcmd": self.camcmd, "camctrl": self.camctrl,
              "startstream": self.startstream, "stopstream": self.stopstream,
              "get_content_info": self.content_info}.get(mode)
        if mode == "lutctrl":
            return xml("err_non_support")
        if fn is None:
            return xml("err_param")
        with cam.lock:
            return fn(q, peer)

    def accctrl(self, q, peer):
        cam = self.cam
        if cam.args.pairing == "none":
            return xml("err_non_support")
        if q.get("type") != "req_acc":
            return csv("err_param")
        name = q.get("value2") or q.get("value") or ""
        with cam.lock:
            if name not in cam.known_names:
                cam.polls[name] = cam.polls.get(name, 0) + 1
                if cam.polls[name] < cam.args.accctrl_polls:
                    return csv("ok_under_research_no_msg,%s,remote" % FRIENDLY)
                cam.known_names.add(name)
                cam.polls.pop(name, None)
            if cam.granted_ip != peer:
                cam.granted_ip = peer
                if cam.stream is not None and cam.stream.ip != peer:
                    cam.stream = None
        return csv("ok,%s,remote" % FRIENDLY)

    def getstate(self, q, peer):
        cam = self.cam
        prog = int(time.monotonic() - cam.rec_t0) if cam.rec_t0 is not None else 0
        fields = [("batt", "3/3"), ("cammode", cam.cammode), ("remaincapacity", cam.remain),
                  ("sdcardstatus", "write_enable"), ("sd_memory", "set"),
                  ("video_remaincapacity", max(0, cam.video_remain - prog)),
                  ("rec", "on" if cam.rec_t0 is not None else "off"),
                  ("burst_interval_status", "off"), ("sd_access", "on" if cam.pending else "off"),
                  ("rem_disp_typ", "num"), ("progress_time", prog), ("operate", "enable/disable"),
                  ("stop_motion_num", 0), ("stop_motion", "off"), ("temperature", "low"),
                  ("lens", "normal"), ("add_location_data", "off"), ("interval_status", "off"),
                  ("sdi_state", "none"), ("sd2_cardstatus", "write_enable"), ("sd2_memory", "unset"),
                  ("sd2_access", "off"), ("current_sd", "sd1"), ("backupmode", "off"),
                  ("batt_grip", "3/0"), ("warn_disp", "no_disp"), ("cinelike", "off"),
                  ("version", FIRMWARE)]
        body = "".join("<%s>%s</%s>" % (k, v, k) for k, v in fields)
        return xml("ok", "<state>%s</state>" % body)

    def getinfo(self, q, peer):
        t = q.get("type")
        if t == "capability":
            return xml("ok", "<comm_proto_ver>1.6</comm_proto_ver>"
                       "<productinfo><modelname>%s</modelname></productinfo>"
                       "<camcmdlist><camcmd>tele-normal</camcmd><camcmd>wide-normal</camcmd>"
                       "<camcmd>poweroff</camcmd></camcmdlist>"
                       "<camspeclist><camspec>touch_command_auto</camspec>"
                       "<camspec>oneshot_af_enable</camspec></camspeclist>" % MODEL)
        if t == "lens":
            return csv("ok,%d/256,%d/256,3584/256,-1792/256,0,off,25,25,on,0/0,off,off"
                       % (LENS_CLOSED, LENS_OPEN if self.cam.cammode == "rec" else 32767))
        if t == "curmenu":
            s = self.cam.settings
            items = "".join('<item id="menu_item_id_%s" enable="yes" value="%s"/>' % (k, escape(s[k], {'"': "&quot;"}))
                            for k in ("quality", "focusmode", "afmode", "whitebalance"))
            return xml("ok", "<menuinfo><mainmenu>%s</mainmenu></menuinfo>" % items)
        if t == "allmenu":
            return xml("err_non_support")
        return xml("err_param")

    def getsetting(self, q, peer):
        cam = self.cam
        t = q.get("type")
        if t not in cam.settings:
            return xml("err_param")
        if cam.cammode != "rec" and t not in ANY_MODE_SETTINGS:
            if t != "focal":
                return xml("err_busy")
            v = "32767/256"
        else:
            v = cam.settings[t]
        return xml("ok", '<settingvalue %s="%s"></settingvalue>' % (t, escape(v, {'"': "&quot;"})))

    def setsetting(self, q, peer):
        cam = self.cam
        t, v = q.get("type"), q.get("value")
        if t not in cam.settings or v is None:
            return xml("err_param")
        if cam.cammode != "rec" and t not in ANY_MODE_SETTINGS:
            return xml("err_busy")
        if not valid_setting(t, v):
            return xml("err_param")
        if t == "focal":
            num = min(max(int(v.split("/")[0]), LENS_OPEN), LENS_CLOSED)
            v = "%d/256" % num
        cam.settings[t] = v
        return xml("ok")

    def camcmd(self, q, peer):
        cam = self.cam
        v = q.get("value")
        if v == "recmode":
            cam.cammode = "rec"
            return xml("ok")
        if v == "playmode":
            if cam.rec_t0 is not None:
                return xml("err_reject")
            cam.cammode = "play"
            return xml("ok")
        if v == "capture":
            if cam.cammode != "rec" or cam.rec_t0 is not None:
                return xml("err_reject")
            if cam.cmd_pending:
                return xml("err_busy")
            cam.shoot("captured", True)
            if cam.args.after_capture == "play":
                cam.cammode = "play"
            return xml("ok")
        if v == "video_recstart":
            if cam.cammode != "rec" or cam.rec_t0 is not None:
                return xml("err_reject")
            cam.rec_t0 = time.monotonic()
            return xml("ok")
        if v == "video_recstop":
            if cam.rec_t0 is None:
                return xml("err_reject")
            secs = int(time.monotonic() - cam.rec_t0)
            cam.rec_t0 = None
            cam.video_remain = max(0, cam.video_remain - secs)
            cam.pending += 1
            dt = datetime.datetime.now().replace(microsecond=0)
            t = threading.Timer(cam.args.capture_ms / 1000.0, cam._written, args=("captured", dt, False, "mp4"))
            t.daemon = True
            t.start()
            return xml("ok")
        if v == "poweroff":
            cam.stream = None
            return xml("ok")
        if v in CAMCMD_NOOP:
            return xml("ok")
        return xml("err_param")

    def camctrl(self, q, peer):
        cam = self.cam
        t, v = q.get("type"), q.get("value") or ""
        point = re.compile(r"\d{1,4}/\d{1,4}")
        if t in ("touch", "touchaf", "mf_asst"):
            return xml("ok") if point.fullmatch(v) else xml("err_param")
        if t in ("touchaf_chg_area", "touch_trace", "asst_disp", "change_disp_mag"):
            return xml("ok") if v else xml("err_param")
        if t == "focus":
            step = {"wide-fast": -64, "wide-normal": -8, "tele-normal": 8, "tele-fast": 64}.get(v)
            if step is None:
                return xml("err_param")
            cam.focus_pos = min(1024, max(0, cam.focus_pos + step))
            return csv("ok,%d,1024" % cam.focus_pos)
        if t == "pinch":
            return csv("ok,%s" % v) if v else xml("err_param")
        return xml("err_param")

    def startstream(self, q, peer):
        cam = self.cam
        v = q.get("value", "")
        if not v.isdigit() or not 1 <= int(v) <= 65535:
            return xml("err_param")
        cam.stream = Stream(peer, int(v), cam.settings["liveviewsize"])
        return xml("ok")

    def stopstream(self, q, peer):
        self.cam.stream = None
        return xml("ok")

    def content_info(self, q, peer):
        cam = self.cam
        if cam.pending:
            return xml("err_busy")
        n = len(cam.card)
        return xml("ok", "<current_position>0</current_position><total_content_number>%d"
                   "</total_content_number><content_number>%d</content_number>" % (n, n))


# --------------------------------------------------------------------------
# DLNA

def device_description():
    svc = ""
    for name, ns, short in (("ContentDirectory", CDS_NS, "CDS"), ("ConnectionManager", CMS_NS, "CMS")):
        svc += ("<service><serviceType>%s</serviceType><serviceId>urn:upnp-org:serviceId:%s</serviceId>"
                "<SCPDURL>/Server0/%s_SCPD</SCPDURL><controlURL>/Server0/%s_control</controlURL>"
                "<eventSubURL>/Server0/%s_event</eventSubURL></service>" % (ns, name, short, short, short))
    return ('<?xml version="1.0" encoding="utf-8"?>\r\n'
            '<root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:pana="urn:schemas-panasonic-com:pana" '
            'xmlns:dlna="urn:schemas-dlna-org:device-1-0">'
            "<specVersion><major>1</major><minor>0</minor></specVersion><device>"
            "<dlna:X_DLNADOC>DMS-1.50</dlna:X_DLNADOC>"
            "<pana:X_FirmVersion>%s</pana:X_FirmVersion>"
            "<pana:X_AdditionalFunction>0</pana:X_AdditionalFunction>"
            "<pana:X_CamCategory>DSC</pana:X_CamCategory>"
            "<deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType>"
            "<friendlyName>%s</friendlyName><manufacturer>Panasonic</manufacturer>"
            "<modelName>LUMIX</modelName><modelNumber>%s</modelNumber>"
            "<serialNumber>%s</serialNumber><UDN>%s</UDN>"
            "<iconList><icon><mimetype>image/jpeg</mimetype><width>%d</width><height>%d</height>"
            "<depth>24</depth><url>/Server0/icon.jpg</url></icon></iconList>"
            "<serviceList>%s</serviceList></device></root>"
            % (FIRMWARE, FRIENDLY, MODEL, SERIAL, UDN, TN_W, TN_H, svc)).encode()


def scpd(actions):
    acts = ""
    for name, args in actions:
        a = "".join("<argument><name>%s</name><direction>%s</direction>"
                    "<relatedStateVariable>%s</relatedStateVariable></argument>" % x for x in args)
        acts += "<action><name>%s</name><argumentList>%s</argumentList></action>" % (name, a)
    return ('<?xml version="1.0" encoding="utf-8"?>\r\n<scpd xmlns="urn:schemas-upnp-org:service-1-0">'
            "<specVersion><major>1</major><minor>0</minor></specVersion>"
            "<actionList>%s</actionList><serviceStateTable/></scpd>" % acts).encode()


CDS_SCPD = scpd([
    ("Browse", [("ObjectID", "in", "A_ARG_TYPE_ObjectID"), ("BrowseFlag", "in", "A_ARG_TYPE_BrowseFlag"),
                ("Filter", "in", "A_ARG_TYPE_Filter"), ("StartingIndex", "in", "A_ARG_TYPE_Index"),
                ("RequestedCount", "in", "A_ARG_TYPE_Count"),
                ("SortCriteria", "in", "A_ARG_TYPE_SortCriteria"), ("Result", "out", "A_ARG_TYPE_Result"),
                ("NumberReturned", "out", "A_ARG_TYPE_Count"), ("TotalMatches", "out", "A_ARG_TYPE_Count"),
                ("UpdateID", "out", "A_ARG_TYPE_UpdateID")]),
    ("GetSystemUpdateID", [("Id", "out", "SystemUpdateID")]),
    ("GetSearchCapabilities", [("SearchCaps", "out", "SearchCapabilities")]),
    ("GetSortCapabilities", [("SortCaps", "out", "SortCapabilities")])])
CMS_SCPD = scpd([
    ("GetProtocolInfo", [("Source", "out", "SourceProtocolInfo"), ("Sink", "out", "SinkProtocolInfo")]),
    ("GetCurrentConnectionIDs", [("ConnectionIDs", "out", "CurrentConnectionIDs")])])

DIDL_OPEN = ('<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" '
             'xmlns:dc="http://purl.org/dc/elements/1.1/" '
             'xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/" '
             'xmlns:pana="urn:schemas-panasonic-com:pana">')


class SoapFault(Exception):
    def __init__(self, code, desc):
        super().__init__(desc)
        self.code, self.desc = code, desc


def soap_envelope(inner):
    return ('<?xml version="1.0" encoding="utf-8"?>\r\n'
            '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
            's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>%s</s:Body></s:Envelope>'
            % inner).encode()


def soap_fault(code, desc):
    return soap_envelope("<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring>"
                         '<detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>%d'
                         "</errorCode><errorDescription>%s</errorDescription></UPnPError></detail>"
                         "</s:Fault>" % (code, escape(desc)))


def soap_response(ns, action, pairs):
    body = "".join("<%s>%s</%s>" % (k, escape(str(v)), k) for k, v in pairs)
    return soap_envelope('<u:%sResponse xmlns:u="%s">%s</u:%sResponse>' % (action, ns, body, action))


def local(tag):
    return tag.rsplit("}", 1)[-1]


def parse_soap(body):
    """(action element local name, {argument: text})."""
    try:
        root = ET.fromstring(body)
    except (ET.ParseError, ValueError):
        raise SoapFault(402, "Invalid Args")
    bodyel = next((e for e in root.iter() if local(e.tag) == "Body"), None)
    if bodyel is None or len(bodyel) == 0:
        raise SoapFault(402, "Invalid Args")
    act = bodyel[0]
    return local(act.tag), {local(c.tag): (c.text or "").strip() for c in act}


class Dlna:
    def __init__(self, cam):
        self.cam = cam

    def res(self, base, o):
        d = o.dt.isoformat()
        if o.kind == "jpeg":
            r = ('<res protocolInfo="http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_ORG" size="%d" '
                 'resolution="%dx%d">%s/DO%s.JPG</res>' % (len(o.data), CARD_W, CARD_H, base, o.id))
            r += ('<res protocolInfo="http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_TN" size="%d" '
                  'resolution="%dx%d">%s/DT%s.JPG</res>' % (len(o.tn), TN_W, TN_H, base, o.id))
            r += ('<res protocolInfo="http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_LRGTN" size="%d" '
                  'resolution="%dx%d">%s/DL%s.JPG</res>' % (len(o.ltn), LTN_W, LTN_H, base, o.id))
            cls = "object.item.imageItem.photo"
        else:
            r = ('<res protocolInfo="http-get:*:video/mp4:PANASONIC.COM_PN=%s" size="%d" '
                 'duration="0:00:%02d.000" resolution="%dx%d">%s/DO%s.MP4</res>'
                 % (MP4_PN, len(o.data), MP4_SECONDS, MP4_W, MP4_H, base, o.id))
            r += ('<res protocolInfo="http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_TN" size="%d" '
                  'resolution="%dx%d">%s/DT%s.JPG</res>' % (len(o.tn), TN_W, TN_H, base, o.id))
            cls = "object.item.videoItem"
        return d, cls, r

    def item_xml(self, base, o, parent):
        d, cls, r = self.res(base, o)
        return ('<item id="%s" parentID="%s" restricted="1"><dc:title>%s</dc:title>'
                "<upnp:class>%s</upnp:class><dc:date>%s</dc:date>%s</item>"
                % (o.id, parent, o.name, cls, d, r))

    def browse(self, args, base):
        cam = self.cam
        oid = args.get("ObjectID")
        flag = args.get("BrowseFlag")
        try:
            start = int(args.get("StartingIndex", "0") or "0")
            count = int(args.get("RequestedCount", "0") or "0")
        except ValueError:
            raise SoapFault(402, "Invalid Args")
        if oid is None or flag not in ("BrowseDirectChildren", "BrowseMetadata") or start < 0 or count < 0:
            raise SoapFault(402, "Invalid Args")
        with cam.lock:
            if cam.cammode != "play":
                raise SoapFault(720, "Cannot process the request")
            card = list(cam.card)
            update = cam.update_id
        group = cam.args.group_by_day
        days = {}
        for o in card:
            days.setdefault(o.day, []).append(o)

        def container(cid, parent, title, n, cls, date=None):
            return ('<container id="%s" parentID="%s" restricted="1" childCount="%d"><dc:title>%s</dc:title>'
                    "<upnp:class>%s</upnp:class>%s</container>"
                    % (cid, parent, n, title, cls, "<dc:date>%s</dc:date>" % date if date else ""))

        def day_container(day):
            t = "%s-%s-%s" % (day[:4], day[4:6], day[6:])
            return container("D" + day, "0", t, len(days[day]), "object.container.album.dateAlbum", t)

        root_n = len(days) if group else len(card)
        if oid == "0":
            if flag == "BrowseMetadata":
                entries = [container("0", "-1", "root", root_n, "object.container")]
            elif group:
                entries = [day_container(d) for d in sorted(days)]
            else:
                entries = [self.item_xml(base, o, "0") for o in card]
        elif group and oid.startswith("D") and oid[1:] in days:
            if flag == "BrowseMetadata":
                entries = [day_container(oid[1:])]
            else:
                entries = [self.item_xml(base, o, oid) for o in days[oid[1:]]]
        else:
            o = next((x for x in card if x.id == oid), None)
            if o is None:
                raise SoapFault(701, "No such object")
            if flag == "BrowseDirectChildren":
                raise SoapFault(710, "No such container")
            entries = [self.item_xml(base, o, "D" + o.day if group else "0")]
        total = len(entries)
        page = entries[start:start + count] if count else entries[start:]
        didl = DIDL_OPEN + "".join(page) + "</DIDL-Lite>"
        return soap_response(CDS_NS, "Browse", [("Result", didl), ("NumberReturned", len(page)),
                                                ("TotalMatches", total), ("UpdateID", update)])

    def control(self, which, body, base):
        action, args = parse_soap(body)
        if which == "CDS":
            if action == "Browse":
                return self.browse(args, base)
            if action == "GetSystemUpdateID":
                return soap_response(CDS_NS, action, [("Id", self.cam.update_id)])
            if action == "GetSearchCapabilities":
                return soap_response(CDS_NS, action, [("SearchCaps", "")])
            if action == "GetSortCapabilities":
                return soap_response(CDS_NS, action, [("SortCaps", "")])
        else:
            if action == "GetProtocolInfo":
                src = ",".join(["http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_ORG",
                                "http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_TN",
                                "http-get:*:image/jpeg:PANASONIC.COM_PN=CAM_LRGTN",
                                "http-get:*:video/mp4:PANASONIC.COM_PN=" + MP4_PN])
                return soap_response(CMS_NS, action, [("Source", src), ("Sink", "")])
            if action == "GetCurrentConnectionIDs":
                return soap_response(CMS_NS, action, [("ConnectionIDs", "0")])
        raise SoapFault(401, "Invalid Action")


def parse_range(h, size):
    """(start, end) inclusive, None = whole file, 'bad' = 416."""
    if not h:
        return None
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", h)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None
    a, b = m.group(1), m.group(2)
    if a == "":
        n = int(b)
        if n == 0:
            return "bad"
        return (max(0, size - n), size - 1)
    a = int(a)
    e = size - 1 if b == "" else min(int(b), size - 1)
    if a >= size or (b != "" and int(b) < a):
        return "bad"
    return (a, e)


# --------------------------------------------------------------------------
# HTTP

class BaseHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sys_version = ""
    timeout = 30

    def log_message(self, fmt, *a):
        pass

    def read_body(self):
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = 0
        return self.rfile.read(min(max(n, 0), 1 << 20)) if n > 0 else b""

    def log_req(self):
        u = urllib.parse.urlsplit(self.path)
        self.server.reqlog.write({"t": round(time.time(), 3), "port": self.server.server_address[1],
                                  "method": self.command, "path": u.path, "query": u.query,
                                  "soapaction": self.headers.get("SOAPACTION"),
                                  "peer": self.client_address[0]})
        return u

    def reply(self, status, body=b"", ctype=None, headers=(), head_only=False):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and not head_only:
            self.wfile.write(body)


class CamHandler(BaseHandler):
    server_version = "Panasonic"

    def version_string(self):
        return "Panasonic"

    def do_GET(self):
        u = self.log_req()
        if u.path != "/cam.cgi":
            return self.reply(404)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        try:
            ctype, body = self.server.control.handle(q, self.client_address[0])
        except Exception as e:                      # never die on a request
            diag("ev=cgi_error %r" % e)
            ctype, body = xml("err_critical")
        self.reply(200, body, ctype)

    def _other(self):
        self.log_req()
        self.read_body()
        self.reply(404)

    do_POST = do_PUT = do_DELETE = do_HEAD = _other


class DlnaHandler(BaseHandler):
    server_version = "Panasonic UPnP/1.0 DLNADOC/1.50"

    def version_string(self):
        return self.server_version

    def norm(self, path):
        for p in ("/" + MAC, "/" + MAC.upper(), "/Lumix"):
            if path.startswith(p + "/"):
                return path[len(p):]
        return path

    def base_url(self):
        ip = self.connection.getsockname()[0]
        if ":" in ip:
            ip = "[%s]" % ip
        return "http://%s:%d" % (ip, self.server.server_address[1])

    def do_GET(self, head_only=False):
        u = self.log_req()
        path = self.norm(u.path)
        cam = self.server.cam
        if path == "/Server0/ddd":
            return self.reply(200, device_description(), 'text/xml; charset="utf-8"', head_only=head_only)
        if path in ("/Server0/CDS_SCPD", "/Server0/CMS_SCPD"):
            return self.reply(200, CDS_SCPD if "CDS" in path else CMS_SCPD, 'text/xml; charset="utf-8"',
                              head_only=head_only)
        if path == "/Server0/icon.jpg":
            return self.reply(200, cam.bases[0][1], "image/jpeg", head_only=head_only)
        m = re.fullmatch(r"/D([OTL])(\d+)\.(JPG|MP4)", u.path, re.I)
        if not m:
            return self.reply(404)
        o = cam.find(m.group(2))
        kind, ext = m.group(1).upper(), m.group(3).upper()
        if o is None:
            return self.reply(404)
        if kind == "O":
            if ext != ("JPG" if o.kind == "jpeg" else "MP4"):
                return self.reply(404)
            data, ctype, what = o.data, "image/jpeg" if o.kind == "jpeg" else "video/mp4", "org"
        elif kind == "T" and ext == "JPG":
            data, ctype, what = o.tn, "image/jpeg", "tn"
        elif kind == "L" and ext == "JPG" and o.ltn is not None:
            data, ctype, what = o.ltn, "image/jpeg", "lrgtn"
        else:
            return self.reply(404)
        size = len(data)
        hdrs = [("Accept-Ranges", "bytes"), ("X-FILE_SIZE", str(size)),
                ("X-REC_DATE_TIME", o.dt.isoformat()), ("X-ROTATE_INFO", "1")]
        rh = self.headers.get("Range")
        r = parse_range(rh, size)
        ev = o.ev("served")
        ev.update({"kind": what, "range": rh, "method": self.command,
                   "sha256": hashlib.sha256(data).hexdigest(), "size": size})
        if r == "bad":
            ev.update({"status": 416, "length": 0})
            cam.objlog.write(ev)
            return self.reply(416, b"", None, hdrs + [("Content-Range", "bytes */%d" % size)],
                              head_only=head_only)
        if r is None:
            status, part = 200, data
        else:
            status, part = 206, data[r[0]:r[1] + 1]
            hdrs.append(("Content-Range", "bytes %d-%d/%d" % (r[0], r[1], size)))
        ev.update({"status": status, "length": len(part)})
        if what == "org" and not head_only and cam.take_break(o):
            return self.reply_broken(status, part, ctype, hdrs, ev)
        cam.objlog.write(ev)
        self.reply(status, part, ctype, hdrs, head_only=head_only)

    def reply_broken(self, status, part, ctype, hdrs, ev):
        """--break-transfer-once: full headers, half the body, then close."""
        half = len(part) // 2
        sent = 0
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            for k, v in hdrs:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            self.wfile.write(part[:half])
            sent = half
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        ev["ev"] = "broken"
        ev.update({"sent": sent, "t": round(time.time(), 3)})
        self.server.cam.objlog.write(ev)
        diag("ev=broken_transfer name=%s sent=%d of %d" % (ev["name"], sent, len(part)))

    def do_HEAD(self):
        self.do_GET(head_only=True)

    def do_POST(self):
        u = self.log_req()
        path = self.norm(u.path)
        body = self.read_body()
        if path not in ("/Server0/CDS_control", "/Server0/CMS_control"):
            return self.reply(404)
        which = "CDS" if "CDS" in path else "CMS"
        try:
            out = self.server.dlna.control(which, body, self.base_url())
            self.reply(200, out, 'text/xml; charset="utf-8"', [("EXT", "")])
        except SoapFault as f:
            self.reply(500, soap_fault(f.code, f.desc), 'text/xml; charset="utf-8"', [("EXT", "")])
        except Exception as e:
            diag("ev=soap_error %r" % e)
            self.reply(500, soap_fault(501, "Action Failed"), 'text/xml; charset="utf-8"')

    def do_SUBSCRIBE(self):
        u = self.log_req()
        if self.norm(u.path) not in ("/Server0/CDS_event", "/Server0/CMS_event"):
            return self.reply(404)
        sid = self.headers.get("SID") or "uuid:%s" % uuid.uuid4()
        self.reply(200, b"", None, [("SID", sid), ("TIMEOUT", "Second-1800")])

    def do_UNSUBSCRIBE(self):
        u = self.log_req()
        if self.norm(u.path) not in ("/Server0/CDS_event", "/Server0/CMS_event"):
            return self.reply(404)
        self.reply(200)

    def _other(self):
        self.log_req()
        self.read_body()
        self.reply(405)

    do_PUT = do_DELETE = do_OPTIONS = _other


def make_server(host, port, handler):
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        def handle_error(self, request, client_address):
            e = sys.exc_info()[1]
            if not isinstance(e, (ConnectionError, TimeoutError)):
                diag("ev=handler_error peer=%s %r" % (client_address[0], e))

    return Server((host, port), handler)


def main():
    ap = argparse.ArgumentParser(description="Panasonic LUMIX Wi-Fi test camera (clean-room, from panasonic.md)")
    ap.add_argument("--http-port", type=int, help="cam.cgi port (camera: 80; 0 = free port)")
    ap.add_argument("--dlna-port", type=int, default=0, help="UPnP/DLNA + media port (camera: 60606; default 0 = free)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="640x480", help="live view 'vga' size (qvga = half)")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per HTTP request (both ports)")
    ap.add_argument("--frames-log", help="JSON lines, one per live-view datagram")
    ap.add_argument("--objects-log", help="JSON lines, one per card object event")
    ap.add_argument("--card-files", type=int, default=3, help="JPEGs on the card at start (plus one MP4)")
    ap.add_argument("--group-by-day", action="store_true", help="root holds one container per day")
    ap.add_argument("--capture-ms", type=int, default=300, help="shutter-to-card delay")
    ap.add_argument("--pairing", choices=("req_acc", "none"), default="req_acc")
    ap.add_argument("--accctrl-polls", type=int, default=2, help="req_acc polls until a new name is granted")
    ap.add_argument("--lv-timeout", type=float, default=10.0, help="stream stops S s after the last request")
    ap.add_argument("--start-mode", choices=("play", "rec"), default="play")
    ap.add_argument("--after-capture", choices=("rec", "play"), default="rec")
    ap.add_argument("--break-transfer-once", nargs="?", const="", default=None, metavar="NAME",
                    help="cut the first download of a shot's JPEG (or of file NAME) at half, once")
    ap.add_argument("--help-choices", action="store_true", help="print the documented choices and exit")
    args = ap.parse_args()
    if args.help_choices:
        print(__doc__)
        return
    if args.http_port is None:
        ap.error("--http-port is required")
    m = re.fullmatch(r"(\d+)x(\d+)", args.size)
    if not m:
        ap.error("--size WxH")
    w, h = int(m.group(1)), int(m.group(2))
    if w < 32 or h < 32 or w % 2 or h % 2 or args.fps <= 0:
        ap.error("--size even and >= 32x32, --fps > 0")
    if args.card_files < 0 or args.capture_ms < 0 or args.accctrl_polls < 1 or args.lv_timeout <= 0:
        ap.error("--card-files >= 0, --capture-ms >= 0, --accctrl-polls >= 1, --lv-timeout > 0")

    qw, qh = (w // 2) & ~1, (h // 2) & ~1
    tmp = tempfile.mkdtemp(prefix="lumix_cam_")
    try:
        vga = make_lv_frames(w, h, tmp, "v")
        qvga = make_lv_frames(qw, qh, tmp, "q")
        bases, mp4, vtn = make_card_media(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lv = {"vga": (w, h, vga, [hashlib.sha256(f).hexdigest() for f in vga]),
          "qvga": (qw, qh, qvga, [hashlib.sha256(f).hexdigest() for f in qvga])}

    reqlog = JsonLog(args.log)
    cam = Camera(args, lv, bases, mp4, vtn, JsonLog(args.objects_log), JsonLog(args.frames_log))

    stop = threading.Event()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGUSR1, lambda *a: cam.body_shot())

    http = make_server(args.host, args.http_port, CamHandler)
    http.control = Control(cam)
    http.reqlog = reqlog
    dlna = make_server(args.host, args.dlna_port, DlnaHandler)
    dlna.cam = cam
    dlna.dlna = Dlna(cam)
    dlna.reqlog = reqlog
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
               for s in (http, dlna)]
    threads.append(threading.Thread(target=cam.lv_loop, daemon=True))
    for t in threads:
        t.start()
    sys.stdout.write("ready http=%d dlna=%d\n" % (http.server_address[1], dlna.server_address[1]))
    sys.stdout.flush()
    while not stop.wait(0.1):
        pass
    cam.stopping.set()
    for s in (http, dlna):
        s.shutdown()
        s.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
