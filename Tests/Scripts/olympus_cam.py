#!/usr/bin/env python3
"""Independent Olympus / OM System Wi-Fi test camera (OI.Share dialect).

Clean-room: written only from ../shared/protocols/olympus.md ("the notes"),
without looking at livegate's own Olympus code.  Section numbers below (§N)
refer to that file.  Python 3.11 standard library only; `ffmpeg` is run once at
start-up to make the live-view JPEGs (and their 160x120 thumbnails).

    python3 Tests/Scripts/olympus_cam.py --http-port P [--host 127.0.0.1]
        [--size 640x480] [--fps 30] [--log REQUESTS.jsonl]
        [--frames-log FRAMES.jsonl] [--frames N_DISTINCT]
        [--objects-log OBJECTS.jsonl] [--break-transfer-once[=NAME]]

Prints `ready http=P` once it listens; runs until SIGTERM/SIGINT, exits 0.
SIGUSR1 = a shot with the body's shutter button (any mode): a new JPEG on the
card that becomes the last shot (getrecview / getlastjpg), one fewer remaining.

Choices made where the notes say UNCONFIRMED (also listed by --help-choices):
  * get_connectmode answers `private` (§0, §8.2).
  * User-Agent: `OI.Share*` or `OlympusCameraKit` accepted, others 403
    (§2, §7; --ua-check off|oishare|opc).
  * Wrong mode / value not in <enum> / read-only property -> 520 + the vendor
    error XML (§2, §7); unknown property or malformed point -> 400 (§7);
    unknown CGI option / option order wrong / option value not in the command
    list -> 500 "CGI syntax error" (§2: "option order is fixed").
    Unknown path -> 404 (§2).
  * switch_cammode / startliveview / stopliveview / set_camprop answer 200 with
    an empty body (§4.2, §4.4, §4.3).
  * Live-view JPEGs: baseline 4:2:0 with the standard Huffman tables (§6.1 leaves
    the JPEG details open; camera encoders use the standard tables).
  * Datagrams carry 1400 bytes of JPEG each (§6.1); first packet of a frame =
    12 + 4 + TLVs + 1400 bytes (< 4096).
  * TLVs on every frame, in id order: 1 2 3 4 5 8 9 10 12 16 17 18 (§6.3, §7).
  * TLV 2 x/y = top-left of the box (§5), box 72x72 at 640 px width, scaled with
    width; coordinates are pixels of the JPEG actually sent (--size).
  * The live view never stops by itself (§3: no keep-alive needed);
    --lv-idle-timeout S makes it stop after S seconds without HTTP requests.
  * starttake needs rec mode and a running live view (§4.5, §7).
  * touchactiveframe = centred rectangle with the proportions of the E-M10
    mk1 capture (0048-0036_0224x0168 at 320x240: 15 % border) (§4.3).
  * Starts in play mode (§7); any mode change stops the live view (§4.2).
  * The captured starttake answer has `Connection: close` (§2 capture), so
    starttake always answers close; exec_pwoff answers 202 + close (§4.7).
  * No focus-mode property exists in the notes' property list (§4.3); the focus
    system (--focus saf|caf|mf) is only reported in TLV 17. In MF, TLV 2 is
    colour 0 / zeros and assignafframe is refused (520) (§4.5, OPC rule).

Downloads: the original is `GET /DCIM/100OLYMP/<name>` (§4.6) and, for the last
shot, `exec_takemisc.cgi?com=getlastjpg` (same bytes).  get_thumbnail,
get_screennail, get_resizeimg and getrecview are previews (get_screennail and
get_resizeimg simply send the original bytes here).  Range is ignored.

--break-transfer-once (test aid, not in the notes): the first full-file download
(either URL above, GET) of a JPEG made by a shot -- starttake or exec_shutter
1st2ndpush/2ndpush ("captured") or SIGUSR1 ("body_shot"), not the start-up
card -- answers 200 with the normal headers and the full Content-Length, sends
only the first half (floor) of the body and closes the socket.  With =NAME
(e.g. P1270004.JPG, case-insensitive, any card file) the first full-file
download of that file is cut instead.  Only once per run; the next download of
the file is whole.  Previews/thumbnails are never cut.

--objects-log (JSON lines): {"ev": "card"|"captured"|"body_shot", "name",
"size", "sha256", "t"} (card files at start-up, then one per shot);
every image answer adds "served" with "kind" (org|thumbnail|screennail|
resizeimg|recview), "via" (the path / com), "length" (body bytes; "size" and
"sha256" are of the whole file); a cut download writes "broken" instead of
"served", with the same keys plus "sent" (body bytes actually sent).
"""

import argparse
import glob
import hashlib
import json
import math
import os
import random
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --------------------------------------------------------------------------
# Property tables (§4.3)

FNUMBERS_ALL = ("1.0 1.1 1.2 1.4 1.6 1.8 2.0 2.2 2.5 2.8 3.2 3.5 4.0 4.5 5.0 5.6 "
                "6.3 7.1 8.0 9.0 10 11 13 14 16 18 20 22 25 29 32 36 40 45 51 57 "
                "64 72 81 91").split()
LENS_FMIN, LENS_FMAX = "1.8", "22"          # a 25 mm F1.8 prime (TLV 9: 220 / 18)
LENS_MM = 25                                # TLV 18: wide = current = tele


def _expcomp_values():
    out = []
    for i in range(-15, 16):                # thirds, -5.0 .. +5.0
        v = round(i / 3.0, 1)
        if i == 0:
            out.append("0.0")
        else:
            out.append(("+" if v > 0 else "") + "%.1f" % v)
    return out


EXPCOMP = _expcomp_values()
SHUTTER = ('livecomp livetime livebulb 60" 50" 40" 30" 25" 20" 15" 13" 10" 8" 6" 5" '
           '4" 3.2" 2.5" 2" 1.6" 1.3" 1" 1.3 1.6 2 2.5 3 4 5 6 8 10 13 15 20 25 30 40 '
           '50 60 80 100 125 160 200 250 320 400 500 640 800 1000 1250 1600 2000 '
           '2500 3200 4000 5000 6400 8000').split()
ISO = ("Auto Low 200 250 320 400 500 640 800 1000 1250 1600 2000 2500 3200 4000 "
       "5000 6400 8000 10000 12800 16000 20000 25600").split()
WB = "0 18 16 17 20 35 64 23 256 257 258 259 512".split()
TAKEMODE = "iAuto P A S M ART".split()
DRIVEMODE = "normal continuous-H continuous-L selftimer customselftimer".split()
ARTFILTER = ["ART%02d" % i for i in range(1, 15)] + ["ARTBKT"]
LVQTYS = ["0320x0240", "0640x0480", "0800x0600", "1024x0768", "1280x0960"]
MODEL = "E-M5 Mark II"
CMDLIST_VERSION = "2.60"

ERROR_XML = ('<?xml version="1.0"?><response><errorcode>0xB000</errorcode>'
             '<errormsg>WIFI_INTERNAL_ERROR</errormsg><dbgmsg>reserved</dbgmsg></response>')
XML_HEAD = '<?xml version="1.0"?>'

CHUNK = 1400                                # JPEG bytes per datagram (§6.1 CHOICE)
PT = 96


class HttpError(Exception):
    def __init__(self, status, body=b"", ctype=None, why=""):
        super().__init__(why or str(status))
        self.status = status
        self.body = body
        self.ctype = ctype
        self.why = why


def err520(why):
    return HttpError(520, ERROR_XML.encode(), "text/xml", why)


# --------------------------------------------------------------------------
# Command list (§4.1): nested cmdN / paramN.  A node is a list of
# (option name, [(value or None, child node or None), ...] or None).

def build_cgis(props_get, props_set):
    lv = [(q, None) for q in LVQTYS]
    point = [("point", None)]
    return [
        ("get_connectmode", "get", None),
        ("get_commandlist", "get", None),
        ("get_caminfo", "get", None),
        ("switch_cammode", "get", [("mode", [("rec", [("lvqty", lv)]),
                                             ("play", None),
                                             ("shutter", [("lvqty", lv)])])]),
        ("set_utctimediff", "get", [("utctime", None), ("diff", None)]),
        ("get_imglist", "get", [("DIR", [(None, None)])]),
        ("get_thumbnail", "get", [("DIR", [(None, None)])]),
        ("get_screennail", "get", [("DIR", [(None, None)])]),
        ("get_resizeimg", "get", [("DIR", [(None, [("size", [("1024", None), ("1600", None),
                                                              ("1920", None), ("2048", None)])])])]),
        ("exec_takemisc", "get", [("com", [("startliveview", [("port", None)]),
                                           ("stopliveview", None),
                                           ("getrecview", None),
                                           ("getlastjpg", None),
                                           ("ctrlzoom", [("move", [(m, None) for m in
                                                                   ("widemove", "telemove", "off",
                                                                    "wideterm", "teleterm")])])])]),
        ("exec_takemotion", "get", [("com", [("assignafframe", point),
                                             ("releaseafframe", None),
                                             ("takeready", point),
                                             ("starttake", [("point", [(None, [("exposuremin", [(None, [("upperlimit", None)])])])])]),
                                             ("stoptake", None)])]),
        ("exec_shutter", "get", [("com", [(c, None) for c in
                                          ("1stpush", "2ndpush", "1st2ndpush", "2ndrelease",
                                           "1strelease", "2nd1strelease")])]),
        ("exec_shuttermisc", "get", [("com", [("startliveview", [("port", None)]),
                                              ("stopliveview", None)])]),
        ("get_camprop", "get", [("com", [("desc", [("propname", [("desclist", None)] +
                                                    [(p, None) for p in props_get])]),
                                         ("get", [("propname", [(p, None) for p in props_get])])])]),
        ("set_camprop", "post", [("com", [("set", [("propname", [(p, None) for p in props_set])])])]),
        ("exec_pwoff", "get", None),
    ]


def _node_xml(node, depth):
    out = []
    for name, params in node:
        out.append('<cmd%d name="%s">' % (depth, name))
        for value, child in params or []:
            attr = '' if value is None else ' name="%s"' % value
            if child:
                out.append('<param%d%s>' % (depth, attr))
                out.append(_node_xml(child, depth + 1))
                out.append('</param%d>' % depth)
            else:
                out.append('<param%d%s/>' % (depth, attr))
        out.append('</cmd%d>' % depth)
    return "".join(out)


def commandlist_xml(cgis):
    out = [XML_HEAD, "<oishare>", "<version>%s</version>" % CMDLIST_VERSION]
    for f in ("web", "remote", "gps", "release"):
        out.append('<support func="%s"/>' % f)
    for name, method, node in cgis:
        out.append('<cgi name="%s">' % name)
        if node:
            out.append('<http_method type="%s">%s</http_method>' % (method, _node_xml(node, 1)))
        else:
            out.append('<http_method type="%s"/>' % method)
        out.append('</cgi>')
    out.append("</oishare>")
    return "".join(out)


def check_options(cgi_node, pairs):
    """Validate the query against the command-list node: names in the fixed
    order, values from the lists where the list names them.  Raises 500."""
    node = cgi_node
    for name, value in pairs:
        if not node:
            raise HttpError(500, why="unexpected option %s" % name)
        match = [e for e in node if e[0] == name]
        if not match:
            raise HttpError(500, why="option %s not allowed here / out of order" % name)
        params = match[0][1]
        if name == "propname":                   # unknown property -> 400 later (§7), not 500
            params = [(None, None)]
        if params is None:                       # cmd without params: any value, nothing after
            node = None
            continue
        nxt = None
        found = False
        for pv, child in params:
            if pv is None or pv == value:
                found, nxt = True, child
                break
        if not found:
            raise HttpError(500, why="value %r not allowed for %s" % (value, name))
        node = nxt


# --------------------------------------------------------------------------
# Small helpers

def fat_date(t):
    lt = time.localtime(t)
    d = ((lt.tm_year - 1980) << 9) | (lt.tm_mon << 5) | lt.tm_mday
    tm = (lt.tm_hour << 11) | (lt.tm_min << 5) | (lt.tm_sec // 2)
    return d, tm


def shutter_fraction(v):
    """TLV 8 u16 pair for a shutspeedvalue text."""
    if v in ("livecomp", "livetime", "livebulb"):
        return (0, 0)
    if v.endswith('"'):
        s = v[:-1]
        if "." in s:
            return (int(round(float(s) * 10)), 10)
        return (int(s), 1)
    if "." in v:
        return (10, int(round(float(v) * 10)))
    return (1, int(v))


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
    sys.stderr.write("olympus_cam: %s\n" % msg)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args, frames, thumbs, objlog=None):
        self.args = args
        self.objlog = objlog or JsonLog(None)
        self.broken_done = False                # --break-transfer-once used up
        self.W, self.H = args.width, args.height
        self.frames = frames
        self.thumbs = thumbs
        self.lock = threading.RLock()
        self.mode = "play"                      # §7: starts in play mode
        self.lvqty = None
        self.powered_off = False
        self.focus = {"saf": 0, "caf": 1, "mf": 2}[args.focus]
        self.props = {
            "takemode": "P",
            "drivemode": "normal",
            "focalvalue": "5.6",
            "expcomp": "0.0",
            "shutspeedvalue": "250",
            "isospeedvalue": "Auto",
            "wbvalue": "0",
            "artfilter": "ART01",
        }
        bx, by = int(round(self.W * 0.15)), int(round(self.H * 0.15))
        self.active = (bx, by, self.W - 2 * bx, self.H - 2 * by)
        self.props_ro = {"touchactiveframe": "%04d-%04d_%04dx%04d" % self.active}
        self.touch = None                       # (x, y, w, h) top-left box
        self.box = max(8, int(round(72 * self.W / 640.0)))
        # card
        self.card = []                          # dicts name,data,thumb,mtime
        now = time.time()
        for i, idx in enumerate((0, len(frames) // 3, (2 * len(frames)) // 3)):
            self._add_file(frames[idx], thumbs[idx], now - 3600 + 60 * i)
        self.last_shot = None
        self.remaining = 1234
        # live view
        self.lv = None
        self.last_request = time.monotonic()

    # ---- card
    def _add_file(self, data, thumb, mtime, origin="card"):
        lt = time.localtime(mtime)
        num = len(self.card) + 1
        name = "P%X%02d%04d.JPG" % (lt.tm_mon, lt.tm_mday, num)
        f = {"name": name, "data": data, "thumb": thumb, "mtime": mtime,
             "sha256": hashlib.sha256(data).hexdigest(), "origin": origin}
        self.card.append(f)
        self.olog(origin, f)
        return name

    def olog(self, ev, f, **extra):
        d = {"ev": ev, "name": f["name"], "size": len(f["data"]), "sha256": f["sha256"],
             "t": round(time.time(), 3)}
        d.update(extra)
        self.objlog.write(d)

    def body_shot(self):
        """SIGUSR1: the body's shutter button (any mode)."""
        if self.powered_off:
            return
        with self.lock:
            idx = random.randrange(len(self.frames))
            fname = self._add_file(self.frames[idx], self.thumbs[idx], time.time(), "body_shot")
            self.last_shot = self.card[-1]
            self.remaining -= 1
        diag("ev=shot file=/DCIM/100OLYMP/%s origin=body_shot" % fname)

    def take_break(self, f):
        """True once: this full-file GET of `f` is the one to cut (--break-transfer-once)."""
        want = self.args.break_transfer_once
        if want is None:
            return False
        if want:
            if f["name"].upper() != os.path.basename(want).upper():
                return False
        elif f["origin"] not in ("captured", "body_shot"):
            return False
        with self.lock:
            if self.broken_done:
                return False
            self.broken_done = True
        return True

    def find_file(self, path):
        path = path.rstrip("/")
        if not path.startswith("/DCIM/100OLYMP/"):
            return None
        name = path[len("/DCIM/100OLYMP/"):]
        for f in self.card:
            if f["name"] == name:
                return f
        return None

    # ---- properties
    def enum_for(self, prop):
        if prop == "takemode":
            return TAKEMODE
        if prop == "drivemode":
            return DRIVEMODE
        if prop == "focalvalue":
            a, b = FNUMBERS_ALL.index(LENS_FMIN), FNUMBERS_ALL.index(LENS_FMAX)
            return FNUMBERS_ALL[a:b + 1]
        if prop == "expcomp":
            return EXPCOMP
        if prop == "shutspeedvalue":
            return SHUTTER
        if prop == "isospeedvalue":
            return ISO[1:] if self.props["takemode"] == "M" else ISO
        if prop == "wbvalue":
            return WB
        if prop == "artfilter":
            return ARTFILTER
        return None

    def all_props(self):
        return list(self.props) + list(self.props_ro)

    def desc_xml(self, prop):
        if prop in self.props:
            return ("<desc><propname>%s</propname><attribute>getset</attribute><value>%s</value>"
                    "<enum>%s</enum></desc>" % (prop, self.props[prop], " ".join(self.enum_for(prop))))
        return ("<desc><propname>%s</propname><attribute>get</attribute><value>%s</value></desc>"
                % (prop, self.props_ro[prop]))

    def get_value(self, prop):
        return self.props[prop] if prop in self.props else self.props_ro[prop]

    def set_value(self, prop, value):
        if prop in self.props_ro:
            raise err520("read-only property %s" % prop)
        if prop not in self.props:
            raise HttpError(400, why="unknown property %s" % prop)
        if value not in self.enum_for(prop):
            raise err520("value %r not in enum of %s" % (value, prop))
        self.props[prop] = value
        if prop == "takemode" and value == "M" and self.props["isospeedvalue"] == "Auto":
            self.props["isospeedvalue"] = "200"

    # ---- AF
    def moving_box(self, n):
        """AF box for frame n: (colour, x, y, w, h); top-left, live-view pixels."""
        if self.focus == 2:
            return (0, 0, 0, 0, 0)
        if self.touch:
            return (1,) + self.touch
        w = h = self.box
        ax, ay, aw, ah = self.active
        fx = 0.5 + 0.5 * math.sin(2 * math.pi * n / 120.0)
        fy = 0.5 + 0.5 * math.sin(2 * math.pi * n / 90.0 + 1.0)
        x = ax + int(round((aw - w) * fx))
        y = ay + int(round((ah - h) * fy))
        colour = 1
        if self.args.af_gaps:
            phase = n % 150
            if phase >= 140:
                return (0, 0, 0, 0, 0)
            if phase >= 120:
                colour = 2
        return (colour, x, y, w, h)

    def touch_box(self, px, py):
        w = h = self.box
        ax, ay, aw, ah = self.active
        x = min(max(px - w // 2, ax), ax + aw - w)
        y = min(max(py - h // 2, ay), ay + ah - h)
        return (x, y, w, h)

    # ---- TLVs (§6.3)
    def tlvs(self, jpeg_len, af):
        p = self.props
        out = []

        def tlv(fid, payload):
            assert len(payload) % 4 == 0
            out.append(struct.pack(">HH", fid, len(payload) // 4) + payload)

        tlv(1, struct.pack(">I", jpeg_len))
        tlv(2, struct.pack(">IIIII", *af))
        tlv(3, struct.pack(">I", 0b101))                       # card mounted, not full
        tlv(4, struct.pack(">I", 1))                           # rotation: 0°
        tlv(5, struct.pack(">I", min(self.remaining, 9999)))
        sl = shutter_fraction('60"')
        fa = shutter_fraction("8000")
        cur = shutter_fraction(p["shutspeedvalue"])
        tlv(8, struct.pack(">HHHHHH", sl[0], sl[1], fa[0], fa[1], cur[0], cur[1]))
        tlv(9, struct.pack(">III", int(round(float(LENS_FMAX) * 10)),
                           int(round(float(LENS_FMIN) * 10)),
                           int(round(float(p["focalvalue"]) * 10))))
        tlv(10, struct.pack(">iii", 50, -50, int(round(float(p["expcomp"]) * 10))))
        iso = p["isospeedvalue"]
        if iso == "Auto":
            cur_iso, auto, warn = 200, 1, 0
        elif iso == "Low":
            cur_iso, auto, warn = 0xFFFE, 0, 1
        else:
            cur_iso, auto, warn = int(iso), 0, 0
        tlv(12, struct.pack(">IHHI", cur_iso, auto, 0, warn))
        tlv(16, struct.pack(">HH", 0, 0))
        tlv(17, struct.pack(">HH", self.focus, 0))
        tlv(18, struct.pack(">HHHHI", 0, LENS_MM, LENS_MM, LENS_MM, 0))
        return b"".join(out)


# --------------------------------------------------------------------------
# Live view sender (§6)

class LiveView(threading.Thread):
    def __init__(self, cam, dest, frames_log, fps):
        super().__init__(daemon=True)
        self.cam = cam
        self.dest = dest
        self.frames_log = frames_log
        self.fps = fps
        self.stop_ev = threading.Event()
        self.n = 0
        self.ssrc = random.getrandbits(32)
        self.sock = socket.socket(socket.AF_INET6 if ":" in dest[0] else socket.AF_INET,
                                  socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        except OSError:
            pass

    def stop(self):
        self.stop_ev.set()

    def run(self):
        seq = 0
        n = 0
        period = 1.0 / self.fps
        t0 = time.monotonic()
        diag("ev=liveview_start dest=%s:%d ssrc=%08x" % (self.dest[0], self.dest[1], self.ssrc))
        try:
            while not self.stop_ev.is_set():
                deadline = t0 + n * period
                now = time.monotonic()
                if deadline > now:
                    if self.stop_ev.wait(deadline - now):
                        break
                elif now - deadline > 2 * period:    # fell behind: do not burst
                    t0 = now - n * period
                cam = self.cam
                if cam.args.lv_idle_timeout > 0 and \
                        time.monotonic() - cam.last_request > cam.args.lv_idle_timeout:
                    diag("ev=liveview_idle_stop")
                    break
                jpeg = cam.frames[n % len(cam.frames)]
                with cam.lock:
                    af = cam.moving_box(n)
                    ext = cam.tlvs(len(jpeg), af)
                ts = n & 0xFFFFFFFF
                t_send = time.monotonic()
                pos = 0
                first = True
                L = len(jpeg)
                while first or pos < L:
                    chunk = jpeg[pos:pos + CHUNK]
                    pos += len(chunk)
                    last = pos >= L
                    b0 = 0x80 | (0x10 if first else 0)
                    b1 = (0x80 if last else 0) | PT
                    hdr = struct.pack(">BBHII", b0, b1, seq & 0xFFFF, ts, self.ssrc)
                    if first:
                        hdr += struct.pack(">HH", 1, len(ext) // 4) + ext
                    try:
                        self.sock.sendto(hdr + chunk, self.dest)
                    except OSError as e:
                        diag("ev=sendto_error %s" % e)
                    seq = (seq + 1) & 0xFFFF
                    first = False
                self.frames_log.write({
                    "frame": n,
                    "sha256": hashlib.sha256(jpeg).hexdigest(),
                    "bytes": L,
                    "af": None if af[0] == 0 else list(af[1:]),
                    "afc": af[0],
                    "t": t_send,
                })
                n += 1
                self.n = n
        finally:
            self.sock.close()
            diag("ev=liveview_stop frames=%d" % n)


# --------------------------------------------------------------------------
# HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "OlympusCam"
    sys_version = ""

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def do_HEAD(self):
        self._handle()

    def do_PUT(self):
        self._handle()

    def do_DELETE(self):
        self._handle()

    def do_OPTIONS(self):
        self._handle()

    def do_PATCH(self):
        self._handle()

    # ---- plumbing
    def _handle(self):
        t_req = time.monotonic()
        app = self.server.app
        cam = app.cam
        raw_path = self.path
        path, _, query = raw_path.partition("?")
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        qdict = {}
        for k, v in pairs:
            qdict.setdefault(k, v)
        body = None
        status = 500
        extra_close = False
        self.obj = None                         # (card file, kind, via) of an image answer
        try:
            if cam.powered_off:
                self.close_connection = True
                return
            cam.last_request = time.monotonic()
            # body
            if self.command == "POST":
                cl = self.headers.get("Content-Length")
                if cl is None:
                    self.close_connection = True
                    raise HttpError(411, why="POST without Content-Length")
                try:
                    n = int(cl)
                except ValueError:
                    raise HttpError(400, why="bad Content-Length")
                body = self.rfile.read(n).decode("utf-8", "replace") if n > 0 else ""
            elif self.headers.get("Content-Length"):
                try:
                    n = int(self.headers.get("Content-Length"))
                    if n > 0:
                        self.rfile.read(n)
                except ValueError:
                    pass
            if self.command not in ("GET", "POST"):
                raise HttpError(501, why="method %s" % self.command)
            if not self.headers.get("Host"):
                raise HttpError(400, why="no Host header")
            if not path.startswith("/"):
                raise HttpError(400, why="path without leading slash")
            if len(raw_path) > 128:
                raise HttpError(414, why="URI longer than 128")
            ua = self.headers.get("User-Agent", "")
            mode = app.args.ua_check
            if mode == "oishare" and not (ua.startswith("OI.Share") or ua.startswith("OlympusCameraKit")):
                raise HttpError(403, why="User-Agent %r refused" % ua)
            if mode == "opc" and not ua.startswith("OlympusCameraKit"):
                raise HttpError(403, why="User-Agent %r refused" % ua)
            status, rbody, ctype, extra_close = app.dispatch(self, path, pairs, qdict, body)
        except HttpError as e:
            status, rbody, ctype = e.status, e.body, e.ctype
            if e.why:
                diag("ev=error status=%d path=%s why=%s" % (status, path, e.why))
        except Exception as e:  # noqa
            status, rbody, ctype = 500, b"", None
            diag("ev=exception path=%s %r" % (path, e))
        finally:
            if not cam.powered_off or status == 202:
                app.req_log.write({"t": t_req, "method": self.command, "path": path,
                                   "query": qdict, "body": body, "status": status})
        if self.obj is not None and status == 200 and self.command == "GET":
            f, kind, via = self.obj
            if kind == "org" and cam.take_break(f):
                self._send_broken(rbody, ctype, f, kind, via)
                return
            cam.olog("served", f, kind=kind, via=via, length=len(rbody))
        self._send(status, rbody, ctype, extra_close)
        if status == 202 and path == "/exec_pwoff.cgi":
            app.power_off()

    def _send_broken(self, body, ctype, f, kind, via):
        """--break-transfer-once: 200 + full Content-Length, half the body, then close."""
        half = len(body) // 2
        sent = 0
        self.close_connection = True
        try:
            self.send_response_only(200)
            self.send_header("Date", self.date_time_string())
            self.send_header("Server", self.version_string())
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            req_conn = self.headers.get("Connection")
            if req_conn:
                self.send_header("Connection", req_conn)
            self.end_headers()
            self.wfile.write(body[:half])
            sent = half
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.server.app.cam.olog("broken", f, kind=kind, via=via, length=len(body), sent=sent)
        diag("ev=broken_transfer file=%s via=%s sent=%d of %d" % (f["name"], via, sent, len(body)))

    def _send(self, status, body, ctype, force_close):
        reasons = {520: "Vendor Error"}
        self.send_response_only(status, reasons.get(status))
        self.send_header("Date", self.date_time_string())
        self.send_header("Server", self.version_string())
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        req_conn = self.headers.get("Connection")
        if force_close or self.close_connection:
            self.send_header("Connection", "close")
            self.close_connection = True
        elif req_conn:
            self.send_header("Connection", req_conn)    # follows the request (§2)
            if req_conn.lower() == "close":
                self.close_connection = True
        if status == 301:
            self.send_header("Location", "/DCIM")
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.wfile.flush()


class App:
    def __init__(self, args, cam, req_log, frames_log):
        self.args = args
        self.cam = cam
        self.req_log = req_log
        self.frames_log = frames_log
        self.server = None
        self.cgis = {c[0]: c for c in build_cgis(cam.all_props(), list(cam.props))}
        self.cmdlist = commandlist_xml(build_cgis(cam.all_props(), list(cam.props))).encode()

    # ---- live view control
    def start_lv(self, host, port):
        self.stop_lv()
        with self.cam.lock:
            lv = LiveView(self.cam, (host, port), self.frames_log, self.args.fps)
            self.cam.lv = lv
        lv.start()

    def stop_lv(self):
        with self.cam.lock:
            lv, self.cam.lv = self.cam.lv, None
        if lv:
            lv.stop()
            lv.join(2)

    def lv_running(self):
        lv = self.cam.lv
        return lv is not None and lv.is_alive()

    def power_off(self):
        self.cam.powered_off = True
        self.stop_lv()
        diag("ev=power_off")

        def _down():
            self.server.shutdown()
            self.server.server_close()
        threading.Thread(target=_down, daemon=True).start()

    def need_rec(self):
        if self.cam.mode != "rec":
            raise err520("needs rec mode (mode=%s)" % self.cam.mode)

    # ---- dispatch
    def dispatch(self, h, path, pairs, q, body):
        cam = self.cam
        xml = "text/xml"
        ok = (200, b"", None, False)

        if path == "/":
            return 301, b"", None, False
        if path in ("/DCIM", "/DCIM/"):
            html = "<html><body>" + "".join('<a href="/DCIM/100OLYMP/%s">%s</a><br>' % (f["name"], f["name"])
                                            for f in cam.card) + "</body></html>"
            return 200, html.encode(), "text/html", False
        if path.startswith("/DCIM/"):
            if h.command != "GET":
                raise HttpError(404)
            with cam.lock:
                f = cam.find_file(urllib.parse.unquote(path))
            if not f:
                raise HttpError(404, why="no file %s" % path)
            h.obj = (f, "org", path)
            return 200, f["data"], "image/jpeg", False
        if not path.endswith(".cgi"):
            raise HttpError(404, why="unknown path")
        name = path[1:-4]
        cgi = self.cgis.get(name)
        if cgi is None:
            raise HttpError(404, why="unknown cgi %s" % name)
        if cgi[1] == "post" and h.command != "POST":
            raise HttpError(500, why="%s needs POST" % name)
        if cgi[1] == "get" and h.command != "GET":
            raise HttpError(500, why="%s needs GET" % name)
        dec = [(k, v) for k, v in pairs]
        if cgi[2] is None:
            if dec:
                raise HttpError(500, why="%s takes no options" % name)
        else:
            check_options(cgi[2], dec)

        if name == "get_connectmode":
            return 200, (XML_HEAD + "<connectmode>private</connectmode>").encode(), xml, False
        if name == "get_commandlist":
            return 200, self.cmdlist, xml, False
        if name == "get_caminfo":
            return 200, (XML_HEAD + "<caminfo><model>%s</model></caminfo>" % MODEL).encode(), xml, False

        if name == "switch_cammode":
            mode = q.get("mode")
            if mode is None:
                raise HttpError(500, why="mode missing")
            self.stop_lv()                                 # any mode change ends live view
            with cam.lock:
                cam.mode = mode
                if "lvqty" in q:
                    cam.lvqty = q["lvqty"]
                    want = "%04dx%04d" % (cam.W, cam.H)
                    if q["lvqty"] != want:
                        diag("ev=lvqty_mismatch lvqty=%s frames=%s (frames keep --size)" % (q["lvqty"], want))
                cam.touch = None
            diag("ev=mode mode=%s lvqty=%s" % (mode, q.get("lvqty")))
            return ok

        if name == "set_utctimediff":
            if cam.mode != "play":
                raise err520("set_utctimediff only in play mode")
            if not re.fullmatch(r"\d{8}T\d{6}", q.get("utctime", "")) or \
                    not re.fullmatch(r"[+-]\d{4}", q.get("diff", "")):
                raise HttpError(500, why="bad utctime/diff")
            return ok

        if name in ("exec_takemisc", "exec_shuttermisc"):
            com = q.get("com")
            need = "rec" if name == "exec_takemisc" else "shutter"
            if com is None:
                raise HttpError(500, why="com missing")
            if com == "startliveview":
                if cam.mode != need:
                    raise err520("startliveview needs %s mode" % need)
                p = q.get("port", "")
                if not p.isdigit() or not (0 < int(p) < 65536):
                    raise HttpError(500, why="bad port %r" % p)
                self.start_lv(h.client_address[0], int(p))
                return ok
            if com == "stopliveview":
                self.stop_lv()
                return ok
            if com in ("getrecview", "getlastjpg"):
                with cam.lock:
                    shot = cam.last_shot
                if shot is None:
                    raise HttpError(404, why="no shot yet")
                h.obj = (shot, "recview" if com == "getrecview" else "org", com)
                return 200, shot["thumb"] if com == "getrecview" else shot["data"], "image/jpeg", False
            if com == "ctrlzoom":
                self.need_rec()
                raise err520("no power-zoom lens")
            raise HttpError(500)

        if name == "exec_takemotion":
            self.need_rec()
            com = q.get("com")
            if com in ("assignafframe", "takeready") or (com == "starttake" and "point" in q):
                pt = q.get("point")
                m = re.fullmatch(r"(\d{4})x(\d{4})", pt or "")
                if not m:
                    raise HttpError(400, why="malformed point %r" % pt)
                px, py = int(m.group(1)), int(m.group(2))
                if px >= cam.W or py >= cam.H:
                    raise HttpError(400, why="point outside the live view")
                if cam.focus == 2:
                    raise err520("AF point in MF mode")
                with cam.lock:
                    cam.touch = cam.touch_box(px, py)
            if com in ("assignafframe", "takeready"):
                with cam.lock:
                    box = cam.touch
                return 200, self.af_answer(box, take=False), xml, False
            if com == "releaseafframe":
                with cam.lock:
                    cam.touch = None
                return ok
            if com == "starttake":
                if not self.lv_running():
                    raise err520("starttake needs live view")
                with cam.lock:
                    lv = cam.lv
                    cur = cam.moving_box(lv.n if lv else 0)
                    af = cam.touch or (cur[1:] if cur[0] else None)
                    idx = random.randrange(len(cam.frames))
                    fname = cam._add_file(cam.frames[idx], cam.thumbs[idx], time.time(), "captured")
                    cam.last_shot = cam.card[-1]
                    cam.remaining -= 1
                    cam.touch = None                       # point resets after a shot
                diag("ev=shot file=/DCIM/100OLYMP/%s sha256=%s" % (
                    fname, hashlib.sha256(cam.card[-1]["data"]).hexdigest()))
                return 200, self.af_answer(af, take=True), xml, True   # capture: Connection close
            if com == "stoptake":
                return ok
            raise HttpError(500)

        if name == "exec_shutter":
            if cam.mode != "shutter":
                raise err520("exec_shutter needs shutter mode")
            com = q.get("com")
            if com in ("1st2ndpush", "2ndpush"):
                with cam.lock:
                    idx = random.randrange(len(cam.frames))
                    fname = cam._add_file(cam.frames[idx], cam.thumbs[idx], time.time(), "captured")
                    cam.last_shot = cam.card[-1]
                    cam.remaining -= 1
                diag("ev=shot file=/DCIM/100OLYMP/%s" % fname)
            return ok

        if name == "get_camprop":
            self.need_rec()
            com, prop = q.get("com"), q.get("propname")
            with cam.lock:
                if com == "desc" and prop == "desclist":
                    x = "<desclist>" + "".join(cam.desc_xml(p) for p in cam.all_props()) + "</desclist>"
                    return 200, (XML_HEAD + x).encode(), xml, False
                if prop not in cam.all_props():
                    raise HttpError(400, why="unknown property %s" % prop)
                if com == "desc":
                    return 200, (XML_HEAD + cam.desc_xml(prop)).encode(), xml, False
                return 200, (XML_HEAD + "<get><value>%s</value></get>" % cam.get_value(prop)).encode(), xml, False

        if name == "set_camprop":
            self.need_rec()
            prop = q.get("propname")
            m = re.search(r"<set>\s*<value>(.*?)</value>\s*</set>", body or "", re.S)
            if not m:
                raise HttpError(500, why="set_camprop body %r" % body)
            value = m.group(1).strip()
            with cam.lock:
                try:
                    cam.set_value(prop, value)
                except HttpError:
                    diag("ev=set_rejected propname=%s value=%r" % (prop, value))
                    raise
            diag("ev=set propname=%s value=%s" % (prop, value))
            return ok

        if name == "get_imglist":
            d = urllib.parse.unquote(q.get("DIR", "")).rstrip("/")
            with cam.lock:
                if d == "/DCIM":
                    dd, tt = fat_date(cam.card[0]["mtime"] if cam.card else time.time())
                    lines = ["VER_100", "/DCIM,100OLYMP,0,16,%d,%d" % (dd, tt)]
                elif d == "/DCIM/100OLYMP" and cam.card:
                    lines = ["VER_100"]
                    for f in cam.card:
                        dd, tt = fat_date(f["mtime"])
                        lines.append("/DCIM/100OLYMP,%s,%d,0,%d,%d" % (f["name"], len(f["data"]), dd, tt))
                else:
                    raise HttpError(404, why="no directory %s" % d)
            return 200, ("\r\n".join(lines) + "\r\n").encode(), "text/plain", False

        if name in ("get_thumbnail", "get_screennail", "get_resizeimg"):
            with cam.lock:
                f = cam.find_file(urllib.parse.unquote(q.get("DIR", "")))
            if not f:
                raise HttpError(404, why="no file")
            h.obj = (f, name[4:], name)
            return 200, f["thumb"] if name == "get_thumbnail" else f["data"], "image/jpeg", False

        if name == "exec_pwoff":
            return 202, b"", None, True

        raise HttpError(404)

    def af_answer(self, box, take):
        if box is None:
            inner = "<affocus>ng</affocus>"
        else:
            x, y, w, h = box
            inner = ("<affocus>ok</affocus><afframepoint>%04dx%04d</afframepoint>"
                     "<afframesize>%04dx%04d</afframesize>" % (x, y, w, h))
        return (XML_HEAD + "<response>" + ("<take>ok</take>" if take else "") + inner + "</response>").encode()


# --------------------------------------------------------------------------

def make_frames(w, h, n, tmp):
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
           "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (w, h),
           "-frames:v", str(n), "-q:v", "5", "-huffman", "default", "-f", "image2", os.path.join(tmp, "f%03d.jpg"),
           "-frames:v", str(n), "-vf", "scale=160:120", "-q:v", "5", "-f", "image2",
           os.path.join(tmp, "t%03d.jpg")]
    subprocess.run(cmd, check=True)
    frames, thumbs = [], []
    for i in range(1, n + 1):
        with open(os.path.join(tmp, "f%03d.jpg" % i), "rb") as f:
            frames.append(f.read())
        with open(os.path.join(tmp, "t%03d.jpg" % i), "rb") as f:
            thumbs.append(f.read())
    return frames, thumbs


def main():
    ap = argparse.ArgumentParser(description="Olympus OI.Share Wi-Fi test camera (clean-room, from olympus.md)")
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per HTTP request")
    ap.add_argument("--frames-log", help="JSON lines, one per live-view frame sent")
    ap.add_argument("--frames", type=int, default=90, help="distinct JPEG frames (default 90)")
    ap.add_argument("--ua-check", choices=("oishare", "opc", "off"), default="oishare")
    ap.add_argument("--focus", choices=("saf", "caf", "mf"), default="saf",
                    help="focus system reported in TLV 17 (no property sets it)")
    ap.add_argument("--lv-idle-timeout", type=float, default=0.0,
                    help="stop live view after S s without HTTP requests (0 = never, default)")
    ap.add_argument("--save-frames", metavar="DIR",
                    help="also write the live-view JPEGs into DIR (f001.jpg …; frame n sends file n %% N + 1)")
    ap.add_argument("--objects-log", help="JSON lines, one per card file event (card, shot, served, broken)")
    ap.add_argument("--break-transfer-once", nargs="?", const="", default=None, metavar="NAME",
                    help="cut the first download of a shot's JPEG (or of file NAME) at half, once")
    ap.add_argument("--af-gaps", action="store_true",
                    help="AF colour 2 (failure) and 0 (no AF) stretches in the moving box")
    args = ap.parse_args()
    m = re.fullmatch(r"(\d+)x(\d+)", args.size)
    if not m:
        ap.error("--size WxH")
    args.width, args.height = int(m.group(1)), int(m.group(2))
    if args.frames < 1 or args.fps <= 0:
        ap.error("--frames >= 1, --fps > 0")

    tmp = tempfile.mkdtemp(prefix="olympus_cam_")
    try:
        frames, thumbs = make_frames(args.width, args.height, args.frames, tmp)
        if args.save_frames:
            os.makedirs(args.save_frames, exist_ok=True)
            for name in glob.glob(os.path.join(tmp, "f*.jpg")):
                shutil.copy(name, args.save_frames)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    cam = Camera(args, frames, thumbs, JsonLog(args.objects_log))
    app = App(args, cam, JsonLog(args.log), JsonLog(args.frames_log))

    stop = threading.Event()
    # A parent may have started us with these blocked (the mask is inherited): take them back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGUSR1, lambda *a: cam.body_shot())

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in args.host else socket.AF_INET

    server = Server((args.host, args.http_port), Handler)
    server.app = app
    app.server = server
    port = server.server_address[1]
    th = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    th.start()
    sys.stdout.write("ready http=%d\n" % port)
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    app.stop_lv()
    if not cam.powered_off:
        server.shutdown()
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
