#!/usr/bin/env python3
"""Independent TomTom Bandit action-camera test camera (Camera Media Server API v2).

Clean-room: written only from ../shared/protocols/bandit.md ("the notes"),
without looking at livegate's own Bandit code.  Section numbers (§N) refer to
that file.  Python 3.11 standard library only; `ffmpeg` is run a few times at
start-up to make the viewfinder JPEGs, the card pictures and the MP4.

    python3 Tests/Scripts/bandit_cam.py --http-port P [--notify-port Q]
        [--host 127.0.0.1] [--size 768x432] [--fps 30] [--log REQUESTS.jsonl]
        [--frames-log FRAMES.jsonl] [--objects-log OBJECTS.jsonl]
        [--card-files N] [--capture-ms 300] [--chunk 1017] [--packet-start N]
        [--memory-free BYTES] [--battery PCT] [--break-transfer-once]
        [--help-choices]

`--http-port 0` / `--notify-port 0` (default 0) pick free ports (the camera
uses 80 for REST; the backchannel port is only known from /status, §2.3).
Prints `ready http=P notify=Q` once both listen; runs until SIGTERM/SIGINT and
exits 0 (after pushing `shutting_down` on the backchannel).  SIGUSR1 = a photo
taken with the camera's own button (in any recording type, even while a video
records).

Logs (JSON lines):
  --log          one per HTTP request {"t","method","path","query","body",
                 "status","peer"}; body = raw request text (null when none,
                 cut at 4096 chars).
  --frames-log   one per viewfinder frame sent {"n","sha256","bytes","pkt"
                 (packet_number of its start datagram),"packets" (data
                 datagrams),"pts","dest","t"}; n counts frames since start-up.
  --objects-log  one per object event {"ev","name","size","sha256","id","kind"}
                 ev = card | captured (REST photo or recording) | body_shot
                 (SIGUSR1) | served (one per /contents download: + "range"
                 (the Range header asked, or null), "status", "length",
                 "method") | deleted (DELETE images|videos/<id>) |
                 broken (--break-transfer-once: the cut download, instead
                 of its "served" line: the "served" keys + "sent" (body
                 bytes written); "length" = the Content-Length announced).

--break-transfer-once: the first GET of images/<id>/contents for a photo made
by a shot (REST shutter in image mode, any image mode, or SIGUSR1) sends the
status line and headers as usual (full Content-Length, no Connection: close;
a Range request keeps its 206 + Content-Range) and then only the first half
(length // 2) of the body, then closes the socket.  Once per process; HEAD,
416s, thumbnails, video downloads and card photos never count and are never
cut (nor is a body of fewer than 2 bytes).  The photo stays on the card; the
next GET is served whole.

Choices made where the notes say UNCONFIRMED or are silent:
  HTTP / REST (§2)
  * Only `/api/version` and `/api/2/...` exist (one trailing `/` tolerated);
    /api/version answers {"version":"2","revision":"1","supported_versions":
    ["2"]}.  Other prefixes/paths -> 404.  Known path, wrong verb -> 405 +
    Allow.  Known but not emulated (sessions/*, tag/sensor sub-resources,
    POST/DELETE videos/<id>/tags) -> 501.
  * JSON replies: Content-Type application/json.  "empty" replies are 200 with
    Content-Length 0.  Errors carry {"error": "<text>"}.  400 = body not JSON,
    not an object, unknown key, wrong type or value, combination not in
    capabilities; 404 = unknown media id; 409 = conflict (second viewfinder
    start, second preview, settings change while recording, tag without a
    running recording); 503 = card full.  Content-Type of requests is not
    checked; GET bodies are ignored.  HTTP/1.1 keep-alive is supported
    (`Connection: close` honoured).  The 5-connection limit is not enforced.
  * Status (§2.3): every key always present, both `recording_secs` and
    `recoding_secs`.  battery 87 % (--battery), not charging, no GNSS fix,
    no sensors.  memory_free_bytes starts at --memory-free (8e9) and goes down
    by the real byte size of each new file (up on DELETE); remaining_photos =
    free // 4 MB; remaining_time_secs = free // 5 MB/s.
    viewfinder_streaming_port = the active port, -1 when inactive.
  * Settings (§2.4): GET has camera, wifi, scene and the current type's
    section (`video` at start).  PUT settings/camera -> empty 200 (read-only
    serial_number / ble_camera_id / ble_verification_code only accepted when
    unchanged); PUT settings/scene -> the whole scene echoed; PUT
    settings/video|image -> switch to that type, the given keys merged onto the
    last-used mode, the whole new mode returned; POST settings/video|image ->
    same merge + switch, empty 200.  Partial bodies are fine (even `{}`).
    Any settings write while recording (video or continuous photo) -> 409.
  * Video combination = (mode, resolution, framerate_fps, fov) must be one of
    GET capabilities/recording; slow_motion_rate is implied by the entry
    (given value must match); interval_secs only for time_lapse
    {0.5,1,2,5,10,30,60} / night_lapse {10,30,60,120}, else must be 0;
    scenes_disabled is derived (input must be a string list, then ignored).
  * Image mode: mode single|burst|continuous, resolution 16MP|8MP,
    burst count 2..30 (default 5) given as `count` or `burst_count` (both
    emitted; both given and different -> 400), interval_secs 0.5..3600
    (continuous), duration_secs >= 0 (0 = until stopped).  Pictures are
    always 1920x1080 JPEGs whatever the MP label.
  * Scene: brightness/contrast/hue/saturation/sharpness 0..255 (default 128),
    mode auto|bright|night|underwater|phone; a mode disabled by the current
    video mode (slow_motion disables night) -> 400.
  * datetime: UTC `yyyy-MM-ddTHH:mm:ssZ`; POST moves the camera clock (used for
    `created`) and echoes the new time.  firmware GET = 1.62.716 build 0,
    no pending; firmware / quickgpsfix / glonass uploads are read and
    discarded (200).  log = a small tar, license = small HTML,
    capabilities/transcoding = a fixed table (no transcoding happens).
  Viewfinder (§3)
  * POST viewfinder start needs viewfinder_streaming_port 1..65535 (else 400);
    start while a stream runs -> 409 and the running stream is untouched
    (whatever port/peer).  Stop accepts the port omitted, -1 or any int;
    stop while inactive -> 200.  No keep-alive: the stream runs until stopped;
    ICMP errors (client gone) are ignored.
  * Destination = the HTTP peer's IP; source = a fresh ephemeral UDP socket per
    session.  Default size 768x432 (§3.1) - the --size option overrides.
  * Datagram = 7-byte header (55 AA, type, packet_number, payload_length) BE;
    start = 15 bytes: jpg_size u32 + pts float32 BE seconds (0.0 unless a
    video records; then seconds since recording start).  Data = --chunk (1017)
    JPEG bytes each (datagram <= 1024), exactly jpg_size bytes in all.
    packet_number is one camera-wide counter (continues across sessions,
    starts at --packet-start, wraps 65535 -> 0).  A frame goes out as one
    burst every 1/fps s.  60 distinct frames (testsrc2, baseline yuvj420p,
    JFIF as ffmpeg writes it), cycled.
  Recording / capture (§2.2 record)
  * Video type: record true -> recording_started {"recording_active": true};
    record false -> after --capture-ms the MP4 exists and recording_stopped
    [video] is pushed.  Redundant start/stop -> 200, no-op.  The MP4 content
    is always the same 1 s 640x360 H.264 clip made distinct by a trailing
    `free` box; length_secs = the real recorded time.
  * Image type ("there is no separate shutter endpoint"): record true = shutter.
    single -> 1 photo, burst -> count photos, pushed together in one
    photo_captured array after --capture-ms; continuous -> one photo every
    interval_secs until record false or duration_secs; only continuous sets
    recording_active.  Card full -> 503 + memory_error {"available_bytes": n}.
  * POST record/tag while a video records -> tag_created {"id" (uuid),
    "offset_secs", "highlight_offset_secs" (-5.0), "highlight_length_secs"
    (10.0), "manual": {}} (body may override the two highlight_* values);
    the clip's nr_highlights counts them.  Otherwise 409.
  Backchannel (§5)
  * Separate TCP port (--notify-port), reported in /status backchannel_port.
    Any number of clients; every event goes to all of them as one compact
    JSON object + "\\n"; nothing is sent on connect; what clients send is
    read and ignored; a client that stops reading for 2 s is dropped.
  * Events: recording_started, recording_stopped, photo_captured,
    viewfinder_started, viewfinder_stopped, tag_created, memory_low
    {"available_bytes"} (once each time free space drops below 256 MiB),
    memory_error {"available_bytes"}, shutting_down {"battery_critical":
    false, "user_initiated": true, "overtemperature_shutdown": false} (flags
    under the key only) on SIGTERM/SIGINT.  The notes list no battery event,
    so battery changes are never pushed (the level is constant).
  Media (§2.2 images / videos)
  * Card: --card-files JPEGs IMG_0001.. then one MP4 VID_000N, ids = the name
    without extension, path /DCIM/100BANDT/<name>, created from
    2024-05-01T09:00:00Z on (7 min apart); later files use the camera clock.
    New numbers continue after the highest ever used.  JPEGs are 1920x1080
    (4 ffmpeg bases, made distinct by a COM segment naming the file).
  * Image objects carry the §5 keys + size_bytes, lat_deg/lon_deg 0.0
    (no fix), aspect_ratio 16:9, is_valid true; video objects the §5 keys
    (framerate and framerate_fps both) + "tags" when tags=1.
  * Lists: sort filename (or created: same order), order asc (default)|desc,
    offset >= 0, count absent = all; filter ignored; bad values -> 400.
  * /contents, /thumb (160x90) and videos/<id>/frames (640x360 still;
    offset_secs 0..length_secs) support HEAD and one Range `bytes=a-b|a-|-n`
    -> 206 + Content-Range; unsatisfiable -> 416; several ranges or junk ->
    whole file 200.  Accept-Ranges: bytes.  transcoding parameters on
    videos/<id>/contents are ignored (the original is served).
  Preview (§4)
  * POST preview start: id must exist (404), preview_port 1..65535 (400),
    second start -> 409.  The camera connects to the HTTP peer at the port
    and sends SOS, then viewfinder JPEG records (type 0, version 1,
    status 0) at 30 fps with pts = (offset + k/30) * 90000 for the clip's
    (or length_secs') duration, no audio, EOS, close.  Stop -> EOS, close.
"""

import argparse
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_VERSION = {"version": "2", "revision": "1", "supported_versions": ["2"]}
SERIAL = "HD4200A05A3C1E77"
WIFI_SSID = "Bandit-5A3C"
FIRMWARE = {"major": 1, "minor": 62, "revision": 716, "build": 0,
            "pending_major": 0, "pending_minor": 0, "pending_revision": 0, "pending_build": 0}
DCIM = "/DCIM/100BANDT/"
PHOTO_W, PHOTO_H = 1920, 1080
CLIP_W, CLIP_H = 640, 360
THUMB_W, THUMB_H = 160, 90
VF_DISTINCT = 60
SYNC = 0x55AA
NOMINAL_PHOTO = 4_000_000
NOMINAL_RATE = 5_000_000
MEMORY_LOW = 256 * 1024 * 1024
CARD_T0 = datetime.datetime(2024, 5, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)
TIME_FMT = "%Y-%m-%dT%H:%M:%SZ"

METERING = ("center", "normal", "wide")
WHITE_BALANCE = ("auto", "7500K", "5000K", "4000K", "3000K", "2000K")
SCENE_MODES = ("auto", "bright", "night", "underwater", "phone")
SCENE_INTS = ("brightness", "contrast", "hue", "saturation", "sharpness")
VIDEO_MODES = ("normal", "slow_motion", "time_lapse", "night_lapse")
VIDEO_RES = ("4k", "2.7k", "1080p", "720p", "wvga")
FOVS = ("normal", "wide")
IMAGE_MODES = ("single", "burst", "continuous")
IMAGE_RES = ("16MP", "8MP")
INTERVALS = {"time_lapse": (0.5, 1, 2, 5, 10, 30, 60), "night_lapse": (10, 30, 60, 120)}
SCENES_DISABLED = {"slow_motion": ["night"]}

# (mode, resolution, framerate_fps, fov, slow_motion_rate)
_VIDEO_COMBOS = []
for _res, _fps_list, _fovs in (("4k", (15,), ("wide",)), ("2.7k", (30,), FOVS),
                               ("1080p", (30, 60), FOVS), ("720p", (30, 60, 120), FOVS)):
    for _fps in _fps_list:
        for _fov in _fovs:
            _VIDEO_COMBOS.append(("normal", _res, _fps, _fov, 0))
_VIDEO_COMBOS += [("slow_motion", "1080p", 60, "wide", 2), ("slow_motion", "720p", 120, "wide", 4),
                  ("slow_motion", "wvga", 180, "wide", 6)]
for _m in ("time_lapse", "night_lapse"):
    for _res in ("4k", "1080p"):
        _VIDEO_COMBOS.append((_m, _res, 30, "wide", 0))

CAMERA_BOOLS = ("gnss_enabled", "sound_enabled", "lights_enabled", "image_rotation_enabled",
                "external_microphone_enabled", "video_stabilisation_enabled")
CAMERA_RO = ("serial_number", "ble_camera_id", "ble_verification_code")


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


def diag(msg):
    try:
        sys.stderr.write("bandit_cam: %s\n" % msg)
        sys.stderr.flush()
    except Exception:  # noqa
        pass


class HttpError(Exception):
    def __init__(self, status, msg="", headers=None):
        super().__init__(msg or str(status))
        self.status = status
        self.msg = msg
        self.headers = headers or []


def bad(msg):
    return HttpError(400, msg)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


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
        if n == 0 or size == 0:
            return "bad"
        return (max(0, size - n), size - 1)
    a = int(a)
    if a >= size or (b != "" and int(b) < a):
        return "bad"
    return (a, size - 1 if b == "" else min(int(b), size - 1))


def jpeg_tagged(base, text):
    t = text.encode()
    return base[:2] + b"\xff\xfe" + struct.pack(">H", len(t) + 2) + t + base[2:]


def mp4_tagged(base, text):
    t = ("bandit_cam " + text).encode()
    return base + struct.pack(">I4s", 8 + len(t), b"free") + t


# --------------------------------------------------------------------------
# Card objects

class Media:
    def __init__(self, kind, num, data, thumb, created, info):
        self.kind = kind
        self.num = num
        self.id = ("IMG_%04d" if kind == "image" else "VID_%04d") % num
        self.name = self.id + (".JPG" if kind == "image" else ".MP4")
        self.path = DCIM + self.name
        self.data = data
        self.thumb = thumb
        self.created = created
        self.info = info
        self.sha = hashlib.sha256(data).hexdigest()
        self.highlights = info.pop("highlights", [])
        self.origin = "card"        # | "captured" | "body_shot"

    def json(self, tags=False):
        i = self.info
        if self.kind == "image":
            return {"id": self.id, "path": self.path, "created": self.created,
                    "lat_deg": 0.0, "lon_deg": 0.0, "mode": i["mode"],
                    "resolution": i["resolution"], "aspect_ratio": "16:9", "is_valid": True,
                    "size_bytes": len(self.data)}
        o = {"id": self.id, "path": self.path, "created": self.created,
             "size_bytes": len(self.data), "length_secs": i["length_secs"],
             "nr_highlights": len(self.highlights), "mode": i["mode"], "aspect_ratio": "16:9",
             "resolution": i["resolution"], "framerate": i["framerate_fps"],
             "framerate_fps": i["framerate_fps"], "is_valid": True}
        if tags:
            o["tags"] = list(self.highlights)
        return o

    def ev(self, ev):
        return {"ev": ev, "name": self.name, "size": len(self.data), "sha256": self.sha,
                "id": self.id, "kind": self.kind}


# --------------------------------------------------------------------------
# Backchannel (§5)

class Backchannel:
    def __init__(self, host, port):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.clients = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop_ev.is_set():
            try:
                c, addr = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            c.settimeout(2.0)
            with self.lock:
                self.clients.append(c)
            diag("ev=backchannel_connect peer=%s:%d" % (addr[0], addr[1]))
            threading.Thread(target=self._drain, args=(c,), daemon=True).start()

    def _drain(self, c):
        # The client never sends; read (and ignore) to notice it going away.
        while not self.stop_ev.is_set():
            try:
                d = c.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                d = b""
            if not d:
                self._drop(c)
                return

    def _drop(self, c):
        with self.lock:
            if c in self.clients:
                self.clients.remove(c)
        try:
            c.close()
        except OSError:
            pass

    def send(self, obj):
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        diag("ev=notify %s" % line.decode().strip()[:200])
        with self.lock:
            clients = list(self.clients)
            for c in clients:
                try:
                    c.sendall(line)
                except OSError:
                    self.clients.remove(c)
                    try:
                        c.close()
                    except OSError:
                        pass

    def close(self):
        self.stop_ev.set()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            for c in self.clients:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                    c.close()
                except OSError:
                    pass
            self.clients = []


# --------------------------------------------------------------------------
# Viewfinder (§3)

class Viewfinder(threading.Thread):
    def __init__(self, cam, dest):
        super().__init__(daemon=True)
        self.cam = cam
        self.dest = dest
        self.stop_ev = threading.Event()
        self.sock = socket.socket(socket.AF_INET6 if ":" in dest[0] else socket.AF_INET,
                                  socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        except OSError:
            pass

    def stop(self):
        self.stop_ev.set()

    def run(self):
        cam = self.cam
        chunk = cam.args.chunk
        period = 1.0 / cam.args.fps
        k = 0
        t0 = time.monotonic()
        sent = 0
        diag("ev=viewfinder_start dest=%s:%d" % self.dest)
        try:
            while not self.stop_ev.is_set():
                deadline = t0 + k * period
                now = time.monotonic()
                if deadline > now:
                    if self.stop_ev.wait(deadline - now):
                        break
                elif now - deadline > 2 * period:       # fell behind: no burst
                    t0 = now - k * period
                with cam.lock:
                    n = cam.vf_n
                    cam.vf_n += 1
                    pts = cam.pts()
                    jpeg = cam.vf_frames[n % len(cam.vf_frames)]
                    L = len(jpeg)
                    ndata = (L + chunk - 1) // chunk
                    pkt0 = cam.pkt
                    cam.pkt = (cam.pkt + 1 + ndata) & 0xFFFF
                pkt = pkt0
                dgrams = [struct.pack(">HBHHIf", SYNC, 0, pkt, 8, L, pts)]
                for pos in range(0, L, chunk):
                    pkt = (pkt + 1) & 0xFFFF
                    part = jpeg[pos:pos + chunk]
                    dgrams.append(struct.pack(">HBHH", SYNC, 1, pkt, len(part)) + part)
                for d in dgrams:
                    try:
                        self.sock.sendto(d, self.dest)
                    except OSError:
                        pass                            # client gone / ICMP: keep going
                cam.frameslog.write({"n": n, "sha256": cam.vf_sha[n % len(cam.vf_frames)],
                                     "bytes": L, "pkt": pkt0, "packets": ndata,
                                     "pts": pts, "dest": "%s:%d" % self.dest, "t": time.time()})
                k += 1
                sent += 1
        finally:
            self.sock.close()
            diag("ev=viewfinder_stop frames=%d" % sent)


# --------------------------------------------------------------------------
# Preview (§4)

class Preview(threading.Thread):
    def __init__(self, cam, dest, media, offset, length):
        super().__init__(daemon=True)
        self.cam, self.dest, self.media = cam, dest, media
        self.offset, self.length = offset, length
        self.stop_ev = threading.Event()

    def stop(self):
        self.stop_ev.set()

    @staticmethod
    def rec(typ, payload=b"", pts=0):
        return struct.pack(">IIIII", 1, typ, len(payload), pts & 0xFFFFFFFF, 0) + payload

    def run(self):
        cam = self.cam
        s = None
        try:
            s = socket.create_connection(self.dest, timeout=2.0)
            s.settimeout(5.0)
            s.sendall(self.rec(127))
            nframes = max(1, int(round(self.length * 30)))
            t0 = time.monotonic()
            for k in range(nframes):
                if self.stop_ev.is_set():
                    break
                dl = t0 + k / 30.0
                now = time.monotonic()
                if dl > now and self.stop_ev.wait(dl - now):
                    break
                jpeg = cam.vf_frames[k % len(cam.vf_frames)]
                s.sendall(self.rec(0, jpeg, int(round((self.offset + k / 30.0) * 90000))))
            s.sendall(self.rec(128))
        except OSError as e:
            diag("ev=preview_error %s" % e)
        finally:
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
            with cam.lock:
                if cam.preview is self:
                    cam.preview = None


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args, vf_frames, photo_bases, mp4_base, clip_still, clip_thumb,
                 objlog, frameslog, notify):
        self.args = args
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.vf_frames = vf_frames
        self.vf_sha = [hashlib.sha256(f).hexdigest() for f in vf_frames]
        self.photo_bases = photo_bases          # [(jpeg, thumb)]
        self.mp4_base = mp4_base
        self.clip_still = clip_still
        self.clip_thumb = clip_thumb
        self.objlog = objlog
        self.frameslog = frameslog
        self.notify = notify
        crc = "%08X" % (zlib.crc32(SERIAL.encode()) & 0xFFFFFFFF)
        self.camera = {"serial_number": SERIAL, "ble_camera_id": crc,
                       "ble_verification_code": "7Q4K2M9X",
                       "gnss_enabled": True, "sound_enabled": True, "lights_enabled": True,
                       "image_rotation_enabled": False, "external_microphone_enabled": False,
                       "video_stabilisation_enabled": False, "metering": "normal",
                       "white_balance_mode": "auto"}
        self.wifi = {"ssid": WIFI_SSID}
        self.scene = {"mode": "auto", "brightness": 128, "contrast": 128, "hue": 128,
                      "saturation": 128, "sharpness": 128}
        self.video = self._video_obj("normal", "1080p", 30, "wide", 0, 0)
        self.image = {"mode": "single", "resolution": "16MP", "duration_secs": 0,
                      "interval_secs": 1, "count": 5, "burst_count": 5}
        self.rec_type = "video"
        self.recording = False
        self.rec_t0 = None
        self.rec_video = None
        self.rec_tags = []
        self.continuous = None                  # Event of a continuous photo run
        self.vf = None
        self.vf_port = -1
        self.vf_n = 0
        self.pkt = args.packet_start & 0xFFFF
        self.preview = None
        self.clock_offset = 0.0
        self.memory_free = args.memory_free
        self.low_sent = self.memory_free < MEMORY_LOW
        self.broken_done = False
        self.media = []
        self.next_num = 1
        total = args.card_files + 1
        for j in range(total):
            created = (CARD_T0 + datetime.timedelta(minutes=7 * j)).strftime(TIME_FMT)
            if j < args.card_files:
                o = self._new_image(created, {"mode": "single", "resolution": "16MP"})
            else:
                o = self._new_video(created, {"mode": "normal", "resolution": "1080p",
                                              "framerate_fps": 30, "length_secs": 1.0})
            self.objlog.write(o.ev("card"))

    # ---- helpers
    @staticmethod
    def _video_obj(mode, res, fps, fov, rate, interval):
        return {"mode": mode, "resolution": res, "framerate_fps": fps, "fov": fov,
                "slow_motion_rate": rate, "interval_secs": interval,
                "scenes_disabled": list(SCENES_DISABLED.get(mode, []))}

    def now(self):
        return datetime.datetime.fromtimestamp(time.time() + self.clock_offset, datetime.timezone.utc)

    def pts(self):
        if self.recording and self.rec_type == "video" and self.rec_t0 is not None:
            return float(time.monotonic() - self.rec_t0)
        return 0.0

    def _new_image(self, created, info):
        num = self.next_num
        self.next_num += 1
        base, thumb = self.photo_bases[num % len(self.photo_bases)]
        data = jpeg_tagged(base, "bandit_cam IMG_%04d %s" % (num, created))
        o = Media("image", num, data, thumb, created, dict(info))
        self.media.append(o)
        self.memory_free -= len(data)
        return o

    def _new_video(self, created, info):
        num = self.next_num
        self.next_num += 1
        data = mp4_tagged(self.mp4_base, "VID_%04d %s" % (num, created))
        o = Media("video", num, data, self.clip_thumb, created, dict(info))
        self.media.append(o)
        self.memory_free -= len(data)
        return o

    def _memory_check(self):
        with self.lock:
            free = self.memory_free
            fire = free < MEMORY_LOW and not self.low_sent
            if free >= MEMORY_LOW:
                self.low_sent = False
            elif fire:
                self.low_sent = True
        if fire:
            self.notify.send({"memory_low": {"available_bytes": free}})

    def find(self, kind, mid):
        with self.lock:
            for o in self.media:
                if o.kind == kind and o.id == mid:
                    return o
        return None

    def busy(self):
        return self.recording or self.continuous is not None

    # ---- status
    def status(self):
        with self.lock:
            secs = int(time.monotonic() - self.rec_t0) if (self.recording and self.rec_t0) else 0
            free = max(0, self.memory_free)
            return {"recording_active": self.busy(), "recording_secs": secs, "recoding_secs": secs,
                    "battery_level_pct": self.args.battery, "battery_charging": False,
                    "gnss_fix": False, "gnss_strength_pct": 0,
                    "heart_rate_sensor_connected": False, "cadence_sensor_connected": False,
                    "preview_active": self.preview is not None,
                    "viewfinder_active": self.vf is not None,
                    "viewfinder_streaming_port": self.vf_port if self.vf is not None else -1,
                    "backchannel_port": self.notify.port, "memory_free_bytes": free,
                    "remaining_time_secs": free // NOMINAL_RATE,
                    "remaining_photos": free // NOMINAL_PHOTO,
                    "transcoding_active": False, "transcoding_progress": 0}

    def settings(self):
        with self.lock:
            s = {"camera": dict(self.camera), "wifi": dict(self.wifi), "scene": dict(self.scene)}
            if self.rec_type == "video":
                s["video"] = json.loads(json.dumps(self.video))
            else:
                s["image"] = dict(self.image)
            return s

    # ---- settings writes
    def put_camera(self, body):
        with self.lock:
            if self.busy():
                raise HttpError(409, "settings cannot change while recording")
            new = dict(self.camera)
            for k, v in body.items():
                if k in CAMERA_RO:
                    if v != self.camera[k]:
                        raise bad("%s is read-only" % k)
                elif k in CAMERA_BOOLS:
                    if not isinstance(v, bool):
                        raise bad("%s must be a boolean" % k)
                    new[k] = v
                elif k == "metering":
                    if v not in METERING:
                        raise bad("metering must be one of %s" % ", ".join(METERING))
                    new[k] = v
                elif k == "white_balance_mode":
                    if v not in WHITE_BALANCE:
                        raise bad("white_balance_mode must be one of %s" % ", ".join(WHITE_BALANCE))
                    new[k] = v
                else:
                    raise bad("unknown camera setting %r" % k)
            self.camera = new

    def put_scene(self, body):
        with self.lock:
            if self.busy():
                raise HttpError(409, "settings cannot change while recording")
            new = dict(self.scene)
            for k, v in body.items():
                if k == "mode":
                    if v not in SCENE_MODES:
                        raise bad("scene mode must be one of %s" % ", ".join(SCENE_MODES))
                    new[k] = v
                elif k in SCENE_INTS:
                    if not is_int(v) or not 0 <= v <= 255:
                        raise bad("%s must be an integer 0..255" % k)
                    new[k] = v
                else:
                    raise bad("unknown scene setting %r" % k)
            if self.rec_type == "video" and new["mode"] in self.video["scenes_disabled"]:
                raise bad("scene %s is disabled in %s video mode" % (new["mode"], self.video["mode"]))
            self.scene = new
            return dict(new)

    def set_video(self, body):
        with self.lock:
            if self.busy():
                raise HttpError(409, "settings cannot change while recording")
            cur = self.video
            known = ("mode", "resolution", "framerate_fps", "fov", "slow_motion_rate",
                     "interval_secs", "scenes_disabled")
            for k in body:
                if k not in known:
                    raise bad("unknown video setting %r" % k)
            mode = body.get("mode", cur["mode"])
            res = body.get("resolution", cur["resolution"])
            fps = body.get("framerate_fps", cur["framerate_fps"])
            fov = body.get("fov", cur["fov"])
            if mode not in VIDEO_MODES:
                raise bad("video mode must be one of %s" % ", ".join(VIDEO_MODES))
            if res not in VIDEO_RES:
                raise bad("resolution must be one of %s" % ", ".join(VIDEO_RES))
            if not is_int(fps):
                raise bad("framerate_fps must be an integer")
            if fov not in FOVS:
                raise bad("fov must be normal or wide")
            combo = [c for c in _VIDEO_COMBOS if c[:4] == (mode, res, fps, fov)]
            if not combo:
                raise bad("unsupported combination %s/%s/%dfps/%s (see capabilities/recording)"
                          % (mode, res, fps, fov))
            rate = combo[0][4]
            if "slow_motion_rate" in body:
                v = body["slow_motion_rate"]
                if not is_int(v) or v != rate:
                    raise bad("slow_motion_rate must be %d for this mode" % rate)
            allowed = INTERVALS.get(mode)
            if "interval_secs" in body:
                iv = body["interval_secs"]
                if not is_num(iv):
                    raise bad("interval_secs must be a number")
                if allowed is None and iv != 0:
                    raise bad("interval_secs must be 0 outside time/night lapse")
                if allowed is not None and iv not in allowed:
                    raise bad("interval_secs must be one of %s" % ", ".join(str(a) for a in allowed))
            else:
                iv = cur["interval_secs"]
                if allowed is None:
                    iv = 0
                elif iv not in allowed:
                    iv = allowed[1] if mode == "time_lapse" else allowed[0]
            sd = body.get("scenes_disabled", [])
            if not isinstance(sd, list) or not all(isinstance(x, str) for x in sd):
                raise bad("scenes_disabled must be a list of strings")
            new = self._video_obj(mode, res, fps, fov, rate, iv)
            if self.scene["mode"] in new["scenes_disabled"]:
                self.scene["mode"] = "auto"
            self.video = new
            self.rec_type = "video"
            return json.loads(json.dumps(new))

    def set_image(self, body):
        with self.lock:
            if self.busy():
                raise HttpError(409, "settings cannot change while recording")
            new = dict(self.image)
            cnt = []
            for k, v in body.items():
                if k == "mode":
                    if v not in IMAGE_MODES:
                        raise bad("image mode must be one of %s" % ", ".join(IMAGE_MODES))
                    new[k] = v
                elif k == "resolution":
                    if v not in IMAGE_RES:
                        raise bad("resolution must be 16MP or 8MP")
                    new[k] = v
                elif k == "duration_secs":
                    if not is_num(v) or v < 0:
                        raise bad("duration_secs must be a number >= 0")
                    new[k] = v
                elif k == "interval_secs":
                    if not is_num(v) or not 0.5 <= v <= 3600:
                        raise bad("interval_secs must be 0.5..3600")
                    new[k] = v
                elif k in ("count", "burst_count"):
                    if not is_int(v) or not 2 <= v <= 30:
                        raise bad("%s must be an integer 2..30" % k)
                    cnt.append(v)
                else:
                    raise bad("unknown image setting %r" % k)
            if len(set(cnt)) > 1:
                raise bad("count and burst_count differ")
            if cnt:
                new["count"] = new["burst_count"] = cnt[0]
            self.image = new
            self.rec_type = "image"
            return dict(new)

    # ---- viewfinder
    def vf_start(self, host, port):
        with self.lock:
            if self.vf is not None:
                raise HttpError(409, "viewfinder already active (port %d)" % self.vf_port)
            self.vf = Viewfinder(self, (host, port))
            self.vf_port = port
            vf = self.vf
        vf.start()
        self.notify.send({"viewfinder_started": {"viewfinder_active": True}})

    def vf_stop(self, announce=True):
        with self.lock:
            vf = self.vf
            self.vf = None
            self.vf_port = -1
        if vf is not None:
            vf.stop()
            if announce:
                self.notify.send({"viewfinder_stopped": {"viewfinder_active": False}})

    # ---- record / capture
    def record(self, active):
        with self.lock:
            rtype = self.rec_type
        if rtype == "video":
            if active:
                with self.lock:
                    if self.recording:
                        return
                    if self.memory_free < NOMINAL_RATE:
                        free = self.memory_free
                        err = True
                    else:
                        err = False
                        self.recording = True
                        self.rec_t0 = time.monotonic()
                        self.rec_video = dict(self.video)
                        self.rec_tags = []
                if err:
                    self.notify.send({"memory_error": {"available_bytes": free}})
                    raise HttpError(503, "card full")
                self.notify.send({"recording_started": {"recording_active": True}})
            else:
                with self.lock:
                    if not self.recording:
                        return
                    length = round(time.monotonic() - self.rec_t0, 3)
                    v, tags = self.rec_video, self.rec_tags
                    self.recording = False
                    self.rec_t0 = None
                t = threading.Timer(self.args.capture_ms / 1000.0, self._video_written,
                                    args=(v, tags, length))
                t.daemon = True
                t.start()
            return
        with self.lock:
            img = dict(self.image)
            running = self.continuous
        if not active:
            if running is not None:
                running.set()
            return
        if img["mode"] == "continuous":
            if running is not None:
                return
            ev = threading.Event()
            with self.lock:
                self.continuous = ev
            threading.Thread(target=self._continuous, args=(ev, img), daemon=True).start()
            return
        n = img["count"] if img["mode"] == "burst" else 1
        self.shoot("captured", n, img["mode"], img["resolution"], strict=True)

    def _continuous(self, ev, img):
        t0 = time.monotonic()
        k = 0
        try:
            while not ev.is_set() and not self.stopping.is_set():
                if img["duration_secs"] and k * img["interval_secs"] >= img["duration_secs"]:
                    break
                try:
                    self.shoot("captured", 1, "continuous", img["resolution"], strict=True)
                except HttpError:
                    break
                k += 1
                if ev.wait(max(0.0, t0 + k * img["interval_secs"] - time.monotonic())):
                    break
        finally:
            with self.lock:
                if self.continuous is ev:
                    self.continuous = None

    def shoot(self, ev, count, mode, res, strict):
        with self.lock:
            free = self.memory_free
            full = free // NOMINAL_PHOTO < count
        if full:
            self.notify.send({"memory_error": {"available_bytes": max(0, free)}})
            if strict:
                raise HttpError(503, "card full")
            return
        t = threading.Timer(self.args.capture_ms / 1000.0, self._photos_written,
                            args=(ev, count, mode, res))
        t.daemon = True
        t.start()

    def body_shot(self):
        if self.stopping.is_set():
            return
        with self.lock:
            res = self.image["resolution"]
        self.shoot("body_shot", 1, "single", res, strict=False)

    def _photos_written(self, ev, count, mode, res):
        if self.stopping.is_set():
            return
        with self.lock:
            created = self.now().strftime(TIME_FMT)
            objs = [self._new_image(created, {"mode": mode, "resolution": res}) for _ in range(count)]
            for o in objs:
                o.origin = ev
        for o in objs:
            self.objlog.write(o.ev(ev))
        self.notify.send({"photo_captured": [o.json() for o in objs]})
        self._memory_check()

    def _video_written(self, v, tags, length):
        if self.stopping.is_set():
            return
        with self.lock:
            created = self.now().strftime(TIME_FMT)
            o = self._new_video(created, {"mode": v["mode"], "resolution": v["resolution"],
                                          "framerate_fps": v["framerate_fps"],
                                          "length_secs": length, "highlights": list(tags)})
        self.objlog.write(o.ev("captured"))
        self.notify.send({"recording_stopped": [o.json()]})
        self._memory_check()

    def tag(self, body):
        with self.lock:
            if not (self.recording and self.rec_type == "video"):
                raise HttpError(409, "no recording running")
            ho = body.get("highlight_offset_secs", -5.0)
            hl = body.get("highlight_length_secs", 10.0)
            if not is_num(ho) or not is_num(hl) or hl <= 0:
                raise bad("highlight_offset_secs / highlight_length_secs must be numbers (length > 0)")
            h = {"id": str(uuid.uuid4()), "offset_secs": round(time.monotonic() - self.rec_t0, 3),
                 "highlight_offset_secs": float(ho), "highlight_length_secs": float(hl),
                 "manual": {}}
            self.rec_tags.append(h)
        self.notify.send({"tag_created": h})

    def delete(self, o):
        with self.lock:
            if o in self.media:
                self.media.remove(o)
                self.memory_free += len(o.data)
        self.objlog.write(o.ev("deleted"))

    def shutdown(self):
        self.stopping.set()
        with self.lock:
            if self.continuous is not None:
                self.continuous.set()
            pv = self.preview
        self.vf_stop(announce=False)
        if pv is not None:
            pv.stop()
        self.notify.send({"shutting_down": {"battery_critical": False, "user_initiated": True,
                                            "overtemperature_shutdown": False}})


def capabilities_recording():
    video = []
    for mode, res, fps, fov, rate in _VIDEO_COMBOS:
        iv = {"time_lapse": 1, "night_lapse": 10}.get(mode, 0)
        video.append(Camera._video_obj(mode, res, fps, fov, rate, iv))
    image = []
    for mode in IMAGE_MODES:
        for res in IMAGE_RES:
            image.append({"mode": mode, "resolution": res, "duration_secs": 0,
                          "interval_secs": 1 if mode == "continuous" else 0,
                          "count": 5 if mode == "burst" else 1,
                          "burst_count": 5 if mode == "burst" else 1})
    return {"video": video, "image": image}


def capabilities_scenes():
    scenes = [{"mode": m, "brightness": 128, "contrast": 128, "hue": 128, "saturation": 128,
               "sharpness": 128} for m in SCENE_MODES]
    return {"scenes": scenes, "limits": {k: {"min": 0, "max": 255} for k in SCENE_INTS}}


TRANSCODING = {"transcoder": [
    {"input_resolution": "4k", "input_framerate_fps": 15, "output_resolution": "1080p", "output_framerate_fps": 15},
    {"input_resolution": "2.7k", "input_framerate_fps": 30, "output_resolution": "1080p", "output_framerate_fps": 30},
    {"input_resolution": "1080p", "input_framerate_fps": 60, "output_resolution": "720p", "output_framerate_fps": 30}]}

LICENSE = b"<html><body><h1>Bandit emulator</h1><p>Test camera, no licences.</p></body></html>"


def make_log_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        data = b"bandit_cam test camera log\n"
        ti = tarfile.TarInfo("camera.log")
        ti.size = len(data)
        ti.mtime = int(CARD_T0.timestamp())
        tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


# --------------------------------------------------------------------------
# HTTP

class Reply:
    def __init__(self, status=200, body=b"", ctype=None, headers=None):
        self.status, self.body, self.ctype = status, body, ctype
        self.headers = headers or []
        self.cut = None         # --break-transfer-once: body bytes to send before closing
        self.cut_ev = None      # its "broken" objects-log line


def jreply(obj, status=200):
    return Reply(status, json.dumps(obj, separators=(",", ":")).encode(), "application/json")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "BanditCam"
    sys_version = ""

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        self._handle()

    do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = do_GET

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = b""
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    break
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise bad("bad chunked body")
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                out += self.rfile.read(n)
                self.rfile.readline(1024)
            return out
        cl = self.headers.get("Content-Length")
        if not cl:
            return b""
        try:
            n = int(cl)
        except ValueError:
            self.close_connection = True
            raise bad("bad Content-Length")
        return self.rfile.read(n) if n > 0 else b""

    def _handle(self):
        srv = self.server
        cam = srv.cam
        t = time.time()
        path, _, query = self.path.partition("?")
        qdict = {}
        for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
            qdict.setdefault(k, v)
        body_text = None
        try:
            raw = self._read_body()
            if raw:
                body_text = raw.decode("utf-8", "replace")
            rep = srv.api.dispatch(self, self.command, path, qdict, raw)
        except HttpError as e:
            rep = jreply({"error": e.msg or str(e.status)}, e.status)
            rep.headers = e.headers
            diag("ev=error status=%d %s %s why=%s" % (e.status, self.command, path, e.msg))
        except (ConnectionError, TimeoutError):
            self.close_connection = True
            return
        except Exception as e:  # noqa
            rep = jreply({"error": "internal error"}, 500)
            diag("ev=exception %s %s %r" % (self.command, path, e))
        srv.reqlog.write({"t": t, "method": self.command, "path": path, "query": qdict,
                          "body": body_text[:4096] if body_text is not None else None,
                          "status": rep.status, "peer": self.client_address[0]})
        try:
            self._send(rep)
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def _send(self, rep):
        self.send_response_only(rep.status)
        self.send_header("Date", self.date_time_string())
        self.send_header("Server", self.version_string())
        if rep.ctype:
            self.send_header("Content-Type", rep.ctype)
        for k, v in rep.headers:
            self.send_header(k, v)
        if not any(k.lower() == "content-length" for k, _ in rep.headers):
            self.send_header("Content-Length", str(len(rep.body)))
        if (self.headers.get("Connection") or "").lower() == "close" or self.close_connection:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if rep.cut is not None:
            self.close_connection = True
            sent = 0
            try:
                self.wfile.write(rep.body[:rep.cut])
                self.wfile.flush()
                sent = rep.cut
            finally:
                rep.cut_ev["sent"] = sent
                self.server.cam.objlog.write(rep.cut_ev)
                diag("ev=broken_transfer %s sent=%d of %d"
                     % (rep.cut_ev["name"], sent, len(rep.body)))
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            return
        if self.command != "HEAD" and rep.body:
            self.wfile.write(rep.body)
        self.wfile.flush()


def json_body(raw):
    if not raw:
        raise bad("JSON body required")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise bad("body is not valid JSON: %s" % e)
    if not isinstance(obj, dict):
        raise bad("body must be a JSON object")
    return obj


def opt_json_body(raw):
    return json_body(raw) if raw and raw.strip() else {}


def allow(method, *allowed):
    if method == "HEAD" and "GET" in allowed:
        return
    if method not in allowed:
        raise HttpError(405, "method %s not allowed" % method,
                        [("Allow", ", ".join(allowed + (("HEAD",) if "GET" in allowed else ())))])


def qint(q, name, default):
    if name not in q:
        return default
    try:
        v = int(q[name])
    except ValueError:
        raise bad("%s must be an integer" % name)
    if v < 0:
        raise bad("%s must be >= 0" % name)
    return v


def qnum(q, name, default):
    if name not in q:
        return default
    try:
        v = float(q[name])
    except ValueError:
        raise bad("%s must be a number" % name)
    if v != v or v < 0:
        raise bad("%s must be >= 0" % name)
    return v


class Api:
    def __init__(self, cam):
        self.cam = cam
        self.log_tar = make_log_tar()

    def dispatch(self, h, method, path, q, raw):
        cam = self.cam
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        if path == "/api/version":
            allow(method, "GET")
            return jreply(API_VERSION)
        if not path.startswith("/api/2/"):
            raise HttpError(404, "no such path")
        parts = [urllib.parse.unquote(p) for p in path[len("/api/2/"):].split("/")]
        p0 = parts[0]
        n = len(parts)
        peer = h.client_address[0]
        if n == 1 and p0 == "status":
            allow(method, "GET")
            return jreply(cam.status())
        if n == 1 and p0 == "viewfinder":
            allow(method, "POST")
            b = json_body(raw)
            act = b.get("viewfinder_active")
            if not isinstance(act, bool):
                raise bad("viewfinder_active must be a boolean")
            port = b.get("viewfinder_streaming_port")
            if act:
                if not is_int(port) or not 1 <= port <= 65535:
                    raise bad("viewfinder_streaming_port must be an integer 1..65535")
                cam.vf_start(peer, port)
            else:
                if port is not None and not is_int(port):
                    raise bad("viewfinder_streaming_port must be an integer")
                cam.vf_stop()
            return Reply()
        if n == 1 and p0 == "record":
            allow(method, "POST")
            b = json_body(raw)
            act = b.get("recording_active")
            if not isinstance(act, bool):
                raise bad("recording_active must be a boolean")
            cam.record(act)
            return Reply()
        if n == 2 and parts == ["record", "tag"]:
            allow(method, "POST")
            cam.tag(opt_json_body(raw))
            return Reply()
        if n == 1 and p0 == "preview":
            allow(method, "POST")
            return self.preview(peer, json_body(raw))
        if p0 == "settings":
            if n == 1:
                allow(method, "GET")
                return jreply(cam.settings())
            if n == 2 and parts[1] == "camera":
                allow(method, "PUT")
                cam.put_camera(json_body(raw))
                return Reply()
            if n == 2 and parts[1] == "scene":
                allow(method, "PUT")
                return jreply(cam.put_scene(json_body(raw)))
            if n == 2 and parts[1] in ("video", "image"):
                allow(method, "PUT", "POST")
                b = opt_json_body(raw)
                new = cam.set_video(b) if parts[1] == "video" else cam.set_image(b)
                return jreply(new) if method == "PUT" else Reply()
            raise HttpError(404, "no such settings section")
        if p0 == "capabilities" and n == 2:
            allow(method, "GET")
            if parts[1] == "recording":
                return jreply(capabilities_recording())
            if parts[1] == "scenes":
                return jreply(capabilities_scenes())
            if parts[1] == "transcoding":
                return jreply(TRANSCODING)
            raise HttpError(404, "no such capability")
        if n == 1 and p0 == "datetime":
            allow(method, "GET", "POST")
            if method == "POST":
                b = json_body(raw)
                v = b.get("datetime")
                try:
                    dt = datetime.datetime.strptime(v, TIME_FMT).replace(tzinfo=datetime.timezone.utc)
                except (TypeError, ValueError):
                    raise bad("datetime must be yyyy-MM-ddTHH:mm:ssZ")
                with cam.lock:
                    cam.clock_offset = dt.timestamp() - time.time()
            return jreply({"datetime": cam.now().strftime(TIME_FMT)})
        if n == 1 and p0 == "firmware":
            allow(method, "GET", "POST")
            return jreply(FIRMWARE) if method != "POST" else Reply()
        if n == 1 and p0 in ("quickgpsfix", "glonass"):
            allow(method, "POST")
            return Reply()
        if n == 1 and p0 == "log":
            allow(method, "GET")
            return Reply(200, self.log_tar, "application/x-tar")
        if n == 1 and p0 == "license":
            allow(method, "GET")
            return Reply(200, LICENSE, "text/html")
        if p0 == "sessions" and n == 2 and parts[1] in ("videos", "images"):
            allow(method, "GET")
            raise HttpError(501, "sessions are not emulated")
        if p0 in ("videos", "images"):
            return self.media(h, method, parts, q)
        raise HttpError(404, "no such path")

    def preview(self, peer, b):
        cam = self.cam
        act = b.get("preview_active")
        if not isinstance(act, bool):
            raise bad("preview_active must be a boolean")
        if not act:
            with cam.lock:
                pv = cam.preview
                cam.preview = None
            if pv is not None:
                pv.stop()
            return Reply()
        mid = b.get("id")
        if not isinstance(mid, str):
            raise bad("id must be a string")
        port = b.get("preview_port")
        if not is_int(port) or not 1 <= port <= 65535:
            raise bad("preview_port must be an integer 1..65535")
        o = cam.find("video", mid)
        if o is None:
            raise HttpError(404, "no such video")
        off = b.get("offset_secs", 0.0)
        ln = b.get("length_secs")
        clip = float(o.info["length_secs"])
        if not is_num(off) or not 0 <= off <= clip:
            raise bad("offset_secs must be 0..length_secs")
        if ln is None:
            ln = clip - off
        if not is_num(ln) or ln < 0:
            raise bad("length_secs must be a number >= 0")
        ln = min(ln, clip - off)
        with cam.lock:
            if cam.preview is not None:
                raise HttpError(409, "preview already active")
            pv = Preview(cam, (peer, port), o, float(off), float(ln))
            cam.preview = pv
        pv.start()
        return Reply()

    def media(self, h, method, parts, q):
        cam = self.cam
        kind = "video" if parts[0] == "videos" else "image"
        n = len(parts)
        if n == 1:
            allow(method, "GET")
            sort = q.get("sort", "filename")
            if sort not in ("filename", "created"):
                raise bad("sort must be filename")
            order = q.get("order", "asc")
            if order not in ("asc", "desc"):
                raise bad("order must be asc or desc")
            off = qint(q, "offset", 0)
            cnt = qint(q, "count", None)
            tags = q.get("tags", "0")
            if kind == "video" and tags not in ("0", "1"):
                raise bad("tags must be 0 or 1")
            with cam.lock:
                items = sorted((o for o in cam.media if o.kind == kind), key=lambda o: o.name,
                               reverse=(order == "desc"))
                total = len(items)
                items = items[off:] if cnt is None else items[off:off + cnt]
                out = [o.json(tags=(tags == "1")) for o in items]
            return jreply({"total": total, "items": out})
        o = cam.find(kind, parts[1])
        if o is None:
            raise HttpError(404, "no such %s %r" % (kind, parts[1]))
        if n == 2:
            allow(method, "GET", "DELETE")
            if method == "DELETE":
                cam.delete(o)
                return Reply()
            return jreply(o.json(tags=q.get("tags") == "1"))
        if n == 3 and parts[2] == "contents":
            allow(method, "GET")
            return self.download(h, o, o.data, "image/jpeg" if kind == "image" else "video/mp4", True)
        if n == 3 and parts[2] == "thumb":
            allow(method, "GET")
            if kind == "video":
                qnum(q, "offset_secs", 0.0)
            return self.download(h, o, o.thumb, "image/jpeg", False)
        if kind == "video" and n == 3 and parts[2] == "frames":
            allow(method, "GET")
            off = qnum(q, "offset_secs", 0.0)
            if off > float(o.info["length_secs"]):
                raise bad("offset_secs beyond the clip")
            return self.download(h, o, cam.clip_still, "image/jpeg", False)
        if kind == "video" and n == 3 and parts[2] == "tags":
            allow(method, "GET", "POST", "DELETE")
            if method != "GET":
                raise HttpError(501, "tag editing is not emulated")
            return jreply(list(o.highlights))
        if kind == "video" and parts[2] in ("tags", "sensors"):
            raise HttpError(501, "not emulated")
        raise HttpError(404, "no such path")

    def download(self, h, o, data, ctype, log):
        size = len(data)
        rh = h.headers.get("Range")
        r = parse_range(rh, size)
        hdrs = [("Accept-Ranges", "bytes")]
        ev = o.ev("served")
        ev.update({"range": rh, "method": h.command})
        if r == "bad":
            if log:
                ev.update({"status": 416, "length": 0})
                self.cam.objlog.write(ev)
            return Reply(416, b"", None, hdrs + [("Content-Range", "bytes */%d" % size)])
        if r is None:
            rep = Reply(200, data, ctype, hdrs)
        else:
            part = data[r[0]:r[1] + 1]
            rep = Reply(206, part, ctype, hdrs + [("Content-Range", "bytes %d-%d/%d" % (r[0], r[1], size))])
        if log:
            ev.update({"status": rep.status, "length": len(rep.body)})
            if self.break_now(h, o, rep):
                ev["ev"] = "broken"
                rep.cut = len(rep.body) // 2
                rep.cut_ev = ev         # written by Handler._send with "sent"
                return rep
            self.cam.objlog.write(ev)
        return rep

    def break_now(self, h, o, rep):
        """--break-transfer-once: is this the download to cut?"""
        cam = self.cam
        if not (cam.args.break_transfer_once and h.command == "GET" and o.kind == "image"
                and o.origin in ("captured", "body_shot") and len(rep.body) >= 2):
            return False
        with cam.lock:
            if cam.broken_done:
                return False
            cam.broken_done = True
        return True


# --------------------------------------------------------------------------
# Start-up media

def ffmpeg(args):
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + args,
                   check=True)


def read_seq(tmp, prefix, n):
    out = []
    for i in range(1, n + 1):
        with open(os.path.join(tmp, "%s%03d.jpg" % (prefix, i)), "rb") as f:
            out.append(f.read())
    return out


def make_media(w, h, tmp):
    ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (w, h),
            "-frames:v", str(VF_DISTINCT), "-pix_fmt", "yuvj420p", "-q:v", "5",
            "-f", "image2", os.path.join(tmp, "v%03d.jpg")])
    vf = read_seq(tmp, "v", VF_DISTINCT)
    ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (PHOTO_W, PHOTO_H),
            "-frames:v", "4", "-pix_fmt", "yuvj420p", "-q:v", "4", "-f", "image2",
            os.path.join(tmp, "p%03d.jpg"),
            "-frames:v", "4", "-vf", "scale=%d:%d" % (THUMB_W, THUMB_H), "-pix_fmt", "yuvj420p",
            "-q:v", "5", "-f", "image2", os.path.join(tmp, "t%03d.jpg")])
    bases = list(zip(read_seq(tmp, "p", 4), read_seq(tmp, "t", 4)))
    mp4 = os.path.join(tmp, "clip.mp4")
    src = ["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (CLIP_W, CLIP_H)]
    try:
        ffmpeg(src + ["-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                      "-movflags", "+faststart", mp4])
    except subprocess.CalledProcessError:
        ffmpeg(src + ["-t", "1", "-c:v", "mpeg4", "-q:v", "5", mp4])
    ffmpeg(src + ["-frames:v", "1", "-pix_fmt", "yuvj420p", "-q:v", "5", os.path.join(tmp, "still.jpg"),
                  "-frames:v", "1", "-vf", "scale=%d:%d" % (THUMB_W, THUMB_H), "-pix_fmt", "yuvj420p",
                  "-q:v", "5", os.path.join(tmp, "vthumb.jpg")])
    with open(mp4, "rb") as f:
        mp4_data = f.read()
    with open(os.path.join(tmp, "still.jpg"), "rb") as f:
        still = f.read()
    with open(os.path.join(tmp, "vthumb.jpg"), "rb") as f:
        vthumb = f.read()
    return vf, bases, mp4_data, still, vthumb


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
    ap = argparse.ArgumentParser(description="TomTom Bandit test camera (clean-room, from bandit.md)")
    ap.add_argument("--http-port", type=int, help="REST port (camera: 80; 0 = free port)")
    ap.add_argument("--notify-port", type=int, default=0, help="backchannel TCP port (0 = free, default)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="768x432", help="viewfinder JPEG size (camera: 768x432)")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per HTTP request")
    ap.add_argument("--frames-log", help="JSON lines, one per viewfinder frame sent")
    ap.add_argument("--objects-log", help="JSON lines, one per card object event")
    ap.add_argument("--card-files", type=int, default=3, help="JPEGs on the card at start (plus one MP4)")
    ap.add_argument("--capture-ms", type=int, default=300, help="shutter/stop-to-card delay")
    ap.add_argument("--chunk", type=int, default=1017, help="JPEG bytes per data datagram (<= 65500)")
    ap.add_argument("--packet-start", type=int, default=0, help="first packet_number (wrap tests)")
    ap.add_argument("--memory-free", type=int, default=8_000_000_000, help="free card bytes at start")
    ap.add_argument("--battery", type=int, default=87, help="battery_level_pct")
    ap.add_argument("--break-transfer-once", action="store_true",
                    help="cut the first GET of a shot photo's contents half-way and close")
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
    if w < 16 or h < 16 or w % 2 or h % 2 or args.fps <= 0:
        ap.error("--size even and >= 16x16, --fps > 0")
    if args.card_files < 0 or args.capture_ms < 0 or not 1 <= args.chunk <= 65500 \
            or not 0 <= args.battery <= 100:
        ap.error("--card-files >= 0, --capture-ms >= 0, --chunk 1..65500, --battery 0..100")

    tmp = tempfile.mkdtemp(prefix="bandit_cam_")
    try:
        vf, bases, mp4, still, vthumb = make_media(w, h, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if len(set(hashlib.sha256(f).digest() for f in vf)) != len(vf):
        diag("warning: viewfinder frames are not all distinct")

    notify = Backchannel(args.host, args.notify_port)
    cam = Camera(args, vf, bases, mp4, still, vthumb, JsonLog(args.objects_log),
                 JsonLog(args.frames_log), notify)

    stop = threading.Event()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGUSR1, lambda *a: threading.Thread(target=cam.body_shot, daemon=True).start())

    http = make_server(args.host, args.http_port, Handler)
    http.cam = cam
    http.api = Api(cam)
    http.reqlog = JsonLog(args.log)
    threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    sys.stdout.write("ready http=%d notify=%d\n" % (http.server_address[1], notify.port))
    sys.stdout.flush()
    while not stop.wait(0.1):
        pass
    cam.shutdown()
    http.shutdown()
    http.server_close()
    notify.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
