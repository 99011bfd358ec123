#!/usr/bin/env python3
"""Independent Sony Camera Remote API (Wi-Fi, JSON-RPC + HTTP live view) test camera.

Clean-room: written only from ../shared/protocols/sony.md ("the notes"),
without looking at livegate's own Sony code.  Section numbers below (§N)
refer to that file.  Python 3.11 standard library only; `ffmpeg` is run once at
start-up to make the live-view JPEGs, the stills and a small MP4.

    python3 Tests/Scripts/sony_cam.py --http-port P [--host 127.0.0.1]
        [--size 768x432] [--fps 30] [--order info-first|jpeg-first|alternate|random]
        [--seed N] [--info-missing-every N] [--counter shared|separate]
        [--log REQUESTS.jsonl] [--frames-log FRAMES.jsonl] [--frames N_DISTINCT]
        [--frame-info-default off|on] [--seq-start N] [--ts-start MS] [--padding N]
        [--lv-transfer close|chunked] [--poll-timeout S] [--require-rec-mode]
        [--shots-log SHOTS.jsonl] [--still-size 1616x1080] [--capture-ms 250]
        [--save-ms 200] [--long-exposure-ms N] [--take-timeout-ms 3000]
        [--postview-size Original|2M] [--announce-remote-shots]
        [--refuse-shots CODE] [--card N] [--card-raw] [--switch-ms 300]
        [--break-download-once NAME]... [--break-postview-once]

`--http-port 0` picks a free port.  Prints `ready http=P` once it listens; runs
until SIGTERM/SIGINT, exits 0.  SIGUSR1 = a shot taken on the camera body
(§8.1; one shot per signal).  `--help-choices` prints this text.

Endpoints: POST /sony/camera (JSON-RPC, §3.3), POST /sony/avContent (JSON-RPC,
§8.3), GET /liveview/liveviewstream (the URL startLiveview returns, §1.1),
GET/HEAD /postview/<name> (§8.1) and /contentstransfer/{orgjpeg,org,thumb}/<key>
(§8.3).  Every other path/verb -> 404.

JSON-RPC methods (/sony/camera): getVersions, getAvailableApiList,
getApplicationInfo, getMethodTypes, startRecMode, stopRecMode, startLiveview,
startLiveviewWithSize, stopLiveview, getLiveviewSize, getSupportedLiveviewSize,
getAvailableLiveviewSize, setLiveviewFrameInfo, getLiveviewFrameInfo, getEvent,
actTakePicture, awaitTakePicture, setShootMode, getShootMode,
getSupportedShootMode, getAvailableShootMode, setPostviewImageSize,
getPostviewImageSize, getSupportedPostviewImageSize,
getAvailablePostviewImageSize, setCameraFunction, getCameraFunction,
getSupportedCameraFunction, getAvailableCameraFunction, getStorageInformation
(all listed by getAvailableApiList / getMethodTypes).  /sony/avContent:
getVersions, getMethodTypes (1.0), getSchemeList (1.0), getSourceList (1.0),
getContentCount (1.2), getContentList (1.3).  Anything else ->
{"error": [12, "No Such Method"]}; a known method with another version ->
[14, "Unsupported Version"].

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
  "id", "version"}; "method"/"params" are the JSON-RPC ones for /sony/camera and
  /sony/avContent, the HTTP verb / null for other requests (bodies that are not
  JSON: method null); plus "range" (the Range header as sent) when there is one.
--shots-log: one line per picture the camera produced, listed or served:
  {"ev", "origin", "name", "url", "bytes", "sha256", "t", "kind"} (+ "range")
  ev "card"     a file on the card at start-up (origin null), url = its
                Contents Transfer URL;
     "captured" a shot saved to the card (origin "remote" = actTakePicture,
                "body" = SIGUSR1), one line per file (JPEG, and the ARW with
                --card-raw), url = its Contents Transfer URL;
     "postview" the postview of that shot (name = the shot's DSCnnnnn.JPG,
                url = the postview URL, bytes/sha256 = what a GET returns);
     "served"   a GET whose body was written completely; origin = the file's
                (null for start-up card files); bytes/sha256 = the body sent;
                with "range": [first, last] (inclusive) for a 206;
     "broken"   a GET cut by --break-*-once; bytes/sha256 = the part sent.
  kind = "original" | "thumbnail" | "postview".  url in card/captured/postview
  lines uses http://<--host>:<port> (127.0.0.1 for a wildcard --host); answers
  and served lines use the local address of the request's socket.  HEAD,
  404 and 416 answers are not logged here.  "t" = time.time().

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
    availableApiList (the current getAvailableApiList), 1 cameraStatus
    ("IDLE" except during a shot or in Contents Transfer, see below),
    3 liveviewStatus, 4 liveviewOrientation "0", 5 takePicture (see below),
    10 [storageInformation], 12 cameraFunction {currentCameraFunction,
    cameraFunctionCandidates ["Remote Shooting", "Contents Transfer"]},
    15 cameraFunctionResult (see below), 19 postviewImageSize
    {currentPostviewImageSize, postviewImageSizeCandidates}, 21 shootMode
    "still", 35 focusStatus "Focused" (1.1+); rest null.  Values are always
    all sent (never null-for-unchanged; the notes allow repeats) except the
    report-once items 5 and 15.  [true] answers at once if anything in
    (cameraStatus, liveviewStatus, camera function, unreported index 5/15,
    shoot mode, postview size, stills on the card) differs from the last
    getEvent answer, else waits for such a change up to --poll-timeout
    (default 2 s) and then answers the unchanged values (a result, not an
    error).  A second [true] while one waits: the older gets
    [40402, "Already Running Polling Api"].
  * Envelope (§3.3): missing "version" = "1.0"; other versions than listed ->
    14; body not JSON -> 4 "Illegal Data Format"; empty body, no method, no
    id, params not an array -> 5 "Illegal Request"; bad params -> 3 "Illegal
    Argument".  JSON-RPC answers are always HTTP 200, application/json.
    getMethodTypes answers with "results" (§3.3).
  * A live-view client that stops reading for 10 s is dropped.

Still capture, transfer and files (§8).  CHOICE marks a choice where the notes
say UNCONFIRMED or nothing:
  * actTakePicture [] (§8.1): only in Remote Shooting, cameraStatus IDLE and no
    shot queued/running, else [40401, "Camera Not Ready"] (CHOICE); with
    --require-rec-mode before startRecMode -> [1, "Not Available Now"];
    --refuse-shots CODE -> [CODE, <the §3.3 error-table text>] every time
    (e.g. [40400, "Shooting fail"], [40401, "Camera Not Ready"]); body shots
    still work (CHOICE).  A shot: cameraStatus StillCapturing for --capture-ms
    (250; --long-exposure-ms N > 0 replaces it, for every shot, remote or
    body), StillSaving for --save-ms (200), then the files enter the card and
    the status is IDLE; each change wakes a long poll.  actTakePicture answers
    after that IDLE: {"result": [["http://<host>:<port>/postview/pictYYYYMMDD_
    HHMMSS_K.JPG"]]} (local time of the shot; K = 0, raised only if that name
    was used).  If the shot is not done within --take-timeout-ms (3000) it
    answers [40403, "Long shooting"]; then awaitTakePicture [] waits up to
    --take-timeout-ms and answers [40403, "Not Finished"] or the same result
    shape.  awaitTakePicture with no such shot, or after it was claimed ->
    [40401, "Camera Not Ready"] (CHOICE); a new actTakePicture drops an
    unclaimed one (CHOICE).  Live view keeps running during a shot (CHOICE).
  * Shots run one after another (one worker); SIGUSR1 queues a body shot
    (also while another shot runs); SIGUSR1 in Contents Transfer or while the
    camera function is switching is ignored (stderr ev=body_shot_ignored,
    CHOICE).
  * getEvent index 5 (§8.1/§8.2): one {"type": "takePicture",
    "takePictureUrl": [<postview URL>]} per shot not yet reported (several
    shots -> several objects, CHOICE), oldest first; the next getEvent answer
    ([true] or [false], any version) carries them and they are never repeated
    ([] afterwards).  CHOICE: only body shots are announced; remote shots too
    with --announce-remote-shots.
  * Pictures: DSCnnnnn.JPG (file numbers continue after the card's), --still-
    size (1616x1080), one of 8 ffmpeg testsrc2 stills (picture n uses still
    n mod 8) with a COM segment "sony_cam DSCnnnnn.JPG" after the JFIF APP0,
    so every picture's bytes differ and are the same in every run.
    Postview (§8.1, CHOICE): while the postview image size is "Original" the
    very bytes of the card JPEG; while it is "2M" a different 640-px-wide
    JPEG (COM "sony_cam DSCnnnnn.JPG postview"), as a resized postview would
    be.  Postview URLs stay valid for the life
    of the process, in either camera function (CHOICE).
  * setShootMode ["still"] -> [0]; only "still" is offered (CHOICE):
    getShootMode ["still"], getSupportedShootMode [["still"]],
    getAvailableShootMode ["still", ["still"]]; other values -> 3.
    setPostviewImageSize ["Original"|"2M"] -> [0] (else 3), logged on stderr
    (ev=postview_size) and shown by getPostviewImageSize / index 19; the
    default is --postview-size (Original; the notes: per model, UNCONFIRMED);
    it decides the postview bytes of the shots taken after it (CHOICE).
  * setCameraFunction ["Remote Shooting"|"Contents Transfer"] (§8.3) -> [0]
    (other values -> 3; while a switch or a shot is under way -> [1, "Not
    Available Now"], CHOICE); --switch-ms (300) later the function changes,
    index 15 {"type": "cameraFunctionResult", "cameraFunctionResult":
    "Success"} is queued (report-once like index 5, CHOICE; also when the
    function was already the current one) and cameraStatus becomes
    "ContentsTransfer" (back: "IDLE").  Entering Contents Transfer stops live
    view (running streams end, liveviewStatus false); it stays stopped after
    returning - the client must call startLiveview again.  getCameraFunction
    [cur], getSupportedCameraFunction [[both]], getAvailableCameraFunction
    [cur, [both]].
  * In Contents Transfer only getVersions, getAvailableApiList,
    getApplicationInfo, getMethodTypes, getEvent, the four camera-function
    methods and getStorageInformation are available (also what
    getAvailableApiList / index 0 list then); other camera methods -> [1, "Not
    Available Now"] (CHOICE, as the notes' emulator).  avContent methods other
    than getVersions/getMethodTypes outside Contents Transfer -> [1, "Not
    Available Now"].
  * getStorageInformation [] -> [[{"storageID": "Memory Card 1",
    "recordTarget": true, "numberOfRecordableImages": 2000 - stills on the
    card, "recordableTime": 120, "storageDescription": ""}]] (shape and
    numbers CHOICE); index 10 = the same object with "type":
    "storageInformation".  Available in both functions.
  * Card (--card N, default 4): N-1 stills DSC00001.JPG.. and one movie
    MAH0000N.MP4 (N >= 2; N = 1: one still; 0: empty), the first half of
    the stills (rounded up) dated 2024-05-01, the rest and the movie
    2024-05-02, createdTime "<day>T10:MM:SS+00:00" (61 s apart); shots are
    dated with the local date/time and offset when taken (CHOICE).  The
    movie: ffmpeg testsrc2 320x240, 25 fps, 1 s, H.264 (mpeg4 if libx264 is
    missing), bit-exact.  --card-raw: every still (card and shots) also has
    DSCnnnnn.ARW, 96 KiB of deterministic bytes (TIFF-like header, sha256
    chain; not a real RAW), second in "original" with stillObject "raw".
  * avContent: getSchemeList [] -> [[{"scheme": "storage"}]];
    getSourceList [{"scheme": "storage"}] -> [[{"source":
    "storage:memoryCard1"}]] (other scheme -> 3).  getContentCount /
    getContentList take uri "storage:memoryCard1" or
    "storage:memoryCard1?path=YYYY-MM-DD" (date view only), view "flat" |
    "date" (missing -> "date", CHOICE), type null / a string / a list of
    "still", "movie_mp4", "movie_xavcs" (applied in both views, CHOICE; other
    values -> 3).  Count: flat = contents; date root = date folders, with
    target "all" = contents; a date = its contents; unknown date -> 0.
    {"count": N} with an integer (CHOICE).  List: stIdx (default 0) and cnt
    (default 100, > 100 or < 0 -> 3, CHOICE) page the items; stIdx past the
    end -> [[]]; sort "" / missing = "ascending" (CHOICE) = by file number
    (contents) or date (folders), "descending" reverses.  One content per
    still (JPEG+ARW together) or movie.  Items: uri "image:content?
    contentId=<10 digits = 1000000000 + file number>" ("video:..." for the
    movie), title "", content {"original": [{"fileName", "stillObject"
    "jpeg"|"raw"|"" (movie), "url"}], "smallUrl": "", "largeUrl": "",
    "thumbnailUrl"}, createdTime, contentKind "still"|"movie_mp4", folderNo
    "100", fileNo "%04d", isPlayable "false", isBrowsable "false",
    isProtected "false", remotePlayType null.  Date folders: uri
    "storage:memoryCard1?path=YYYY-MM-DD", title "YYYYMMDD", content null,
    createdTime = its first content's, contentKind "directory", folderNo ""
    fileNo "", isPlayable "false", isBrowsable "true", isProtected "",
    remotePlayType null (the empty/"false" values are CHOICES).
  * File URLs: original JPEG /contentstransfer/orgjpeg/<key>, ARW and movie
    /contentstransfer/org/<key>, thumbnail (160 px wide JPEG, distinct per
    content) /contentstransfer/thumb/<key>, key = "%08x-%08x" (contentId,
    0 or 1 for the ARW).  They answer only in Contents Transfer, else 404
    (CHOICE).  GET/HEAD answers (CHOICE): 200, Content-Type image/jpeg |
    video/mp4 | image/x-sony-arw, Content-Length, Accept-Ranges: bytes,
    keep-alive allowed.  One "Range: bytes=a-b" / "a-" / "-n" -> 206 with
    Content-Range (end clipped to the size); start past the end (or "-0")
    -> 416 with "Content-Range: bytes */size"; several ranges or a malformed
    header -> ignored (200, whole file).  Same for postview URLs.
  * --break-download-once NAME (repeatable; NAME = a card fileName such as
    DSC00002.JPG, DSC00002.ARW or MAH00004.MP4, also a shot's name not yet
    taken) / --break-postview-once (the first postview GET of any shot): the
    first GET of it sends the headers with the full Content-Length (of the
    range, for a 206), the first half of the body (floor), then closes the
    socket; later GETs are complete.  Thumbnails and HEAD never break.
"""

import argparse
import datetime
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
    # §8: still capture, shoot mode, postview size, camera function, card
    "actTakePicture": (("1.0",), [], ["string*"]),
    "awaitTakePicture": (("1.0",), [], ["string*"]),
    "setShootMode": (("1.0",), ["string"], ["int"]),
    "getShootMode": (("1.0",), [], ["string"]),
    "getSupportedShootMode": (("1.0",), [], ["string*"]),
    "getAvailableShootMode": (("1.0",), [], ["string", "string*"]),
    "setPostviewImageSize": (("1.0",), ["string"], ["int"]),
    "getPostviewImageSize": (("1.0",), [], ["string"]),
    "getSupportedPostviewImageSize": (("1.0",), [], ["string*"]),
    "getAvailablePostviewImageSize": (("1.0",), [], ["string", "string*"]),
    "setCameraFunction": (("1.0",), ["string"], ["int"]),
    "getCameraFunction": (("1.0",), [], ["string"]),
    "getSupportedCameraFunction": (("1.0",), [], ["string*"]),
    "getAvailableCameraFunction": (("1.0",), [], ["string", "string*"]),
    "getStorageInformation": (("1.0",), [], ["json*"]),
}
API_NAMES = list(METHODS)

# §8.3: Contents Transfer
AV_PATH = "/sony/avContent"
PV_PREFIX = "/postview/"
CT_PREFIX = "/contentstransfer/"
FN_RS = "Remote Shooting"
FN_CT = "Contents Transfer"
FUNCTIONS = [FN_RS, FN_CT]
SHOOT_MODES = ["still"]
PV_SIZES = ["Original", "2M"]
STORAGE_URI = "storage:memoryCard1"
CONTENT_TYPES = ("still", "movie_mp4", "movie_xavcs")
MAX_CNT = 100
CARD_CAPACITY = 2000             # numberOfRecordableImages = this - stills on the card
# camera-service methods that stay available in Contents Transfer (§8.3 UNCONFIRMED)
CT_APIS = {"getVersions", "getAvailableApiList", "getApplicationInfo", "getMethodTypes", "getEvent",
           "setCameraFunction", "getCameraFunction", "getSupportedCameraFunction",
           "getAvailableCameraFunction", "getStorageInformation"}
AV_METHODS = {
    "getVersions": (("1.0",), [], ["string*"]),
    "getMethodTypes": (("1.0",), ["string"], ["string", "string*", "string*", "string"]),
    "getSchemeList": (("1.0",), [], ["{\"scheme\":\"string\"}*"]),
    "getSourceList": (("1.0",), ["{\"scheme\":\"string\"}"], ["{\"source\":\"string\"}*"]),
    "getContentCount": (("1.2",), ["{\"uri\":\"string\", \"view\":\"string\", \"target\":\"string\", "
                                   "\"type\":\"string*\"}"], ["{\"count\":\"int\"}"]),
    "getContentList": (("1.3",), ["{\"uri\":\"string\", \"stIdx\":\"int\", \"cnt\":\"int\", "
                                  "\"view\":\"string\", \"sort\":\"string\", \"type\":\"string*\"}"],
                       ["json*"]),
}
# error table (§3.3), used for --refuse-shots
ERR_TEXT = {1: "Any", 2: "Timeout", 3: "Illegal Argument", 4: "Illegal Data Format",
            5: "Illegal Request", 6: "Illegal Response", 7: "Illegal State", 8: "Illegal Type",
            9: "Index Out Of Bounds", 10: "No Such Element", 11: "No Such Field", 12: "No Such Method",
            13: "Null Pointer", 14: "Unsupported Version", 15: "Unsupported Operation",
            40400: "Shooting fail", 40401: "Camera Not Ready", 40402: "Already Running Polling Api",
            40403: "Still Capturing Not Finished", 41003: "Some content could not be deleted"}


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
        # §8
        self.function = FN_RS
        self.switching = None            # target function while a setCameraFunction runs
        self.fn_result = None            # index 15, reported once
        self.pending_pictures = []       # index 5: postview paths not yet reported
        self.shoot_mode = "still"
        self.pv_size = args.postview_size
        self.shots_busy = 0              # shots queued or running
        self.shot_queue = []
        self.await_job = None            # long shot answered with 40403, not yet claimed
        self.stills_on_card = 0

    def changed(self):
        with self.cond:
            self.cond.notify_all()

    def event_key(self):
        return (self.camera_status, self.lv_on, self.function, bool(self.pending_pictures),
                self.fn_result is not None, self.shoot_mode, self.pv_size, self.stills_on_card)

    def api_names(self):
        if self.function == FN_CT:
            return [n for n in API_NAMES if n in CT_APIS]
        return list(API_NAMES)

    def storage_info(self):
        return {"storageID": "Memory Card 1", "recordTarget": True,
                "numberOfRecordableImages": max(0, CARD_CAPACITY - self.stills_on_card),
                "recordableTime": 120, "storageDescription": ""}

    def event_result(self, version, base):
        """One getEvent answer; the report-once items (index 5, 15) are consumed."""
        n = 36 if version in ("1.0", "1.1") else 60
        r = [None] * n
        r[0] = {"type": "availableApiList", "names": self.api_names()}
        r[1] = {"type": "cameraStatus", "cameraStatus": self.camera_status}
        r[3] = {"type": "liveviewStatus", "liveviewStatus": self.lv_on}
        r[4] = {"type": "liveviewOrientation", "liveviewOrientation": "0"}
        r[5] = [{"type": "takePicture", "takePictureUrl": [base + p]} for p in self.pending_pictures]
        self.pending_pictures = []
        r[10] = [dict({"type": "storageInformation"}, **self.storage_info())]
        r[12] = {"type": "cameraFunction", "currentCameraFunction": self.function,
                 "cameraFunctionCandidates": list(FUNCTIONS)}
        if self.fn_result is not None:
            r[15] = {"type": "cameraFunctionResult", "cameraFunctionResult": self.fn_result}
            self.fn_result = None
        r[19] = {"type": "postviewImageSize", "currentPostviewImageSize": self.pv_size,
                 "postviewImageSizeCandidates": list(PV_SIZES)}
        r[21] = {"type": "shootMode", "currentShootMode": self.shoot_mode,
                 "shootModeCandidates": list(SHOOT_MODES)}
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
# Card, stills and postviews (§8)

def sha_hex(b):
    return hashlib.sha256(b).hexdigest()


def with_comment(jpeg, text):
    """The JPEG with a COM segment carrying text (after the JFIF APP0 if any)."""
    pos = 2
    if jpeg[2:4] == b"\xff\xe0":
        pos = 4 + struct.unpack(">H", jpeg[4:6])[0]
    t = text.encode("ascii")
    return jpeg[:pos] + b"\xff\xfe" + struct.pack(">H", len(t) + 2) + t + jpeg[pos:]


def fake_raw(name, size=96 * 1024):
    """Deterministic stand-in for an ARW file (not a real RAW)."""
    head = b"II*\x00\x08\x00\x00\x00" + ("sony_cam fake ARW %s\x00" % name).encode()
    out = [head]
    h = hashlib.sha256(name.encode()).digest()
    n = len(head)
    while n < size:
        h = hashlib.sha256(h).digest()
        out.append(h)
        n += len(h)
    return b"".join(out)[:size]


class FileObj:
    """One GET-able file: an original on the card, a thumbnail or a postview."""

    def __init__(self, name, data, ctype, path, kind, origin, ct_only):
        self.name, self.data, self.ctype, self.path = name, data, ctype, path
        self.kind, self.origin, self.ct_only = kind, origin, ct_only
        self.sha = sha_hex(data)


class Content:
    def __init__(self, file_no, kind, day, created, origin):
        self.file_no = file_no
        self.cid = 1000000000 + file_no
        self.kind = kind                 # "still" | "movie_mp4"
        self.day = day                   # YYYY-MM-DD (date view folder)
        self.created = created           # ISO 8601 with offset
        self.origin = origin             # None (card at start-up) | "remote" | "body"
        self.originals = []
        self.thumb = None
        self.postview = None


class Media:
    def __init__(self, args, bases, smalls, thumbs, movie):
        self.args = args
        self.bases, self.smalls, self.thumbs, self.movie = bases, smalls, thumbs, movie
        self.contents = []               # in file-number order
        self.files = {}                  # URL path -> FileObj
        self.next_no = 1
        self.pv_names = set()

    def _key(self, cid, i):
        return "%08x-%08x" % (cid, i)

    def new_still(self, origin, day, created):
        no = self.next_no
        self.next_no += 1
        k = no % len(self.bases)
        name = "DSC%05d.JPG" % no
        c = Content(no, "still", day, created, origin)
        jpeg = with_comment(self.bases[k], "sony_cam %s" % name)
        c.originals.append(FileObj(name, jpeg, "image/jpeg",
                                   CT_PREFIX + "orgjpeg/" + self._key(c.cid, 0), "original", origin, True))
        if self.args.card_raw:
            rname = "DSC%05d.ARW" % no
            c.originals.append(FileObj(rname, fake_raw(rname), "image/x-sony-arw",
                                       CT_PREFIX + "org/" + self._key(c.cid, 1), "original", origin, True))
        c.thumb = FileObj(name, with_comment(self.thumbs[k], "sony_cam %s thumbnail" % name), "image/jpeg",
                          CT_PREFIX + "thumb/" + self._key(c.cid, 0), "thumbnail", origin, True)
        return c

    def new_movie(self, day, created):
        no = self.next_no
        self.next_no += 1
        name = "MAH%05d.MP4" % no
        c = Content(no, "movie_mp4", day, created, None)
        c.originals.append(FileObj(name, self.movie, "video/mp4",
                                   CT_PREFIX + "org/" + self._key(c.cid, 0), "original", None, True))
        c.thumb = FileObj(name, with_comment(self.thumbs[no % len(self.thumbs)], "sony_cam %s thumbnail" % name),
                          "image/jpeg", CT_PREFIX + "thumb/" + self._key(c.cid, 0), "thumbnail", None, True)
        return c

    def add_postview(self, c, when, size):
        """Postview of a new shot: size "Original" = the card JPEG's bytes, "2M" = a 640-px JPEG."""
        jpg = c.originals[0]
        if size != "Original":
            data = with_comment(self.smalls[c.file_no % len(self.smalls)], "sony_cam %s postview" % jpg.name)
        else:
            data = jpg.data
        stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(when))
        i = 0
        while "pict%s_%d.JPG" % (stamp, i) in self.pv_names:
            i += 1
        pv = "pict%s_%d.JPG" % (stamp, i)
        self.pv_names.add(pv)
        c.postview = FileObj(jpg.name, data, "image/jpeg", PV_PREFIX + pv, "postview", c.origin, False)

    def register(self, c):
        self.contents.append(c)
        for f in c.originals + [c.thumb] + ([c.postview] if c.postview else []):
            self.files[f.path] = f


def make_card(media, n):
    """--card N: N-1 JPEGs over 2024-05-01/02 and one MP4 (N >= 2); N = 1: one JPEG."""
    stills = n - 1 if n >= 2 else n
    first_day = (stills + 1) // 2
    for i in range(n):
        day = "2024-05-01" if i < first_day else "2024-05-02"
        created = "%sT10:%02d:%02d+00:00" % (day, (i * 61) // 60 % 60, (i * 61) % 60)
        c = media.new_still(None, day, created) if i < stills else media.new_movie(day, created)
        media.register(c)


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
        if cam.function == FN_CT and method not in CT_APIS:
            raise RpcError(1, "Not Available Now")

        def no_params():
            if params:
                raise RpcError(3, "Illegal Argument")

        def one_of(values):
            if len(params) != 1 or params[0] not in values:
                raise RpcError(3, "Illegal Argument")
            return params[0]

        if method == "getVersions":
            no_params()
            return [["1.0", "1.1", "1.2", "1.3"]]
        if method == "getAvailableApiList":
            no_params()
            with cam.lock:
                return [cam.api_names()]
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
            return self.get_event(params[0], version, h)
        if method == "actTakePicture":
            no_params()
            return self.take_picture(h)
        if method == "awaitTakePicture":
            no_params()
            return self.await_picture(h)
        if method == "setShootMode":
            mode = one_of(SHOOT_MODES)
            with cam.cond:
                cam.shoot_mode = mode
                cam.cond.notify_all()
            return [0]
        if method == "getShootMode":
            no_params()
            return [cam.shoot_mode]
        if method == "getSupportedShootMode":
            no_params()
            return [list(SHOOT_MODES)]
        if method == "getAvailableShootMode":
            no_params()
            return [cam.shoot_mode, list(SHOOT_MODES)]
        if method == "setPostviewImageSize":
            size = one_of(PV_SIZES)
            with cam.cond:
                cam.pv_size = size
                cam.cond.notify_all()
            diag("ev=postview_size value=%s" % size)
            return [0]
        if method == "getPostviewImageSize":
            no_params()
            return [cam.pv_size]
        if method == "getSupportedPostviewImageSize":
            no_params()
            return [list(PV_SIZES)]
        if method == "getAvailablePostviewImageSize":
            no_params()
            return [cam.pv_size, list(PV_SIZES)]
        if method == "setCameraFunction":
            target = one_of(FUNCTIONS)
            with cam.cond:
                if cam.switching or cam.shots_busy:
                    raise RpcError(1, "Not Available Now")
                cam.switching = target
            threading.Thread(target=self.app.switch_function, args=(target,), daemon=True).start()
            return [0]
        if method == "getCameraFunction":
            no_params()
            return [cam.function]
        if method == "getSupportedCameraFunction":
            no_params()
            return [list(FUNCTIONS)]
        if method == "getAvailableCameraFunction":
            no_params()
            return [cam.function, list(FUNCTIONS)]
        if method == "getStorageInformation":
            no_params()
            with cam.lock:
                return [[cam.storage_info()]]
        raise RpcError(12, "No Such Method")

    # ---- still capture (§8.1)
    def take_picture(self, h):
        cam = self.cam
        args = self.args
        with cam.cond:
            if args.require_rec_mode and not cam.rec_mode:
                raise RpcError(1, "Not Available Now")
            if args.refuse_shots is not None:
                raise RpcError(args.refuse_shots, ERR_TEXT.get(args.refuse_shots, "Error"))
            if cam.shots_busy or cam.camera_status != "IDLE" or cam.switching:
                raise RpcError(40401, "Camera Not Ready")
            job = Shot("remote")
            cam.await_job = None
            cam.shots_busy += 1
            cam.shot_queue.append(job)
            cam.cond.notify_all()
        if job.done.wait(args.take_timeout_ms / 1000.0) and job.path:
            return [[self.base_url(h) + job.path]]
        with cam.cond:
            if not job.done.is_set():
                cam.await_job = job
                raise RpcError(40403, "Long shooting")
        if job.path:                                   # finished just now
            return [[self.base_url(h) + job.path]]
        raise RpcError(40400, "Shooting fail")

    def await_picture(self, h):
        cam = self.cam
        with cam.cond:
            job = cam.await_job
        if job is None:
            raise RpcError(40401, "Camera Not Ready")
        if not job.done.wait(self.args.take_timeout_ms / 1000.0):
            raise RpcError(40403, "Not Finished")
        with cam.cond:
            if cam.await_job is job:
                cam.await_job = None
        if not job.path:
            raise RpcError(40400, "Shooting fail")
        return [[self.base_url(h) + job.path]]

    # ---- avContent service (§8.3)
    def av_call(self, h, method, params, version):
        cam = self.cam
        if method not in AV_METHODS:
            raise RpcError(12, "No Such Method")
        if version not in AV_METHODS[method][0]:
            raise RpcError(14, "Unsupported Version")
        if method == "getVersions":
            if params:
                raise RpcError(3, "Illegal Argument")
            return [["1.0", "1.2", "1.3"]]
        if method == "getMethodTypes":
            if len(params) != 1 or not isinstance(params[0], str):
                raise RpcError(3, "Illegal Argument")
            return ("results", [[name, tin, tout, v] for name, (vers, tin, tout) in AV_METHODS.items()
                                for v in vers if params[0] in ("", v)])
        with cam.lock:
            if cam.function != FN_CT:
                raise RpcError(1, "Not Available Now")
        if method == "getSchemeList":
            if params:
                raise RpcError(3, "Illegal Argument")
            return [[{"scheme": "storage"}]]
        if method == "getSourceList":
            if len(params) != 1 or not isinstance(params[0], dict) or params[0].get("scheme") != "storage":
                raise RpcError(3, "Illegal Argument")
            return [[{"source": STORAGE_URI}]]
        if len(params) != 1 or not isinstance(params[0], dict):
            raise RpcError(3, "Illegal Argument")
        p = params[0]
        uri = p.get("uri")
        view = p.get("view", "date")
        if not isinstance(uri, str) or view not in ("flat", "date"):
            raise RpcError(3, "Illegal Argument")
        root, _, query = uri.partition("?")
        day = None
        if root != STORAGE_URI:
            raise RpcError(3, "Illegal Argument")
        if query:
            if not query.startswith("path=") or view != "date":
                raise RpcError(3, "Illegal Argument")
            day = query[5:]
        types = p.get("type")
        if types is None or types == "":
            types = None
        elif isinstance(types, str):
            types = [types]
        if types is not None and (not isinstance(types, list)
                                  or any(t not in CONTENT_TYPES for t in types)):
            raise RpcError(3, "Illegal Argument")
        with cam.lock:
            contents = [c for c in self.app.media.contents if types is None or c.kind in types]
        folders = view == "date" and day is None
        if day is not None:
            contents = [c for c in contents if c.day == day]
        if method == "getContentCount":
            if folders and p.get("target") != "all":
                return [{"count": len({c.day for c in contents})}]
            return [{"count": len(contents)}]
        # getContentList
        st, cnt = p.get("stIdx", 0), p.get("cnt", MAX_CNT)
        sort = p.get("sort", "")
        if (not isinstance(st, int) or isinstance(st, bool) or not isinstance(cnt, int) or isinstance(cnt, bool)
                or st < 0 or cnt < 0 or cnt > MAX_CNT or sort not in ("", None, "ascending", "descending")):
            raise RpcError(3, "Illegal Argument")
        base = self.base_url(h)
        if folders:
            days = {}
            for c in contents:
                days.setdefault(c.day, c)
            items = [folder_item(d, days[d]) for d in sorted(days)]
        else:
            items = [content_item(c, base) for c in contents]
        if sort == "descending":
            items.reverse()
        return [items[st:st + cnt]]

    def get_event(self, poll, version, h):
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
            res = cam.event_result(version, self.base_url(h))
            cam.last_event_key = cam.event_key()
            return res

    def base_url(self, h):
        try:
            host = h.connection.getsockname()[0]
        except OSError:
            host = self.args.host
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%d" % (host, self.app.port)

    def lv_url(self, h):
        return self.base_url(h) + LV_PATH


class Shot:
    def __init__(self, origin):
        self.origin = origin             # "remote" | "body"
        self.done = threading.Event()
        self.path = None                 # postview URL path once saved


def content_item(c, base):
    orig = [{"fileName": f.name,
             "stillObject": ("jpeg" if f.name.endswith(".JPG") else "raw") if c.kind == "still" else "",
             "url": base + f.path} for f in c.originals]
    scheme = "image" if c.kind == "still" else "video"
    return {"uri": "%s:content?contentId=%010d" % (scheme, c.cid), "title": "",
            "content": {"original": orig, "smallUrl": "", "largeUrl": "", "thumbnailUrl": base + c.thumb.path},
            "createdTime": c.created, "contentKind": c.kind, "folderNo": "100", "fileNo": "%04d" % c.file_no,
            "isPlayable": "false", "isBrowsable": "false", "isProtected": "false", "remotePlayType": None}


def folder_item(day, first):
    return {"uri": "%s?path=%s" % (STORAGE_URI, day), "title": day.replace("-", ""), "content": None,
            "createdTime": first.created, "contentKind": "directory", "folderNo": "", "fileNo": "",
            "isPlayable": "false", "isBrowsable": "true", "isProtected": "", "remotePlayType": None}


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
        if self.headers.get("Range") is not None:
            entry["range"] = self.headers.get("Range")
        try:
            if path in (RPC_PATH, AV_PATH) and self.command == "POST":
                self._rpc(app, body, entry, path == AV_PATH)
            elif path == LV_PATH and self.command == "GET":
                app.req_log.write(entry)
                self._stream(app)
            elif self.command in ("GET", "HEAD") and (path.startswith(PV_PREFIX) or path.startswith(CT_PREFIX)):
                app.req_log.write(entry)
                self._file(app, path)
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
    def _rpc(self, app, body, entry, av=False):
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
            if av:
                res = app.rpc.av_call(self, method, params, version)
            else:
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

    # ---- postview and card files (§8.1, §8.3)
    def _file(self, app, path):
        cam = app.cam
        with cam.lock:
            f = app.media.files.get(path)
            if f is not None and f.ct_only and cam.function != FN_CT:
                f = None
        if f is None:
            self._send(404, b"Not Found", "text/plain")
            return
        total = len(f.data)
        start, end, status = 0, total - 1, 200
        rng = parse_range(self.headers.get("Range"), total)
        if rng == "unsatisfiable":
            self.send_response_only(416)
            self.send_header("Date", self.date_time_string())
            self.send_header("Server", self.version_string())
            self.send_header("Content-Range", "bytes */%d" % total)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.wfile.flush()
            return
        if rng is not None:
            start, end = rng
            status = 206
        body = f.data[start:end + 1]
        brk = False
        if self.command == "GET":
            brk = app.take_break(f)
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        self.send_header("Server", self.version_string())
        self.send_header("Content-Type", f.ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, total))
        if brk:
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            self.wfile.flush()
            return
        url = app.rpc.base_url(self) + path
        rec = {"origin": f.origin, "name": f.name, "url": url, "kind": f.kind}
        if status == 206:
            rec["range"] = [start, end]
        if brk:
            part = body[:len(body) // 2]
            self.wfile.write(part)
            self.wfile.flush()
            app.shots_log.write(dict({"ev": "broken"}, **rec, bytes=len(part), sha256=sha_hex(part),
                                     t=time.time()))
            diag("ev=broken_download name=%s sent=%d of=%d" % (f.name, len(part), len(body)))
            return
        self.wfile.write(body)
        self.wfile.flush()
        app.shots_log.write(dict({"ev": "served"}, **rec, bytes=len(body),
                                 sha256=f.sha if status == 200 else sha_hex(body), t=time.time()))

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


def parse_range(value, total):
    """Single 'bytes=a-b' / 'bytes=a-' / 'bytes=-n' -> (start, end); None = ignore (send 200);
    'unsatisfiable' -> 416."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", value)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None                                   # malformed or several ranges: whole file
    if m.group(1) == "":
        n = int(m.group(2))
        if n == 0 or total == 0:
            return "unsatisfiable"
        return (max(0, total - n), total - 1)
    a = int(m.group(1))
    if a >= total:
        return "unsatisfiable"
    b = int(m.group(2)) if m.group(2) else total - 1
    if b < a:
        return None
    return (a, min(b, total - 1))


class App:
    def __init__(self, args, frames, width, height, req_log, frames_log, media=None, shots_log=None):
        self.args = args
        self.frames = frames
        self.shas = [hashlib.sha256(f).hexdigest() for f in frames]
        self.width, self.height = width, height
        self.req_log = req_log
        self.frames_log = frames_log
        self.media = media
        self.shots_log = shots_log or JsonLog(None)
        self.cam = Camera(args)
        self.rpc = Rpc(self)
        self.port = 0
        self.break_names = set(getattr(args, "break_download_once", None) or [])
        self.break_postview = getattr(args, "break_postview_once", False)
        self.log_base = ""
        if media is not None:
            with self.cam.lock:
                self.cam.stills_on_card = sum(1 for c in media.contents if c.kind == "still")

    def take_break(self, f):
        with self.cam.lock:
            if f.kind == "original" and f.name in self.break_names:
                self.break_names.discard(f.name)
                return True
            if f.kind == "postview" and self.break_postview:
                self.break_postview = False
                return True
        return False

    def log_file(self, ev, f, origin):
        self.shots_log.write({"ev": ev, "origin": origin, "name": f.name, "url": self.log_base + f.path,
                              "bytes": len(f.data), "sha256": f.sha, "t": time.time(), "kind": f.kind})

    def log_card(self):
        for c in self.media.contents:
            for f in c.originals:
                self.log_file("card", f, None)

    # ---- shots (§8.1): one worker runs them one after another
    def body_shot(self):
        cam = self.cam
        with cam.cond:
            if cam.function != FN_RS or cam.switching:
                diag("ev=body_shot_ignored why=contents_transfer")
                return
            cam.shots_busy += 1
            cam.shot_queue.append(Shot("body"))
            cam.cond.notify_all()
        diag("ev=body_shot_queued")

    def shooter(self):
        cam = self.cam
        args = self.args
        while True:
            with cam.cond:
                while not cam.shot_queue and not cam.stopping.is_set():
                    cam.cond.wait(5.0)
                if cam.stopping.is_set():
                    return
                job = cam.shot_queue.pop(0)
                cam.camera_status = "StillCapturing"
                cam.cond.notify_all()
            diag("ev=shot_start origin=%s" % job.origin)
            cam.stopping.wait((args.long_exposure_ms or args.capture_ms) / 1000.0)
            with cam.cond:
                cam.camera_status = "StillSaving"
                cam.cond.notify_all()
                now = time.time()
                day = time.strftime("%Y-%m-%d", time.localtime(now))
                created = datetime.datetime.fromtimestamp(now).astimezone().isoformat(timespec="seconds")
                c = self.media.new_still(job.origin, day, created)
                self.media.add_postview(c, now, cam.pv_size)
            cam.stopping.wait(args.save_ms / 1000.0)
            with cam.cond:
                self.media.register(c)
                cam.stills_on_card += 1
                cam.camera_status = "IDLE"
                if job.origin == "body" or args.announce_remote_shots:
                    cam.pending_pictures.append(c.postview.path)
                cam.shots_busy -= 1
                job.path = c.postview.path
                cam.cond.notify_all()
            for f in c.originals:
                self.log_file("captured", f, job.origin)
            self.log_file("postview", c.postview, job.origin)
            diag("ev=shot_saved origin=%s name=%s postview=%s" % (job.origin, c.originals[0].name,
                                                                  c.postview.path))
            job.done.set()

    # ---- camera function (§8.3)
    def switch_function(self, target):
        cam = self.cam
        cam.stopping.wait(self.args.switch_ms / 1000.0)
        with cam.cond:
            old = cam.function
            cam.function = target
            cam.switching = None
            if target == FN_CT:
                cam.stop_lv_locked()
                cam.camera_status = "ContentsTransfer"
            elif old == FN_CT:
                cam.camera_status = "IDLE"
            cam.fn_result = "Success"
            cam.cond.notify_all()
        diag("ev=camera_function from=%s to=%s" % (old.replace(" ", "_"), target.replace(" ", "_")))


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


STILL_BASES = 8                  # distinct testsrc2 stills; picture N uses base N mod 8 + its own COM


def make_still_assets(w, h, tmp):
    """(bases w x h, smalls 640 px wide, thumbs 160 px wide), STILL_BASES each, one ffmpeg run."""
    jpg = ["-frames:v", str(STILL_BASES), "-pix_fmt", "yuvj420p", "-huffman", "default",
           "-fflags", "+bitexact", "-flags", "+bitexact", "-f", "image2"]
    cmd = (["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (w, h),
            "-filter_complex", "[0:v]split=3[a][b][c];[b]scale=640:-2[s];[c]scale=160:-2[t]",
            "-map", "[a]"] + jpg + ["-q:v", "4", os.path.join(tmp, "b%02d.jpg"),
                                   "-map", "[s]"] + jpg + ["-q:v", "5", os.path.join(tmp, "s%02d.jpg"),
                                   "-map", "[t]"] + jpg + ["-q:v", "5", os.path.join(tmp, "t%02d.jpg")])
    subprocess.run(cmd, check=True)
    out = []
    for pre in ("b", "s", "t"):
        lst = []
        for i in range(1, STILL_BASES + 1):
            with open(os.path.join(tmp, "%s%02d.jpg" % (pre, i)), "rb") as f:
                lst.append(f.read())
        out.append(lst)
    return out


def make_movie(tmp):
    """1 s H.264 320x240 MP4 (bit-exact flags, one thread: same bytes every run)."""
    path = os.path.join(tmp, "m.mp4")
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
           "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "1",
           "-c:v", "libx264", "-preset", "veryfast", "-threads", "1", "-pix_fmt", "yuv420p",
           "-fflags", "+bitexact", "-flags", "+bitexact", "-map_metadata", "-1",
           "-movflags", "+faststart", path]
    try:
        subprocess.run(cmd, check=True)
    except subprocess.CalledProcessError:
        cmd[cmd.index("libx264")] = "mpeg4"
        subprocess.run(cmd, check=True)
    with open(path, "rb") as f:
        return f.read()


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
    # §8: still capture, transfer and files
    ap.add_argument("--still-size", default="1616x1080", help="size of stills on the card (default 1616x1080)")
    ap.add_argument("--capture-ms", type=int, default=250, help="StillCapturing time of a shot (default 250)")
    ap.add_argument("--save-ms", type=int, default=200, help="StillSaving time of a shot (default 200)")
    ap.add_argument("--long-exposure-ms", type=int, default=0,
                    help="StillCapturing time of every shot instead of --capture-ms (0 = off)")
    ap.add_argument("--take-timeout-ms", type=int, default=3000,
                    help="actTakePicture/awaitTakePicture answer 40403 after this long (default 3000)")
    ap.add_argument("--postview-size", choices=("Original", "2M"), default="Original",
                    help="postview image size until setPostviewImageSize: Original = the card JPEG's bytes, 2M = a smaller, different JPEG")
    ap.add_argument("--announce-remote-shots", action="store_true",
                    help="also list actTakePicture shots in getEvent index 5")
    ap.add_argument("--refuse-shots", type=int, metavar="CODE",
                    help="answer every actTakePicture with this error code (e.g. 40400, 40401)")
    ap.add_argument("--card", type=int, default=4, help="files on the card at start-up (default 4)")
    ap.add_argument("--card-raw", action="store_true", help="a DSCnnnnn.ARW next to every card JPEG")
    ap.add_argument("--switch-ms", type=int, default=300, help="setCameraFunction takes this long (default 300)")
    ap.add_argument("--break-download-once", action="append", metavar="NAME", default=[],
                    help="first GET of card file NAME sends half its bytes, then closes (repeatable)")
    ap.add_argument("--break-postview-once", action="store_true",
                    help="first postview GET sends half its bytes, then closes")
    ap.add_argument("--shots-log", help="JSON lines, one per picture captured, listed or served")
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
    m = re.fullmatch(r"(\d+)x(\d+)", args.still_size)
    if not m or int(m.group(1)) < 160 or int(m.group(2)) < 16:
        ap.error("--still-size WxH, W >= 160")
    still_w, still_h = int(m.group(1)), int(m.group(2))
    if (args.card < 0 or args.card > 9000 or args.capture_ms < 0 or args.save_ms < 0
            or args.long_exposure_ms < 0 or args.take_timeout_ms <= 0 or args.switch_ms < 0):
        ap.error("--card 0..9000, --*-ms >= 0, --take-timeout-ms > 0")

    tmp = tempfile.mkdtemp(prefix="sony_cam_")
    try:
        frames = make_frames(width, height, args.frames, tmp)
        bases, smalls, thumbs = make_still_assets(still_w, still_h, tmp)
        movie = make_movie(tmp) if args.card >= 2 else b""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for i, f in enumerate(frames):
        if jpeg_size(f) != (width, height) or len(f) >= 1 << 24 or f[:2] != b"\xff\xd8" or f[-2:] != b"\xff\xd9":
            diag("ev=bad_frame index=%d size=%s len=%d" % (i, jpeg_size(f), len(f)))
            sys.exit(2)
    if len({hashlib.sha256(f).digest() for f in frames}) != len(frames):
        diag("ev=duplicate_frames (ffmpeg made identical JPEGs)")
        sys.exit(2)

    media = Media(args, bases, smalls, thumbs, movie)
    make_card(media, args.card)
    app = App(args, frames, width, height, JsonLog(args.log), JsonLog(args.frames_log),
              media, JsonLog(args.shots_log))

    stop = threading.Event()
    wake = threading.Event()
    usr1 = []
    # A parent may have started us with these blocked (the mask is inherited): take them back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGINT, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGUSR1, lambda *a: (usr1.append(1), wake.set()))

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in args.host else socket.AF_INET

        def handle_error(self, request, client_address):
            diag("ev=handler_error peer=%s %r" % (client_address[0], sys.exc_info()[1]))

    server = Server((args.host, args.http_port), Handler)
    server.app = app
    app.port = server.server_address[1]
    log_host = args.host if args.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    app.log_base = "http://%s:%d" % ("[%s]" % log_host if ":" in log_host else log_host, app.port)
    app.log_card()
    threading.Thread(target=app.shooter, daemon=True).start()
    th = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    th.start()
    sys.stdout.write("ready http=%d\n" % app.port)
    sys.stdout.flush()
    while not stop.is_set():
        wake.wait(0.5)
        wake.clear()
        while usr1:
            usr1.pop()
            app.body_shot()
    app.cam.stopping.set()
    app.cam.changed()
    server.shutdown()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
