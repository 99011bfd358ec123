#!/usr/bin/env python3
"""Independent Nikon PTP/IP test camera (live view, SDRAM capture, card files).

Clean-room: written only from ../shared/protocols/ptp.md ("the notes"), without
looking at livegate's own PTP/Nikon code.  Section numbers below (§N) refer to
that file.  Python 3.11 standard library only; `ffmpeg` is run once at start-up
to make the live-view JPEGs, the still images and their thumbnails.

    python3 Tests/Scripts/nikon_cam.py --port P [--host 127.0.0.1]
        [--size 640x424] [--fps 30] [--log REQUESTS.jsonl]
        [--objects-log OBJECTS.jsonl] [--frames-log FRAMES.jsonl]
        [--card-files N] [--break-first-transfer] [--capture-ms 300]
        [--model D750|Z6|D7000|D90|D300] [--still-size 1616x1080]
        [--events getevent|channel|both] [--lv-early busy|same]
        [--lv-start-ms 150] [--lv-drop-after N] [--chunk BYTES] [--empty-end]
        [--frames N_DISTINCT]

`--port 0` picks a free port.  Prints `ready ptpip=P` once it listens (command
and event connections both use that port, §1.1); runs until SIGTERM/SIGINT,
exits 0.  `--help-choices` prints this text.  SIGUSR1 = a shot taken on the body.

Transport (§1): a new TCP connection is classified by its first packet:
type 1 Init_Command_Request -> command connection (answered with type 2:
ConnectionNumber 1, 2, 3 ... per command connection, a fixed camera GUID, the
model name, version 0x00010000); type 3 Init_Event_Request with the current
command connection's number -> event connection (type 4), any other number ->
type 5 Init_Fail reason 1; type 13 -> type 14 (then the first packet is awaited
again); anything else (or a length < 8 / > 4 MiB) is garbage: logged, socket
closed, camera carries on.  Probe_Request (13) is answered with 14 on both
sockets at any time; Cancel (11) is logged and ignored.  Data-in phases are
Start_Data, Data packets of --chunk bytes (default 65536), the rest in End_Data
(payloads <= --chunk go entirely into End_Data); --empty-end sends every byte in
Data packets and an empty End_Data (§6 item 3).  Data-out (SetDevicePropValue,
or any request with DataPhaseInfo 2) is read completely before the response.

Operations (all advertised in DeviceInfo.OperationsSupported):
  0x1001 GetDeviceInfo (also outside a session), 0x1002 OpenSession,
  0x1003 CloseSession, 0x1004 GetStorageIDs, 0x1005 GetStorageInfo,
  0x1007 GetObjectHandles, 0x1008 GetObjectInfo, 0x1009 GetObject,
  0x100A GetThumb, 0x100B DeleteObject, 0x1014 GetDevicePropDesc,
  0x1015 GetDevicePropValue, 0x1016 SetDevicePropValue, 0x101B GetPartialObject,
  0x90C0 InitiateCaptureRecInSdram, 0x90C1 AfDrive, 0x90C2 ChangeCameraMode,
  0x90C3 DelImageSDRAM, 0x90C7 GetEvent, 0x90C8 DeviceReady,
  0x90CA GetVendorPropCodes, 0x90CB AfCaptureSDRAM, 0x9201 StartLiveView,
  0x9202 EndLiveView, 0x9203 GetLiveViewImg, 0x9204 MfDrive, 0x9205 ChangeAfArea.
  Anything else -> 0x2005 (checked first, also outside a session).  Before
  OpenSession every op but 0x1001/0x1002 -> 0x2003; OpenSession while open ->
  0x201E; OpenSession with SessionID 0 or no param -> 0x201D.  A handler bug
  answers 0x2002 and is logged.
DeviceInfo (§1.5): StandardVersion 100, VendorExtensionID 0x0000000A (Nikon),
  VendorExtensionVersion 100, VendorExtensionDesc "" (CHOICE), FunctionalMode 0,
  events 0x4002 0x4006 0x400D 0xC101 0xC102 0xC10C, the properties below,
  CaptureFormats [0x3801], ImageFormats [0x3001 0x3801 0x300D],
  Manufacturer "Nikon Corporation", Model "D750" (--model), DeviceVersion
  "V1.10", SerialNumber "3012345".
Properties (§2.1, §3; GetDevicePropDesc form = enum unless noted; GetSet 1 = rw):
  0xD1A2 LiveViewStatus u8 ro (0/1, follows 0x9201/0x9202), 0xD1A4
  LiveViewProhibitCondition u32 ro, always 0 (form none), 0xD10B RecordingMedia
  u8 rw {0 card, 1 SDRAM} default 0, 0xD1A3 LiveViewImageZoomRatio u8 rw 0..5,
  0xD1A6 LiveViewSelector u8 rw {0,1}, 0xD05D LiveViewAFArea u8 rw 0..3,
  0xD061 LiveViewAFFocus u8 rw 0..4, 0x5005 WhiteBalance u16, 0x5007 FNumber u16,
  0x500E ExposureProgramMode u16, 0x500F ExposureIndex u16, 0x5010
  ExposureBiasCompensation i16 (thirds, EV x 1000), 0x5013 StillCaptureMode u16,
  0xD100 ExposureTime u32 (n<<16|d).  Unknown prop -> 0x200A; setting a ro prop
  -> 0x200F; value of wrong size or not in the enum -> 0x201C.  The zoom/AF
  types and enums are CHOICES (the notes name the codes only).  Setting values
  changes nothing else (live-view JPEGs keep --size).

Live view (§2.1):
  * 0x9201 -> OK (0x2019 while a capture runs); then 0x90C8 DeviceReady and
    0x9203 answer 0x2019 for --lv-start-ms (150 ms) - the "activation"
    behaviour of §6 item 5.  0x9201 while running -> OK, nothing restarts.
    0x9202 -> OK (also when not running).  0x9203 while LV is off -> 0xA00B.
  * --lv-drop-after N (default 0 = never): after N new frames in one LV run the
    camera drops LV itself: 0x9203 -> 0xA00B, 0xD1A2 = 0, events 0xC10C and
    0x4006(0xD1A2) queued.
  * LV stops at CloseSession and when the command connection goes away.
  * Header in front of the JPEG per --model (all BIG-endian):
      D750 (default), Z6: 384 bytes, "D600 family" layout: JPEG W,H @8,10;
        whole W,H @12,14; AF w,h @24,26; AF centre x,y @28,30; rotation @37 = 0;
        focus-driving @48 = 0; level roll/pitch/yaw @52/56/60 = 0;
        movie time remaining @64 = u16 1799 + u16 0; recording @68 = 0;
        sound @352..355 = 0.
      D7000 (384), D90 (128), D300 (64): "v1" layout: JPEG W,H @0,2; whole @4,6;
        AF w,h @16,18; AF centre @20,22; rotation @29; focus @40; movie time
        @56; recording @60.
      Every other header byte is 0 (CHOICE).  No 0x9428 (not advertised).
  * Whole (AF coordinate) space = JPEG size x S, S = 9 (clamped so it fits
    u16; 640x424 -> 5760x3816).  AF box of frame n, in JPEG pixels (CHOICE):
      bw = bh = max(8, even(W*12//100)), capped to an even number <= H//2
      a = 2*pi*(n mod 120)/120
      cx = W//2 + round(0.35*(W-bw)*cos a), cy = H//2 + round(0.35*(H-bh)*sin 2a)
    The header carries S*bw, S*bh, S*cx, S*cy; --frames-log "af" =
    [cx - bw//2, cy - bh//2, bw, bh] (exact, as whole = S x JPEG).
  * Pacing (CHOICE): a new frame is due every 1/--fps s (re-based, no burst,
    when the client falls behind by > 2 periods).  A 0x9203 before the next is
    due answers 0x2019 DeviceBusy with no data (--lv-early busy, default) or
    repeats the last frame (--lv-early same; logged again with "repeat": true).
  * Frame numbers n are per camera process (not reset by a new LV run or a new
    client); frame n carries JPEG n mod --frames (60 distinct testsrc2 JPEGs,
    baseline yuvj420p, -q:v 5, standard Huffman tables).  LV keeps running
    during a capture (§8.2 UNCONFIRMED; CHOICE).
  * --frames-log: one line per 0x9203 data phase fully written:
    {"n", "sha256" (JPEG only), "af", "repeat", "t"}.

Card (§8.1):
  * One storage 0x00010001: removable RAM (4), hierarchical (2), R/W (0),
    MaxCapacity 64 GiB, free = capacity - bytes on card, FreeSpaceInImages =
    free // 12 MB, description "SD card slot 1", label "NIKON D750" (model).
  * Handles: 0x10000001 DCIM (parent 0), 0x10000002 100NIKON (parent DCIM),
    files from 0x10000003: DSC_0001.JPG .. DSC_000N.JPG (--card-files, default 3)
    then DSC_000(N+1).MOV (0x300D QuickTime, 256 KiB: an 'ftyp qt' atom and an
    mdat of sha256-chained bytes - not a playable movie, CHOICE).  Folders:
    format 0x3001, AssociationType 1.  Stills: format 0x3801, --still-size
    (1616x1080), bit depth 24, 160x120 JPEG thumbnail (0x3801); each JPEG is a
    testsrc2 still with a COM segment naming it, so all bytes are distinct and
    identical across runs.  The movie and folders have no thumbnail (GetThumb ->
    0x2010).  Card dates 20240501T100000 + 61 s per file; new objects use the
    local time of their creation.  ProtectionStatus 0, SequenceNumber 0,
    Keywords "".
  * GetObjectHandles(storage, format, parent): storage 0xFFFFFFFF or
    0x00010001 (else 0x2008), format 0 / 0xFFFFFFFF = any, parent 0 = all
    levels, 0xFFFFFFFF = root only, a folder = its children, a file = none,
    unknown -> 0x2009.  Missing params mean (all, any, all levels).  The SDRAM
    image is never listed.
  * GetObject on a folder sends 0 bytes.  GetPartialObject(handle, offset, max):
    offset > size -> 0x201D, else min(max, size-offset) bytes, response param 1
    = bytes sent.  Unknown handle -> 0x2009, bad storage -> 0x2008.
  * DeleteObject on a file removes it; on a folder or 0xFFFFFFFF -> 0x200F.

Capture into SDRAM (§8.2):
  * 0x90C0 (any param; libgphoto2 sends 0xFFFFFFFF) and 0x90CB -> OK at once;
    a capture then runs for --capture-ms (300): 0x90C0/0x90CB/0x9201 -> 0x2019
    and 0x90C8 -> 0x2019 meanwhile.  At the end the image (--still-size, a new
    distinct JPEG each time, named DSC_NNNN.JPG from the card's file counter)
    enters SDRAM and 0xC101 ObjectAddedInSDRAM (param 0xFFFF0001) then 0xC102
    CaptureCompleteRecInSdram are queued together.
  * SDRAM is a FIFO (CHOICE; the notes: bursts arrive one after another under
    the same handle): 0xFFFF0001 is always its oldest image; DeleteObject
    (0xFFFF0001) or 0x90C3 DelImageSDRAM (0xFFFF0001 / 0 = all) frees it;
    with 16 images waiting 0x90C0 -> 0x2019.  Empty SDRAM -> 0x2009.
    ObjectInfo: StorageID 0, ParentObject 0 (§8.2).  SDRAM images survive
    CloseSession, disconnects and new clients; only deletion frees them.
  * RecordingMedia (0xD10B) is recorded but does not change 0x90C0.

Shot on the body (SIGUSR1): a new still is written to 100NIKON under the next
handle and name, logged as "body_shot", and 0x4002 ObjectAdded(handle) is
queued (no 0x400D; CHOICE).

Events (CHOICE, --events): default `getevent` = delivered only through 0x90C7
GetEvent (u16 count + count x {u16 code, u32 param}; param 0 for events without
one), as the notes say Nikon bodies report (§2.1, §8.2); nothing is pushed on
the event connection.  `channel` = pushed only as PTP/IP type-8 packets on the
event connection (0x90C7 then always returns 0 events); `both` = both ways.
Event packets carry the TransactionID of the 0x90C0/0x90CB that caused them,
else 0xFFFFFFFF.  The GetEvent queue belongs to the camera: it survives
disconnects/new sessions, holds at most 1000 events (oldest dropped), and is
emptied by each 0x90C7.  Events pushed while no event connection exists are lost.

Connections (CHOICE): one client at a time, latest wins: a new valid
Init_Command_Request closes the previous command and event connections (a
client whose Wi-Fi died can always come back).  Ops are accepted without an
event connection.  TransactionIDs are logged, not checked.

--break-first-transfer: the first GetObject/GetPartialObject of a captured
(SDRAM) or body-shot image sends Start_Data and half of its bytes in Data
packets, then closes both connections (logged as "broken"); later transfers
work and the object stays where it was (SDRAM objects are not freed).

Logs (JSON lines): --log: one per operation request {"t", "op" ("0x90C0"),
"params", "tid", "session" (open SessionID or 0), "conn"}.  --objects-log:
{"ev": "card"|"captured"|"body_shot"|"served"|"deleted"|"broken", "handle"
(integer), "name", "size", "sha256", "t"}; "served"/"broken" add "op",
"offset", "length", "served_sha256" ("broken": of the bytes that were sent, plus
"sent").  "card" lines (files only) are written at start-up.
"""

import argparse
import collections
import datetime
import hashlib
import json
import math
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
import traceback

# --------------------------------------------------------------------------
# Codes (§1, §2.1, §8)

PT_INIT_CMD_REQ, PT_INIT_CMD_ACK, PT_INIT_EVT_REQ, PT_INIT_EVT_ACK, PT_INIT_FAIL = 1, 2, 3, 4, 5
PT_OP_REQ, PT_OP_RESP, PT_EVENT, PT_START_DATA, PT_DATA, PT_CANCEL, PT_END_DATA = 6, 7, 8, 9, 10, 11, 12
PT_PROBE_REQ, PT_PROBE_RESP = 13, 14

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
RC_NOT_LIVE_VIEW = 0xA00B

EV_OBJECT_ADDED = 0x4002
EV_PROP_CHANGED = 0x4006
EV_CAPTURE_COMPLETE = 0x400D
EV_OBJECT_ADDED_SDRAM = 0xC101
EV_CAPTURE_COMPLETE_SDRAM = 0xC102
EV_LV_STATE_CHANGED = 0xC10C

OFC_ASSOCIATION = 0x3001
OFC_QUICKTIME = 0x300D
OFC_EXIF_JPEG = 0x3801

STORAGE_ID = 0x00010001
SDRAM_HANDLE = 0xFFFF0001
H_DCIM, H_FOLDER, H_FIRST_FILE = 0x10000001, 0x10000002, 0x10000003
MAX_CAPACITY = 64 << 30
SDRAM_MAX = 16
EVENT_QUEUE_MAX = 1000
MAX_PACKET = 4 << 20
MAX_DATA_OUT = 16 << 20
IO_TIMEOUT = 30.0
FIRST_PACKET_TIMEOUT = 10.0
WHOLE_SCALE = 9
AF_PERIOD = 120
THUMB_W, THUMB_H = 160, 120
MOVIE_BYTES = 256 * 1024
CAM_GUID = bytes.fromhex("4e494b4f4e2d54455354434d00000750")   # "NIKON-TESTCM" + 00 00 07 50
CARD_DATE0 = (2024, 5, 1, 10, 0, 0)

# name -> (header length, layout)
MODELS = {
    "D750": (384, "d600"),
    "Z6": (384, "d600"),
    "D7000": (384, "v1"),
    "D90": (128, "v1"),
    "D300": (64, "v1"),
}

OPS = {
    0x1001: "GetDeviceInfo", 0x1002: "OpenSession", 0x1003: "CloseSession",
    0x1004: "GetStorageIDs", 0x1005: "GetStorageInfo", 0x1007: "GetObjectHandles",
    0x1008: "GetObjectInfo", 0x1009: "GetObject", 0x100A: "GetThumb", 0x100B: "DeleteObject",
    0x1014: "GetDevicePropDesc", 0x1015: "GetDevicePropValue", 0x1016: "SetDevicePropValue",
    0x101B: "GetPartialObject",
    0x90C0: "InitiateCaptureRecInSdram", 0x90C1: "AfDrive", 0x90C2: "ChangeCameraMode",
    0x90C3: "DelImageSDRAM", 0x90C7: "GetEvent", 0x90C8: "DeviceReady",
    0x90CA: "GetVendorPropCodes", 0x90CB: "AfCaptureSDRAM",
    0x9201: "StartLiveView", 0x9202: "EndLiveView", 0x9203: "GetLiveViewImg",
    0x9204: "MfDrive", 0x9205: "ChangeAfArea",
}
EVENTS_SUPPORTED = [EV_OBJECT_ADDED, EV_PROP_CHANGED, EV_CAPTURE_COMPLETE,
                    EV_OBJECT_ADDED_SDRAM, EV_CAPTURE_COMPLETE_SDRAM, EV_LV_STATE_CHANGED]

DT_FMT = {0x0001: "b", 0x0002: "B", 0x0003: "h", 0x0004: "H", 0x0005: "i", 0x0006: "I",
          0x0007: "q", 0x0008: "Q"}
DT_U8, DT_I16, DT_U16, DT_U32 = 0x0002, 0x0003, 0x0004, 0x0006


def _shutter_values():
    out = [(30 << 16) | 1, (15 << 16) | 1, (4 << 16) | 1, (1 << 16) | 1]
    for d in (2, 4, 8, 15, 30, 60, 125, 250, 500, 1000, 2000, 4000):
        out.append((1 << 16) | d)
    return out


# code -> (datatype, writable, default, enum values or None)
PROPS = {
    0xD1A2: (DT_U8, False, 0, [0, 1]),
    0xD1A4: (DT_U32, False, 0, None),
    0xD10B: (DT_U8, True, 0, [0, 1]),
    0xD1A3: (DT_U8, True, 0, [0, 1, 2, 3, 4, 5]),
    0xD1A6: (DT_U8, True, 0, [0, 1]),
    0xD05D: (DT_U8, True, 0, [0, 1, 2, 3]),
    0xD061: (DT_U8, True, 0, [0, 1, 2, 3, 4]),
    0x5005: (DT_U16, True, 2, [2, 4, 5, 6, 7, 0x8010, 0x8011, 0x8012, 0x8013]),
    0x5007: (DT_U16, True, 400, [180, 200, 220, 250, 280, 320, 350, 400, 450, 500, 560, 630,
                                 710, 800, 900, 1000, 1100, 1300, 1400, 1600, 1800, 2000, 2200]),
    0x500E: (DT_U16, True, 2, [1, 2, 3, 4]),
    0x500F: (DT_U16, True, 400, [100, 125, 160, 200, 250, 320, 400, 500, 640, 800, 1000, 1250,
                                 1600, 2000, 2500, 3200, 4000, 5000, 6400, 8000, 10000, 12800]),
    0x5010: (DT_I16, True, 0, [int(round(i * 1000 / 3.0)) for i in range(-15, 16)]),
    0x5013: (DT_U16, True, 1, [1, 2]),
    0xD100: (DT_U32, True, (1 << 16) | 125, _shutter_values()),
}


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
        sys.stderr.write("nikon_cam: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def sha(b):
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------
# Dataset packing (§1.5, §8.1)

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


def now_date():
    return ptp_date(datetime.datetime.now())


def insert_com(jpeg, text):
    """Insert a COM segment after SOI (and after APP0 if it comes first)."""
    pos = 2
    if jpeg[2:4] == b"\xff\xe0":
        pos = 4 + struct.unpack(">H", jpeg[4:6])[0]
    t = text.encode("ascii")
    return jpeg[:pos] + b"\xff\xfe" + struct.pack(">H", len(t) + 2) + t + jpeg[pos:]


def jpeg_size(data):
    """(width, height) from the first SOF0..2 marker."""
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
        if m in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        i += 2 + seg
    return None


def fake_movie():
    ftyp = struct.pack(">I", 20) + b"ftypqt  " + struct.pack(">I", 0x200) + b"qt  "
    wide = struct.pack(">I", 8) + b"wide"
    body = bytearray()
    h = b"nikon_cam movie"
    while len(body) < MOVIE_BYTES - 36:
        h = hashlib.sha256(h).digest()
        body += h
    body = bytes(body[:MOVIE_BYTES - 36])
    mdat = struct.pack(">I", 8 + len(body)) + b"mdat" + body
    return ftyp + wide + mdat


class Obj:
    def __init__(self, handle, storage, fmt, parent, name, data, thumb, w, h, date, origin):
        self.handle = handle
        self.storage = storage
        self.fmt = fmt
        self.parent = parent
        self.name = name
        self.data = data
        self.thumb = thumb
        self.w, self.h = w, h
        self.date = date                # "YYYYMMDDThhmmss"
        self.origin = origin            # "folder" | "card" | "captured" | "body_shot"
        self.sha = sha(data)

    def info(self):
        folder = self.fmt == OFC_ASSOCIATION
        thumb = self.thumb
        tfmt = OFC_EXIF_JPEG if thumb else 0
        tw, th = (THUMB_W, THUMB_H) if thumb else (0, 0)
        depth = 24 if self.fmt == OFC_EXIF_JPEG else 0
        head = struct.pack("<IHHIHIIIIIIIHII", self.storage, self.fmt, 0, len(self.data),
                           tfmt, len(thumb or b""), tw, th, self.w, self.h, depth,
                           self.parent, 1 if folder else 0, 0, 0)
        assert len(head) == 52
        return head + pstr(self.name) + pstr(self.date) + pstr(self.date) + pstr("")


# --------------------------------------------------------------------------
# PTP/IP connection (§1.1)

class Conn:
    def __init__(self, sock, peer):
        self.sock = sock
        self.peer = peer
        self.wlock = threading.Lock()
        self.closed = False
        self.no = 0
        sock.settimeout(IO_TIMEOUT)

    def recv_exact(self, n, idle_ok=False):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            except socket.timeout:
                if idle_ok and not buf and not self.closed:
                    continue
                raise
            if not chunk:
                raise ConnGone("eof")
            buf += chunk
        return bytes(buf)

    def read_packet(self, idle_ok=False, maxlen=MAX_PACKET):
        hdr = self.recv_exact(8, idle_ok)
        length, ptype = struct.unpack("<II", hdr)
        if length < 8 or length > maxlen:
            raise Garbage("bad packet length %d (type %d, bytes %s)" % (length, ptype, hdr.hex()))
        return ptype, self.recv_exact(length - 8)

    def send(self, ptype, payload=b""):
        with self.wlock:
            self.sock.sendall(struct.pack("<II", 8 + len(payload), ptype) + payload)

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# Camera state

class Camera:
    def __init__(self, args, lv_frames, stills, thumbs, logs):
        self.args = args
        self.lock = threading.RLock()
        self.req_log, self.obj_log, self.frames_log = logs
        self.hlen, self.layout = MODELS[args.model]
        self.lv_frames = lv_frames
        self.lv_shas = [sha(f) for f in lv_frames]
        self.W, self.H = args.width, args.height
        self.scale = max(1, min(WHOLE_SCALE, 65535 // self.W, 65535 // self.H))
        self.stills = stills
        self.thumbs = thumbs
        self.props = {c: v[2] for c, v in PROPS.items()}
        self.events = collections.deque(maxlen=EVENT_QUEUE_MAX)
        self.cmd = None
        self.evt = None
        self.conn_no = 0
        self.broken_done = False
        # live view
        self.lv_on = False
        self.lv_ready_at = 0.0
        self.lv_next_due = None
        self.lv_last = None
        self.lv_n = 0
        self.lv_run_frames = 0
        # capture
        self.capture_end = None
        self.capture_tid = 0xFFFFFFFF
        self.sdram = []
        self.still_no = 0
        # card
        self.objects = collections.OrderedDict()
        t0 = datetime.datetime(*CARD_DATE0)

        def card_date(i):
            return ptp_date(t0 + datetime.timedelta(seconds=61 * i))
        self.objects[H_DCIM] = Obj(H_DCIM, STORAGE_ID, OFC_ASSOCIATION, 0, "DCIM", b"", None,
                                   0, 0, card_date(0), "folder")
        self.objects[H_FOLDER] = Obj(H_FOLDER, STORAGE_ID, OFC_ASSOCIATION, H_DCIM, "100NIKON", b"",
                                     None, 0, 0, card_date(0), "folder")
        self.next_handle = H_FIRST_FILE
        self.file_no = 1
        sw, shh = args.still_w, args.still_h
        for i in range(args.card_files):
            k = i % len(stills)
            name = "DSC_%04d.JPG" % self.file_no
            data = insert_com(stills[k], "nikon_cam card %s" % name)
            self._add_card(name, OFC_EXIF_JPEG, data, thumbs[k], sw, shh,
                           card_date(i + 1), "card")
        name = "DSC_%04d.MOV" % self.file_no
        self._add_card(name, OFC_QUICKTIME, fake_movie(), None, 1920, 1080,
                       card_date(args.card_files + 1), "card")

    # ---- helpers
    def olog(self, ev, obj, **extra):
        d = {"ev": ev, "handle": obj.handle, "name": obj.name, "size": len(obj.data),
             "sha256": obj.sha, "t": time.time()}
        d.update(extra)
        self.obj_log.write(d)

    def _add_card(self, name, fmt, data, thumb, w, h, date, origin):
        with self.lock:
            obj = Obj(self.next_handle, STORAGE_ID, fmt, H_FOLDER, name, data, thumb, w, h, date, origin)
            self.next_handle += 1
            self.file_no += 1
            self.objects[obj.handle] = obj
        self.olog(origin, obj)
        return obj

    def _new_still(self, label):
        with self.lock:
            k = self.still_no
            self.still_no += 1
            idx = (self.args.card_files + k) % len(self.stills)
            data = insert_com(self.stills[idx], "nikon_cam %s %d" % (label, k))
            return data, self.thumbs[idx]

    def card_bytes(self):
        return sum(len(o.data) for o in self.objects.values())

    def lookup(self, handle):
        with self.lock:
            if handle == SDRAM_HANDLE:
                if not self.sdram:
                    raise PtpError(RC_INVALID_HANDLE, "SDRAM empty")
                return self.sdram[0]
            obj = self.objects.get(handle)
            if obj is None:
                raise PtpError(RC_INVALID_HANDLE, "no object 0x%08X" % handle)
            return obj

    # ---- events
    def post_events(self, evs, tid=0xFFFFFFFF):
        """evs: list of (code, param or None)."""
        mode = self.args.events
        with self.lock:
            if mode in ("getevent", "both"):
                for code, p in evs:
                    self.events.append((code, 0 if p is None else p))
            conn = self.evt
        for code, p in evs:
            diag("ev=event code=0x%04X param=%s" % (code, "-" if p is None else "0x%08X" % p))
        if mode in ("channel", "both") and conn is not None:
            for code, p in evs:
                payload = struct.pack("<HI", code, tid) + (struct.pack("<I", p) if p is not None else b"")
                try:
                    conn.send(PT_EVENT, payload)
                except OSError as e:
                    diag("ev=event_send_failed %r" % e)
                    break

    def take_events(self):
        with self.lock:
            evs = list(self.events)
            self.events.clear()
        return evs

    # ---- capture (§8.2)
    def tick(self):
        with self.lock:
            gen = self.capture_end
            due = gen is not None and time.monotonic() >= gen
        if due:
            self.finish_capture(gen)

    def start_capture(self, tid):
        self.tick()
        with self.lock:
            if self.capture_end is not None or len(self.sdram) >= SDRAM_MAX:
                raise PtpError(RC_DEVICE_BUSY, "capture running or SDRAM full")
            self.capture_end = time.monotonic() + self.args.capture_ms / 1000.0
            self.capture_tid = tid
            gen = self.capture_end
        t = threading.Timer(self.args.capture_ms / 1000.0, self._timer_done, args=(gen,))
        t.daemon = True
        t.start()

    def _timer_done(self, gen):
        try:
            self.finish_capture(gen)
        except Exception:
            diag("ev=capture_timer_error %s" % traceback.format_exc())

    def finish_capture(self, gen):
        with self.lock:
            if self.capture_end is None or self.capture_end != gen:
                return
            self.capture_end = None
            tid = self.capture_tid
            data, thumb = self._new_still("capture")
            name = "DSC_%04d.JPG" % self.file_no
            self.file_no += 1
            obj = Obj(SDRAM_HANDLE, 0, OFC_EXIF_JPEG, 0, name, data, thumb,
                      self.args.still_w, self.args.still_h, now_date(), "captured")
            self.sdram.append(obj)
            depth = len(self.sdram)
        self.olog("captured", obj, sdram_position=depth)
        self.post_events([(EV_OBJECT_ADDED_SDRAM, SDRAM_HANDLE), (EV_CAPTURE_COMPLETE_SDRAM, None)], tid)

    def busy(self):
        self.tick()
        with self.lock:
            return self.capture_end is not None

    def body_shot(self):
        data, thumb = self._new_still("body_shot")
        with self.lock:
            name = "DSC_%04d.JPG" % self.file_no
            obj = self._add_card(name, OFC_EXIF_JPEG, data, thumb, self.args.still_w,
                                 self.args.still_h, now_date(), "body_shot")
        diag("ev=body_shot handle=0x%08X name=%s" % (obj.handle, name))
        self.post_events([(EV_OBJECT_ADDED, obj.handle)])

    def delete(self, handle):
        with self.lock:
            if handle == SDRAM_HANDLE:
                if not self.sdram:
                    raise PtpError(RC_INVALID_HANDLE, "SDRAM empty")
                obj = self.sdram.pop(0)
            else:
                obj = self.objects.get(handle)
                if obj is None:
                    raise PtpError(RC_INVALID_HANDLE)
                if obj.origin == "folder":
                    raise PtpError(RC_ACCESS_DENIED, "folder")
                del self.objects[handle]
        self.olog("deleted", obj)

    # ---- live view (§2.1)
    def lv_start(self):
        if self.busy():
            raise PtpError(RC_DEVICE_BUSY, "capture running")
        with self.lock:
            if self.lv_on:
                return
            self.lv_on = True
            self.lv_ready_at = time.monotonic() + self.args.lv_start_ms / 1000.0
            self.lv_next_due = None
            self.lv_last = None
            self.lv_run_frames = 0
        diag("ev=liveview_start")

    def lv_stop(self, why="stop"):
        with self.lock:
            was = self.lv_on
            self.lv_on = False
            self.lv_last = None
        if was:
            diag("ev=liveview_stop why=%s" % why)

    def af_box(self, n):
        W, H = self.W, self.H
        bw = max(8, (W * 12 // 100) // 2 * 2)
        bw = min(bw, (H // 2) // 2 * 2)
        bh = bw
        a = 2 * math.pi * (n % AF_PERIOD) / AF_PERIOD
        cx = W // 2 + int(round(0.35 * (W - bw) * math.cos(a)))
        cy = H // 2 + int(round(0.35 * (H - bh) * math.sin(2 * a)))
        return cx, cy, bw, bh

    def lv_header(self, n):
        W, H, s = self.W, self.H, self.scale
        cx, cy, bw, bh = self.af_box(n)
        hdr = bytearray(self.hlen)
        if self.layout == "v1":
            struct.pack_into(">HHHH", hdr, 0, W, H, W * s, H * s)
            struct.pack_into(">HHHH", hdr, 16, bw * s, bh * s, cx * s, cy * s)
            struct.pack_into(">HH", hdr, 56, 1799, 0)
        else:
            struct.pack_into(">HHHH", hdr, 8, W, H, W * s, H * s)
            struct.pack_into(">HHHH", hdr, 24, bw * s, bh * s, cx * s, cy * s)
            struct.pack_into(">HH", hdr, 64, 1799, 0)
        return bytes(hdr), [cx - bw // 2, cy - bh // 2, bw, bh]

    def lv_image(self):
        """-> (payload, n, sha256, af, repeat) or PtpError."""
        args = self.args
        drop = False
        with self.lock:
            now = time.monotonic()
            if not self.lv_on:
                raise PtpError(RC_NOT_LIVE_VIEW)
            if now < self.lv_ready_at:
                raise PtpError(RC_DEVICE_BUSY, "live view starting")
            if args.lv_drop_after and self.lv_run_frames >= args.lv_drop_after:
                self.lv_on = False
                self.lv_last = None
                drop = True
            elif self.lv_last is not None and now < self.lv_next_due:
                if args.lv_early == "busy":
                    raise PtpError(RC_DEVICE_BUSY, "next frame not due")
                payload, n, fsha, af = self.lv_last
                return payload, n, fsha, af, True
            else:
                period = 1.0 / args.fps
                if self.lv_next_due is None or now - self.lv_next_due > 2 * period:
                    self.lv_next_due = now + period
                else:
                    self.lv_next_due += period
                n = self.lv_n
                self.lv_n += 1
                self.lv_run_frames += 1
                k = n % len(self.lv_frames)
                hdr, af = self.lv_header(n)
                payload = hdr + self.lv_frames[k]
                self.lv_last = (payload, n, self.lv_shas[k], af)
                return payload, n, self.lv_shas[k], af, False
        if drop:
            diag("ev=liveview_dropped after=%d" % args.lv_drop_after)
            self.post_events([(EV_LV_STATE_CHANGED, None), (EV_PROP_CHANGED, 0xD1A2)])
            raise PtpError(RC_NOT_LIVE_VIEW, "dropped")

    def prop_value(self, code):
        if code == 0xD1A2:
            return 1 if self.lv_on else 0
        return self.props[code]

    # ---- connections
    def attach_command(self, sess):
        with self.lock:
            self.conn_no += 1
            sess.conn.no = self.conn_no
            old, old_evt = self.cmd, self.evt
            self.cmd, self.evt = sess, None
        if old is not None:
            diag("ev=takeover old_conn=%d new_conn=%d" % (old.conn.no, sess.conn.no))
            old.conn.close()
        if old_evt is not None:
            old_evt.close()
        self.lv_stop("new client")

    def detach_command(self, sess):
        with self.lock:
            if self.cmd is not sess:
                return
            self.cmd = None
            evt, self.evt = self.evt, None
        if evt is not None:
            evt.close()
        self.lv_stop("client gone")

    def attach_event(self, conn, conn_no):
        with self.lock:
            ok = self.cmd is not None and self.cmd.conn.no == conn_no and not self.cmd.conn.closed
            old = None
            if ok:
                old, self.evt = self.evt, conn
                conn.no = conn_no
        if old is not None:
            old.close()
        return ok

    def break_connections(self, sess):
        with self.lock:
            evt = self.evt if self.cmd is sess else None
        sess.conn.close()
        if evt is not None:
            evt.close()


# --------------------------------------------------------------------------
# Command connection (§1.3)

class CmdSession:
    def __init__(self, cam, conn):
        self.cam = cam
        self.args = cam.args
        self.conn = conn
        self.session = 0
        self.pending = None

    # ---- framing
    def send_response(self, code, tid, params=()):
        self.conn.send(PT_OP_RESP, struct.pack("<HI", code, tid) +
                       b"".join(struct.pack("<I", p & 0xFFFFFFFF) for p in params))

    def send_data(self, tid, data):
        c = self.conn
        c.send(PT_START_DATA, struct.pack("<IQ", tid, len(data)))
        chunk = self.args.chunk
        mv = memoryview(data)
        pos = 0
        if self.args.empty_end:
            while pos < len(data):
                c.send(PT_DATA, struct.pack("<I", tid) + mv[pos:pos + chunk])
                pos += chunk
            c.send(PT_END_DATA, struct.pack("<I", tid))
            return
        while len(data) - pos > chunk:
            c.send(PT_DATA, struct.pack("<I", tid) + mv[pos:pos + chunk])
            pos += chunk
        c.send(PT_END_DATA, struct.pack("<I", tid) + mv[pos:])

    def read_data_out(self, tid):
        buf = bytearray()
        while True:
            ptype, pl = self.conn.read_packet()
            if ptype == PT_PROBE_REQ:
                self.conn.send(PT_PROBE_RESP)
            elif ptype == PT_START_DATA:
                continue
            elif ptype in (PT_DATA, PT_END_DATA):
                buf += pl[4:]
                if len(buf) > MAX_DATA_OUT:
                    raise Garbage("data-out too long")
                if ptype == PT_END_DATA:
                    return bytes(buf)
            elif ptype == PT_CANCEL:
                diag("ev=cancel during data-out tid=%d" % tid)
                return None
            elif ptype == PT_OP_REQ:
                diag("ev=protocol_error new request while expecting data-out (tid %d)" % tid)
                self.pending = (ptype, pl)
                return None
            else:
                diag("ev=unexpected_packet type=%d during data-out" % ptype)

    # ---- main loop
    def run(self, init_payload):
        pl = init_payload
        if len(pl) < 16 + 2 + 4:
            raise Garbage("short Init_Command_Request")
        name_raw = pl[16:-4]
        name = ""
        for i in range(0, len(name_raw) - 1, 2):
            cu = name_raw[i:i + 2]
            if cu == b"\x00\x00":
                break
            name += cu.decode("utf-16-le", "replace")
        version = struct.unpack("<I", pl[-4:])[0]
        self.cam.attach_command(self)
        diag("ev=command_open conn=%d peer=%s guid=%s name=%r version=0x%08X"
             % (self.conn.no, self.conn.peer, pl[:16].hex(), name, version))
        try:
            self.conn.send(PT_INIT_CMD_ACK, struct.pack("<I", self.conn.no) + CAM_GUID +
                           (self.args.model + "\x00").encode("utf-16-le") + struct.pack("<I", 0x00010000))
            while True:
                if self.pending is not None:
                    ptype, pl = self.pending
                    self.pending = None
                else:
                    ptype, pl = self.conn.read_packet(idle_ok=True)
                if ptype == PT_OP_REQ:
                    self.operation(pl)
                elif ptype == PT_PROBE_REQ:
                    self.conn.send(PT_PROBE_RESP)
                elif ptype == PT_CANCEL:
                    diag("ev=cancel conn=%d payload=%s" % (self.conn.no, pl.hex()))
                else:
                    diag("ev=unexpected_packet conn=%d type=%d len=%d" % (self.conn.no, ptype, len(pl)))
        except (ConnGone, OSError) as e:
            diag("ev=command_closed conn=%d %r" % (self.conn.no, e))
        except Garbage as e:
            diag("ev=garbage conn=%d %s" % (self.conn.no, e))
        finally:
            self.conn.close()
            self.cam.detach_command(self)

    def operation(self, pl):
        if len(pl) < 10:
            diag("ev=short_request len=%d" % len(pl))
            return
        phase, op, tid = struct.unpack("<IHI", pl[:10])
        nparams = min(5, (len(pl) - 10) // 4)
        params = list(struct.unpack("<%dI" % nparams, pl[10:10 + 4 * nparams]))
        self.cam.req_log.write({"t": time.time(), "op": "0x%04X" % op, "params": params,
                                "tid": tid, "session": self.session, "conn": self.conn.no})
        data_out = None
        if phase == 2 or op == 0x1016:
            data_out = self.read_data_out(tid)
            if data_out is None and self.pending is not None:
                self.send_response(RC_GENERAL_ERROR, tid)
                return
        try:
            if op not in OPS:
                raise PtpError(RC_OP_NOT_SUPPORTED)
            if self.session == 0 and op not in (0x1001, 0x1002):
                raise PtpError(RC_SESSION_NOT_OPEN)
            handler = getattr(self, "op_%04X" % op)
            res = handler(tid, params, data_out)
        except PtpError as e:
            if e.code not in (RC_DEVICE_BUSY,):
                diag("ev=op_error op=0x%04X tid=%d code=0x%04X %s" % (op, tid, e.code, e))
            self.send_response(e.code, tid)
            return
        except (ConnGone, OSError, Garbage):
            raise
        except Exception:
            diag("ev=handler_bug op=0x%04X %s" % (op, traceback.format_exc()))
            self.send_response(RC_GENERAL_ERROR, tid)
            return
        if res is None:
            res = (None, ())
        data, rparams = res[0], res[1]
        after = res[2] if len(res) > 2 else None
        if data is not None:
            self.send_data(tid, data)
        self.send_response(RC_OK, tid, rparams)
        if after:
            after()

    # ---- session / info
    def op_1001(self, tid, p, d):
        a = self.args
        ops = sorted(OPS)
        body = (struct.pack("<HIH", 100, 0x0000000A, 100) + pstr("") + struct.pack("<H", 0) +
                au16(ops) + au16(EVENTS_SUPPORTED) + au16(sorted(PROPS)) + au16([OFC_EXIF_JPEG]) +
                au16([OFC_ASSOCIATION, OFC_EXIF_JPEG, OFC_QUICKTIME]) +
                pstr("Nikon Corporation") + pstr(a.model) + pstr("V1.10") + pstr("3012345"))
        return body, ()

    def op_1002(self, tid, p, d):
        if not p or p[0] == 0:
            raise PtpError(RC_INVALID_PARAMETER, "SessionID")
        if self.session:
            raise PtpError(RC_SESSION_ALREADY_OPEN)
        self.session = p[0]
        diag("ev=session_open conn=%d session=%d" % (self.conn.no, self.session))
        return None

    def op_1003(self, tid, p, d):
        self.session = 0
        self.cam.lv_stop("CloseSession")
        return None

    # ---- storage / objects (§8.1)
    def op_1004(self, tid, p, d):
        return au32([STORAGE_ID]), ()

    def op_1005(self, tid, p, d):
        if not p or p[0] != STORAGE_ID:
            raise PtpError(RC_INVALID_STORAGE)
        with self.cam.lock:
            free = MAX_CAPACITY - self.cam.card_bytes()
        body = (struct.pack("<HHHQQI", 4, 2, 0, MAX_CAPACITY, free, free // (12 * 1000 * 1000)) +
                pstr("SD card slot 1") + pstr("NIKON " + self.args.model))
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
        return self.transfer(0x1009, tid, obj, 0, len(obj.data)), ()

    def op_101B(self, tid, p, d):
        obj = self.cam.lookup(p[0] if p else 0)
        off = p[1] if len(p) > 1 else 0
        mx = p[2] if len(p) > 2 else 0xFFFFFFFF
        size = len(obj.data)
        if off > size:
            raise PtpError(RC_INVALID_PARAMETER, "offset %d > size %d" % (off, size))
        length = min(mx, size - off)
        return self.transfer(0x101B, tid, obj, off, length), (length,)

    def transfer(self, op, tid, obj, off, length):
        cam = self.cam
        chunk = obj.data[off:off + length]
        do_break = False
        if self.args.break_first_transfer and obj.origin in ("captured", "body_shot"):
            with cam.lock:
                if not cam.broken_done:
                    cam.broken_done = True
                    do_break = True
        if do_break:
            sent = len(chunk) // 2
            diag("ev=breaking_transfer op=0x%04X handle=0x%08X sent=%d of %d"
                 % (op, obj.handle, sent, len(chunk)))
            try:
                self.conn.send(PT_START_DATA, struct.pack("<IQ", tid, len(chunk)))
                pos = 0
                while pos < sent:
                    n = min(self.args.chunk, sent - pos)
                    self.conn.send(PT_DATA, struct.pack("<I", tid) + chunk[pos:pos + n])
                    pos += n
            except OSError:
                pass
            cam.olog("broken", obj, op="0x%04X" % op, offset=off, length=len(chunk), sent=sent,
                     served_sha256=sha(chunk[:sent]))
            cam.break_connections(self)
            raise ConnGone("break-first-transfer")
        self.send_data(tid, chunk)
        cam.olog("served", obj, op="0x%04X" % op, offset=off, length=len(chunk), served_sha256=sha(chunk))
        return None     # data already sent

    # ---- properties (§3)
    def _prop(self, p):
        code = p[0] if p else 0
        if code not in PROPS:
            raise PtpError(RC_PROP_NOT_SUPPORTED, "prop 0x%04X" % code)
        return code, PROPS[code]

    def op_1014(self, tid, p, d):
        code, (dt, rw, default, enum) = self._prop(p)
        f = "<" + DT_FMT[dt]
        with self.cam.lock:
            cur = self.cam.prop_value(code)
        body = struct.pack("<HHB", code, dt, 1 if rw else 0) + struct.pack(f, default) + struct.pack(f, cur)
        if enum is None:
            body += b"\x00"
        else:
            body += b"\x02" + struct.pack("<H", len(enum)) + b"".join(struct.pack(f, v) for v in enum)
        return body, ()

    def op_1015(self, tid, p, d):
        code, (dt, rw, default, enum) = self._prop(p)
        with self.cam.lock:
            return struct.pack("<" + DT_FMT[dt], self.cam.prop_value(code)), ()

    def op_1016(self, tid, p, d):
        code, (dt, rw, default, enum) = self._prop(p)
        if not rw:
            raise PtpError(RC_ACCESS_DENIED, "read-only 0x%04X" % code)
        f = "<" + DT_FMT[dt]
        if d is None or len(d) != struct.calcsize(f):
            raise PtpError(RC_INVALID_PROP_VALUE, "size")
        v = struct.unpack(f, d)[0]
        if enum is not None and v not in enum:
            raise PtpError(RC_INVALID_PROP_VALUE, "value %d" % v)
        with self.cam.lock:
            self.cam.props[code] = v
        diag("ev=prop_set code=0x%04X value=%d" % (code, v))
        return None

    def op_90CA(self, tid, p, d):
        return au16([c for c in sorted(PROPS) if c >= 0xD000]), ()

    # ---- Nikon capture / events (§8.2)
    def op_90C0(self, tid, p, d):
        self.cam.start_capture(tid)
        return None

    op_90CB = op_90C0

    def op_90C8(self, tid, p, d):
        cam = self.cam
        if cam.busy():
            raise PtpError(RC_DEVICE_BUSY)
        with cam.lock:
            if cam.lv_on and time.monotonic() < cam.lv_ready_at:
                raise PtpError(RC_DEVICE_BUSY)
        return None

    def op_90C7(self, tid, p, d):
        self.cam.tick()
        evs = self.cam.take_events()
        body = struct.pack("<H", len(evs)) + b"".join(struct.pack("<HI", c, v) for c, v in evs)
        return body, ()

    def op_90C3(self, tid, p, d):
        h = p[0] if p else 0
        if h == 0:
            n = 0
            while True:
                try:
                    self.cam.delete(SDRAM_HANDLE)
                    n += 1
                except PtpError:
                    break
            return None
        if h != SDRAM_HANDLE:
            raise PtpError(RC_INVALID_HANDLE)
        self.cam.delete(SDRAM_HANDLE)
        return None

    def op_90C1(self, tid, p, d):
        return None

    def op_90C2(self, tid, p, d):
        return None

    # ---- live view (§2.1)
    def op_9201(self, tid, p, d):
        self.cam.lv_start()
        return None

    def op_9202(self, tid, p, d):
        self.cam.lv_stop("EndLiveView")
        return None

    def op_9203(self, tid, p, d):
        payload, n, fsha, af, repeat = self.cam.lv_image()
        self.send_data(tid, payload)
        self.cam.frames_log.write({"n": n, "sha256": fsha, "af": af, "repeat": repeat, "t": time.time()})
        return None

    def op_9204(self, tid, p, d):
        if not self.cam.lv_on:
            raise PtpError(RC_NOT_LIVE_VIEW)
        return None

    op_9205 = op_9204


# --------------------------------------------------------------------------
# Accepting

def event_loop(cam, conn):
    try:
        while True:
            ptype, pl = conn.read_packet(idle_ok=True)
            if ptype == PT_PROBE_REQ:
                conn.send(PT_PROBE_RESP)
            else:
                diag("ev=event_conn_packet conn=%d type=%d len=%d" % (conn.no, ptype, len(pl)))
    except (ConnGone, OSError) as e:
        diag("ev=event_closed conn=%d %r" % (conn.no, e))
    except Garbage as e:
        diag("ev=garbage event conn=%d %s" % (conn.no, e))
    finally:
        conn.close()


def serve_connection(cam, sock, peer):
    conn = Conn(sock, "%s:%s" % peer[:2])
    try:
        sock.settimeout(FIRST_PACKET_TIMEOUT)
        while True:
            ptype, pl = conn.read_packet(maxlen=4096)
            if ptype == PT_PROBE_REQ:
                conn.send(PT_PROBE_RESP)
                continue
            break
        sock.settimeout(IO_TIMEOUT)
        if ptype == PT_INIT_CMD_REQ:
            CmdSession(cam, conn).run(pl)
        elif ptype == PT_INIT_EVT_REQ and len(pl) >= 4:
            no = struct.unpack("<I", pl[:4])[0]
            if cam.attach_event(conn, no):
                conn.send(PT_INIT_EVT_ACK)
                diag("ev=event_open conn=%d peer=%s" % (no, conn.peer))
                event_loop(cam, conn)
            else:
                diag("ev=event_rejected conn_no=%d peer=%s" % (no, conn.peer))
                conn.send(PT_INIT_FAIL, struct.pack("<I", 1))
                conn.close()
        else:
            diag("ev=garbage first packet type=%d len=%d peer=%s" % (ptype, len(pl), conn.peer))
            conn.close()
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
        th = threading.Thread(target=serve_connection, args=(cam, sock, peer), daemon=True)
        th.start()


# --------------------------------------------------------------------------

def make_images(args, n_lv, n_still, tmp):
    sw, sh = args.still_w, args.still_h
    tw_h = max(2, int(round(THUMB_W * sh / float(sw))) // 2 * 2)
    thumb_vf = ("scale=%d:%d,pad=%d:%d:0:(oh-ih)/2" % (THUMB_W, tw_h, THUMB_W, THUMB_H)
                if tw_h <= THUMB_H else "scale=%d:%d" % (THUMB_W, THUMB_H))
    jpg = ["-pix_fmt", "yuvj420p", "-q:v", "5", "-huffman", "default", "-f", "image2"]
    cmd = (["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (args.width, args.height),
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (sw, sh),
            "-map", "0:v", "-frames:v", str(n_lv)] + jpg + [os.path.join(tmp, "f%03d.jpg"),
           "-map", "1:v", "-frames:v", str(n_still)] + jpg + [os.path.join(tmp, "s%03d.jpg"),
           "-map", "1:v", "-frames:v", str(n_still), "-vf", thumb_vf] + jpg +
           [os.path.join(tmp, "t%03d.jpg")])
    subprocess.run(cmd, check=True)

    def load(prefix, n):
        out = []
        for i in range(1, n + 1):
            with open(os.path.join(tmp, "%s%03d.jpg" % (prefix, i)), "rb") as f:
                out.append(f.read())
        return out
    return load("f", n_lv), load("s", n_still), load("t", n_still)


def parse_size(ap, s, what):
    m = re.fullmatch(r"(\d+)x(\d+)", s)
    if not m:
        ap.error("%s WxH" % what)
    w, h = int(m.group(1)), int(m.group(2))
    if w < 16 or h < 16 or w > 8192 or h > 8192 or w % 2 or h % 2:
        ap.error("%s: even sizes 16..8192" % what)
    return w, h


def main():
    ap = argparse.ArgumentParser(description="Nikon PTP/IP test camera (clean-room, from ptp.md)")
    ap.add_argument("--port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="640x424", help="live-view JPEG size")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per operation request")
    ap.add_argument("--objects-log", help="JSON lines, one per object event")
    ap.add_argument("--frames-log", help="JSON lines, one per live-view image served")
    ap.add_argument("--card-files", type=int, default=3, help="JPEGs on the card (default 3)")
    ap.add_argument("--break-first-transfer", action="store_true")
    ap.add_argument("--capture-ms", type=int, default=300)
    ap.add_argument("--model", choices=sorted(MODELS), default="D750")
    ap.add_argument("--still-size", default="1616x1080")
    ap.add_argument("--events", choices=("getevent", "channel", "both"), default="getevent")
    ap.add_argument("--lv-early", choices=("busy", "same"), default="busy")
    ap.add_argument("--lv-start-ms", type=int, default=150)
    ap.add_argument("--lv-drop-after", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=65536, help="Data packet payload size")
    ap.add_argument("--empty-end", action="store_true", help="all bytes in Data packets, empty End_Data")
    ap.add_argument("--frames", type=int, default=60, help="distinct live-view JPEGs (default 60)")
    ap.add_argument("--help-choices", action="store_true", help="print the documented choices and exit")
    args = ap.parse_args()
    if args.help_choices:
        print(__doc__)
        return
    if args.port is None:
        ap.error("--port is required")
    args.width, args.height = parse_size(ap, args.size, "--size")
    args.still_w, args.still_h = parse_size(ap, args.still_size, "--still-size")
    if (args.fps <= 0 or args.frames < 1 or args.card_files < 0 or args.capture_ms < 0
            or args.chunk < 1 or args.lv_start_ms < 0 or args.lv_drop_after < 0):
        ap.error("--fps > 0, --frames >= 1, --card-files >= 0, --capture-ms >= 0, --chunk >= 1")
    if args.card_files > 9000:
        ap.error("--card-files <= 9000")

    stop = threading.Event()
    wake = threading.Event()
    usr1 = []
    # A parent may have started us with these blocked (the mask is inherited): take them back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGINT, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGUSR1, lambda *a: (usr1.append(1), wake.set()))

    n_still = 8 + min(args.card_files, 8)
    tmp = tempfile.mkdtemp(prefix="nikon_cam_")
    try:
        lv_frames, stills, thumbs = make_images(args, args.frames, n_still, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for i, f in enumerate(lv_frames):
        if jpeg_size(f) != (args.width, args.height) or f[:2] != b"\xff\xd8" or f[-2:] != b"\xff\xd9":
            diag("ev=bad_frame index=%d size=%s" % (i, jpeg_size(f)))
            sys.exit(2)
    if len({sha(f) for f in lv_frames}) != len(lv_frames) or len({sha(s) for s in stills}) != len(stills):
        diag("ev=duplicate_images (ffmpeg made identical JPEGs)")
        sys.exit(2)

    logs = (JsonLog(args.log), JsonLog(args.objects_log), JsonLog(args.frames_log))
    cam = Camera(args, lv_frames, stills, thumbs, logs)

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    lsock = socket.socket(family, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((args.host, args.port))
    lsock.listen(16)
    lsock.settimeout(0.2)
    port = lsock.getsockname()[1]
    th = threading.Thread(target=accept_loop, args=(cam, lsock, stop), daemon=True)
    th.start()
    sys.stdout.write("ready ptpip=%d\n" % port)
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
    try:
        lsock.close()
    except OSError:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
