#!/usr/bin/env python3
"""Independent Canon EOS PTP/IP test camera (live view, remote release, card files).

Clean-room: written only from ../shared/protocols/ptp.md ("the notes"), without
looking at livegate's own PTP/Canon code.  Section numbers below (§N) refer to
that file.  Python 3.11 standard library only; `ffmpeg` is run once at start-up
to make the live-view JPEGs, the still images and their thumbnails.

    python3 Tests/Scripts/canon_cam.py --port P [--host 127.0.0.1]
        [--size 960x640] [--fps 30] [--log REQUESTS.jsonl]
        [--objects-log OBJECTS.jsonl] [--frames-log FRAMES.jsonl]
        [--card-files N] [--break-first-transfer] [--capture-ms 300]
        [--model "Canon EOS R6"] [--still-size 1616x1080]
        [--dest-in-dump yes|no] [--lv-warmup N] [--lv-early notready|busy|same]
        [--chunk BYTES] [--empty-end] [--frames N_DISTINCT]

`--port 0` picks a free port.  Prints `ready ptpip=P` once it listens (command
and event connections both use that port, §1.1); runs until SIGTERM/SIGINT,
exits 0.  `--help-choices` prints this text.  SIGUSR1 = a shot taken with the
body's own shutter button.

Transport (§1): a new TCP connection is classified by its first packet:
type 1 Init_Command_Request -> command connection (answered with type 2:
ConnectionNumber 1, 2, 3 ... per command connection, a fixed camera GUID, the
model name as FriendlyName, version 0x00010000); type 3 Init_Event_Request with
the current command connection's number -> event connection (type 4); any other
number -> type 5 Init_Fail reason 1; type 13 -> type 14 (then the first packet
is awaited again); anything else (or a length < 8 / > 4 MiB) is garbage: logged,
socket closed, camera carries on.  Probe_Request (13) is answered with 14 on
both sockets at any time; Cancel (11) is logged and ignored.  Data-in phases:
Start_Data, Data packets of --chunk bytes (65536), the rest in End_Data;
--empty-end puts every byte in Data packets and sends an empty End_Data.
Data-out (any request with DataPhaseInfo 2, and 0x9110 always) is read
completely before the response.  TransactionIDs are logged, not checked.
Connections (CHOICE): one client at a time, latest wins - a new valid
Init_Command_Request closes the previous command+event connections.  Ops work
without an event connection.  Nothing is ever pushed on the event connection
(CHOICE, §8.3: "EOS bodies have no standard PTP events"): every event is a
GetEvent 0x9116 record.

Operations (all listed in DeviceInfo.OperationsSupported; anything else ->
0x2005, checked first, also outside a session; before OpenSession every op but
0x1001/0x1002 -> 0x2003; OpenSession while open -> 0x201E, SessionID 0 ->
0x201D; a handler bug -> 0x2002, logged):
  0x1001 GetDeviceInfo, 0x1002 OpenSession, 0x1003 CloseSession,
  0x1004 GetStorageIDs, 0x1005 GetStorageInfo, 0x1007 GetObjectHandles,
  0x1008 GetObjectInfo, 0x1009 GetObject, 0x100A GetThumb, 0x100B DeleteObject,
  0x101B GetPartialObject, 0x9110 SetDevicePropValueEx, 0x9114 SetRemoteMode,
  0x9115 SetEventMode, 0x9116 GetEvent, 0x9117 TransferComplete,
  0x911A PCHDDCapacity, 0x911D KeepDeviceOn, 0x9127 RequestDevicePropValue,
  0x9128 RemoteReleaseOn, 0x9129 RemoteReleaseOff, 0x913D SetRequestOLCInfoGroup,
  0x9151 InitiateViewfinder, 0x9152 TerminateViewfinder, 0x9153 GetViewFinderData,
  0x9154 DoAf, 0x9155 DriveLens, 0x9158 Zoom, 0x9159 ZoomPosition,
  0x915B TouchAfPosition.
  The standard 0x1014/0x1015/0x1016 property ops are NOT offered (0x2005):
  EOS values are set with 0x9110 and read from GetEvent (§2.2) - CHOICE.
DeviceInfo (§1.5): StandardVersion 100, VendorExtensionID 0x0000000B (Canon),
  VendorExtensionVersion 100, VendorExtensionDesc "" (CHOICE), FunctionalMode 0,
  EventsSupported [0xC181 0xC186 0xC189 0xC18A] (the GetEvent record codes this
  camera produces, CHOICE), DevicePropertiesSupported = the properties below,
  CaptureFormats [0x3801], ImageFormats [0x3001 0x3801 0xB982],
  Manufacturer "Canon Inc.", Model --model ("Canon EOS R6"), DeviceVersion
  "3-1.5.0", SerialNumber "012345678901".
Setup ops (§2.2): SetRemoteMode(p1), SetEventMode(p1), KeepDeviceOn,
  SetRequestOLCInfoGroup(p1), DoAf, DriveLens, TouchAfPosition -> OK and are
  only logged; GetEvent works whether or not they were sent (CHOICE).

Properties (0xC189 value records are always {u32 16, u32 0xC189, u32 prop,
u32 value}; 0xC18A lists are {u32 size, 0xC18A, u32 prop, u32 datatype 3,
u32 count, count x u32}, sent for every property with an allowed list):
  0xD101 Aperture 0x28 (f/4), 0xD102 ShutterSpeed 0x70 (1/125), 0xD103 ISO 0x48
  (100), 0xD104 ExpCompensation 0 (u8 signed; values are masked with 0xFF, so
  0xFFFFFFF8 and 0xF8 both mean -1 EV), 0xD105 AutoExposureMode 3,
  0xD106 DriveMode 0, 0xD107 Metering 3, 0xD108 FocusMode 0,
  0xD109 WhiteBalance 0, 0xD10A ColorTemperature 5200 (2500..10000 step 100),
  0xD11B AvailableShots (read-only, computed), 0xD11C CaptureDestination 2
  {2 card, 4 PC}, 0xD1B0 EVFOutputDevice 1 (any 0..15), 0xD1B1 EVFMode 1
  {0,1}, 0xD1B3 EVFSharpness 0 (0..7), 0xD1B4 EVFWBMode 0, 0xD1B8
  EVFRecordStatus 0 (read-only).  The code lists are CHOICES drawn from the
  encodings in §3.  0xD1D3 FocusInfoEx is not produced.
  * 0x9110 SetDevicePropValueEx data = u32 size, u32 prop, u32 value (§2.2).
    Fewer than 12 bytes or a value not allowed -> 0x201C; unknown prop ->
    0x200A; read-only prop -> 0x200F (CHOICES).  The size field is logged but
    not enforced.  Every accepted set queues a 0xC189 record with the new value
    (even if unchanged).
  * 0x9127 RequestDevicePropValue(prop) queues a 0xC189 record for a known
    prop; an unknown prop -> OK, nothing queued (CHOICE: owner/serial requests
    of real clients must not fail).
  * First GetEvent of every session ("the dump", CHOICE: built at OpenSession,
    replacing whatever was queued): a 0xC189 record for every property above,
    then the 0xC18A lists, then the 0xC181 records of card objects that were
    announced but never fetched (their objects still exist), then one 0xC186
    for every PC transfer still outstanding (the re-offer, see below).
    --dest-in-dump yes (default) includes 0xD11C (and its list) in the dump.
    This DIFFERS from the notes' emulator (§8.5: no 0xD11C in the dump): a real
    body reports all its properties; with --dest-in-dump no the dump leaves
    0xD11C out and only 0x9110 / 0x9127 produce its record, as §8.5 describes.
  * GetEvent returns every queued record then {8, 0}, emptying the queue
    (queue capped at 5000 records, oldest dropped).  Records are built when
    queued; ObjectAddedEx/RequestObjectTransfer are padded to 4 bytes.

Live view (§2.2):
  * Live view to the PC is on while (0xD1B0 & 0xE) != 0 (bits 2 PC, 4 MOBILE,
    8 MOBILE2; all three give --size JPEGs - the size bits are NOT honoured,
    CHOICE).  0x9151 InitiateViewfinder sets 0xD1B0 |= 2, 0x9152
    TerminateViewfinder clears 0xE (both queue the 0xC189 record).  EVFMode is
    stored and reported, it does not gate live view (CHOICE).
  * GetViewFinderData 0x9153 (params logged, ignored):
      live view off -> 0xA102 ObjectNotReady, no data;
      just switched on -> the first --lv-warmup (10) calls answer 0xA102
      (§6 item 5, "vcam does this"), and frames only start after a GetEvent
      has been processed since live view was switched on ("needs GetEvent to
      start"); until then 0xA102;
      pacing: a new frame is due every 1/--fps s (re-based without burst when
      the client falls behind by > 2 periods); a request before it is due gets
      0xA102 with no data (--lv-early notready, default), 0x2019 (busy), or
      the previous frame again (same; logged with "repeat": true).
  * Frame layout = records {u32 len (incl. 8-byte head), u32 type, data} in
    the order of the real dump (§2.2): 1 JPEG (no padding), 4 zoom u32,
    5 zoom-window top-left x,y, 6 (0,0), 12 u32 0, 13 zoom rect x,y,w,h,
    14 sensor W,H (6000x4000), 10 u64 frame number n, 7 u32 1, 3 histogram
    (256 bins x 4 interleaved u32 channels, a fixed bell curve, each channel
    summing to W*H of --size), then {8, 0}.  Zoom (0x9158 p1 1/5/10, else
    0x201D) and ZoomPosition (0x9159 x,y = window top-left in sensor
    coordinates, clamped) only change records 4/5/13, never the JPEG.
  * Frame numbers n count per process; frame n carries JPEG n mod --frames (60
    distinct testsrc2 JPEGs).  Live view keeps running during captures.
  * Live view, zoom and the release buttons are reset when the session ends
    (CloseSession or the command connection going away): 0xD1B0 returns to 1
    (TFT) - CHOICE.

Card (§8.1):
  * Storage 0x00010001: removable RAM (4), hierarchical (2), R/W (0), 64 GiB,
    free = capacity - bytes on card, FreeSpaceInImages = AvailableShots on the
    card, description "SD", label "EOS_DIGITAL".
  * Handles (CHOICE): 0x00100001 DCIM (parent 0), 0x00100002 100CANON (parent
    DCIM), files from 0x00100003: IMG_0001.JPG .. IMG_000N.JPG (--card-files,
    default 3), then MVI_000(N+1).MP4 (format 0xB982 as §8.1's emulator;
    256 KiB: an ftyp 'mp42' box and an mdat of sha256-chained bytes, not a
    playable movie).  Stills: 0x3801, --still-size (1616x1080), depth 24,
    160x120 JPEG thumbnail; each JPEG carries a COM segment naming it, so bytes
    are distinct and identical across runs.  Folders/movie: GetThumb -> 0x2010.
    Card dates 20240601T120000 + 61 s per file; new objects use local time.
  * GetObjectHandles(storage, format, parent): storage 0xFFFFFFFF or
    0x00010001 (else 0x2008), format 0/0xFFFFFFFF any, parent 0 = all levels,
    0xFFFFFFFF = root only, a folder = its children, unknown parent -> 0x2009.
    PC-transfer objects are never listed.
  * GetObject on a folder sends 0 bytes.  GetPartialObject(h, offset, max):
    offset > size -> 0x201D, else min(max, size - offset) bytes; response
    param 1 = bytes sent.  Unknown handle -> 0x2009.  DeleteObject on a file
    removes it (folder / 0xFFFFFFFF -> 0x200F).

Release (§8.3):
  * 0x9128 RemoteReleaseOn p1 1 = half press (OK, nothing else); 2 or 3 = full
    press: the shot is made --capture-ms (300) later; another full press
    while a shot is pending -> 0x2019 (CHOICE: every full press shoots, no Off
    needed in between).  Other p1 -> 0x201D.  0x9129 RemoteReleaseOff(any) ->
    OK.  Each shot (and body shot) is a new distinct JPEG (--still-size, COM
    segment numbering it) named IMG_NNNN.JPG from the card's file counter.
  * CaptureDestination 0xD11C: default 2 = card; accepted 2 and 4 (PC), other
    values -> 0x201C.  The destination is camera state: it survives
    disconnects and new sessions (CHOICE).
  * Card target: the file goes into 100CANON under the next handle, a 0xC181
    ObjectAddedEx record is queued (+0x08 handle, +0x0C storage 0x00010001,
    +0x10 u16 format 0x3801, +0x1C u32 size, +0x20 parent 0x00100002,
    +0x28 file name ASCII + NUL, padded to 4; bytes 0x12-0x1B and 0x24-0x27
    are 0 - UNCONFIRMED, CHOICE), followed by a 0xC189 for 0xD11B when the
    AvailableShots value changed.
  * PC target: the camera keeps NO copy on the card.  The image is held as an
    outstanding transfer with handle 0x80000001, 0x80000002, ... (per process)
    and a 0xC186 RequestObjectTransfer record is queued (+0x08 handle, +0x0C
    u16 format 0x3801, +0x14 u32 size, +0x1C file name ASCII + NUL, padded to
    4; all other bytes 0 - CHOICE).  The client may read it with
    GetPartialObject 0x101B (any block size) and/or GetObject 0x1009, and may
    ask GetObjectInfo/GetThumb (StorageID 0, ParentObject 0).  0x9117
    TransferComplete(handle) removes it (whether or not all bytes were read;
    logged with "served_bytes" = distinct bytes served); after that every op
    on the handle answers 0x2009 InvalidObjectHandle (§8.3's emulator choice).
    TransferComplete on an existing card handle -> OK, no effect (CHOICE);
    unknown handle -> 0x2009.  DeleteObject on an outstanding PC handle drops
    it ("deleted").
  * Re-offer: an outstanding transfer survives disconnects and sessions; the
    first GetEvent of every later session (the dump) carries its 0xC186 again.
    It is NOT re-announced within the session that already received it.
  * 0x911A PCHDDCapacity(p1 free clusters, p2 cluster size, p3 flag) -> OK,
    remembers p1*p2 bytes (camera state, forgotten when 0xD11C is set to 2).
    AvailableShots 0xD11B = min(9999, free bytes // 8 MiB) where free bytes is
    the card's free space for target 2, and the PCHDDCapacity bytes for
    target 4 (0 until 0x911A was sent - so a client that "waits until
    AvailableShots > 0" must send it).  A release with target 4 and 0 shots
    still works (CHOICE, lenient).  Changes queue a 0xC189 0xD11B record.
  * SIGUSR1 (body button): the same as a remote shot for the current
    destination, made immediately (no --capture-ms delay), logged "body_shot".
    Made while no client is connected, its 0xC181 / 0xC186 is delivered in the
    next session's dump.

--break-first-transfer: the first GetObject/GetPartialObject of a captured or
body-shot image (either target) sends Start_Data (full length) and half of the
requested bytes in Data packets, then closes both connections (logged as
"broken"); later transfers work; the object stays where it was (a PC transfer
stays outstanding and is re-offered in the next session's dump).

Logs (JSON lines): --log: one per operation request {"t", "op" ("0x9128"),
"params", "tid", "session" (open SessionID or 0), "conn", and "data" (hex of the
data-out bytes, e.g. for 0x9110)}.  --objects-log: {"ev": "card" | "captured" |
"body_shot" | "served" | "transfer_complete" | "deleted" | "broken", "handle"
(integer), "name", "size", "sha256", "target" ("card" | "pc"), "t"};
"served"/"broken" add "op", "offset", "length", "served_sha256" ("broken": of
the bytes actually sent, plus "sent").  "card" lines (files only) are written
at start-up.  --frames-log: one per GetViewFinderData data phase fully written:
{"n", "sha256" (of the JPEG record's bytes), "repeat", "zoom", "t"}.
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
# Codes (§1, §2.2, §8)

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
RC_OBJECT_NOT_READY = 0xA102

EC_OBJECT_ADDED_EX = 0xC181
EC_REQUEST_TRANSFER = 0xC186
EC_PROP_CHANGED = 0xC189
EC_AVAIL_CHANGED = 0xC18A

OFC_ASSOCIATION = 0x3001
OFC_EXIF_JPEG = 0x3801
OFC_MP4 = 0xB982

P_CAPTURE_DEST = 0xD11C
P_AVAIL_SHOTS = 0xD11B
P_EVF_OUTPUT = 0xD1B0
DEST_CARD, DEST_PC = 2, 4

STORAGE_ID = 0x00010001
H_DCIM, H_FOLDER, H_FIRST_FILE = 0x00100001, 0x00100002, 0x00100003
H_FIRST_PC = 0x80000001
MAX_CAPACITY = 64 << 30
SHOT_BYTES = 8 << 20
MAX_SHOTS = 9999
EVENT_QUEUE_MAX = 5000
MAX_PACKET = 4 << 20
MAX_DATA_OUT = 16 << 20
IO_TIMEOUT = 30.0
FIRST_PACKET_TIMEOUT = 10.0
SENSOR_W, SENSOR_H = 6000, 4000
THUMB_W, THUMB_H = 160, 120
MOVIE_BYTES = 256 * 1024
CAM_GUID = b"CANON-TESTCM" + bytes([0, 0, 0, 6])
CARD_DATE0 = (2024, 6, 1, 12, 0, 0)

OPS = {
    0x1001: "GetDeviceInfo", 0x1002: "OpenSession", 0x1003: "CloseSession",
    0x1004: "GetStorageIDs", 0x1005: "GetStorageInfo", 0x1007: "GetObjectHandles",
    0x1008: "GetObjectInfo", 0x1009: "GetObject", 0x100A: "GetThumb", 0x100B: "DeleteObject",
    0x101B: "GetPartialObject",
    0x9110: "SetDevicePropValueEx", 0x9114: "SetRemoteMode", 0x9115: "SetEventMode",
    0x9116: "GetEvent", 0x9117: "TransferComplete", 0x911A: "PCHDDCapacity",
    0x911D: "KeepDeviceOn", 0x9127: "RequestDevicePropValue", 0x9128: "RemoteReleaseOn",
    0x9129: "RemoteReleaseOff", 0x913D: "SetRequestOLCInfoGroup",
    0x9151: "InitiateViewfinder", 0x9152: "TerminateViewfinder", 0x9153: "GetViewFinderData",
    0x9154: "DoAf", 0x9155: "DriveLens", 0x9158: "Zoom", 0x9159: "ZoomPosition",
    0x915B: "TouchAfPosition",
}
EVENTS_SUPPORTED = [EC_OBJECT_ADDED_EX, EC_REQUEST_TRANSFER, EC_PROP_CHANGED, EC_AVAIL_CHANGED]

# code -> (name, writable, default, allowed values (list) or None = any 0..maxval, maxval)
PROPS = collections.OrderedDict([
    (0xD101, ("Aperture", True, 0x28,
              [0x20, 0x23, 0x25, 0x28, 0x2B, 0x2D, 0x30, 0x33, 0x35, 0x38, 0x3B, 0x3D,
               0x40, 0x43, 0x45, 0x48, 0x4B, 0x4D, 0x50], None)),
    (0xD102, ("ShutterSpeed", True, 0x70,
              [0x0C, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38, 0x40, 0x48, 0x50, 0x58, 0x60, 0x63,
               0x65, 0x68, 0x6B, 0x6D, 0x70, 0x73, 0x75, 0x78, 0x7B, 0x7D, 0x80, 0x83, 0x85,
               0x88, 0x8B, 0x8D, 0x90, 0x93, 0x95, 0x98, 0xA0], None)),
    (0xD103, ("ISO", True, 0x48,
              [0x00, 0x48, 0x4B, 0x4D, 0x50, 0x53, 0x55, 0x58, 0x5B, 0x5D, 0x60, 0x63, 0x65,
               0x68, 0x70, 0x78], None)),
    (0xD104, ("ExpCompensation", True, 0x00,
              [0xE8, 0xEB, 0xED, 0xF0, 0xF3, 0xF5, 0xF8, 0xFB, 0xFD, 0x00, 0x03, 0x05, 0x08,
               0x0B, 0x0D, 0x10, 0x13, 0x15, 0x18], None)),
    (0xD105, ("AutoExposureMode", True, 3, [0, 1, 2, 3, 4], None)),
    (0xD106, ("DriveMode", True, 0, [0, 1], None)),
    (0xD107, ("Metering", True, 3, [1, 3, 4, 5], None)),
    (0xD108, ("FocusMode", True, 0, [0, 1, 2, 3], None)),
    (0xD109, ("WhiteBalance", True, 0, [0, 1, 2, 3, 4, 5, 6, 8, 9], None)),
    (0xD10A, ("ColorTemperature", True, 5200, list(range(2500, 10001, 100)), None)),
    (P_AVAIL_SHOTS, ("AvailableShots", False, 0, None, 0xFFFFFFFF)),
    (P_CAPTURE_DEST, ("CaptureDestination", True, DEST_CARD, [DEST_CARD, DEST_PC], None)),
    (P_EVF_OUTPUT, ("EVFOutputDevice", True, 1, None, 15)),
    (0xD1B1, ("EVFMode", True, 1, [0, 1], None)),
    (0xD1B3, ("EVFSharpness", True, 0, list(range(8)), None)),
    (0xD1B4, ("EVFWBMode", True, 0, [0, 1, 2, 3, 4, 5, 6, 8, 9], None)),
    (0xD1B8, ("EVFRecordStatus", False, 0, None, 0xFFFFFFFF)),
])


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
        sys.stderr.write("canon_cam: %s\n" % msg)
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


def insert_com(jpeg, text):
    """Insert a COM segment after SOI (and after APP0 if that comes first)."""
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
    ftyp = struct.pack(">I", 24) + b"ftypmp42" + struct.pack(">I", 0) + b"mp42isom"
    body = bytearray()
    h = b"canon_cam movie"
    while len(body) < MOVIE_BYTES - 32:
        h = hashlib.sha256(h).digest()
        body += h
    body = bytes(body[:MOVIE_BYTES - 32])
    mdat = struct.pack(">I", 8 + len(body)) + b"mdat" + body
    return ftyp + mdat


def histogram_record(w, h):
    """Type-3 record: 256 bins x 4 interleaved u32 channels, each summing to w*h."""
    total = w * h
    out = bytearray()
    chans = []
    for c in range(4):
        mu = 110 + 15 * c
        weights = [math.exp(-((b - mu) / 40.0) ** 2) for b in range(256)]
        s = sum(weights)
        counts = [int(total * x / s) for x in weights]
        counts[mu] += total - sum(counts)
        chans.append(counts)
    for b in range(256):
        for c in range(4):
            out += struct.pack("<I", chans[c][b])
    return struct.pack("<II", 8 + len(out), 3) + bytes(out)


def pad4(b):
    return b + b"\x00" * (-len(b) % 4)


def rec_prop(code, value):
    return struct.pack("<IIII", 16, EC_PROP_CHANGED, code, value & 0xFFFFFFFF)


def rec_avail(code, values):
    return (struct.pack("<IIIII", 20 + 4 * len(values), EC_AVAIL_CHANGED, code, 3, len(values)) +
            b"".join(struct.pack("<I", v) for v in values))


def rec_object_added(obj):
    r = bytearray(0x28)
    struct.pack_into("<IIII", r, 0, 0, EC_OBJECT_ADDED_EX, obj.handle, obj.storage)
    struct.pack_into("<H", r, 0x10, obj.fmt)
    struct.pack_into("<I", r, 0x1C, len(obj.data))
    struct.pack_into("<I", r, 0x20, obj.parent)
    r = bytearray(pad4(bytes(r) + obj.name.encode("ascii") + b"\x00"))
    struct.pack_into("<I", r, 0, len(r))
    return bytes(r)


def rec_request_transfer(obj):
    r = bytearray(0x1C)
    struct.pack_into("<III", r, 0, 0, EC_REQUEST_TRANSFER, obj.handle)
    struct.pack_into("<H", r, 0x0C, obj.fmt)
    struct.pack_into("<I", r, 0x14, len(obj.data))
    r = bytearray(pad4(bytes(r) + obj.name.encode("ascii") + b"\x00"))
    struct.pack_into("<I", r, 0, len(r))
    return bytes(r)


class Obj:
    def __init__(self, handle, storage, fmt, parent, name, data, thumb, w, h, date, origin, target):
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
        self.target = target            # "card" | "pc"
        self.sha = sha(data)
        self.served = []                # (offset, length) ranges served (PC objects)

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

    def served_bytes(self):
        n, end = 0, 0
        for off, ln in sorted(self.served):
            if off + ln <= end:
                continue
            n += off + ln - max(off, end)
            end = off + ln
        return n


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
        self.lv_frames = lv_frames
        self.lv_shas = [sha(f) for f in lv_frames]
        self.hist = histogram_record(args.width, args.height)
        self.stills = stills
        self.thumbs = thumbs
        self.props = {c: v[2] for c, v in PROPS.items()}
        self.pc_capacity = None
        # queued GetEvent records: (kind, key, bytes); kind "prop"|"avail"|"added"|"transfer"
        self.events = collections.deque(maxlen=EVENT_QUEUE_MAX)
        self.cmd = None
        self.evt = None
        self.conn_no = 0
        self.session_gen = 0
        self.broken_done = False
        # live view
        self.lv_warm_left = 0
        self.lv_got_event = False
        self.lv_next_due = None
        self.lv_last = None
        self.lv_n = 0
        self.zoom = 1
        self.zoom_xy = (0, 0)
        # capture
        self.capture_end = None
        self.still_no = 0
        self.pc = collections.OrderedDict()     # outstanding PC transfers
        self.next_pc = H_FIRST_PC
        # card
        self.objects = collections.OrderedDict()
        t0 = datetime.datetime(*CARD_DATE0)

        def card_date(i):
            return ptp_date(t0 + datetime.timedelta(seconds=61 * i))
        self.objects[H_DCIM] = Obj(H_DCIM, STORAGE_ID, OFC_ASSOCIATION, 0, "DCIM", b"", None,
                                   0, 0, card_date(0), "folder", "card")
        self.objects[H_FOLDER] = Obj(H_FOLDER, STORAGE_ID, OFC_ASSOCIATION, H_DCIM, "100CANON", b"",
                                     None, 0, 0, card_date(0), "folder", "card")
        self.next_handle = H_FIRST_FILE
        self.file_no = 1
        for i in range(args.card_files):
            k = i % len(stills)
            name = "IMG_%04d.JPG" % self.file_no
            data = insert_com(stills[k], "canon_cam card %s" % name)
            self._add_card(name, OFC_EXIF_JPEG, data, thumbs[k], args.still_w, args.still_h,
                           card_date(i + 1), "card")
        name = "MVI_%04d.MP4" % self.file_no
        self._add_card(name, OFC_MP4, fake_movie(), None, 1920, 1080,
                       card_date(args.card_files + 1), "card")
        self.props[P_AVAIL_SHOTS] = self.compute_shots()

    # ---- helpers
    def olog(self, ev, obj, **extra):
        d = {"ev": ev, "handle": obj.handle, "name": obj.name, "size": len(obj.data),
             "sha256": obj.sha, "target": obj.target, "t": time.time()}
        d.update(extra)
        self.obj_log.write(d)

    def _add_card(self, name, fmt, data, thumb, w, h, date, origin):
        with self.lock:
            obj = Obj(self.next_handle, STORAGE_ID, fmt, H_FOLDER, name, data, thumb, w, h, date,
                      origin, "card")
            self.next_handle += 1
            self.file_no += 1
            self.objects[obj.handle] = obj
        self.olog(origin, obj)
        return obj

    def card_bytes(self):
        return sum(len(o.data) for o in self.objects.values())

    def compute_shots(self):
        with self.lock:
            if self.props[P_CAPTURE_DEST] == DEST_PC:
                free = self.pc_capacity or 0
            else:
                free = MAX_CAPACITY - self.card_bytes()
            return max(0, min(MAX_SHOTS, free // SHOT_BYTES))

    def update_shots(self):
        """Recompute 0xD11B; queue a record when it changed."""
        with self.lock:
            v = self.compute_shots()
            if v != self.props[P_AVAIL_SHOTS]:
                self.props[P_AVAIL_SHOTS] = v
                self.queue("prop", P_AVAIL_SHOTS, rec_prop(P_AVAIL_SHOTS, v))

    def lookup(self, handle):
        with self.lock:
            obj = self.objects.get(handle) or self.pc.get(handle)
            if obj is None:
                raise PtpError(RC_INVALID_HANDLE, "no object 0x%08X" % handle)
            return obj

    # ---- GetEvent queue (§2.2, §8.3)
    def queue(self, kind, key, rec):
        with self.lock:
            self.events.append((kind, key, rec))

    def take_events(self):
        self.tick()
        with self.lock:
            recs = [r for _, _, r in self.events]
            self.events.clear()
            if self.lv_on():
                self.lv_got_event = True
        return b"".join(recs) + struct.pack("<II", 8, 0), len(recs)

    def session_opened(self):
        """Replace the queue with the dump (see module docstring); -> session generation."""
        with self.lock:
            self.session_gen += 1
            gen = self.session_gen
            carry = [e for e in self.events if e[0] == "added" and e[1] in self.objects]
            self.events.clear()
            self.props[P_AVAIL_SHOTS] = self.compute_shots()
            codes = [c for c in PROPS if self.args.dest_in_dump == "yes" or c != P_CAPTURE_DEST]
            for c in codes:
                self.events.append(("prop", c, rec_prop(c, self.props[c])))
            for c in codes:
                allowed = PROPS[c][3]
                if allowed is not None and PROPS[c][1]:
                    self.events.append(("avail", c, rec_avail(c, allowed)))
            self.events.extend(carry)
            reoffer = list(self.pc.values())
            for obj in reoffer:
                self.events.append(("transfer", obj.handle, rec_request_transfer(obj)))
        if reoffer:
            diag("ev=reoffer handles=%s" % ",".join("0x%08X" % o.handle for o in reoffer))
        return gen

    def session_ended(self, gen, why):
        with self.lock:
            if gen != self.session_gen:
                return      # a newer session (another client) owns the camera now
            was = self.lv_on()
            self.props[P_EVF_OUTPUT] = 1
            self.zoom = 1
            self.zoom_xy = (0, 0)
            self.lv_last = None
        if was:
            diag("ev=liveview_stop why=%s" % why)

    # ---- properties
    def set_prop(self, code, value):
        if code not in PROPS:
            raise PtpError(RC_PROP_NOT_SUPPORTED, "prop 0x%04X" % code)
        name, writable, default, allowed, maxval = PROPS[code]
        if not writable:
            raise PtpError(RC_ACCESS_DENIED, "read-only 0x%04X" % code)
        if code == 0xD104:
            value &= 0xFF
        if allowed is not None and value not in allowed:
            raise PtpError(RC_INVALID_PROP_VALUE, "0x%04X value 0x%X" % (code, value))
        if allowed is None and value > maxval:
            raise PtpError(RC_INVALID_PROP_VALUE, "0x%04X value 0x%X" % (code, value))
        with self.lock:
            was_lv = self.lv_on()
            self.props[code] = value
            self.queue("prop", code, rec_prop(code, value))
            if code == P_CAPTURE_DEST:
                if value == DEST_CARD:
                    self.pc_capacity = None
                self.update_shots()
            now_lv = self.lv_on()
            if now_lv and not was_lv:
                self.lv_reset()
        diag("ev=prop_set code=0x%04X (%s) value=0x%X" % (code, name, value))
        if was_lv and not now_lv:
            diag("ev=liveview_stop why=EVFOutputDevice")

    def set_pc_capacity(self, nbytes):
        with self.lock:
            self.pc_capacity = nbytes
            self.update_shots()

    # ---- live view (§2.2)
    def lv_on(self):
        return (self.props[P_EVF_OUTPUT] & 0xE) != 0

    def lv_reset(self):
        self.lv_warm_left = self.args.lv_warmup
        self.lv_got_event = False
        self.lv_next_due = None
        self.lv_last = None
        diag("ev=liveview_start evf_output=0x%X" % self.props[P_EVF_OUTPUT])

    def lv_frame_payload(self, n):
        jpeg = self.lv_frames[n % len(self.lv_frames)]
        z = self.zoom
        zw, zh = SENSOR_W // z, SENSOR_H // z
        x, y = self.zoom_xy
        x = max(0, min(x, SENSOR_W - zw))
        y = max(0, min(y, SENSOR_H - zh))
        parts = [
            struct.pack("<II", 8 + len(jpeg), 1), jpeg,
            struct.pack("<III", 12, 4, z),
            struct.pack("<IIII", 16, 5, x, y),
            struct.pack("<IIII", 16, 6, 0, 0),
            struct.pack("<III", 12, 12, 0),
            struct.pack("<IIIIII", 24, 13, x, y, zw, zh),
            struct.pack("<IIII", 16, 14, SENSOR_W, SENSOR_H),
            struct.pack("<IIQ", 16, 10, n),
            struct.pack("<III", 12, 7, 1),
            self.hist,
            struct.pack("<II", 8, 0),
        ]
        return b"".join(parts)

    def lv_image(self):
        """-> (payload, n, sha256, repeat, zoom) or PtpError."""
        args = self.args
        with self.lock:
            now = time.monotonic()
            if not self.lv_on():
                raise PtpError(RC_OBJECT_NOT_READY, "live view off")
            if self.lv_warm_left > 0:
                self.lv_warm_left -= 1
                raise PtpError(RC_OBJECT_NOT_READY, "live view warming up")
            if not self.lv_got_event:
                raise PtpError(RC_OBJECT_NOT_READY, "no GetEvent since live view start")
            if self.lv_last is not None and now < self.lv_next_due:
                if args.lv_early == "notready":
                    raise PtpError(RC_OBJECT_NOT_READY, "next frame not due")
                if args.lv_early == "busy":
                    raise PtpError(RC_DEVICE_BUSY, "next frame not due")
                payload, n, fsha, z = self.lv_last
                return payload, n, fsha, True, z
            period = 1.0 / args.fps
            if self.lv_next_due is None or now - self.lv_next_due > 2 * period:
                self.lv_next_due = now + period
            else:
                self.lv_next_due += period
            n = self.lv_n
            self.lv_n += 1
            payload = self.lv_frame_payload(n)
            fsha = self.lv_shas[n % len(self.lv_frames)]
            self.lv_last = (payload, n, fsha, self.zoom)
            return payload, n, fsha, False, self.zoom

    # ---- capture (§8.3)
    def tick(self):
        with self.lock:
            gen = self.capture_end
            due = gen is not None and time.monotonic() >= gen
        if due:
            self.finish_capture(gen)

    def start_capture(self):
        self.tick()
        with self.lock:
            if self.capture_end is not None:
                raise PtpError(RC_DEVICE_BUSY, "shot pending")
            self.capture_end = time.monotonic() + self.args.capture_ms / 1000.0
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
        self.make_shot("captured")

    def make_shot(self, origin):
        a = self.args
        with self.lock:
            k = self.still_no
            self.still_no += 1
            idx = (a.card_files + k) % len(self.stills)
            data = insert_com(self.stills[idx], "canon_cam %s %d" % (origin, k))
            thumb = self.thumbs[idx]
            name = "IMG_%04d.JPG" % self.file_no
            date = ptp_date(datetime.datetime.now())
            if self.props[P_CAPTURE_DEST] == DEST_PC:
                self.file_no += 1
                obj = Obj(self.next_pc, 0, OFC_EXIF_JPEG, 0, name, data, thumb,
                          a.still_w, a.still_h, date, origin, "pc")
                self.next_pc += 1
                self.pc[obj.handle] = obj
                self.queue("transfer", obj.handle, rec_request_transfer(obj))
                self.olog(origin, obj)
            else:
                obj = self._add_card(name, OFC_EXIF_JPEG, data, thumb, a.still_w, a.still_h,
                                     date, origin)
                self.queue("added", obj.handle, rec_object_added(obj))
                self.update_shots()
        diag("ev=%s handle=0x%08X name=%s target=%s size=%d"
             % (origin, obj.handle, name, obj.target, len(data)))
        return obj

    def transfer_complete(self, handle):
        with self.lock:
            obj = self.pc.pop(handle, None)
            if obj is None:
                if handle in self.objects:
                    return None
                raise PtpError(RC_INVALID_HANDLE, "no outstanding transfer 0x%08X" % handle)
        self.olog("transfer_complete", obj, served_bytes=obj.served_bytes())
        diag("ev=transfer_complete handle=0x%08X" % handle)
        return obj

    def delete(self, handle):
        with self.lock:
            if handle in self.pc:
                obj = self.pc.pop(handle)
            else:
                obj = self.objects.get(handle)
                if obj is None:
                    raise PtpError(RC_INVALID_HANDLE)
                if obj.origin == "folder":
                    raise PtpError(RC_ACCESS_DENIED, "folder")
                del self.objects[handle]
                self.update_shots()
        self.olog("deleted", obj)

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

    def detach_command(self, sess):
        with self.lock:
            if self.cmd is not sess:
                return
            self.cmd = None
            evt, self.evt = self.evt, None
        if evt is not None:
            evt.close()

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
        self.gen = 0
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
            if self.session:
                self.session = 0
                self.cam.session_ended(self.gen, "client gone")
            self.cam.detach_command(self)

    def operation(self, pl):
        if len(pl) < 10:
            diag("ev=short_request len=%d" % len(pl))
            return
        phase, op, tid = struct.unpack("<IHI", pl[:10])
        nparams = min(5, (len(pl) - 10) // 4)
        params = list(struct.unpack("<%dI" % nparams, pl[10:10 + 4 * nparams]))
        data_out = None
        if phase == 2 or op == 0x9110:
            data_out = self.read_data_out(tid)
        entry = {"t": time.time(), "op": "0x%04X" % op, "params": params, "tid": tid,
                 "session": self.session, "conn": self.conn.no}
        if data_out is not None:
            entry["data"] = data_out.hex()
        self.cam.req_log.write(entry)
        if (phase == 2 or op == 0x9110) and data_out is None:
            self.send_response(RC_GENERAL_ERROR if self.pending is not None else RC_INVALID_PARAMETER,
                               tid)
            return
        try:
            if op not in OPS:
                raise PtpError(RC_OP_NOT_SUPPORTED)
            if self.session == 0 and op not in (0x1001, 0x1002):
                raise PtpError(RC_SESSION_NOT_OPEN)
            handler = getattr(self, "op_%04X" % op)
            res = handler(tid, params, data_out)
        except PtpError as e:
            if e.code not in (RC_DEVICE_BUSY, RC_OBJECT_NOT_READY):
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
        data, rparams = res
        if data is not None:
            self.send_data(tid, data)
        self.send_response(RC_OK, tid, rparams)

    # ---- session / info
    def op_1001(self, tid, p, d):
        body = (struct.pack("<HIH", 100, 0x0000000B, 100) + pstr("") + struct.pack("<H", 0) +
                au16(sorted(OPS)) + au16(EVENTS_SUPPORTED) + au16(list(PROPS)) +
                au16([OFC_EXIF_JPEG]) + au16([OFC_ASSOCIATION, OFC_EXIF_JPEG, OFC_MP4]) +
                pstr("Canon Inc.") + pstr(self.args.model) + pstr("3-1.5.0") + pstr("012345678901"))
        return body, ()

    def op_1002(self, tid, p, d):
        if self.session:
            raise PtpError(RC_SESSION_ALREADY_OPEN)
        if not p or p[0] == 0:
            raise PtpError(RC_INVALID_PARAMETER, "SessionID")
        self.session = p[0]
        self.gen = self.cam.session_opened()
        diag("ev=session_open conn=%d session=%d" % (self.conn.no, self.session))
        return None

    def op_1003(self, tid, p, d):
        self.session = 0
        self.cam.session_ended(self.gen, "CloseSession")
        return None

    # ---- storage / objects (§8.1)
    def op_1004(self, tid, p, d):
        return au32([STORAGE_ID]), ()

    def op_1005(self, tid, p, d):
        if not p or p[0] != STORAGE_ID:
            raise PtpError(RC_INVALID_STORAGE)
        with self.cam.lock:
            free = MAX_CAPACITY - self.cam.card_bytes()
        body = (struct.pack("<HHHQQI", 4, 2, 0, MAX_CAPACITY, free,
                            min(MAX_SHOTS, free // SHOT_BYTES)) + pstr("SD") + pstr("EOS_DIGITAL"))
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
        self.transfer(0x1009, tid, obj, 0, len(obj.data))
        return None, ()

    def op_101B(self, tid, p, d):
        obj = self.cam.lookup(p[0] if p else 0)
        off = p[1] if len(p) > 1 else 0
        mx = p[2] if len(p) > 2 else 0xFFFFFFFF
        size = len(obj.data)
        if off > size:
            raise PtpError(RC_INVALID_PARAMETER, "offset %d > size %d" % (off, size))
        length = min(mx, size - off)
        self.transfer(0x101B, tid, obj, off, length)
        return None, (length,)

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
        with cam.lock:
            obj.served.append((off, len(chunk)))
        cam.olog("served", obj, op="0x%04X" % op, offset=off, length=len(chunk),
                 served_sha256=sha(chunk))

    # ---- Canon EOS setup / properties (§2.2)
    def op_9110(self, tid, p, d):
        if d is None or len(d) < 12:
            raise PtpError(RC_INVALID_PROP_VALUE, "short SetDevicePropValueEx data")
        size, code, value = struct.unpack("<III", d[:12])
        if size != len(d):
            diag("ev=note 0x9110 size field %d != data length %d" % (size, len(d)))
        self.cam.set_prop(code, value)
        return None

    def op_9127(self, tid, p, d):
        code = p[0] if p else 0
        cam = self.cam
        with cam.lock:
            if code in PROPS:
                if code == P_AVAIL_SHOTS:
                    cam.props[code] = cam.compute_shots()
                cam.queue("prop", code, rec_prop(code, cam.props[code]))
        return None

    def op_9116(self, tid, p, d):
        body, n = self.cam.take_events()
        return body, ()

    def op_9114(self, tid, p, d):
        return None

    op_9115 = op_9114
    op_911D = op_9114
    op_913D = op_9114
    op_9154 = op_9114
    op_9155 = op_9114
    op_915B = op_9114

    def op_911A(self, tid, p, d):
        clusters = p[0] if len(p) > 0 else 0
        csize = p[1] if len(p) > 1 else 0
        self.cam.set_pc_capacity(clusters * csize)
        return None

    # ---- release / transfer (§8.3)
    def op_9128(self, tid, p, d):
        mode = p[0] if p else 0
        if mode == 1:
            return None
        if mode in (2, 3):
            self.cam.start_capture()
            return None
        raise PtpError(RC_INVALID_PARAMETER, "RemoteReleaseOn p1=%d" % mode)

    def op_9129(self, tid, p, d):
        return None

    def op_9117(self, tid, p, d):
        self.cam.transfer_complete(p[0] if p else 0)
        return None

    # ---- live view (§2.2)
    def op_9151(self, tid, p, d):
        cam = self.cam
        with cam.lock:
            v = cam.props[P_EVF_OUTPUT]
        cam.set_prop(P_EVF_OUTPUT, v | 2)
        return None

    def op_9152(self, tid, p, d):
        cam = self.cam
        with cam.lock:
            v = cam.props[P_EVF_OUTPUT]
        cam.set_prop(P_EVF_OUTPUT, v & ~0xE)
        return None

    def op_9153(self, tid, p, d):
        payload, n, fsha, repeat, zoom = self.cam.lv_image()
        self.send_data(tid, payload)
        self.cam.frames_log.write({"n": n, "sha256": fsha, "repeat": repeat, "zoom": zoom,
                                   "t": time.time()})
        return None, ()

    def op_9158(self, tid, p, d):
        z = p[0] if p else 0
        if z not in (1, 5, 10):
            raise PtpError(RC_INVALID_PARAMETER, "zoom %d" % z)
        with self.cam.lock:
            self.cam.zoom = z
        return None

    def op_9159(self, tid, p, d):
        x = p[0] if len(p) > 0 else 0
        y = p[1] if len(p) > 1 else 0
        with self.cam.lock:
            self.cam.zoom_xy = (min(x, SENSOR_W), min(y, SENSOR_H))
        return None


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
    ap = argparse.ArgumentParser(description="Canon EOS PTP/IP test camera (clean-room, from ptp.md)")
    ap.add_argument("--port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="960x640", help="live-view JPEG size")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--log", help="JSON lines, one per operation request")
    ap.add_argument("--objects-log", help="JSON lines, one per object event")
    ap.add_argument("--frames-log", help="JSON lines, one per live-view frame served")
    ap.add_argument("--card-files", type=int, default=3, help="JPEGs on the card (default 3)")
    ap.add_argument("--break-first-transfer", action="store_true")
    ap.add_argument("--capture-ms", type=int, default=300)
    ap.add_argument("--model", default="Canon EOS R6")
    ap.add_argument("--still-size", default="1616x1080")
    ap.add_argument("--dest-in-dump", choices=("yes", "no"), default="yes",
                    help="report 0xD11C in the first GetEvent of a session (default yes)")
    ap.add_argument("--lv-warmup", type=int, default=10,
                    help="0x9153 calls answered 0xA102 after live view starts (default 10)")
    ap.add_argument("--lv-early", choices=("notready", "busy", "same"), default="notready")
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
            or args.chunk < 1 or args.lv_warmup < 0):
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
    tmp = tempfile.mkdtemp(prefix="canon_cam_")
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
                cam.make_shot("body_shot")
            except Exception:
                diag("ev=body_shot_error %s" % traceback.format_exc())
    try:
        lsock.close()
    except OSError:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
