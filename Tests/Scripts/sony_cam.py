#!/usr/bin/env python3
"""Independent Sony Camera Remote API (Wi-Fi, JSON-RPC + HTTP live view) test camera.

Clean-room: written only from ../shared/protocols/sony.md ("the notes"),
without looking at livegate's own Sony code.  Section numbers below (§N)
refer to that file.  Python 3.11 standard library only; `ffmpeg` is run once at
start-up to make the live-view JPEGs.

    python3 Tests/Scripts/sony_cam.py --http-port P [--host 127.0.0.1]
        [--size 768x432] [--fps 30] [--order info-first|jpeg-first|alternate|random]
        [--seed N] [--info-missing-every N] [--counter shared|separate]
        [--log REQUESTS.jsonl] [--frames-log FRAMES.jsonl] [--frames N_DISTINCT]
        [--frame-info-default off|on] [--seq-start N] [--ts-start MS] [--padding N]
        [--lv-transfer close|chunked] [--poll-timeout S] [--require-rec-mode]

`--http-port 0` picks a free port.  Prints `ready http=P` once it listens; runs
until SIGTERM/SIGINT, exits 0.  `--help-choices` prints this text.

Endpoints: POST /sony/camera (JSON-RPC, §3.3) and GET /liveview/liveviewstream
(the URL startLiveview returns, §1.1).  Every other path/verb -> 404.

JSON-RPC methods: getVersions, getAvailableApiList, getApplicationInfo,
getMethodTypes, startRecMode, stopRecMode, startLiveview, startLiveviewWithSize,
stopLiveview, getLiveviewSize, getSupportedLiveviewSize, getAvailableLiveviewSize,
setLiveviewFrameInfo, getLiveviewFrameInfo, getEvent.  Anything else ->
{"error": [12, "No Such Method"]}.

Live-view stream (§1.2): per JPEG n, packets
  0x01: FF 01 seq(u16) ts(u32) | 24 35 68 79 size(u24) pad(u8) 4x00 flag=00 115x00 | JPEG | pad x 00
  0x02: FF 02 seq(u16) ts(u32) | 24 35 68 79 size(u24) pad(u8) 01 00 count(u16)=1
        recsize(u16)=16 114x00 | one 16-byte record | pad x 00
  record: x1 y1 x2 y2 (u16 BE, 0..10000 per axis, anisotropic, §1.2),
          category 0x02 phase-detection AF, status 0x04 focused,
          additional status 0x01 selected, 5 x 00.
  The 0x02 packet is written in the same socket write as its JPEG, immediately
  before or after it (--order), so nothing else comes between them.

AF box of frame n (deterministic, independent of which JPEG is shown):
  a = 2*pi*(n mod 90)/90, cx = 5000 + round(3200 cos a), cy = 5000 + round(3000 sin a)
  bw = 1200 (12 % of the width), bh = clamp(round_half_up(1200*W/H), 200, 3000)
  (square in pixels), x1 = cx - bw//2, y1 = cy - bh//2, x2 = x1 + bw, y2 = y1 + bh.
Pixel box in --frames-log (the notes: pixel x = X * jpegWidth / 10000), with
integer round-half-up:  P(X, W) = (X*W + 5000) // 10000
  af = [P(x1,W), P(y1,H), P(x2,W) - P(x1,W), P(y2,H) - P(y1,H)]   ([x, y, w, h])

--frames-log: one line per JPEG packet fully written to a client:
  {"n", "seq", "ts", "sha256", "width", "height", "af", "info", "stream",
   "info_seq", "t"}.  "af" is the box the client was told about: null when
  "info" is "none" (frame information off, or an --info-missing-every frame).
  "info_seq" is the 0x02 packet's sequence number (null when none), "stream"
  numbers the live-view connections from 1, "t" is time.time() after the write.
  For info "after", the line is written after the 0x02 packet went out too.
--log: one line per HTTP request: {"t", "http" (verb), "path", "method", "params",
  "id", "version"}; "method"/"params" are the JSON-RPC ones for /sony/camera, the
  HTTP verb / null for other requests (bodies that are not JSON: method null).

Choices made where the notes say UNCONFIRMED (or say nothing):
  * Live-view response headers (§1.1, §7.1): `HTTP/1.1 200 OK`,
    `Content-Type: application/octet-stream`, `Cache-Control: no-cache`,
    `Connection: close`, no Content-Length; the body is close-delimited
    (ends only when the camera closes the socket).  --lv-transfer chunked
    sends `Transfer-Encoding: chunked` instead, one chunk per frame write
    (HTTP/1.0 requests always get close-delimited).
  * Frame information default (§1.3, §7.3): OFF until setLiveviewFrameInfo
    [{"frameInfo": true}] (the notes: sent "only after" that call);
    --frame-info-default on starts with it on.  The setting is camera-wide,
    survives stopLiveview and takes effect on the next frame of running streams.
  * 0x02 cadence (§1.3, §7.2): exactly one 0x02 packet per JPEG (count 1),
    except --info-missing-every N frames: frame n has none when N > 0 and
    n % N == N - 1 (the Nth, 2Nth, ... frame counting from 1).
  * Order (§7.2): --order info-first = 0x02 right before its JPEG; jpeg-first
    = right after; alternate = before when n is even, after when odd; random
    = per-stream random.Random(--seed), one draw per frame (drawn even for
    frames without info), before when draw < 0.5.
  * Counters (§1.2, §7.2): --counter shared (default): the 0x02 packet carries
    the same sequence number and timestamp as the JPEG it describes; JPEG n has
    seq (--seq-start + n) mod 65536.  --counter separate: JPEGs keep that
    counter, 0x02 packets have their own one starting at (--seq-start + 0x8000)
    mod 65536, +1 per 0x02 packet sent; timestamp still equal to its JPEG's.
  * Timestamp (§1.2, §7.2): ms, u32 wrap, same unit for 0x02; JPEG n's ts =
    --ts-start (default 100000) + round(scheduled send time of frame n - stream
    start, in ms).  Frames are paced at --fps; a stream that falls behind by
    more than 2 frame periods is re-based (no burst), so ts stays monotonic.
  * Frame numbers, seq and ts are per live-view connection (each client gets
    its own stream, starting at n = 0); JPEG n = distinct JPEG n mod --frames.
  * Payload size of 0x02 = count * 16 exactly (§7.3); padding (§7.5) =
    --padding bytes (default 0) of 0x00 after both packet types.
  * 0x01 payload header bytes 8..11 (width/height?, §7.4): zeros.
  * JPEGs: ffmpeg testsrc2, baseline, yuvj420p, -q:v 5, standard Huffman tables.
  * The stream URL is http://<local address of the request's socket>:<port>
    /liveview/liveviewstream.  GET on it while live view is stopped -> 404;
    stopLiveview (and stopRecMode) close running streams; startLiveview while
    running returns the same URL and keeps running streams.
    startLiveviewWithSize accepts "L"/"M" (recorded; JPEGs keep --size), while
    running with another size -> [3, "New size(=X) differs from the current(=Y)."].
  * startRecMode is not needed for live view unless --require-rec-mode
    (then startLiveview before it -> [1, "Not Available Now"]); stopRecMode
    also stops live view.
  * getEvent (§3.4, §8.2): versions "1.0".."1.3" (others -> 14 "Unsupported
    Version"); result length 36 for 1.0/1.1, 60 for 1.2/1.3; filled: 0
    availableApiList, 1 cameraStatus "IDLE" (always), 3 liveviewStatus,
    4 liveviewOrientation "0", 5 [], 10 [], 12 cameraFunction "Remote
    Shooting", 21 shootMode "still", 35 focusStatus "Focused" (1.1+); rest
    null.  Values are always all sent (never null-for-unchanged; the notes
    allow repeats).  [true] answers at once if cameraStatus/liveviewStatus
    differ from the last getEvent answer, else waits for such a change up to
    --poll-timeout (default 2 s) and then answers the unchanged values (a
    result, not an error).  A second [true] while one waits: the older gets
    [40402, "Already Running Polling Api"].
  * Envelope (§3.3): missing "version" = "1.0"; other versions than listed ->
    14; body not JSON -> 4 "Illegal Data Format"; empty body, no method, no
    id, params not an array -> 5 "Illegal Request"; bad params -> 3 "Illegal
    Argument".  JSON-RPC answers are always HTTP 200, application/json.
    getMethodTypes answers with "results" (§3.3).
  * A live-view client that stops reading for 10 s is dropped.
"""

import argparse
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PT_JPEG = 0x01
PT_INFO = 0x02
START_CODE = b"\x24\x35\x68\x79"
REC_SIZE = 16
CAT_PHASE = 0x02                 # phase-detection AF (§1.2 enum)
ST_FOCUSED = 0x04                # focused
ADD_SELECTED = 0x01              # selected
AF_PERIOD = 90                   # frames per lap of the AF box centre
RPC_PATH = "/sony/camera"
LV_PATH = "/liveview/liveviewstream"
APP_INFO = ["Smart Remote Control", "2.0.0"]
EVENT_VERSIONS = ("1.0", "1.1", "1.2", "1.3")
WRITE_TIMEOUT = 10.0

# name -> (versions, input types, output types) for getMethodTypes (§3.4)
METHODS = {
    "getVersions": (("1.0",), [], ["string*"]),
    "getAvailableApiList": (("1.0",), [], ["string*"]),
    "getApplicationInfo": (("1.0",), [], ["string", "string"]),
    "getMethodTypes": (("1.0",), ["string"], ["string", "string*", "string*", "string"]),
    "startRecMode": (("1.0",), [], ["int"]),
    "stopRecMode": (("1.0",), [], ["int"]),
    "startLiveview": (("1.0",), [], ["string"]),
    "startLiveviewWithSize": (("1.0",), ["string"], ["string"]),
    "stopLiveview": (("1.0",), [], ["int"]),
    "getLiveviewSize": (("1.0",), [], ["string"]),
    "getSupportedLiveviewSize": (("1.0",), [], ["string*"]),
    "getAvailableLiveviewSize": (("1.0",), [], ["string", "string*"]),
    "setLiveviewFrameInfo": (("1.0",), ["{\"frameInfo\":\"bool\"}"], []),
    "getLiveviewFrameInfo": (("1.0",), [], ["{\"frameInfo\":\"bool\"}"]),
    "getEvent": (EVENT_VERSIONS, ["bool"], ["json*"]),
}
API_NAMES = list(METHODS)


class RpcError(Exception):
    def __init__(self, code, msg):
        super().__init__("%d %s" % (code, msg))
        self.code = code
        self.msg = msg


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
    sys.stderr.write("sony_cam: %s\n" % msg)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# Packets (§1.2)

def common_header(ptype, seq, ts):
    return struct.pack(">BBHI", 0xFF, ptype, seq & 0xFFFF, ts & 0xFFFFFFFF)


def jpeg_packet(seq, ts, jpeg, pad):
    hdr = (START_CODE + struct.pack(">I", len(jpeg))[1:] + bytes([pad])
           + bytes(4) + b"\x00" + bytes(115))
    assert len(hdr) == 128
    return common_header(PT_JPEG, seq, ts) + hdr + jpeg + bytes(pad)


def info_packet(seq, ts, boxes, pad):
    recs = b"".join(struct.pack(">HHHHBBB5x", x1, y1, x2, y2, CAT_PHASE, ST_FOCUSED, ADD_SELECTED)
                    for (x1, y1, x2, y2) in boxes)
    hdr = (START_CODE + struct.pack(">I", len(recs))[1:] + bytes([pad])
           + b"\x01\x00" + struct.pack(">HH", len(boxes), REC_SIZE) + bytes(114))
    assert len(hdr) == 128
    return common_header(PT_INFO, seq, ts) + hdr + recs + bytes(pad)


# --------------------------------------------------------------------------
# AF box

def af_units(n, w, h):
    """(x1, y1, x2, y2) of frame n's AF box in the 0..10000 space (§1.2)."""
    bw = 1200
    bh = min(3000, max(200, (1200 * w + h // 2) // h))
    a = 2 * math.pi * (n % AF_PERIOD) / AF_PERIOD
    cx = 5000 + int(round(3200 * math.cos(a)))
    cy = 5000 + int(round(3000 * math.sin(a)))
    x1, y1 = cx - bw // 2, cy - bh // 2
    return (x1, y1, x1 + bw, y1 + bh)


def to_px(v, size):
    return (v * size + 5000) // 10000


def af_pixels(box, w, h):
    x1, y1, x2, y2 = box
    px, py = to_px(x1, w), to_px(y1, h)
    return [px, py, to_px(x2, w) - px, to_px(y2, h) - py]


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rec_mode = False
        self.lv_on = False
        self.lv_gen = 0
        self.lv_size = "L"
        self.frame_info = args.frame_info_default == "on"
        self.camera_status = "IDLE"
        self.last_event_key = None
        self.poll_token = 0
        self.stream_count = 0
        self.stopping = threading.Event()

    def changed(self):
        with self.cond:
            self.cond.notify_all()

    def event_key(self):
        return (self.camera_status, self.lv_on)

    def event_result(self, version):
        n = 36 if version in ("1.0", "1.1") else 60
        r = [None] * n
        r[0] = {"type": "availableApiList", "names": list(API_NAMES)}
        r[1] = {"type": "cameraStatus", "cameraStatus": self.camera_status}
        r[3] = {"type": "liveviewStatus", "liveviewStatus": self.lv_on}
        r[4] = {"type": "liveviewOrientation", "liveviewOrientation": "0"}
        r[5] = []
        r[10] = []
        r[12] = {"type": "cameraFunction", "currentCameraFunction": "Remote Shooting",
                 "cameraFunctionCandidates": ["Remote Shooting"]}
        r[21] = {"type": "shootMode", "currentShootMode": "still", "shootModeCandidates": ["still"]}
        if version != "1.0":
            r[35] = {"type": "focusStatus", "focusStatus": "Focused"}
        return r

    def stop_lv_locked(self):
        if self.lv_on:
            self.lv_on = False
            self.lv_gen += 1
            diag("ev=liveview_stop")
        self.cond.notify_all()


# --------------------------------------------------------------------------
# JSON-RPC

class Rpc:
    def __init__(self, app):
        self.app = app
        self.cam = app.cam
        self.args = app.args

    def call(self, h, method, params, version):
        cam = self.cam
        if method not in METHODS:
            raise RpcError(12, "No Such Method")
        if version not in METHODS[method][0]:
            raise RpcError(14, "Unsupported Version")

        def no_params():
            if params:
                raise RpcError(3, "Illegal Argument")

        if method == "getVersions":
            no_params()
            return [["1.0", "1.1", "1.2", "1.3"]]
        if method == "getAvailableApiList":
            no_params()
            return [list(API_NAMES)]
        if method == "getApplicationInfo":
            no_params()
            return list(APP_INFO)
        if method == "getMethodTypes":
            if len(params) != 1 or not isinstance(params[0], str):
                raise RpcError(3, "Illegal Argument")
            out = []
            for name, (vers, tin, tout) in METHODS.items():
                for v in vers:
                    if params[0] in ("", v):
                        out.append([name, tin, tout, v])
            return ("results", out)
        if method == "startRecMode":
            no_params()
            with cam.cond:
                cam.rec_mode = True
                cam.cond.notify_all()
            return [0]
        if method == "stopRecMode":
            no_params()
            with cam.cond:
                cam.rec_mode = False
                cam.stop_lv_locked()
            return [0]
        if method in ("startLiveview", "startLiveviewWithSize"):
            size = None
            if method == "startLiveviewWithSize":
                if len(params) != 1 or params[0] not in ("L", "M"):
                    raise RpcError(3, "Illegal Argument")
                size = params[0]
            else:
                no_params()
            with cam.cond:
                if self.args.require_rec_mode and not cam.rec_mode:
                    raise RpcError(1, "Not Available Now")
                if cam.lv_on and size and size != cam.lv_size:
                    raise RpcError(3, "New size(=%s) differs from the current(=%s)." % (size, cam.lv_size))
                if size:
                    cam.lv_size = size
                if not cam.lv_on:
                    cam.lv_on = True
                    diag("ev=liveview_start")
                cam.cond.notify_all()
            return [self.lv_url(h)]
        if method == "stopLiveview":
            no_params()
            with cam.cond:
                cam.stop_lv_locked()
            return [0]
        if method == "getLiveviewSize":
            no_params()
            return [cam.lv_size]
        if method == "getSupportedLiveviewSize":
            no_params()
            return [["L", "M"]]
        if method == "getAvailableLiveviewSize":
            no_params()
            return [cam.lv_size, ["L", "M"]]
        if method == "setLiveviewFrameInfo":
            if (len(params) != 1 or not isinstance(params[0], dict)
                    or not isinstance(params[0].get("frameInfo"), bool)):
                raise RpcError(3, "Illegal Argument")
            with cam.cond:
                cam.frame_info = params[0]["frameInfo"]
            diag("ev=frame_info on=%s" % cam.frame_info)
            return []
        if method == "getLiveviewFrameInfo":
            no_params()
            return [{"frameInfo": cam.frame_info}]
        if method == "getEvent":
            if len(params) != 1 or not isinstance(params[0], bool):
                raise RpcError(3, "Illegal Argument")
            return self.get_event(params[0], version)
        raise RpcError(12, "No Such Method")

    def get_event(self, poll, version):
        cam = self.cam
        with cam.cond:
            if poll:
                cam.poll_token += 1
                my = cam.poll_token
                cam.cond.notify_all()                 # wakes an older poll, which then fails
                deadline = time.monotonic() + self.args.poll_timeout
                while True:
                    if cam.poll_token != my:
                        raise RpcError(40402, "Already Running Polling Api")
                    if cam.event_key() != cam.last_event_key or cam.stopping.is_set():
                        break
                    rem = deadline - time.monotonic()
                    if rem <= 0:
                        break
                    cam.cond.wait(min(rem, 0.25))
            cam.last_event_key = cam.event_key()
            return cam.event_result(version)

    def lv_url(self, h):
        try:
            host = h.connection.getsockname()[0]
        except OSError:
            host = self.args.host
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%d%s" % (host, self.app.port, LV_PATH)


# --------------------------------------------------------------------------
# HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SonyCam"
    sys_version = ""
    timeout = 30

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

    def _read_body(self):
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        try:
            n = int(cl)
        except ValueError:
            n = 0
        return self.rfile.read(n) if n > 0 else b""

    def _handle(self):
        app = self.server.app
        path = self.path.partition("?")[0]
        body = self._read_body()
        entry = {"t": time.time(), "http": self.command, "path": path,
                 "method": self.command, "params": None, "id": None, "version": None}
        try:
            if path == RPC_PATH and self.command == "POST":
                self._rpc(app, body, entry)
            elif path == LV_PATH and self.command == "GET":
                app.req_log.write(entry)
                self._stream(app)
            else:
                app.req_log.write(entry)
                self._send(404, b"Not Found", "text/plain")
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError) as e:
            diag("ev=client_gone path=%s %r" % (path, e))
            self.close_connection = True

    def _send(self, status, body, ctype):
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        self.send_header("Server", self.version_string())
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    # ---- JSON-RPC (§3.3)
    def _rpc(self, app, body, entry):
        rid = None
        mname = None
        try:
            if not body.strip():
                entry["method"] = None
                raise RpcError(5, "Illegal Request")
            try:
                req = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                entry["method"] = None
                raise RpcError(4, "Illegal Data Format")
            if not isinstance(req, dict):
                entry["method"] = None
                raise RpcError(5, "Illegal Request")
            rid = req.get("id")
            method = mname = req.get("method")
            params = req.get("params")
            version = req.get("version", "1.0")
            entry.update(method=method, params=params, id=rid, version=req.get("version"))
            app.req_log.write(entry)
            entry = None
            if not isinstance(method, str) or rid is None or not isinstance(params, list):
                raise RpcError(5, "Illegal Request")
            res = app.rpc.call(self, method, params, version)
            if isinstance(res, tuple):
                out = {res[0]: res[1], "id": rid}
            else:
                out = {"result": res, "id": rid}
        except RpcError as e:
            if entry is not None:
                app.req_log.write(entry)
            out = {"error": [e.code, e.msg], "id": rid}
            diag("ev=rpc_error method=%s code=%d" % (mname, e.code))
        self._send(200, json.dumps(out).encode(), "application/json")

    # ---- live view (§1)
    def _stream(self, app):
        cam = app.cam
        args = app.args
        with cam.cond:
            if not cam.lv_on:
                self._send(404, b"live view not started", "text/plain")
                return
            gen = cam.lv_gen
            cam.stream_count += 1
            sid = cam.stream_count
        chunked = args.lv_transfer == "chunked" and self.request_version == "HTTP/1.1"
        self.close_connection = True
        self.connection.settimeout(WRITE_TIMEOUT)
        self.send_response_only(200)
        self.send_header("Date", self.date_time_string())
        self.send_header("Server", self.version_string())
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        diag("ev=stream_open stream=%d peer=%s" % (sid, self.client_address[0]))

        frames = app.frames
        W, H = app.width, app.height
        period = 1.0 / args.fps
        rng = random.Random(args.seed)
        every = args.info_missing_every
        pad = args.padding
        info_seq = (args.seq_start + 0x8000) & 0xFFFF
        start = time.monotonic()
        shift = 0.0
        n = 0
        sent = 0
        why = "stopped"
        try:
            while True:
                deadline = start + shift + n * period
                while True:
                    if cam.stopping.is_set() or cam.lv_gen != gen or not cam.lv_on:
                        return
                    now = time.monotonic()
                    if now >= deadline:
                        break
                    cam.stopping.wait(min(deadline - now, 0.1))
                if now - deadline > 2 * period:          # fell behind: re-base, no burst
                    shift += now - deadline
                    deadline = now
                seq = (args.seq_start + n) & 0xFFFF
                ts = (args.ts_start + int(round((shift + n * period) * 1000))) & 0xFFFFFFFF
                draw = rng.random()
                if args.order == "info-first":
                    place = "before"
                elif args.order == "jpeg-first":
                    place = "after"
                elif args.order == "alternate":
                    place = "before" if n % 2 == 0 else "after"
                else:
                    place = "before" if draw < 0.5 else "after"
                if not cam.frame_info or (every > 0 and n % every == every - 1):
                    place = "none"
                jpeg = frames[n % len(frames)]
                jp = jpeg_packet(seq, ts, jpeg, pad)
                af = None
                iseq = None
                if place != "none":
                    box = af_units(n, W, H)
                    af = af_pixels(box, W, H)
                    if args.counter == "shared":
                        iseq = seq
                    else:
                        iseq = info_seq
                        info_seq = (info_seq + 1) & 0xFFFF
                    ip = info_packet(iseq, ts, [box], pad)
                    data = ip + jp if place == "before" else jp + ip
                else:
                    data = jp
                if chunked:
                    data = b"%x\r\n" % len(data) + data + b"\r\n"
                self.wfile.write(data)
                app.frames_log.write({
                    "n": n, "seq": seq, "ts": ts,
                    "sha256": app.shas[n % len(frames)],
                    "width": W, "height": H, "af": af, "info": place,
                    "stream": sid, "info_seq": iseq, "t": time.time(),
                })
                n += 1
                sent += 1
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError) as e:
            why = "client_gone %r" % e
        finally:
            if chunked and why == "stopped":
                try:
                    self.wfile.write(b"0\r\n\r\n")       # last chunk: the stream ended cleanly
                except OSError:
                    pass
            diag("ev=stream_close stream=%d frames=%d why=%s" % (sid, sent, why))


class App:
    def __init__(self, args, frames, width, height, req_log, frames_log):
        self.args = args
        self.frames = frames
        self.shas = [hashlib.sha256(f).hexdigest() for f in frames]
        self.width, self.height = width, height
        self.req_log = req_log
        self.frames_log = frames_log
        self.cam = Camera(args)
        self.rpc = Rpc(self)
        self.port = 0


# --------------------------------------------------------------------------

def jpeg_size(data):
    """(width, height) from the first SOFn marker."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        m = data[i + 1]
        if m in (0xD8, 0x01) or 0xD0 <= m <= 0xD7 or m == 0xFF:
            i += 1 if m == 0xFF else 2
            continue
        seg = struct.unpack(">H", data[i + 2:i + 4])[0]
        if m in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        i += 2 + seg
    return None


def make_frames(w, h, n, tmp):
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
           "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (w, h),
           "-frames:v", str(n), "-pix_fmt", "yuvj420p", "-q:v", "5", "-huffman", "default",
           "-f", "image2", os.path.join(tmp, "f%05d.jpg")]
    subprocess.run(cmd, check=True)
    frames = []
    for i in range(1, n + 1):
        with open(os.path.join(tmp, "f%05d.jpg" % i), "rb") as f:
            frames.append(f.read())
    return frames


def main():
    ap = argparse.ArgumentParser(description="Sony Camera Remote API test camera (clean-room, from sony.md)")
    ap.add_argument("--http-port", type=int, required=False)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="768x432")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--order", choices=("info-first", "jpeg-first", "alternate", "random"),
                    default="info-first")
    ap.add_argument("--seed", type=int, default=1, help="seed for --order random (default 1)")
    ap.add_argument("--info-missing-every", type=int, default=0,
                    help="frame n gets no frame information when n %% N == N-1 (0 = never)")
    ap.add_argument("--counter", choices=("shared", "separate"), default="shared")
    ap.add_argument("--log", help="JSON lines, one per HTTP request")
    ap.add_argument("--frames-log", help="JSON lines, one per JPEG written to a client")
    ap.add_argument("--frames", type=int, default=60, help="distinct JPEGs (default 60)")
    ap.add_argument("--frame-info-default", choices=("off", "on"), default="off",
                    help="frame information before any setLiveviewFrameInfo (default off)")
    ap.add_argument("--seq-start", type=int, default=0, help="sequence number of JPEG 0 (default 0)")
    ap.add_argument("--ts-start", type=int, default=100000, help="timestamp (ms) of JPEG 0 (default 100000)")
    ap.add_argument("--padding", type=int, default=0, help="padding bytes per packet, 0..255 (default 0)")
    ap.add_argument("--lv-transfer", choices=("close", "chunked"), default="close")
    ap.add_argument("--poll-timeout", type=float, default=2.0, help="getEvent [true] timeout, s (default 2)")
    ap.add_argument("--require-rec-mode", action="store_true",
                    help="startLiveview fails with [1, Not Available Now] before startRecMode")
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
    width, height = int(m.group(1)), int(m.group(2))
    if args.frames < 1 or args.fps <= 0 or width < 16 or height < 16:
        ap.error("--frames >= 1, --fps > 0, --size >= 16x16")
    if not 0 <= args.padding <= 255 or args.info_missing_every < 0 or args.poll_timeout <= 0:
        ap.error("--padding 0..255, --info-missing-every >= 0, --poll-timeout > 0")
    args.seq_start &= 0xFFFF
    args.ts_start &= 0xFFFFFFFF

    tmp = tempfile.mkdtemp(prefix="sony_cam_")
    try:
        frames = make_frames(width, height, args.frames, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for i, f in enumerate(frames):
        if jpeg_size(f) != (width, height) or len(f) >= 1 << 24 or f[:2] != b"\xff\xd8" or f[-2:] != b"\xff\xd9":
            diag("ev=bad_frame index=%d size=%s len=%d" % (i, jpeg_size(f), len(f)))
            sys.exit(2)
    if len({hashlib.sha256(f).digest() for f in frames}) != len(frames):
        diag("ev=duplicate_frames (ffmpeg made identical JPEGs)")
        sys.exit(2)

    app = App(args, frames, width, height, JsonLog(args.log), JsonLog(args.frames_log))

    stop = threading.Event()
    # A parent may have started us with these blocked (the mask is inherited): take them back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in args.host else socket.AF_INET

        def handle_error(self, request, client_address):
            diag("ev=handler_error peer=%s %r" % (client_address[0], sys.exc_info()[1]))

    server = Server((args.host, args.http_port), Handler)
    server.app = app
    app.port = server.server_address[1]
    th = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    th.start()
    sys.stdout.write("ready http=%d\n" % app.port)
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    app.cam.stopping.set()
    app.cam.changed()
    server.shutdown()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
