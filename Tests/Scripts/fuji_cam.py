#!/usr/bin/env python3
"""Independent Fujifilm X Wi-Fi test camera ("Fuji TCP" dialect: command, event
and live-view ports).

Clean-room: written only from ../shared/protocols/ptp.md ("the notes": §1.4 USB
containers, §1.5 datasets, §2.4 Fujifilm X, §3 properties, §8.1 card
operations), without looking at livegate's own PTP/Fuji code.  Section numbers
below (§N) refer to that file.  Python 3.11 standard library only; `ffmpeg` is
run once at start-up to make the live-view JPEGs, the stills and thumbnails.

    python3 Tests/Scripts/fuji_cam.py --port P [--host 127.0.0.1]
        [--size 640x480] [--fps 30] [--log REQUESTS.jsonl]
        [--objects-log OBJECTS.jsonl] [--frames-log FRAMES.jsonl]
        [--card-files N] [--capture-ms 300]
        [--model X-T3] [--device-info full|empty] [--still-size 1616x1080]
        [--confirm-polls N] [--fail-first-init] [--frames N_DISTINCT]
        [--break-transfer-once]

Ports (§2.4: 55740 command, 55741 event, 55742 live view): command = P, event =
P+1, live view = P+2.  `--port 0` picks a free P with P+1 and P+2 free too.
All three ports are bound at start-up; P listens at once, P+1 and P+2 only
listen while an InitiateOpenCapture is in force (§2.4 "55741/55742 only listen
after InitiateOpenCapture"): before that (and again after TerminateOpenCapture,
CloseSession or the command client going away) a connect there is refused.
Prints `ready fuji=P` once P listens; runs until SIGTERM/SIGINT, exits 0.
`--help-choices` prints this text.  SIGUSR1 = a shot taken with the body's own
button (a new file on the card).

Init (§2.4): the first packet on P must be exactly 82 bytes: u32 0x52, u32 1,
u32 0x8F53E4F2, GUID[16], UTF-16LE name zero-padded to byte 82.
  * A first u32 other than 82 -> the packet is dropped (CHOICE: connection
    closed without a reply, like the X-T4 "drops other lengths"), logged.
  * Length 82 but type != 1 or magic != 0x8F53E4F2 -> reply type 5 (Init_Fail,
    u32 reason 1) and close (CHOICE; the notes do not say).
  * --fail-first-init: the first valid init of the process gets type 5 with
    reason 2 (busy) and the connection is closed, to test the "retry once after
    500 ms" path (CHOICE: the retry is a new TCP connection).
  * Reply: u32 len, u32 2, u32 ConnectionNumber (1, 2, 3 ... per command
    connection), camera GUID[16] (fixed "FUJIFILM-TESTCAM"), camera name
    (--model) UTF-16LE NUL-terminated, no padding and no version word (CHOICE:
    exactly the fields the notes list).
Then every packet on P is a USB container (§1.4): u32 len (incl. 12-byte
header), u16 type (1 cmd, 2 data, 3 resp, 4 event), u16 code, u32 TID, then
params / payload.  A data phase is ONE type-2 container with the request's code
and TID; data-out (SetDevicePropValue) is the type-2 container following the
command.  Container length < 12 or > 64 MiB = garbage: logged, connection
closed, camera carries on.  Stray data/response/event containers are logged and
ignored.  TIDs are logged, not checked.

Operations (DeviceInfo.OperationsSupported):
  0x1001 GetDeviceInfo (also outside a session), 0x1002 OpenSession,
  0x1003 CloseSession, 0x1004 GetStorageIDs, 0x1005 GetStorageInfo,
  0x1007 GetObjectHandles, 0x1008 GetObjectInfo, 0x1009 GetObject,
  0x100A GetThumb, 0x100B DeleteObject, 0x100E InitiateCapture,
  0x1014 GetDevicePropDesc, 0x1015 GetDevicePropValue, 0x1016
  SetDevicePropValue, 0x1018 TerminateOpenCapture, 0x101B GetPartialObject,
  0x101C InitiateOpenCapture.  Anything else -> 0x2005 (checked first, also
  outside a session).  Before OpenSession every op but 0x1001/0x1002 -> 0x2003;
  OpenSession while open -> 0x201E; SessionID 0 / missing -> 0x201D.  A handler
  bug answers 0x2002 and is logged.
GetDeviceInfo (CHOICE, --device-info): `full` (default) = StandardVersion 100,
  VendorExtensionID 6, VendorExtensionVersion 100, VendorExtensionDesc
  "fujifilm.co.jp: 1.0; ", FunctionalMode 0, the ops above, events 0x4002
  0x4006 0x400D, the properties below, CaptureFormats [0x3801], ImageFormats
  [0x3001 0x3801], Manufacturer "FUJIFILM", Model --model (X-T3), DeviceVersion
  "4.10", SerialNumber "93A12345".  `empty` = a data container with no payload
  (what the notes say the X-T4 does) then OK.

Wi-Fi init sequence (§2.4) and properties (GetDevicePropDesc GetSet 1 = rw):
  0xDF01 ClientState u16 rw, enum {2, 5, 11, 20, 22}; reads 0 until set in the
    session (CHOICE).  Another value -> 0x201C.
  0xDF24 AppVersion/RemoteVersion u32 rw, initial 0x00020004 (CHOICE: the notes
    do not know its semantics); any 4-byte value is accepted and stored; a
    value different from the one read is accepted but logged on stderr.
  0xDF00 CameraState u32 ro (CHOICE of type): reads 0 ("waiting for the user's
    OK on the camera") for the first --confirm-polls reads (default 0) after
    each OpenSession, then 1.
  0xD212 event list, ro: u16 count + count x {u16 code, u32 value} (§2.4).
    CHOICE (the notes do not know Fujifilm's event format): the entries are
    standard PTP event codes with their first parameter: a capture queues
    {0x4002 ObjectAdded, handle} then {0x400D CaptureComplete, 0}; a body shot
    (SIGUSR1) queues {0x4002, handle} only.  The queue belongs to the camera
    (survives disconnects), holds <= 1000 entries and each read empties it.
    GetDevicePropDesc(0xD212) -> 0x200A, SetDevicePropValue -> 0x200F.
  0xD173 LV quality u16 rw enum {1, 2, 3} = 1, 0xD174 LV size u16 rw enum
    {1, 2, 3} = 1, 0xD178 LV white balance u16 rw (form none) = 2 (CHOICES;
    setting them changes nothing, the live view keeps --size).
  Unknown property -> 0x200A; wrong data size -> 0x201C.
  0x101C InitiateOpenCapture(0, 0): needs ClientState 5 or 22 in this session
    (else 0x200F) and CameraState != 0 (else 0x2019) (CHOICES); opens P+1/P+2
    before the OK is sent, remembers the TID.  Again while open -> OK, new TID.
  0x1018 TerminateOpenCapture(tid): p1 must be the TID of the 0x101C (missing
    p1 accepted) else 0x201D; closes the event and live-view connections and
    stops listening on P+1/P+2.  When not open -> OK (CHOICE).

Live view (§2.4): on connect to P+2 the camera pushes frames, no request and no
handshake (CHOICE): u32 len (counts itself: 4 + 14 + JPEG) + 14-byte header +
JPEG.  Header = 12 zero bytes + 01 8A, the constant of the notes' sample frame
(meaning UNCONFIRMED).  Paced at --fps (re-based when the client falls behind
by > 2 periods; a send blocked > 5 s drops the connection).  Frame n (per
process, not reset) carries JPEG n mod --frames (60 distinct testsrc2 JPEGs,
--size, baseline yuvj420p).  Only one live-view connection: a new one replaces
the old.  Bytes sent by the client on P+2 are read and ignored.  Frames keep
flowing during a capture.  --frames-log: one line per frame fully written
{"n", "sha256" (JPEG only), "len", "t"}.

Event port P+1 (CHOICE, notes silent): no handshake; one connection (new one
replaces the old).  The camera pushes USB event containers (type 4): for a
capture {0x4002, TID of the 0x100E, handle} then {0x400D, TID, no params}; for
a body shot {0x4002, 0xFFFFFFFF, handle}.  Events are also queued for 0xD212 in
every case; events while nothing is connected on P+1 are simply not pushed.

Card (§8.1): one storage 0x00010001 (removable RAM 4, hierarchical 2, R/W 0,
  32 GiB, free = capacity - bytes, FreeSpaceInImages = free // 12 MB,
  description "SD1", label --model).  Handles (CHOICE): 0x00000001 DCIM
  (parent 0), 0x00000002 100_FUJI (parent DCIM), files from 0x00000003:
  DSCF0001.JPG .. DSCF000N.JPG (--card-files, default 3), format 0x3801,
  --still-size (1616x1080), depth 24, 160x120 JPEG thumbnail; each file is a
  testsrc2 still with a COM segment naming it (distinct, identical across runs).
  Folders: 0x3001, AssociationType 1, no thumbnail (GetThumb -> 0x2010).
  Dates 20240501T100000 + 61 s per file; new objects: local time.
  GetObjectHandles(storage, format, parent): storage 0xFFFFFFFF/0x00010001
  (else 0x2008), format 0/0xFFFFFFFF = any, parent 0 = all levels, 0xFFFFFFFF =
  root only, a folder = its children; unknown parent -> 0x2009.
  GetObject on a folder sends 0 bytes.  GetPartialObject(handle, offset, max):
  offset > size -> 0x201D, else min(max, size - offset) bytes, response p1 =
  bytes sent.  DeleteObject: files only (folder / 0xFFFFFFFF -> 0x200F).
Capture: 0x100E InitiateCapture(storage 0 or 0x00010001, format 0 or 0x3801;
  else 0x201D) needs only the session -> OK at once; after --capture-ms (300)
  a new distinct JPEG (next handle, next DSCF name, --still-size) is in
  100_FUJI and announced as above.  0x100E while a capture runs -> 0x2019.
  SIGUSR1: the same file creation at once, no request ("body_shot").

Connections (CHOICE): one client at a time, latest wins: a new valid init on P
closes the previous command, event and live-view connections (and the open
capture).  Garbage, wrong init lengths, disconnects: logged, camera carries on.

--break-transfer-once: the first read of a picture made by a shot (capture or
SIGUSR1 body shot) - GetObject, or the GetPartialObject block that comes first,
whatever its offset - sends the data container header announcing the full
length (12 + the bytes asked) and then only the first half (len // 2) of those
bytes, then closes the command connection and the event and live-view
connections (like a Wi-Fi drop: no response container; P+1/P+2 stop listening
as when the client goes away).  Once per process; a read of fewer than 2 bytes
is served normally and does not use it up.  The picture stays on the card and
every later read is served whole.  Logged as "broken", not "served".

Logs (JSON lines): --log: one per command container {"t", "op" ("0x100E"),
"params", "tid", "session", "conn"} plus "data" (hex) when a data-out phase
came (SetDevicePropValue).  --objects-log: {"ev": "card"|"captured"|
"body_shot"|"served"|"deleted"|"broken", "handle", "name", "size", "sha256",
"t"}; "served" (GetObject/GetPartialObject) adds "op", "offset", "length",
"served_sha256"; "broken" (--break-transfer-once) adds the same keys
("length" = the bytes announced, "served_sha256" = of the bytes really sent)
plus "sent" (data bytes sent after the 12-byte header).  "card" lines are
written at start-up.  stderr: diagnostics.
"""

import argparse
import collections
import datetime
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# --------------------------------------------------------------------------
# Codes (§1.4, §1.5, §2.4, §8.1)

INIT_LEN = 82
INIT_MAGIC = 0x8F53E4F2
PT_INIT_ACK, PT_INIT_FAIL = 2, 5
CT_CMD, CT_DATA, CT_RESP, CT_EVENT = 1, 2, 3, 4

RC_OK = 0x2001
RC_GENERAL_ERROR = 0x2002
RC_SESSION_NOT_OPEN = 0x2003
RC_OP_NOT_SUPPORTED = 0x2005
RC_INVALID_STORAGE = 0x2008
RC_INVALID_HANDLE = 0x2009
RC_PROP_NOT_SUPPORTED = 0x200A
RC_ACCESS_DENIED = 0x200F
RC_NO_THUMBNAIL = 0x2010
RC_DEVICE_BUSY = 0x2019
RC_INVALID_PROP_VALUE = 0x201C
RC_INVALID_PARAMETER = 0x201D
RC_SESSION_ALREADY_OPEN = 0x201E

EV_OBJECT_ADDED = 0x4002
EV_PROP_CHANGED = 0x4006
EV_CAPTURE_COMPLETE = 0x400D

OFC_ASSOCIATION = 0x3001
OFC_EXIF_JPEG = 0x3801

STORAGE_ID = 0x00010001
H_DCIM, H_FOLDER, H_FIRST_FILE = 0x00000001, 0x00000002, 0x00000003
MAX_CAPACITY = 32 << 30
EVENT_QUEUE_MAX = 1000
MAX_CONTAINER = 64 << 20
IO_TIMEOUT = 30.0
INIT_TIMEOUT = 10.0
SEND_TIMEOUT = 5.0
THUMB_W, THUMB_H = 160, 120
N_STILLS = 8
CAM_GUID = b"FUJIFILM-TESTCAM"
CARD_DATE0 = (2024, 5, 1, 10, 0, 0)
LV_HEADER = bytes(12) + b"\x01\x8a"
DF24_INITIAL = 0x00020004

OPS = {
    0x1001: "GetDeviceInfo", 0x1002: "OpenSession", 0x1003: "CloseSession",
    0x1004: "GetStorageIDs", 0x1005: "GetStorageInfo", 0x1007: "GetObjectHandles",
    0x1008: "GetObjectInfo", 0x1009: "GetObject", 0x100A: "GetThumb", 0x100B: "DeleteObject",
    0x100E: "InitiateCapture", 0x1014: "GetDevicePropDesc", 0x1015: "GetDevicePropValue",
    0x1016: "SetDevicePropValue", 0x1018: "TerminateOpenCapture", 0x101B: "GetPartialObject",
    0x101C: "InitiateOpenCapture",
}
DATA_OUT_OPS = {0x1016}
EVENTS_SUPPORTED = [EV_OBJECT_ADDED, EV_PROP_CHANGED, EV_CAPTURE_COMPLETE]

DT_U16, DT_U32 = 0x0004, 0x0006
DT_FMT = {DT_U16: "H", DT_U32: "I"}

# code -> (name, datatype, writable, default, enum or None); 0xD212 handled apart
PROPS = {
    0xDF00: ("CameraState", DT_U32, False, 1, None),
    0xDF01: ("ClientState", DT_U16, True, 0, [2, 5, 11, 20, 22]),
    0xDF24: ("AppVersion", DT_U32, True, DF24_INITIAL, None),
    0xD173: ("LiveViewQuality", DT_U16, True, 1, [1, 2, 3]),
    0xD174: ("LiveViewSize", DT_U16, True, 1, [1, 2, 3]),
    0xD178: ("LiveViewWhiteBalance", DT_U16, True, 2, None),
}
PROP_EVENTS = 0xD212
LV_CLIENT_STATES = (5, 22)


class PtpError(Exception):
    def __init__(self, code, why=""):
        super().__init__("0x%04X %s" % (code, why))
        self.code = code


class Garbage(Exception):
    pass


class ConnGone(Exception):
    pass


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
    try:
        sys.stderr.write("fuji_cam: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def sha(b):
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------
# Datasets (§1.5, §8.1)

def pstr(s):
    if not s:
        return b"\x00"
    s = s[:254]
    return bytes([len(s) + 1]) + (s + "\x00").encode("utf-16-le")


def au16(values):
    return struct.pack("<I", len(values)) + b"".join(struct.pack("<H", v) for v in values)


def au32(values):
    return struct.pack("<I", len(values)) + b"".join(struct.pack("<I", v) for v in values)


def ptp_date(dt):
    return dt.strftime("%Y%m%dT%H%M%S")


def insert_com(jpeg, text):
    """Insert a JPEG COM segment after SOI (after APP0 if that comes first)."""
    pos = 2
    if jpeg[2:4] == b"\xff\xe0":
        pos = 4 + struct.unpack(">H", jpeg[4:6])[0]
    t = text.encode("ascii")
    return jpeg[:pos] + b"\xff\xfe" + struct.pack(">H", len(t) + 2) + t + jpeg[pos:]


def jpeg_dims(data):
    """(width, height, sof marker) of the first SOFn, or None."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        m = data[i + 1]
        if m == 0xFF:
            i += 1
            continue
        if m in (0xD8, 0x01) or 0xD0 <= m <= 0xD7:
            i += 2
            continue
        seg = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h, m
        i += 2 + seg
    return None


class Obj:
    def __init__(self, handle, fmt, parent, name, data, thumb, w, h, date, origin):
        self.handle = handle
        self.fmt = fmt
        self.parent = parent
        self.name = name
        self.data = data
        self.thumb = thumb
        self.w, self.h = w, h
        self.date = date
        self.origin = origin    # "folder" | "card" | "captured" | "body_shot"
        self.sha = sha(data)

    def info(self):
        folder = self.fmt == OFC_ASSOCIATION
        thumb = self.thumb or b""
        tfmt = OFC_EXIF_JPEG if thumb else 0
        tw, th = (THUMB_W, THUMB_H) if thumb else (0, 0)
        depth = 24 if self.fmt == OFC_EXIF_JPEG else 0
        head = struct.pack("<IHHIHIIIIIIIHII", STORAGE_ID, self.fmt, 0, len(self.data),
                           tfmt, len(thumb), tw, th, self.w, self.h, depth,
                           self.parent, 1 if folder else 0, 0, 0)
        assert len(head) == 52
        return head + pstr(self.name) + pstr(self.date) + pstr(self.date) + pstr("")


# --------------------------------------------------------------------------
# Sockets

def recv_exact(sock, n, idle_ok=None):
    """Read n bytes.  idle_ok: a callable; while it returns True, timeouts
    before the first byte are not errors."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except socket.timeout:
            if idle_ok is not None and not buf and idle_ok():
                continue
            raise
        if not chunk:
            raise ConnGone("eof")
        buf += chunk
    return bytes(buf)


class Conn:
    """A TCP connection with a write lock."""

    def __init__(self, sock, peer, kind):
        self.sock = sock
        self.peer = "%s:%s" % peer[:2]
        self.kind = kind
        self.no = 0
        self.wlock = threading.Lock()
        self.closed = False

    def sendall(self, data):
        with self.wlock:
            self.sock.sendall(data)

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def bind_socket(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        raise
    return s


class PortGate:
    """A port bound from start-up that only listens while opened (P+1, P+2)."""

    def __init__(self, name, host, port, sock, on_accept, stop):
        self.name, self.host, self.port = name, host, port
        self.sock = sock
        self.listening = False
        self.lock = threading.Lock()
        self.on_accept = on_accept
        self.stop = stop
        threading.Thread(target=self._loop, daemon=True).start()

    def open(self):
        with self.lock:
            if self.listening:
                return True
            if self.sock is None:
                try:
                    self.sock = bind_socket(self.host, self.port)
                except OSError as e:
                    diag("ev=rebind_failed port=%d %r" % (self.port, e))
                    return False
            self.sock.listen(8)
            self.listening = True
        diag("ev=listen port=%d (%s)" % (self.port, self.name))
        return True

    def close(self):
        with self.lock:
            if not self.listening:
                return
            old = self.sock
            self.listening = False
            self.sock = None
            # shutdown() stops the listen at once even while the accept thread
            # still holds the socket in select(); then a fresh bound socket.
            try:
                old.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                old.close()
            except OSError:
                pass
            for attempt in range(10):
                try:
                    self.sock = bind_socket(self.host, self.port)
                    break
                except OSError as e:
                    if attempt == 9:
                        diag("ev=rebind_failed port=%d %r (retried at next open)" % (self.port, e))
                    else:
                        time.sleep(0.02)
        diag("ev=unlisten port=%d (%s)" % (self.port, self.name))

    def _loop(self):
        while not self.stop.is_set():
            with self.lock:
                s = self.sock if self.listening else None
            if s is None:
                time.sleep(0.05)
                continue
            try:
                r, _, _ = select.select([s], [], [], 0.2)
                if not r:
                    continue
                c, peer = s.accept()
            except (OSError, ValueError):
                time.sleep(0.01)
                continue
            try:
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.on_accept(c, peer)
            except Exception:
                diag("ev=accept_bug %s" % traceback.format_exc())
                try:
                    c.close()
                except OSError:
                    pass


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args, lv_frames, stills, thumbs, logs, stop):
        self.args = args
        self.stop = stop
        self.lock = threading.RLock()
        self.req_log, self.obj_log, self.frames_log = logs
        self.lv_frames = lv_frames
        self.lv_shas = [sha(f) for f in lv_frames]
        self.stills = stills
        self.thumbs = thumbs
        self.props = {c: v[3] for c, v in PROPS.items()}
        self.events = collections.deque(maxlen=EVENT_QUEUE_MAX)
        self.cmd = None          # current CmdSession
        self.evt = None          # Conn on P+1
        self.lv = None           # Conn on P+2
        self.lv_wake = threading.Event()
        self.conn_no = 0
        self.failed_first_init = False
        self.broken_done = False
        self.gate_evt = None
        self.gate_lv = None
        self.capture_gen = None
        self.capture_tid = 0xFFFFFFFF
        self.still_no = 0
        self.lv_n = 0
        # card
        self.objects = collections.OrderedDict()
        t0 = datetime.datetime(*CARD_DATE0)

        def card_date(i):
            return ptp_date(t0 + datetime.timedelta(seconds=61 * i))
        self.objects[H_DCIM] = Obj(H_DCIM, OFC_ASSOCIATION, 0, "DCIM", b"", None, 0, 0,
                                   card_date(0), "folder")
        self.objects[H_FOLDER] = Obj(H_FOLDER, OFC_ASSOCIATION, H_DCIM, "100_FUJI", b"", None,
                                     0, 0, card_date(0), "folder")
        self.next_handle = H_FIRST_FILE
        self.file_no = 1
        for i in range(args.card_files):
            k = i % len(stills)
            name = "DSCF%04d.JPG" % self.file_no
            data = insert_com(stills[k], "fuji_cam card %s" % name)
            self._add_file(name, data, thumbs[k], card_date(i + 1), "card")

    # ---- objects
    def olog(self, ev, obj, **extra):
        d = {"ev": ev, "handle": obj.handle, "name": obj.name, "size": len(obj.data),
             "sha256": obj.sha, "t": time.time()}
        d.update(extra)
        self.obj_log.write(d)

    def _add_file(self, name, data, thumb, date, origin):
        with self.lock:
            obj = Obj(self.next_handle, OFC_EXIF_JPEG, H_FOLDER, name, data, thumb,
                      self.args.still_w, self.args.still_h, date, origin)
            self.next_handle += 1
            self.file_no += 1
            self.objects[obj.handle] = obj
        self.olog(origin, obj)
        return obj

    def new_file(self, origin):
        with self.lock:
            k = self.still_no
            self.still_no += 1
            idx = (self.args.card_files + k) % len(self.stills)
            name = "DSCF%04d.JPG" % self.file_no
            data = insert_com(self.stills[idx], "fuji_cam %s %d %s" % (origin, k, name))
            return self._add_file(name, data, self.thumbs[idx],
                                  ptp_date(datetime.datetime.now()), origin)

    def lookup(self, handle):
        with self.lock:
            obj = self.objects.get(handle)
        if obj is None:
            raise PtpError(RC_INVALID_HANDLE, "no object 0x%08X" % handle)
        return obj

    def card_bytes(self):
        with self.lock:
            return sum(len(o.data) for o in self.objects.values())

    def delete(self, handle):
        with self.lock:
            obj = self.objects.get(handle)
            if obj is None:
                raise PtpError(RC_INVALID_HANDLE)
            if obj.origin == "folder":
                raise PtpError(RC_ACCESS_DENIED, "folder")
            del self.objects[handle]
        self.olog("deleted", obj)

    # ---- events (CHOICE: 0xD212 queue + USB event containers on P+1)
    def post_events(self, evs, tid):
        """evs: list of (code, param or None)."""
        with self.lock:
            for code, p in evs:
                self.events.append((code, 0 if p is None else p))
            conn = self.evt
        for code, p in evs:
            diag("ev=event code=0x%04X param=%s" % (code, "-" if p is None else "0x%08X" % p))
        if conn is None:
            return
        try:
            for code, p in evs:
                params = struct.pack("<I", p) if p is not None else b""
                conn.sendall(struct.pack("<IHHI", 12 + len(params), CT_EVENT, code, tid) + params)
        except OSError as e:
            diag("ev=event_send_failed %r" % e)
            self.drop_evt(conn)

    def take_events(self):
        with self.lock:
            evs = list(self.events)
            self.events.clear()
        return evs

    # ---- capture
    def start_capture(self, tid):
        with self.lock:
            if self.capture_gen is not None:
                raise PtpError(RC_DEVICE_BUSY, "capture running")
            gen = object()
            self.capture_gen = gen
            self.capture_tid = tid
        t = threading.Timer(self.args.capture_ms / 1000.0, self._capture_done, args=(gen,))
        t.daemon = True
        t.start()

    def _capture_done(self, gen):
        try:
            with self.lock:
                if self.capture_gen is not gen:
                    return
                self.capture_gen = None
                tid = self.capture_tid
                obj = self.new_file("captured")
            diag("ev=captured handle=0x%08X name=%s" % (obj.handle, obj.name))
            self.post_events([(EV_OBJECT_ADDED, obj.handle), (EV_CAPTURE_COMPLETE, None)], tid)
        except Exception:
            diag("ev=capture_bug %s" % traceback.format_exc())

    def body_shot(self):
        obj = self.new_file("body_shot")
        diag("ev=body_shot handle=0x%08X name=%s" % (obj.handle, obj.name))
        self.post_events([(EV_OBJECT_ADDED, obj.handle)], 0xFFFFFFFF)

    # ---- open capture (event + live-view ports)
    def open_capture(self):
        ok1 = self.gate_evt.open()
        ok2 = self.gate_lv.open()
        if not (ok1 and ok2):
            raise PtpError(RC_DEVICE_BUSY, "cannot listen on P+1/P+2")

    def close_capture(self, why):
        with self.lock:
            evt, self.evt = self.evt, None
            lv, self.lv = self.lv, None
        for c in (evt, lv):
            if c is not None:
                c.close()
        self.gate_evt.close()
        self.gate_lv.close()
        diag("ev=open_capture_closed why=%s" % why)

    def drop_evt(self, conn):
        with self.lock:
            if self.evt is conn:
                self.evt = None
        conn.close()

    def drop_lv(self, conn):
        with self.lock:
            if self.lv is conn:
                self.lv = None
        conn.close()

    def accept_evt(self, sock, peer):
        conn = Conn(sock, peer, "event")
        sock.settimeout(SEND_TIMEOUT)
        with self.lock:
            old, self.evt = self.evt, conn
            conn.no = self.conn_no
        if old is not None:
            old.close()
        diag("ev=event_open peer=%s" % conn.peer)
        threading.Thread(target=self._drain, args=(conn, self.drop_evt), daemon=True).start()

    def accept_lv(self, sock, peer):
        conn = Conn(sock, peer, "liveview")
        sock.settimeout(SEND_TIMEOUT)
        with self.lock:
            old, self.lv = self.lv, conn
            conn.no = self.conn_no
        if old is not None:
            old.close()
        diag("ev=liveview_open peer=%s" % conn.peer)
        self.lv_wake.set()
        threading.Thread(target=self._drain, args=(conn, self.drop_lv), daemon=True).start()

    def _drain(self, conn, drop):
        """Read and ignore what a client sends on P+1/P+2; notice EOF."""
        try:
            while not conn.closed:
                try:
                    r, _, _ = select.select([conn.sock], [], [], 0.5)
                except (OSError, ValueError):
                    break
                if not r:
                    continue
                try:
                    b = conn.sock.recv(65536)
                except socket.timeout:
                    continue
                if not b:
                    break
                diag("ev=%s_input ignored bytes=%d" % (conn.kind, len(b)))
        except OSError:
            pass
        if not conn.closed:
            diag("ev=%s_closed_by_peer peer=%s" % (conn.kind, conn.peer))
        drop(conn)

    def lv_pump(self):
        """Push frames to the current live-view connection at --fps."""
        period = 1.0 / self.args.fps
        due = None
        while not self.stop.is_set():
            with self.lock:
                conn = self.lv
            if conn is None:
                due = None
                self.lv_wake.wait(0.1)
                self.lv_wake.clear()
                continue
            now = time.monotonic()
            if due is None:
                due = now
            if now < due:
                time.sleep(min(due - now, 0.05))
                continue
            with self.lock:
                n = self.lv_n
                self.lv_n += 1
            k = n % len(self.lv_frames)
            jpeg = self.lv_frames[k]
            pkt = struct.pack("<I", 4 + len(LV_HEADER) + len(jpeg)) + LV_HEADER + jpeg
            try:
                conn.sendall(pkt)
            except (OSError, socket.timeout) as e:
                diag("ev=liveview_send_failed n=%d %r" % (n, e))
                self.drop_lv(conn)
                continue
            self.frames_log.write({"n": n, "sha256": self.lv_shas[k], "len": len(pkt),
                                   "t": time.time()})
            due += period
            if time.monotonic() - due > 2 * period:
                due = time.monotonic() + period

    # ---- command connections
    def attach_command(self, sess):
        with self.lock:
            self.conn_no += 1
            sess.no = self.conn_no
            old = self.cmd
            self.cmd = sess
        if old is not None:
            diag("ev=takeover old_conn=%d new_conn=%d" % (old.no, sess.no))
            old.conn.close()
            self.close_capture("new client")

    def break_connections(self, sess):
        """--break-transfer-once: drop the command connection and, when sess is
        the current client, the event and live-view connections."""
        with self.lock:
            cur = self.cmd is sess
            evt = self.evt if cur else None
            lv = self.lv if cur else None
        sess.conn.close()
        for c in (evt, lv):
            if c is not None:
                c.close()

    def detach_command(self, sess):
        with self.lock:
            if self.cmd is not sess:
                return
            self.cmd = None
        self.close_capture("client gone")


# --------------------------------------------------------------------------
# Command connection (§1.4, §2.4)

class CmdSession:
    def __init__(self, cam, conn):
        self.cam = cam
        self.args = cam.args
        self.conn = conn
        self.no = 0
        self.session = 0
        self.client_state = 0
        self.df00_reads = 0
        self.open_tid = None
        self.pending = None

    def idle_ok(self):
        return not self.conn.closed and not self.cam.stop.is_set()

    def read_container(self):
        hdr = recv_exact(self.conn.sock, 12, self.idle_ok)
        length, ctype, code, tid = struct.unpack("<IHHI", hdr)
        if length < 12 or length > MAX_CONTAINER:
            raise Garbage("bad container length %d (bytes %s)" % (length, hdr.hex()))
        return ctype, code, tid, recv_exact(self.conn.sock, length - 12)

    def send_container(self, ctype, code, tid, payload=b""):
        self.conn.sendall(struct.pack("<IHHI", 12 + len(payload), ctype, code, tid) + payload)

    def send_response(self, rc, tid, params=()):
        self.send_container(CT_RESP, rc, tid,
                            b"".join(struct.pack("<I", p & 0xFFFFFFFF) for p in params))

    def run(self):
        try:
            while True:
                if self.pending is not None:
                    item, self.pending = self.pending, None
                else:
                    item = self.read_container()
                ctype, code, tid, payload = item
                if ctype == CT_CMD:
                    self.operation(code, tid, payload)
                else:
                    diag("ev=unexpected_container conn=%d type=%d code=0x%04X tid=%d len=%d"
                         % (self.no, ctype, code, tid, len(payload)))
        except (ConnGone, OSError) as e:
            diag("ev=command_closed conn=%d %r" % (self.no, e))
        except Garbage as e:
            diag("ev=garbage conn=%d %s" % (self.no, e))
        finally:
            self.conn.close()
            self.cam.detach_command(self)

    def read_data_out(self, op, tid):
        while True:
            item = self.read_container()
            ctype, code, dtid, payload = item
            if ctype == CT_DATA:
                if code != op or dtid != tid:
                    diag("ev=data_mismatch op=0x%04X tid=%d got code=0x%04X tid=%d"
                         % (op, tid, code, dtid))
                return payload
            if ctype == CT_CMD:
                diag("ev=protocol_error command while expecting data-out (op 0x%04X tid %d)"
                     % (op, tid))
                self.pending = item
                return None
            diag("ev=unexpected_container type=%d during data-out" % ctype)

    def operation(self, op, tid, payload):
        n = min(5, len(payload) // 4)
        if len(payload) % 4 or len(payload) > 20:
            diag("ev=odd_command_length op=0x%04X len=%d" % (op, len(payload)))
        params = list(struct.unpack("<%dI" % n, payload[:4 * n]))
        data_out = None
        if op in DATA_OUT_OPS:
            data_out = self.read_data_out(op, tid)
        entry = {"t": time.time(), "op": "0x%04X" % op, "params": params, "tid": tid,
                 "session": self.session, "conn": self.no}
        if data_out is not None:
            entry["data"] = data_out.hex()
        self.cam.req_log.write(entry)
        if op in DATA_OUT_OPS and data_out is None:
            self.send_response(RC_GENERAL_ERROR, tid)
            return
        try:
            if op not in OPS:
                raise PtpError(RC_OP_NOT_SUPPORTED)
            if self.session == 0 and op not in (0x1001, 0x1002):
                raise PtpError(RC_SESSION_NOT_OPEN)
            res = getattr(self, "op_%04X" % op)(tid, params, data_out)
        except PtpError as e:
            diag("ev=op_error op=0x%04X tid=%d code=0x%04X %s" % (op, tid, e.code, e))
            self.send_response(e.code, tid)
            return
        except (ConnGone, OSError, Garbage):
            raise
        except Exception:
            diag("ev=handler_bug op=0x%04X %s" % (op, traceback.format_exc()))
            self.send_response(RC_GENERAL_ERROR, tid)
            return
        data, rparams = res if res is not None else (None, ())
        if data is not None:
            self.send_container(CT_DATA, op, tid, data)
        self.send_response(RC_OK, tid, rparams)

    # ---- session / info
    def op_1001(self, tid, p, d):
        if self.args.device_info == "empty":
            return b"", ()
        a = self.args
        props = sorted(list(PROPS) + [PROP_EVENTS])
        body = (struct.pack("<HIH", 100, 6, 100) + pstr("fujifilm.co.jp: 1.0; ") +
                struct.pack("<H", 0) + au16(sorted(OPS)) + au16(EVENTS_SUPPORTED) + au16(props) +
                au16([OFC_EXIF_JPEG]) + au16([OFC_ASSOCIATION, OFC_EXIF_JPEG]) +
                pstr("FUJIFILM") + pstr(a.model) + pstr("4.10") + pstr("93A12345"))
        return body, ()

    def op_1002(self, tid, p, d):
        if not p or p[0] == 0:
            raise PtpError(RC_INVALID_PARAMETER, "SessionID")
        if self.session:
            raise PtpError(RC_SESSION_ALREADY_OPEN)
        self.session = p[0]
        self.client_state = 0
        self.df00_reads = 0
        diag("ev=session_open conn=%d session=%d" % (self.no, self.session))
        return None

    def op_1003(self, tid, p, d):
        self.session = 0
        if self.open_tid is not None:
            self.open_tid = None
            self.cam.close_capture("CloseSession")
        return None

    # ---- card (§8.1)
    def op_1004(self, tid, p, d):
        return au32([STORAGE_ID]), ()

    def op_1005(self, tid, p, d):
        if not p or p[0] != STORAGE_ID:
            raise PtpError(RC_INVALID_STORAGE)
        free = MAX_CAPACITY - self.cam.card_bytes()
        body = (struct.pack("<HHHQQI", 4, 2, 0, MAX_CAPACITY, free, free // (12 * 1000 * 1000)) +
                pstr("SD1") + pstr(self.args.model))
        return body, ()

    def op_1007(self, tid, p, d):
        storage = p[0] if len(p) > 0 else 0xFFFFFFFF
        fmt = p[1] if len(p) > 1 else 0
        parent = p[2] if len(p) > 2 else 0
        if storage not in (0xFFFFFFFF, STORAGE_ID):
            raise PtpError(RC_INVALID_STORAGE)
        with self.cam.lock:
            objs = list(self.cam.objects.values())
            if parent not in (0, 0xFFFFFFFF) and parent not in self.cam.objects:
                raise PtpError(RC_INVALID_HANDLE, "parent")
        out = []
        for o in objs:
            if fmt not in (0, 0xFFFFFFFF) and o.fmt != fmt:
                continue
            if parent == 0xFFFFFFFF and o.parent != 0:
                continue
            if parent not in (0, 0xFFFFFFFF) and o.parent != parent:
                continue
            out.append(o.handle)
        return au32(out), ()

    def op_1008(self, tid, p, d):
        return self.cam.lookup(p[0] if p else 0).info(), ()

    def op_100A(self, tid, p, d):
        obj = self.cam.lookup(p[0] if p else 0)
        if not obj.thumb:
            raise PtpError(RC_NO_THUMBNAIL)
        return obj.thumb, ()

    def op_100B(self, tid, p, d):
        h = p[0] if p else 0
        if h == 0xFFFFFFFF:
            raise PtpError(RC_ACCESS_DENIED, "delete all")
        self.cam.delete(h)
        return None

    def op_1009(self, tid, p, d):
        obj = self.cam.lookup(p[0] if p else 0)
        self.serve(0x1009, tid, obj, 0, len(obj.data))
        return None, ()

    def op_101B(self, tid, p, d):
        obj = self.cam.lookup(p[0] if p else 0)
        off = p[1] if len(p) > 1 else 0
        mx = p[2] if len(p) > 2 else 0xFFFFFFFF
        size = len(obj.data)
        if off > size:
            raise PtpError(RC_INVALID_PARAMETER, "offset %d > size %d" % (off, size))
        length = min(mx, size - off)
        self.serve(0x101B, tid, obj, off, length)
        return None, (length,)

    def serve(self, op, tid, obj, off, length):
        cam = self.cam
        chunk = obj.data[off:off + length]
        do_break = False
        if (self.args.break_transfer_once and obj.origin in ("captured", "body_shot")
                and len(chunk) >= 2):
            with cam.lock:
                if not cam.broken_done:
                    cam.broken_done = True
                    do_break = True
        if do_break:
            sent = len(chunk) // 2
            diag("ev=breaking_transfer op=0x%04X handle=0x%08X sent=%d of %d"
                 % (op, obj.handle, sent, len(chunk)))
            try:
                self.conn.sendall(struct.pack("<IHHI", 12 + len(chunk), CT_DATA, op, tid) +
                                  chunk[:sent])
            except OSError as e:
                diag("ev=breaking_transfer_send_failed %r" % e)
            cam.olog("broken", obj, op="0x%04X" % op, offset=off, length=len(chunk), sent=sent,
                     served_sha256=sha(chunk[:sent]))
            cam.break_connections(self)
            raise ConnGone("break-transfer-once")
        self.send_container(CT_DATA, op, tid, chunk)
        self.cam.olog("served", obj, op="0x%04X" % op, offset=off, length=len(chunk),
                      served_sha256=sha(chunk))

    # ---- capture
    def op_100E(self, tid, p, d):
        storage = p[0] if len(p) > 0 else 0
        fmt = p[1] if len(p) > 1 else 0
        if storage not in (0, STORAGE_ID) or fmt not in (0, OFC_EXIF_JPEG):
            raise PtpError(RC_INVALID_PARAMETER, "storage 0x%08X format 0x%04X" % (storage, fmt))
        self.cam.start_capture(tid)
        return None

    # ---- properties (§3, §2.4)
    def _prop(self, p):
        code = p[0] if p else 0
        if code not in PROPS:
            raise PtpError(RC_PROP_NOT_SUPPORTED, "prop 0x%04X" % code)
        return code, PROPS[code]

    def confirmed(self):
        return self.df00_reads >= self.args.confirm_polls

    def prop_value(self, code):
        if code == 0xDF01:
            return self.client_state
        if code == 0xDF00:
            return 1 if self.confirmed() else 0
        with self.cam.lock:
            return self.cam.props[code]

    def op_1014(self, tid, p, d):
        code, (name, dt, rw, default, enum) = self._prop(p)
        f = "<" + DT_FMT[dt]
        cur = self.prop_value(code)
        body = struct.pack("<HHB", code, dt, 1 if rw else 0) + struct.pack(f, default) + struct.pack(f, cur)
        if enum is None:
            body += b"\x00"
        else:
            body += b"\x02" + struct.pack("<H", len(enum)) + b"".join(struct.pack(f, v) for v in enum)
        return body, ()

    def op_1015(self, tid, p, d):
        if p and p[0] == PROP_EVENTS:
            evs = self.cam.take_events()
            return struct.pack("<H", len(evs)) + b"".join(struct.pack("<HI", c, v) for c, v in evs), ()
        code, (name, dt, rw, default, enum) = self._prop(p)
        if code == 0xDF00:
            v = self.prop_value(code)
            if not self.confirmed():
                self.df00_reads += 1
            return struct.pack("<I", v), ()
        return struct.pack("<" + DT_FMT[dt], self.prop_value(code)), ()

    def op_1016(self, tid, p, d):
        if p and p[0] == PROP_EVENTS:
            raise PtpError(RC_ACCESS_DENIED, "0xD212 is read-only")
        code, (name, dt, rw, default, enum) = self._prop(p)
        if not rw:
            raise PtpError(RC_ACCESS_DENIED, "read-only 0x%04X" % code)
        f = "<" + DT_FMT[dt]
        if d is None or len(d) != struct.calcsize(f):
            raise PtpError(RC_INVALID_PROP_VALUE, "size %d" % (len(d) if d is not None else -1))
        v = struct.unpack(f, d)[0]
        if enum is not None and v not in enum:
            raise PtpError(RC_INVALID_PROP_VALUE, "value %d" % v)
        if code == 0xDF01:
            self.client_state = v
        else:
            with self.cam.lock:
                if code == 0xDF24 and v != self.cam.props[code]:
                    diag("ev=df24_changed old=0x%08X new=0x%08X" % (self.cam.props[code], v))
                self.cam.props[code] = v
        diag("ev=prop_set code=0x%04X (%s) value=%d" % (code, name, v))
        return None

    # ---- open capture (§2.4)
    def op_101C(self, tid, p, d):
        if self.client_state not in LV_CLIENT_STATES:
            raise PtpError(RC_ACCESS_DENIED, "ClientState %d" % self.client_state)
        if not self.confirmed():
            raise PtpError(RC_DEVICE_BUSY, "not confirmed on the camera")
        self.cam.open_capture()
        self.open_tid = tid
        diag("ev=open_capture tid=%d" % tid)
        return None

    def op_1018(self, tid, p, d):
        if self.open_tid is None:
            diag("ev=terminate_without_open")
            return None
        if p and p[0] != self.open_tid:
            raise PtpError(RC_INVALID_PARAMETER, "tid %d != %d" % (p[0], self.open_tid))
        self.open_tid = None
        self.cam.close_capture("TerminateOpenCapture")
        return None


# --------------------------------------------------------------------------
# Init on the command port (§2.4)

def serve_command(cam, sock, peer):
    conn = Conn(sock, peer, "command")
    try:
        sock.settimeout(INIT_TIMEOUT)
        head = recv_exact(sock, 4)
        length = struct.unpack("<I", head)[0]
        if length != INIT_LEN:
            diag("ev=init_dropped peer=%s length=%d (bytes %s)" % (conn.peer, length, head.hex()))
            conn.close()
            return
        rest = recv_exact(sock, INIT_LEN - 4)
        ptype, magic = struct.unpack("<II", rest[:8])
        guid = rest[8:24]
        raw = rest[24:]
        name = ""
        for i in range(0, len(raw) - 1, 2):
            cu = raw[i:i + 2]
            if cu == b"\x00\x00":
                break
            name += cu.decode("utf-16-le", "replace")
        if ptype != 1 or magic != INIT_MAGIC:
            diag("ev=init_rejected peer=%s type=%d magic=0x%08X" % (conn.peer, ptype, magic))
            conn.sendall(struct.pack("<III", 12, PT_INIT_FAIL, 1))
            conn.close()
            return
        if cam.args.fail_first_init:
            with cam.lock:
                fail = not cam.failed_first_init
                cam.failed_first_init = True
            if fail:
                diag("ev=init_fail_first peer=%s" % conn.peer)
                conn.sendall(struct.pack("<III", 12, PT_INIT_FAIL, 2))
                conn.close()
                return
        sess = CmdSession(cam, conn)
        cam.attach_command(sess)
        diag("ev=command_open conn=%d peer=%s guid=%s name=%r"
             % (sess.no, conn.peer, guid.hex(), name))
        cname = (cam.args.model + "\x00").encode("utf-16-le")
        body = struct.pack("<I", sess.no) + CAM_GUID + cname
        conn.sendall(struct.pack("<II", 8 + len(body), PT_INIT_ACK) + body)
        sock.settimeout(IO_TIMEOUT)
        sess.run()
    except (ConnGone, OSError, Garbage) as e:
        diag("ev=connection_dropped peer=%s %r" % (conn.peer, e))
        conn.close()
    except Exception:
        diag("ev=connection_bug %s" % traceback.format_exc())
        conn.close()


def accept_loop(cam, lsock, stop):
    while not stop.is_set():
        try:
            sock, peer = lsock.accept()
        except socket.timeout:
            continue
        except OSError as e:
            if stop.is_set():
                return
            diag("ev=accept_error %r" % e)
            time.sleep(0.05)
            continue
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        threading.Thread(target=serve_command, args=(cam, sock, peer), daemon=True).start()


def bind_three(host, port):
    """-> (sock P, sock P+1, sock P+2), all bound; P == 0: any free P, P+1, P+2."""
    if port:
        socks = []
        try:
            for i in range(3):
                socks.append(bind_socket(host, port + i))
        except OSError:
            for s in socks:
                s.close()
            raise
        return tuple(socks)
    for _ in range(200):
        s0 = bind_socket(host, 0)
        p = s0.getsockname()[1]
        if p + 2 > 65535:
            s0.close()
            continue
        try:
            s1 = bind_socket(host, p + 1)
        except OSError:
            s0.close()
            continue
        try:
            s2 = bind_socket(host, p + 2)
        except OSError:
            s0.close()
            s1.close()
            continue
        return s0, s1, s2
    raise OSError("no free port triple found")


# --------------------------------------------------------------------------

def make_images(args, tmp):
    sw, sh = args.still_w, args.still_h
    jpg = ["-pix_fmt", "yuvj420p", "-q:v", "5", "-f", "image2"]
    cmd = (["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (args.width, args.height),
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (sw, sh),
            "-map", "0:v", "-frames:v", str(args.frames)] + jpg + [os.path.join(tmp, "f%03d.jpg"),
           "-map", "1:v", "-frames:v", str(N_STILLS)] + jpg + [os.path.join(tmp, "s%03d.jpg"),
           "-map", "1:v", "-frames:v", str(N_STILLS),
           "-vf", "scale=%d:%d" % (THUMB_W, THUMB_H)] + jpg + [os.path.join(tmp, "t%03d.jpg")])
    subprocess.run(cmd, check=True)

    def load(prefix, n):
        out = []
        for i in range(1, n + 1):
            with open(os.path.join(tmp, "%s%03d.jpg" % (prefix, i)), "rb") as f:
                out.append(f.read())
        return out
    return load("f", args.frames), load("s", N_STILLS), load("t", N_STILLS)


def parse_size(ap, s, what):
    m = re.fullmatch(r"(\d+)x(\d+)", s)
    if not m:
        ap.error("%s WxH" % what)
    w, h = int(m.group(1)), int(m.group(2))
    if w < 16 or h < 16 or w > 8192 or h > 8192 or w % 2 or h % 2:
        ap.error("%s: even sizes 16..8192" % what)
    return w, h


def main():
    ap = argparse.ArgumentParser(description="Fujifilm X Wi-Fi test camera (clean-room, from ptp.md)")
    ap.add_argument("--port", type=int, help="command port P (event P+1, live view P+2); 0 = free")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="640x480", help="live-view JPEG size")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per operation request")
    ap.add_argument("--objects-log", help="JSON lines, one per object event")
    ap.add_argument("--frames-log", help="JSON lines, one per live-view frame sent")
    ap.add_argument("--card-files", type=int, default=3, help="JPEGs on the card (default 3)")
    ap.add_argument("--capture-ms", type=int, default=300)
    ap.add_argument("--model", default="X-T3")
    ap.add_argument("--device-info", choices=("full", "empty"), default="full")
    ap.add_argument("--still-size", default="1616x1080")
    ap.add_argument("--confirm-polls", type=int, default=0,
                    help="0xDF00 reads 0 for this many reads after OpenSession")
    ap.add_argument("--fail-first-init", action="store_true",
                    help="answer the first valid init with type 5 (busy)")
    ap.add_argument("--frames", type=int, default=60, help="distinct live-view JPEGs (default 60)")
    ap.add_argument("--break-transfer-once", action="store_true",
                    help="cut the first read of a shot's picture half-way and drop the connections")
    ap.add_argument("--help-choices", action="store_true", help="print the documented choices and exit")
    args = ap.parse_args()
    if args.help_choices:
        print(__doc__)
        return
    if args.port is None:
        ap.error("--port is required")
    if args.port < 0 or args.port > 65533:
        ap.error("--port 0..65533 (P+2 must be a port too)")
    args.width, args.height = parse_size(ap, args.size, "--size")
    args.still_w, args.still_h = parse_size(ap, args.still_size, "--still-size")
    if (args.fps <= 0 or args.frames < 1 or args.frames > 999 or args.card_files < 0
            or args.card_files > 9000 or args.capture_ms < 0 or args.confirm_polls < 0):
        ap.error("--fps > 0, 1 <= --frames <= 999, 0 <= --card-files <= 9000, "
                 "--capture-ms >= 0, --confirm-polls >= 0")

    stop = threading.Event()
    wake = threading.Event()
    usr1 = []
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGINT, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGUSR1, lambda *a: (usr1.append(1), wake.set()))

    tmp = tempfile.mkdtemp(prefix="fuji_cam_")
    try:
        lv_frames, stills, thumbs = make_images(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for i, f in enumerate(lv_frames):
        dims = jpeg_dims(f)
        if (dims is None or dims[:2] != (args.width, args.height) or dims[2] != 0xC0
                or f[:2] != b"\xff\xd8" or f[-2:] != b"\xff\xd9"):
            diag("ev=bad_frame index=%d dims=%s" % (i, dims))
            sys.exit(2)
    if len({sha(f) for f in lv_frames}) != len(lv_frames) or len({sha(s) for s in stills}) != len(stills):
        diag("ev=duplicate_images (ffmpeg made identical JPEGs)")
        sys.exit(2)
    if stop.is_set():
        sys.exit(0)

    logs = (JsonLog(args.log), JsonLog(args.objects_log), JsonLog(args.frames_log))
    cam = Camera(args, lv_frames, stills, thumbs, logs, stop)

    try:
        s0, s1, s2 = bind_three(args.host, args.port)
    except OSError as e:
        diag("ev=bind_failed %r" % e)
        sys.exit(1)
    port = s0.getsockname()[1]
    cam.gate_evt = PortGate("event", args.host, port + 1, s1, cam.accept_evt, stop)
    cam.gate_lv = PortGate("liveview", args.host, port + 2, s2, cam.accept_lv, stop)
    s0.listen(16)
    s0.settimeout(0.2)
    threading.Thread(target=accept_loop, args=(cam, s0, stop), daemon=True).start()
    threading.Thread(target=cam.lv_pump, daemon=True).start()
    sys.stdout.write("ready fuji=%d\n" % port)
    sys.stdout.flush()
    while not stop.is_set():
        wake.wait(0.5)
        wake.clear()
        while usr1 and not stop.is_set():
            usr1.pop()
            try:
                cam.body_shot()
            except Exception:
                diag("ev=body_shot_error %s" % traceback.format_exc())
    for s in (s0, cam.gate_evt.sock, cam.gate_lv.sock):
        try:
            if s is not None:
                s.close()
        except OSError:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
