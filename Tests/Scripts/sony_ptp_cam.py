#!/usr/bin/env python3
"""Independent Sony PTP/IP test camera (Alpha "PC Remote": SDIO setup, live view, release).

Clean-room: written only from ../shared/protocols/ptp.md (sections 1, 2.3, 3,
6, 7, 8.1, 8.4) and ../shared/protocols/sony.md section 4 ("the notes"),
without looking at livegate's own PTP/Sony code or any emulator.  Section
numbers below are "ptp §N" / "sony §N".  The card (--card) also uses a few
facts relayed from public descriptions of Sony's "Remote Control with
Transfer Mode" ("the transfer facts": 0x9212's three parameters and values,
property 0xD295 ContentTransferEnable, 0x2013 before enabling, and the two
readings of when 0x9212 is allowed); see "Card" below.  Python 3.11
standard library only; `ffmpeg` is run once at start-up to make the
live-view JPEGs and the stills (with --card also the 160x120 thumbnails).

    python3 Tests/Scripts/sony_ptp_cam.py --port P [--host 127.0.0.1]
        [--size 640x360] [--frames 30] [--still-size 1616x1080]
        [--model ILCE-7M3] [--log OPS.jsonl] [--frames-log FRAMES.jsonl]
        [--shots-log SHOTS.jsonl] [--capture-ms 300] [--focus-ms 100]
        [--min-interval-ms 33] [--too-fast denied|denied-empty|empty]
        [--lv-startup-ms 0] [--no-focal] [--focal-version 100|101|103]
        [--stray-soi] [--jpeg-align N] [--require-lv-objectinfo]
        [--connect-data N] [--devinfo-vendor setup|all|none]
        [--strict-set-ops] [--focus-mode-code 0x500A]
        [--empty-shot invalid|drop] [--break-transfer-once]
        [--chunk BYTES] [--empty-end]
        [--card [--card-files N] [--shots-on-card] [--transfer-session any|sdio]
         [--transfer-enable-ms 200] [--hidden-card unavailable|empty]
         [--lv-during-transfer off|on] [--break-card-read-once]]
        [--help-choices]

`--port 0` picks a free port.  Prints `ready ptp=P` on stdout once it listens
(command and event connections both use that one port, ptp §1.1).  Runs until
SIGTERM/SIGINT, then exits 0.  SIGUSR1 = a shot taken with the body's own
shutter button (announced exactly like a remote shot, see Release).
Diagnostics go to stderr as `sony_ptp_cam: ev=... key=value`.

Transport (ptp §1, §6; framing code shared in style with nikon_cam.py):
  A new TCP connection is classified by its first packet: type 1
  Init_Command_Request -> command connection, answered with type 2
  (ConnectionNumber 1, 2, 3 ... per command connection, a fixed GUID, the model
  as FriendlyName, version 0x00010000); type 3 Init_Event_Request carrying the
  current command connection's number -> event connection (type 4), any other
  number -> type 5 Init_Fail reason 1; type 13 -> type 14 (first packet awaited
  again); anything else / length < 8 or > 4 MiB: logged, socket closed.
  Probe_Request 13 is answered with 14 on both sockets at any time; Cancel 11
  is logged and ignored.  Data-in = Start_Data, Data packets of --chunk bytes
  (65536), the rest in End_Data (--empty-end: all bytes in Data packets and an
  empty End_Data).  Data-out (DataPhaseInfo 2, and always for 0x9205, 0x9207,
  0x9280) is read completely before the response.  TransactionIDs are logged,
  not checked.  Connections (CHOICE): one client at a time, latest wins (a new
  valid Init_Command_Request closes the previous command+event connections).
  Ops work without an event connection; events raised while none is connected
  are lost (the state they announce, e.g. 0xD215, is still readable).
  Events are PTP/IP type-8 packets on the event connection: u16 code, u32
  TransactionID (of the request that caused it, else 0xFFFFFFFF), u32 param.

Session (ptp §1.2, §6): before a session every op except 0x1001, 0x1002 and
  0x9210 -> 0x2003; an op this camera does not know -> 0x2005 (checked first);
  OpenSession while open -> 0x201E; SessionID 0 / missing -> 0x201D; a handler
  bug -> 0x2002 (logged).  CloseSession or losing the command connection ends
  the session: setup state, live view, S1/S2 button state (and with --card
  transfer mode) are reset (CHOICE).
  Shots waiting in the camera (0xFFFFC001) survive sessions and clients.

DeviceInfo (ptp §1.5): StandardVersion 100, VendorExtensionID 6 (ptp §1.5:
  "Fuji/Sony bodies often report 6 and are recognised by Manufacturer
  string"), VendorExtensionVersion 100, VendorExtensionDesc "" (CHOICE),
  FunctionalMode 0, CaptureFormats [0x3801], ImageFormats [0x3801] (with
  --card [0x3001, 0x3801, 0xB982] - CHOICE),
  Manufacturer "Sony Corporation", Model --model ("ILCE-7M3" = Alpha 7 III,
  named in sony §0), DeviceVersion "3.01", SerialNumber "01234567".
  Which codes DeviceInfo lists (CHOICE, --devinfo-vendor): the notes say
  0x9202 "returns the vendor op/event/prop codes" and libgphoto2 "fixes up"
  its cached DeviceInfo with them, so by default (`setup`) DeviceInfo lists the
  standard ops below plus only 0x9201, 0x9202, 0x9210, no events, and only the
  standard-coded properties (0x5005 0x5007 0x500A 0x500E 0x5010); `all` lists
  every op/event/property; `none` lists no vendor code at all.  Ops are
  answered whether listed or not.  With --card the standard ops 0x100A and
  0x101B are added in all three modes, and with --shots-on-card the standard
  event 0x4002 too (standard codes, listed like the standard ops - CHOICE).
  Operations: 0x1001 GetDeviceInfo, 0x1002 OpenSession, 0x1003 CloseSession,
  0x1004 GetStorageIDs, 0x1005 GetStorageInfo, 0x1007 GetObjectHandles,
  0x1008 GetObjectInfo, 0x1009 GetObject, 0x1014 GetDevicePropDesc,
  0x1015 GetDevicePropValue (standard DPD / raw value of the same properties,
  read-only access - CHOICE; no 0x1016: setting is Sony-only),
  0x9201 SDIO_Connect, 0x9202 SDIO_GetExtDeviceInfo, 0x9205
  SDIO_SetExtDevicePropValue, 0x9207 SDIO_ControlDevice, 0x9209
  SDIO_GetAllExtDevicePropInfo, 0x9210 SDIO_OpenSession, 0x9212
  SetContentsTransferMode, 0x9280, 0x9281; with --card also 0x100A GetThumb
  and 0x101B GetPartialObject.  Not offered (0x2005): 0x1016, 0x100B
  DeleteObject, 0x9211 SDIO_GetPartialLargeObject (notes give no parameters),
  and without --card 0x100A and 0x101B.

Sony setup (ptp §2.3, sony §4.1):
  * 0x9201 SDIO_Connect(p1, 0, 0): p1 1, 2, 3 -> OK (any order, repeats
    allowed - CHOICE, lenient; the order is visible in --log); other p1 ->
    0x201D.  No data phase (CHOICE: the notes give none); --connect-data N
    sends N zero bytes as a data-in phase instead.  p1 = 3 completes the
    setup and STARTS LIVE VIEW (CHOICE, see Live view).
  * 0x9202 SDIO_GetExtDeviceInfo(p1 version, p2): p1 200 (0xC8) or 300
    (0x12C) -> OK, other -> 0x201D; p2 logged.  Layout (CHOICE - the notes only
    say it "returns the vendor op/event/prop codes"): u16 version (= p1),
    AUINT16 operations, AUINT16 events, AUINT16 property+control codes
    (u32 count + u16 items each, ptp §1.5).  Lists = every Sony op
    (0x9201 0x9202 0x9205 0x9207 0x9209 0x9210 0x9212 0x9280 0x9281), events
    0xC201 0xC203, and every property/control code in the table below.
  * 0x9209 SDIO_GetAllExtDevicePropInfo (params ignored): u32 count, u32 0,
    then count Sony DPDs = u16 code, u16 datatype, u8 GetSet (0 ro, 1 rw),
    u8 IsEnabled (always 1 - CHOICE), default value, current value, u8
    FormFlag (0 none, 1 range min/max/step, 2 enum u16 n + values) (ptp §2.3,
    §3).  All properties AND the control codes are included (controls: u16,
    rw, current = button state 1 up / 2 down, enum [1, 2]) - CHOICE.
  * 0x9210 SDIO_OpenSession(p1 session, p2 function mode 0/1/2): opens the
    session like 0x1002 (same errors) and records the mode (any p2 value is
    accepted).  Without --card, and with --transfer-session any, the mode
    changes nothing (CHOICE); with --card --transfer-session sdio it decides
    whether 0x9212 is allowed and mode 1 refuses live view and releases (see
    Card).  0x9212 SetContentsTransferMode without --card: params logged ->
    OK, no effect (CHOICE, ptp §8.4: details UNCONFIRMED); with --card see
    Card.
  * 0x9280(p1, data-out {u32 additional, u32 d2, u32 d3, u32 d4} [+ u8 x, u8 y
    when additional = 2]) and 0x9281(p1) -> OK, no data-in; the data is logged
    (the op log carries it hex) and a diag line names the libgphoto2 patterns
    {2,2,0,0}+{1,1} ("init") and {0,5,0,0} ("close"); other lengths/values
    are accepted with a warning (semantics UNCONFIRMED, ptp §7; CHOICE).

Properties (ptp §3 Sony row, ptp §2.3, sony §4.1).  Set with 0x9205 (p1 =
code, data-out = the raw value) or 0x9207 (p1 = code, data-out = the value;
control codes are u16, 2 = down/on, 1 = up/off).  The notes route properties
through 0x9205 and control codes through 0x9207; both ops accept both kinds
(CHOICE, lenient) unless --strict-set-ops, which answers 0x200A for a
property via 0x9207 or a control via 0x9205.  Errors: unknown code -> 0x200A;
read-only -> 0x200F; value not allowed or wrong data size -> 0x201C.  Data
size is exact for types the notes give; for types marked CHOICE a 1-, 2- or
4-byte value is accepted (read as unsigned LE, i16 sign-extended) so a client
guessing another width still works.  Every accepted property set pushes
0xC203 DevicePropChanged(code) (even when the value did not change, CHOICE).

  code    name                      type  form / values (default first)
  0x5005  WhiteBalance              u16   enum 2 auto, 4 daylight, 5 fluor., 6 tungsten,
                                          7 flash (ptp §3 standard values; Sony-specific
                                          values are not in the notes - CHOICE)
  0x5007  FNumber                   u16   f x 100: 400; enum 180..2200 (thirds)
  0x500A  FocusMode (CHOICE)        u16   2; enum 1 manual, 2 auto, 3 auto-macro.  The
                                          notes give NO Sony focus-mode code: 0x500A and
                                          its values are the generic PTP numbering
                                          (not from the notes); --focus-mode-code moves it
  0x500E  ExposureProgramMode       u16   1; enum 1 M, 2 P, 3 A, 4 S (ptp §3; CHOICE to
                                          offer it, the Sony row does not list it)
  0x5010  ExposureBiasCompensation  i16   EV x 1000: 0; enum round(k*1000/3), k=-15..15
  0xD20D  ShutterSpeed              u32   numerator<<16 | denominator: 1/125 = 0x0001007D;
                                          enum 30",15",8",4",2",1",1/2..1/8000
  0xD20F  ColorTemperature          u16*  5500; range 2500..9900 step 100 (*type CHOICE)
  0xD21E  ISO                       u32   0x00FFFFFF auto (default); enum auto, 100,
                                          125, 160 ... 25600 (thirds)
  0xD213  FocusFound                u8*   read-only: 1 idle/not focused, 2 focused
                                          (value 3 never produced; meaning CHOICE)
  0xD215  ObjectInMemory            u16*  read-only: 0 = no shot waiting, 0x8000 + n =
                                          n shots waiting at 0xFFFFC001 (ptp §8.4 says
                                          ">= 0x8000 (0x8001 = one image)", sony §4.1
                                          "> 0x8000": 0 for none satisfies both - CHOICE)
  0xD221  LiveViewStatus            u8    read-only: 1 live view running, 0 not (CHOICE)
  0xD231  LiveViewSettingEffect     u8*   1 on (default), 2 off; stored only
  0xD25A  PositionKeySetting        u8*   0 camera (default, CHOICE), 1 application;
                                          stored only, not required for anything
  0xD26A  LiveViewImageQuality      u8*   1 (default), 2; stored, JPEG size unchanged
  0xD295  ContentTransferEnable     u8    only with --card (transfer facts): read-only,
                                          0 = transfer mode off (default), 1 = on;
                                          form none (CHOICE); set by 0x9212 (see Card)
  controls (u16, 1 up/off, 2 down/on; default 1):
  0xD2C1  S1 half press, 0xD2C2 S2 full press, 0xD2E6 S1+S2 together,
  0xD2C8  movie record (stored/logged only, no movie is made - CHOICE),
  0xD313  SetLiveViewEnable (2 start, 1 stop live view),
  0xD312  SetPostViewEnable (stored only; 0xFFFFC003 post-view is not offered,
          its layout is UNCONFIRMED -> 0x2009).
  Not implemented: 0xD267 LiveViewArea, 0xD278 live-view URL (HTTP path),
  0xD6AA (QX only) - the notes give no type/values for them.

Live view (ptp §2.3, §6 item 5; sony §4.2):
  * Live view starts at SDIO_Connect(3) or 0xD313 = 2 (CHOICE: the notes give
    no explicit "start" for the classic sequence) and stops at 0xD313 = 1 and
    at session end; start/stop by 0x9201/0xD313 push 0xC203(0xD221).
    GetObject(0xFFFFC002) while it is off -> 0x2009;
    --lv-startup-ms MS (default 0) keeps answering 0x2009 for MS after each
    start (ZV-1 behaviour, "up to 1 s", ptp §2.3).
  * With --card, GetObject(0xFFFFC002) -> 0x200F (no data phase; checked
    before everything else above, not frames-logged, pacing untouched) while
    transfer mode is on unless --lv-during-transfer on, and always in a
    --transfer-session sdio session opened with 0x9210 p2 = 1 (see Card).
    Live view itself keeps running (0xD221 stays 1) - CHOICE.
  * GetObjectInfo(0xFFFFC002) -> ObjectInfo: StorageID 0, format 0x3801,
    ObjectCompressedSize = size of the next dataset, no thumbnail, image W x H
    of --size, depth 24, parent 0, Filename "LiveView.JPG", dates now (all
    CHOICE).  Not required before GetObject (the notes: "optional, once")
    unless --require-lv-objectinfo, which answers 0x2009 until the session has
    asked it once.
  * Pacing: the notes' limit is 30 fps / "don't call twice within 33 ms".  A
    GetObject(0xFFFFC002) less than --min-interval-ms (33) after the last
    SERVED dataset (CHOICE: measured from the last served one, so a client
    retrying every 20 ms gets the next frame) is refused per --too-fast:
    `denied` (default) 0x200F with no data phase; `denied-empty` a data phase
    holding a 16-byte header with JPEG size 0 and all offsets 0, then 0x200F
    (sony §4.2: "a zero image size in the data phase with AccessDenied"); `empty`
    the same zero-size header with 0x2001.  Refusals are not frames-logged.
  * Every served GetObject(0xFFFFC002) is a new frame n = 0, 1, 2 ... (per
    process) carrying JPEG n mod --frames (30 distinct testsrc2 JPEGs, --size
    640x360, baseline, each with a COM segment "sony_ptp_cam lv frame K").
  * Dataset (all LE): u32 offset to JPEG, u32 JPEG size, u32 offset to
    FocalFrameInfo, u32 FocalFrameInfo size; then [--stray-soi: 16 reserved
    bytes FF D8 FF E0 00 .. to trap SOI scanners], then the FocalFrameInfo,
    then the JPEG (the order of the real fixture, sony §4.3: focal block at 16,
    JPEG after it).  --jpeg-align N pads the JPEG with zero bytes to a multiple
    of N and counts the padding in the size field (fixtures show sizes that are
    multiples of 128 incl. tail padding - UNCONFIRMED, default 0 = no padding).
    --no-focal: offset 0, size 0, JPEG right after the header (+ reserved).
  * FocalFrameInfo (UNCONFIRMED single source, ptp §2.3 - followed exactly):
      u16 version (x100; --focal-version, default 101 like the A9 II fixture),
      6 reserved; 40 reserved; u16 n (= 0), 6 reserved (+ n x 24);
      Focus section; [v >= 101: Face section, Tracking section];
      8 reserved, u16 n (= 0), 6 reserved (+ n x 16);
      [v >= 103: Framing section].
      section = u32 Xden, u32 Yden, u16 count, 6 reserved, count x entry;
      entry (24) = u16 type, u16 state, u8 priority, 3 reserved,
                   u32 Xnum, u32 Ynum, u32 height, u32 width.
    Centre = (Xnum/Xden, Ynum/Yden) of the image, size = width/Xden,
    height/Yden.  Every section uses Xden = 10 x JPEG width, Yden = 10 x JPEG
    height (CHOICE), so raw values are JPEG pixels x 10.  The Focus section has
    exactly one entry (type 1, priority 1 - CHOICE); Face, Tracking, Framing
    and the two n-lists are empty; reserved bytes are 0.  v101 block = 144
    bytes (with no entries it would be 120, the fixtures' size).
    Focus state: 1 not focused (S1 up), 4 moving (S1 down, focus pending),
    2 focused (S1 down, 0xD213 = 2) - CHOICE among the notes' states.
  * AF box of frame n in JPEG pixels (CHOICE): side s = even(min(W,H)/5)
    (72 for 640x360), square; a = 2 pi (n mod 120)/120; centre cx = W/2 +
    round(r cos a), cy = H/2 + round(r sin a), r = floor(0.8 (min(W,H) - s)/2)
    (a circle, one turn every 120 frames); af = [cx - s/2, cy - s/2, s, s].

Release and shots (ptp §8.4):
  * 0x9207 0xD2C1 = 2 (S1 down): 0xD213 goes 1 -> 2 after --focus-ms (100)
    with 0xC203(0xD213); 0xD2C1 = 1: 0xD213 back to 1 (+ 0xC203) if it was 2.
  * 0xD2C2 = 2 (S2 down edge; also 0xD2E6 = 2, which presses S1 too): a shot
    is taken --capture-ms (300) later.  One shot per down edge: S2 = 2 while
    already down -> OK, no shot (CHOICE); S2 without S1 also shoots (CHOICE,
    lenient).  Releasing (= 1) never cancels a shot in flight.
  * With --card, a press (value 2 on 0xD2C1, 0xD2C2 or 0xD2E6, via 0x9207 or
    0x9205) -> 0x2019 DeviceBusy, nothing changes, while transfer mode is on
    unless --lv-during-transfer on, and always in a --transfer-session sdio
    session opened with 0x9210 p2 = 1 (CHOICE); value 1 (letting go) is
    always accepted.  SIGUSR1 body shots are never refused.
  * A finished shot joins the camera's FIFO of waiting shots (max 100, CHOICE);
    0xD215 becomes 0x8000 + n and the camera pushes 0xC201 ObjectAdded(param
    0xFFFFC001) then 0xC203 DevicePropChanged(0xD215).  No standard 0x4002 /
    0x400D for it (CHOICE: the notes name the Sony codes); only the card copy
    of --shots-on-card gets a 0x4002 (see Card).
  * 0xFFFFC001 always means the OLDEST waiting shot: GetObjectInfo -> its
    ObjectInfo (StorageID 0, format 0x3801, size, no thumbnail, --still-size,
    depth 24, parent 0, Filename DSCnnnnn.JPG, dates = shot time); GetObject
    -> its JPEG; a completely sent GetObject removes it, then 0xD215 is updated
    (+ 0xC203(0xD215)) - CHOICE.  With nothing waiting (ptp §8.4: "can crash the
    firmware"): --empty-shot invalid (default) -> 0x2009; drop -> both
    connections are closed without a response (the "crash").
  * Stills: deterministic --still-size (1616x1080) testsrc2 JPEGs (8 made at
    start-up, used round-robin) each with a COM segment "sony_ptp_cam shot K
    DSCnnnnn.JPG origin", so every shot's bytes are distinct and identical across
    runs.  Names DSC00001.JPG, DSC00002.JPG ... (per process, remote and body
    shots share the counter).
  * SIGUSR1: a body shot - queued immediately (no --capture-ms) and announced
    exactly like a remote shot (0xD215, 0xC201, 0xC203).
  * --break-transfer-once: the first GetObject(0xFFFFC001) sends Start_Data
    (full length) and half of the bytes in Data packets, then closes both
    connections (shots log "broken"); the shot stays waiting, later reads work.

Card (ptp §8.1, §8.4 and the transfer facts).  The notes say card browsing
  needs Sony's "transfer mode" (0x9210 p2 = 1/2, 0x9212) with UNCONFIRMED
  details.

  Without --card (default) NO card is exposed (CHOICE), exactly as before
  the card existed: GetStorageIDs -> OK with an empty AUINT32 in every mode;
  GetStorageInfo -> 0x2008; GetObjectHandles(0xFFFFFFFF or none) -> empty
  AUINT32, any other storage -> 0x2008; 0x100A / 0x101B -> 0x2005; 0x9212 ->
  OK, no effect; other handles -> 0x2009.  Shots exist only at 0xFFFFC001.
  The card flags below are refused (usage error) without --card.

  --card: a memory card reached through contents-transfer mode.
  * Contents (deterministic, identical across runs; created at start-up):
      handle      object                              format  parent
      0x10000001  DCIM                                0x3001  0 (root)
      0x10000002  DCIM/100MSDCF                       0x3001  0x10000001
      0x10000003  PRIVATE                             0x3001  0 (root)
      0x10000004  PRIVATE/M4ROOT                      0x3001  0x10000003
      0x10000005  PRIVATE/M4ROOT/CLIP                 0x3001  0x10000004
      0x10000006  DCIM/100MSDCF/DSC09001.JPG          0x3801  0x10000002
      0x10000007  DCIM/100MSDCF/DSC09002.JPG          0x3801  0x10000002
      0x10000008  DCIM/100MSDCF/DSC09003.JPG          0x3801  0x10000002
      0x10000009  PRIVATE/M4ROOT/CLIP/C0001.MP4       0xB982  0x10000005
      0x1000000A  DCIM/100MSDCF/DSC10001.JPG .. (--card-files N, default 0:
                  DSC%05d.JPG of 10000 + i, i = 1..N, N <= 50000)
    then every --shots-on-card copy, in shot order, under the next handle.
    Folders: Association (0x3001), AssociationType 1 (GenericFolder), size 0,
    no thumbnail.  DSC0900k.JPG: the still testsrc2 JPEG k-1 (--still-size,
    made like the shots, depth 24) with a COM segment "sony_ptp_cam card
    NAME", so bytes differ from every shot and from each other.  C0001.MP4
    (CHOICE, not a playable movie): an 'ftyp' box (major "mp42", compatible
    "isom" "mp42") and one 'mdat' box of sha256-chained bytes, 307200 bytes in
    all, ImagePix 1920x1080, depth 0, no thumbnail.  --card-files JPEGs (cheap,
    for big listings): 160x120 testsrc2 thumbnail JPEG (i-1) mod 8 with a COM
    segment "sony_ptp_cam card NAME" - a few kB each, built again on every
    read (not kept in memory), ImagePix 160x120, and (CHOICE) its own bytes
    are also its thumbnail.  Every other JPEG on the card has a 160x120 JPEG
    thumbnail (its still scaled into 160x120, letter-boxed, with a COM
    segment "sony_ptp_cam thumb NAME").  Dates (Capture = Modification):
    20240601T090000 for the folders, + 61 s per file in handle order for the
    pre-filled files; a shot copy carries its shot's date.
  * ObjectInfo (ptp §1.5, §8.1): StorageID 0x00010001, ObjectFormat,
    ProtectionStatus 0, ObjectCompressedSize, ThumbFormat 0x3801 (0 without
    thumbnail), ThumbCompressedSize, ThumbPixWidth/Height 160x120 (0x0
    without), ImagePix W x H, bit depth, ParentObject (0 = root),
    AssociationType (1 folder, 0 file), AssociationDesc 0, SequenceNumber 0,
    Filename, CaptureDate, ModificationDate "YYYYMMDDThhmmss", Keywords "".
  * StorageInfo(0x00010001) (ptp §8.1): StorageType 4 removable RAM,
    FilesystemType 2 hierarchical, AccessCapability 0 R/W (like the sibling
    cameras, although DeleteObject is not offered - CHOICE), MaxCapacity
    128 GiB, FreeSpace = capacity - bytes of all files, FreeSpaceInImages =
    free // 10 MB, StorageDescription "Memory Card Slot 1", VolumeLabel ""
    (CHOICE).
  * Transfer mode (transfer facts).  0x9212 SetContentsTransferMode(p1
    ContentsSelectType 1 camera / 2 host, p2 TransferMode 1 enable / 0
    disable, p3 AdditionalInformation), no data phase:
      - --transfer-session any (default; reading 1): accepted in any open
        session (0x1002 or 0x9210 with any function mode).
      - --transfer-session sdio (reading 2: "switching cannot be performed
        while connected"): accepted only in a session opened with 0x9210 p2
        = 1 or 2; in any other session (0x1002, or 0x9210 p2 = 0) -> 0x2005
        OperationNotSupported (CHOICE; 0x9212 stays listed in 0x9202's
        operations, so a client can tell "not in this session" from "not on
        this body"; not 0x2019, which clients retry).  A 0x9210 p2 = 1
        (transfer-only) session also answers GetObject(0xFFFFC002) with
        0x200F and presses with 0x2019 whether or not transfer mode is on;
        everything else there (SDIO_Connect, properties, 0xFFFFC001 shots)
        works (CHOICE); p2 = 0 and 2 sessions work as without --card.
    Checked in this order: session open (0x2003), the session rule (0x2005),
    then p1 not 1/2 or p2 not 0/1 (or missing) -> 0x201D InvalidParameter;
    p3 != 0 is accepted with a warning (CHOICE, lenient).  p1 1 and 2 behave
    the same: the whole card is visible (CHOICE).
      - enable (p2 = 1) -> OK; transfer mode is ON from now; 0xD295 becomes 1
        --transfer-enable-ms (200) later, and 0xC203 DevicePropChanged(0xD295)
        is pushed then (TransactionID of the 0x9212).  Enabling again while
        on (or while the delay runs) -> OK, nothing changes, no event.
      - disable (p2 = 0) -> OK; transfer mode OFF and 0xD295 = 0 at once,
        0xC203(0xD295) pushed if it was 1 (a disable during the delay cancels
        it: no event).
      - Ending the session (CloseSession, losing the command connection, a
        new client) turns transfer mode off silently (CHOICE).
    "On" (from the accepted enable to the disable) is what refuses live view
    and presses; the card itself is reachable only while 0xD295 reads 1 (a
    client that enables and then polls 0xD295 via 0x9209, as the transfer
    facts describe, sees both at once after the delay).
  * While 0xD295 = 0 (card hidden), --hidden-card:
      `unavailable` (default, CHOICE; one body answered so): GetStorageIDs,
        GetStorageInfo (any ID) and GetObjectHandles (any params) -> 0x2013
        StoreNotAvailable; GetObjectInfo / GetObject / GetPartialObject /
        GetThumb on a card handle -> 0x2013, on a handle the card does not
        hold -> 0x2009.
      `empty`: exactly the no-card answers (empty AUINT32, 0x2008; card
        handles -> 0x2009).
  * While 0xD295 = 1 (ptp §8.1): GetStorageIDs -> [0x00010001];
    GetStorageInfo(0x00010001), other ID -> 0x2008; GetObjectHandles(p1
    storage 0xFFFFFFFF or 0x00010001, else 0x2008; p2 format 0 or 0xFFFFFFFF
    = any, else that ObjectFormat only; p3 parent 0 = all levels, 0xFFFFFFFF
    = root only, a folder = its children, a file = none, unknown -> 0x2009;
    missing params = all, any, all levels), handles in handle order;
    GetObjectInfo; GetObject (whole file; a folder sends 0 bytes);
    GetPartialObject 0x101B(handle, offset, max): offset > size -> 0x201D,
    else min(max, size - offset) bytes (max missing = 0xFFFFFFFF), response
    param 1 = bytes sent; GetThumb 0x100A -> the thumbnail, none (movie,
    folder) -> 0x2010 NoThumbnailPresent.  Unknown handle -> 0x2009.
  * 0xFFFFC001 and 0xFFFFC002 are not card handles: GetObjectInfo/GetObject
    on them behave as described above in every mode (except the 0x200F of
    Live view); GetPartialObject / GetThumb on them -> 0x2009 (CHOICE: the
    notes read them only with GetObject).
  * --shots-on-card: every shot (remote and body) is also written to
    DCIM/100MSDCF/<its name> as a new card object (next handle, same bytes as
    at 0xFFFFC001, a thumbnail of its still) when it is taken, and stays
    there (reading or losing the 0xFFFFC001 copy does not remove it).  After
    the usual 0xC201/0xC203 the camera pushes 0x4002 ObjectAdded(handle) -
    only if 0xD295 reads 1 at that moment (CHOICE); otherwise a client sees it
    on its next listing.  Without the flag shots live only at 0xFFFFC001.
  * --break-card-read-once: the first GetObject / GetPartialObject of a card
    FILE (not a folder, not 0xFFFFC001, at least 1 byte to send) sends
    Start_Data with that transaction's full length and half of its bytes in
    Data packets, then closes both connections (shots log
    "broken_card_read"; no card_read line); later reads work.  Independent of
    --break-transfer-once.

Logs (JSON lines, appended, one object per line):
  --log:        {"ev":"op","code":"0x9207","params":[...],"tid":N,"t":...}
                for every operation request (+ "data": hex of data-out bytes);
                {"ev":"set","op":"0x9205"|"0x9207","code":"0xD20D","value":N
                 (int, signed for i16; null if the size was wrong),
                 "raw_hex":"7d000100","result":"0x2001","t":...} for every set.
                With --card also (the 0x9212 params are in its "op" line too):
                {"ev":"transfer_mode","params":[p1,p2,p3],"session_mode":
                 0|1|2|null (0x9210 p2; null = 0x1002 session),"result":
                 "0x2001","t":...} for every 0x9212, and
                {"ev":"transfer_state","d295":0|1,"why":"...","t":...}
                whenever 0xD295 changes.
  --frames-log: {"ev":"frame","n":N,"idx":K (which of the --frames JPEGs),
                 "sha256": of the JPEG bytes (without --jpeg-align padding),
                 "bytes": JPEG length,"width":W,"height":H,
                 "af":[x,y,w,h] in JPEG pixels or null (--no-focal),
                 "af_raw":{"version","xden","yden","type","state","priority",
                           "xnum","ynum","height","width"} or null,"t":...}
                one per dataset whose data phase was fully written.
  --shots-log:  {"ev":"captured"|"served"|"broken","origin":"remote"|"body",
                 "name":"DSC00001.JPG","bytes":N,"sha256":...,"t":...}
                ("broken" adds "sent": bytes sent before the cut).
                With --card also, for every card FILE (not folders), at
                start-up before `ready` and when a --shots-on-card copy is
                written:
                {"ev":"card","origin":"card"|"remote"|"body","handle":N,
                 "name":"DSC09001.JPG","path":"/DCIM/100MSDCF/DSC09001.JPG",
                 "bytes":N,"sha256":...,"thumb_sha256":... or null,"t":...};
                for every card read whose data phase was fully written:
                {"ev":"card_read","op":"0x1009"|"0x101B"|"0x100A","handle":N,
                 "name":...,"offset":N,"length":N (bytes sent),"sha256": of
                 the bytes sent,"t":...} (0x100A: offset 0, the thumbnail);
                and {"ev":"broken_card_read","op":...,"handle":N,"name":...,
                 "offset":N,"length":N (announced),"sent":N,"t":...}.
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
# Codes (ptp §1, §2.3, §3, §8.4)

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
RC_STORE_NOT_AVAILABLE = 0x2013
RC_DEVICE_BUSY = 0x2019
RC_INVALID_PROP_VALUE = 0x201C
RC_INVALID_PARAMETER = 0x201D
RC_SESSION_ALREADY_OPEN = 0x201E

EV_OBJECT_ADDED = 0x4002
EV_SONY_OBJECT_ADDED = 0xC201
EV_SONY_PROP_CHANGED = 0xC203

OFC_ASSOCIATION = 0x3001
OFC_EXIF_JPEG = 0x3801
OFC_MP4 = 0xB982

H_SHOT = 0xFFFFC001
H_LIVEVIEW = 0xFFFFC002

MAX_PACKET = 4 << 20
MAX_DATA_OUT = 1 << 20
IO_TIMEOUT = 30.0
FIRST_PACKET_TIMEOUT = 10.0
AF_PERIOD = 120
DEN_SCALE = 10
MAX_SHOTS = 100
N_STILLS = 8
STORAGE_ID = 0x00010001
H_CARD_FIRST = 0x10000001
CARD_CAPACITY = 128 << 30
CARD_DATE0 = (2024, 6, 1, 9, 0, 0)
CARD_FILE_STEP_S = 61
THUMB_W, THUMB_H = 160, 120
MOVIE_BYTES = 307200
MAX_CARD_FILES = 50000
CAM_GUID = bytes.fromhex("534f4e592d5054502d43414d00070003")   # "SONY-PTP-CAM" + 00 07 00 03

OPS = {
    0x1001: "GetDeviceInfo", 0x1002: "OpenSession", 0x1003: "CloseSession",
    0x1004: "GetStorageIDs", 0x1005: "GetStorageInfo", 0x1007: "GetObjectHandles",
    0x1008: "GetObjectInfo", 0x1009: "GetObject",
    0x1014: "GetDevicePropDesc", 0x1015: "GetDevicePropValue",
    0x9201: "SDIO_Connect", 0x9202: "SDIO_GetExtDeviceInfo",
    0x9205: "SDIO_SetExtDevicePropValue", 0x9207: "SDIO_ControlDevice",
    0x9209: "SDIO_GetAllExtDevicePropInfo", 0x9210: "SDIO_OpenSession",
    0x9212: "SetContentsTransferMode", 0x9280: "Sony_9280", 0x9281: "Sony_9281",
}
STD_OPS = [c for c in OPS if c < 0x9000]
SONY_OPS = [c for c in OPS if c >= 0x9000]
SETUP_OPS = [0x9201, 0x9202, 0x9210]
DATA_OUT_OPS = (0x9205, 0x9207, 0x9280)
SONY_EVENTS = [EV_SONY_OBJECT_ADDED, EV_SONY_PROP_CHANGED]
CARD_OPS = {0x100A: "GetThumb", 0x101B: "GetPartialObject"}     # only with --card

DT_FMT = {0x0001: "b", 0x0002: "B", 0x0003: "h", 0x0004: "H", 0x0005: "i", 0x0006: "I",
          0x0007: "q", 0x0008: "Q"}
DT_U8, DT_I16, DT_U16, DT_U32 = 0x0002, 0x0003, 0x0004, 0x0006

P_WB, P_FNUMBER, P_EXPPROG, P_EV = 0x5005, 0x5007, 0x500E, 0x5010
P_SHUTTER, P_COLORTEMP, P_ISO = 0xD20D, 0xD20F, 0xD21E
P_FOCUS_FOUND, P_OBJ_IN_MEMORY, P_LV_STATUS = 0xD213, 0xD215, 0xD221
P_LV_EFFECT, P_POSITION_KEY, P_LV_QUALITY = 0xD231, 0xD25A, 0xD26A
P_CONTENT_TRANSFER = 0xD295                                     # only with --card
C_S1, C_S2, C_MOVIE, C_S1S2, C_POSTVIEW, C_LV_ENABLE = 0xD2C1, 0xD2C2, 0xD2C8, 0xD2E6, 0xD312, 0xD313
PRESS_CONTROLS = (C_S1, C_S2, C_S1S2)
CONTROLS = {C_S1: "S1", C_S2: "S2", C_MOVIE: "MovieRec", C_S1S2: "S1S2",
            C_POSTVIEW: "SetPostViewEnable", C_LV_ENABLE: "SetLiveViewEnable"}
ISO_AUTO = 0x00FFFFFF


def _shutter_values():
    out = [(n << 16) | 1 for n in (30, 15, 8, 4, 2, 1)]
    for d in (2, 4, 8, 15, 30, 60, 125, 250, 500, 1000, 2000, 4000, 8000):
        out.append((1 << 16) | d)
    return out


def _iso_values():
    base = [100, 125, 160, 200, 250, 320, 400, 500, 640, 800, 1000, 1250, 1600, 2000, 2500,
            3200, 4000, 5000, 6400, 8000, 10000, 12800, 16000, 20000, 25600]
    return [ISO_AUTO] + base


class Prop:
    """dt: PTP datatype; rw; default; form ("enum", [..]) | ("range", (min, max, step)) | None;
    exact: the notes give the type (data size must match) - else 1/2/4 bytes are accepted."""

    def __init__(self, name, dt, rw, default, form, exact, std):
        self.name, self.dt, self.rw, self.default, self.form = name, dt, rw, default, form
        self.exact, self.std = exact, std

    def allowed(self, v):
        if self.form is None:
            return True
        kind, vals = self.form
        if kind == "enum":
            return v in vals
        lo, hi, step = vals
        return lo <= v <= hi and (v - lo) % step == 0


def build_props(focus_code, card=False):
    fn = [180, 200, 220, 250, 280, 320, 350, 400, 450, 500, 560, 630, 710, 800, 900, 1000,
          1100, 1300, 1400, 1600, 1800, 2000, 2200]
    props = {
        P_WB: Prop("WhiteBalance", DT_U16, True, 2, ("enum", [2, 4, 5, 6, 7]), True, True),
        P_FNUMBER: Prop("FNumber", DT_U16, True, 400, ("enum", fn), True, True),
        focus_code: Prop("FocusMode", DT_U16, True, 2, ("enum", [1, 2, 3]), False, focus_code < 0xD000),
        P_EXPPROG: Prop("ExposureProgramMode", DT_U16, True, 1, ("enum", [1, 2, 3, 4]), True, True),
        P_EV: Prop("ExposureBiasCompensation", DT_I16, True, 0,
                   ("enum", [int(round(k * 1000 / 3.0)) for k in range(-15, 16)]), True, True),
        P_SHUTTER: Prop("ShutterSpeed", DT_U32, True, (1 << 16) | 125, ("enum", _shutter_values()),
                        True, False),
        P_COLORTEMP: Prop("ColorTemperature", DT_U16, True, 5500, ("range", (2500, 9900, 100)),
                          False, False),
        P_ISO: Prop("ISO", DT_U32, True, ISO_AUTO, ("enum", _iso_values()), True, False),
        P_FOCUS_FOUND: Prop("FocusFound", DT_U8, False, 1, None, False, False),
        P_OBJ_IN_MEMORY: Prop("ObjectInMemory", DT_U16, False, 0, None, False, False),
        P_LV_STATUS: Prop("LiveViewStatus", DT_U8, False, 0, None, True, False),
        P_LV_EFFECT: Prop("LiveViewSettingEffect", DT_U8, True, 1, ("enum", [1, 2]), False, False),
        P_POSITION_KEY: Prop("PositionKeySetting", DT_U8, True, 0, ("enum", [0, 1]), False, False),
        P_LV_QUALITY: Prop("LiveViewImageQuality", DT_U8, True, 1, ("enum", [1, 2]), False, False),
    }
    for c, name in CONTROLS.items():
        props[c] = Prop(name, DT_U16, True, 1, ("enum", [1, 2]), True, False)
    if card:
        props[P_CONTENT_TRANSFER] = Prop("ContentTransferEnable", DT_U8, False, 0, None, True, False)
    return props


class PtpError(Exception):
    def __init__(self, code, why=""):
        super().__init__("0x%04X %s" % (code, why))
        self.code = code


class Garbage(Exception):
    pass


class ConnGone(Exception):
    pass


class Dropped(Exception):
    """The camera closed the connections on purpose (no response)."""


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
        sys.stderr.write("sony_ptp_cam: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def sha(b):
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------
# Dataset packing (ptp §1.5, §3)

def pstr(s):
    if not s:
        return b"\x00"
    s = s[:254]
    return bytes([len(s) + 1]) + (s + "\x00").encode("utf-16-le")


def au16(values):
    return struct.pack("<I", len(values)) + b"".join(struct.pack("<H", v) for v in values)


def au32(values):
    return struct.pack("<I%dI" % len(values), len(values), *values)


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


def object_info(fmt, size, w, h, name, date):
    head = struct.pack("<IHHIHIIIIIIIHII", 0, fmt, 0, size, 0, 0, 0, 0, w, h, 24, 0, 0, 0, 0)
    assert len(head) == 52
    return head + pstr(name) + pstr(date) + pstr(date) + pstr("")


def card_movie():
    """C0001.MP4 (CHOICE): ftyp + one mdat of sha256-chained bytes, MOVIE_BYTES in all."""
    ftyp = struct.pack(">I4s4sI4s4s", 24, b"ftyp", b"mp42", 0, b"isom", b"mp42")
    need = MOVIE_BYTES - len(ftyp) - 8
    out = bytearray()
    h = hashlib.sha256(b"sony_ptp_cam C0001.MP4").digest()
    while len(out) < need:
        out += h
        h = hashlib.sha256(h).digest()
    return ftyp + struct.pack(">I4s", 8 + need, b"mdat") + bytes(out[:need])


class CardObj:
    """One object on the card (--card).  data: bytes, or None and make() builds them on each read
    (the cheap --card-files JPEGs); thumb: bytes, None, or "self" (the file is its own thumbnail)."""

    def __init__(self, handle, fmt, parent, name, path, w, h, date, origin, data=None, make=None,
                 thumb=None):
        self.handle, self.fmt, self.parent, self.name, self.path = handle, fmt, parent, name, path
        self.w, self.h, self.date, self.origin = w, h, date, origin
        self._data, self._make, self._thumb = data, make, thumb
        body = self.data
        self.size = len(body)
        self.sha = sha(body)
        t = body if thumb == "self" else thumb
        self.thumb_size = len(t) if t is not None else 0
        self.thumb_sha = sha(t) if t is not None else None

    @property
    def folder(self):
        return self.fmt == OFC_ASSOCIATION

    @property
    def data(self):
        return self._data if self._data is not None else self._make()

    @property
    def thumb(self):
        return self.data if self._thumb == "self" else self._thumb

    def info(self):
        has_thumb = self._thumb is not None
        head = struct.pack("<IHHIHIIIIIIIHII", STORAGE_ID, self.fmt, 0, self.size,
                           OFC_EXIF_JPEG if has_thumb else 0, self.thumb_size,
                           THUMB_W if has_thumb else 0, THUMB_H if has_thumb else 0,
                           self.w, self.h, 24 if self.fmt == OFC_EXIF_JPEG else 0,
                           self.parent, 1 if self.folder else 0, 0, 0)
        assert len(head) == 52
        return head + pstr(self.name) + pstr(self.date) + pstr(self.date) + pstr("")


def pack_value(dt, v):
    return struct.pack("<" + DT_FMT[dt], v)


def dpd(code, prop, cur, sony):
    """Device property description; sony=True adds the u8 IsEnabled after GetSet (ptp §2.3)."""
    body = struct.pack("<HHB", code, prop.dt, 1 if prop.rw else 0)
    if sony:
        body += b"\x01"
    body += pack_value(prop.dt, prop.default) + pack_value(prop.dt, cur)
    if prop.form is None:
        return body + b"\x00"
    kind, vals = prop.form
    if kind == "range":
        return body + b"\x01" + b"".join(pack_value(prop.dt, v) for v in vals)
    return body + b"\x02" + struct.pack("<H", len(vals)) + b"".join(pack_value(prop.dt, v) for v in vals)


def decode_value(prop, data):
    """-> int or None (wrong size)."""
    fmt = DT_FMT[prop.dt]
    if len(data) == struct.calcsize(fmt):
        return struct.unpack("<" + fmt, data)[0]
    if prop.exact or len(data) not in (1, 2, 4):
        return None
    v = int.from_bytes(data, "little")
    if prop.dt == DT_I16 and len(data) >= 2:
        v = struct.unpack("<h", data[:2])[0] if len(data) == 2 else struct.unpack("<i", data)[0]
    return v


# --------------------------------------------------------------------------
# PTP/IP connection (ptp §1.1)

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

class Shot:
    def __init__(self, name, data, origin, date):
        self.name, self.data, self.origin, self.date = name, data, origin, date
        self.sha = sha(data)


class Camera:
    def __init__(self, args, lv_frames, stills, logs, thumbs=None):
        self.args = args
        self.lock = threading.RLock()
        self.log, self.frames_log, self.shots_log = logs
        self.props_def = build_props(args.focus_mode_code, card=args.card)
        self.values = {c: p.default for c, p in self.props_def.items()}
        self.lv_frames = lv_frames
        self.lv_shas = [sha(f) for f in lv_frames]
        self.W, self.H = args.width, args.height
        self.stills = stills
        self.cmd = None
        self.evt = None
        self.conn_no = 0
        # live view
        self.lv_on = False
        self.lv_started = 0.0
        self.lv_last_served = None
        self.lv_n = 0
        # release / shots
        self.focus_gen = 0
        self.shots = collections.deque()
        self.shot_no = 0
        self.broken_done = False
        # card / transfer mode (--card)
        self.thumbs = thumbs
        self.xfer_on = False            # from an accepted 0x9212 enable to the disable/session end
        self.d295 = 0                   # 0xD295 ContentTransferEnable
        self.xfer_gen = 0
        self.card_broken_done = False
        self.objects = {}               # handle -> CardObj, insertion (= handle) order
        self.children = {}              # parent handle (0 = root) -> [handles]
        self.next_handle = H_CARD_FIRST
        self.card_folder = 0            # DCIM/100MSDCF
        self.card_total = 0             # bytes of all card files
        if args.card:
            self.fill_card()

    # ---- helpers
    def slog(self, ev, shot, **extra):
        d = {"ev": ev, "origin": shot.origin, "name": shot.name, "bytes": len(shot.data),
             "sha256": shot.sha, "t": time.time()}
        d.update(extra)
        self.shots_log.write(d)

    def value(self, code):
        with self.lock:
            if code == P_CONTENT_TRANSFER:
                return self.d295
            if code == P_LV_STATUS:
                return 1 if self.lv_on else 0
            if code == P_OBJ_IN_MEMORY:
                return 0x8000 + min(len(self.shots), 0x7FFF) if self.shots else 0
            return self.values[code]

    def push_events(self, evs, tid=0xFFFFFFFF):
        with self.lock:
            conn = self.evt
        for code, p in evs:
            diag("ev=event code=0x%04X param=0x%08X%s" % (code, p, "" if conn else " (no event connection)"))
        if conn is None:
            return
        for code, p in evs:
            try:
                conn.send(PT_EVENT, struct.pack("<HII", code, tid & 0xFFFFFFFF, p))
            except OSError as e:
                diag("ev=event_send_failed %r" % e)
                return

    # ---- card (--card)
    def _card_add(self, fmt, parent, name, w, h, date, origin, data=None, make=None, thumb=None):
        with self.lock:
            handle = self.next_handle
            self.next_handle += 1
            path = (self.objects[parent].path if parent else "") + "/" + name
            obj = CardObj(handle, fmt, parent, name, path, w, h, date, origin, data, make, thumb)
            self.objects[handle] = obj
            self.children.setdefault(parent, []).append(handle)
            self.card_total += obj.size
        if not obj.folder:
            self.shots_log.write({"ev": "card", "origin": origin, "handle": handle, "name": name,
                                  "path": path, "bytes": obj.size, "sha256": obj.sha,
                                  "thumb_sha256": obj.thumb_sha, "t": time.time()})
        return obj

    def fill_card(self):
        args = self.args
        t0 = datetime.datetime(*CARD_DATE0)
        d0 = ptp_date(t0)
        files = [0]

        def date():
            files[0] += 1
            return ptp_date(t0 + datetime.timedelta(seconds=CARD_FILE_STEP_S * files[0]))

        def folder(parent, name):
            return self._card_add(OFC_ASSOCIATION, parent, name, 0, 0, d0, "card", data=b"").handle
        dcim = folder(0, "DCIM")
        msdcf = folder(dcim, "100MSDCF")
        private = folder(0, "PRIVATE")
        m4root = folder(private, "M4ROOT")
        clip = folder(m4root, "CLIP")
        self.card_folder = msdcf
        for k in range(3):
            name = "DSC%05d.JPG" % (9001 + k)
            data = insert_com(self.stills[k % len(self.stills)], "sony_ptp_cam card %s" % name)
            thumb = insert_com(self.thumbs[k % len(self.thumbs)], "sony_ptp_cam thumb %s" % name)
            self._card_add(OFC_EXIF_JPEG, msdcf, name, args.still_w, args.still_h, date(), "card",
                           data=data, thumb=thumb)
        self._card_add(OFC_MP4, clip, "C0001.MP4", 1920, 1080, date(), "card", data=card_movie())
        for i in range(1, args.card_files + 1):
            name = "DSC%05d.JPG" % (10000 + i)
            base = self.thumbs[(i - 1) % len(self.thumbs)]
            self._card_add(OFC_EXIF_JPEG, msdcf, name, THUMB_W, THUMB_H, date(), "card",
                           make=lambda b=base, t="sony_ptp_cam card %s" % name: insert_com(b, t),
                           thumb="self")
        diag("ev=card objects=%d files=%d bytes=%d" % (len(self.objects), len(self.objects) - 5,
                                                       self.card_total))

    def card_add_shot(self, shot, k):
        thumb = insert_com(self.thumbs[k % len(self.thumbs)], "sony_ptp_cam thumb %s" % shot.name)
        obj = self._card_add(OFC_EXIF_JPEG, self.card_folder, shot.name, self.args.still_w,
                             self.args.still_h, shot.date, shot.origin, data=shot.data, thumb=thumb)
        diag("ev=shot_on_card name=%s handle=0x%08X" % (shot.name, obj.handle))
        return obj

    # ---- transfer mode (--card)
    def transfer_set(self, enable, tid):
        with self.lock:
            if enable:
                if self.xfer_on:
                    diag("ev=transfer_enable_again (no change) d295=%d" % self.d295)
                    return
                self.xfer_on = True
                self.xfer_gen += 1
                gen = self.xfer_gen
            else:
                was = self.d295
                self.xfer_on = False
                self.xfer_gen += 1
                self.d295 = 0
        if enable:
            diag("ev=transfer_enable d295_in_ms=%d" % self.args.transfer_enable_ms)
            t = threading.Timer(self.args.transfer_enable_ms / 1000.0, self._transfer_ready,
                                args=(gen, tid))
            t.daemon = True
            t.start()
            return
        diag("ev=transfer_disable")
        if was:
            self._d295_changed(0, "0x9212 disable", tid)

    def _transfer_ready(self, gen, tid):
        with self.lock:
            if gen != self.xfer_gen or not self.xfer_on or self.d295 == 1:
                return
            self.d295 = 1
        self._d295_changed(1, "0x9212 enable + %d ms" % self.args.transfer_enable_ms, tid)

    def _d295_changed(self, v, why, tid=0xFFFFFFFF, notify=True):
        diag("ev=content_transfer_enable value=%d why=%s" % (v, why))
        self.log.write({"ev": "transfer_state", "d295": v, "why": why, "t": time.time()})
        if notify:
            self.push_events([(EV_SONY_PROP_CHANGED, P_CONTENT_TRANSFER)], tid)

    def transfer_reset(self, why):
        with self.lock:
            was = self.d295
            self.xfer_on = False
            self.xfer_gen += 1
            self.d295 = 0
        if was:
            self._d295_changed(0, why, notify=False)

    # ---- live view
    def lv_start(self, why):
        with self.lock:
            if self.lv_on:
                return
            self.lv_on = True
            self.lv_started = time.monotonic()
            self.lv_last_served = None
        diag("ev=liveview_start why=%s" % why)
        self.push_events([(EV_SONY_PROP_CHANGED, P_LV_STATUS)])

    def lv_stop(self, why, notify=True):
        with self.lock:
            was = self.lv_on
            self.lv_on = False
        if was:
            diag("ev=liveview_stop why=%s" % why)
            if notify:
                self.push_events([(EV_SONY_PROP_CHANGED, P_LV_STATUS)])

    def af_box(self, n):
        W, H = self.W, self.H
        m = min(W, H)
        s = max(4, (m // 5) // 2 * 2)
        r = int(0.8 * (m - s) / 2)
        a = 2 * math.pi * (n % AF_PERIOD) / AF_PERIOD
        cx = W // 2 + int(round(r * math.cos(a)))
        cy = H // 2 + int(round(r * math.sin(a)))
        return cx, cy, s, s

    def focus_state(self):
        with self.lock:
            if self.values[C_S1] != 2:
                return 1
            return 2 if self.values[P_FOCUS_FOUND] == 2 else 4

    def focal_block(self, n):
        v = self.args.focal_version
        xden, yden = self.W * DEN_SCALE, self.H * DEN_SCALE
        cx, cy, w, h = self.af_box(n)
        state = self.focus_state()
        raw = {"version": v, "xden": xden, "yden": yden, "type": 1, "state": state, "priority": 1,
               "xnum": cx * DEN_SCALE, "ynum": cy * DEN_SCALE, "height": h * DEN_SCALE,
               "width": w * DEN_SCALE}

        def section(entries):
            return struct.pack("<IIH6x", xden, yden, len(entries)) + b"".join(entries)
        entry = struct.pack("<HHB3xIIII", raw["type"], raw["state"], raw["priority"],
                            raw["xnum"], raw["ynum"], raw["height"], raw["width"])
        blk = struct.pack("<H6x", v) + bytes(40) + struct.pack("<H6x", 0)
        blk += section([entry])
        if v >= 101:
            blk += section([]) + section([])
        blk += bytes(8) + struct.pack("<H6x", 0)
        if v >= 103:
            blk += section([])
        af = [cx - w // 2, cy - h // 2, w, h]
        return blk, af, raw

    def dataset(self, n):
        """-> (payload, idx, af, raw)."""
        args = self.args
        idx = n % len(self.lv_frames)
        jpeg = self.lv_frames[idx]
        field = jpeg
        if args.jpeg_align > 1:
            field = jpeg + bytes((-len(jpeg)) % args.jpeg_align)
        reserved = (b"\xff\xd8\xff\xe0" + bytes(12)) if args.stray_soi else b""
        start = 16 + len(reserved)
        if args.no_focal:
            focal, af, raw = b"", None, None
            hdr = struct.pack("<IIII", start, len(field), 0, 0)
        else:
            focal, af, raw = self.focal_block(n)
            hdr = struct.pack("<IIII", start + len(focal), len(field), start, len(focal))
        return hdr + reserved + focal + field, idx, af, raw

    def lv_get(self, sess):
        """-> (payload, n, idx, af, raw) or raises PtpError / returns ('refused', payload)."""
        args = self.args
        with self.lock:
            now = time.monotonic()
            if not self.lv_on:
                raise PtpError(RC_INVALID_HANDLE, "live view not running")
            if now - self.lv_started < args.lv_startup_ms / 1000.0:
                raise PtpError(RC_INVALID_HANDLE, "live view starting")
            if args.require_lv_objectinfo and not sess.lv_info_seen:
                raise PtpError(RC_INVALID_HANDLE, "no GetObjectInfo(0xFFFFC002) yet")
            if (self.lv_last_served is not None
                    and now - self.lv_last_served < args.min_interval_ms / 1000.0):
                return None
            self.lv_last_served = now
            n = self.lv_n
            self.lv_n += 1
        payload, idx, af, raw = self.dataset(n)
        return payload, n, idx, af, raw

    # ---- release / focus / shots (ptp §8.4)
    def set_control(self, code, v, tid):
        if code == C_S1S2:
            with self.lock:
                self.values[C_S1S2] = v
            self.set_control(C_S1, v, tid)
            self.set_control(C_S2, v, tid)
            return
        with self.lock:
            old = self.values[code]
            self.values[code] = v
        if code == C_S1:
            if v == 2 and old != 2:
                self.start_focus()
            elif v == 1 and old == 2:
                self.stop_focus(tid)
        elif code == C_S2:
            if v == 2 and old != 2:
                self.start_capture(tid)
            elif v == 2:
                diag("ev=s2_already_down (no new shot)")
        elif code == C_LV_ENABLE:
            if v == 2:
                self.lv_start("0xD313=2")
            else:
                self.lv_stop("0xD313=1")

    def start_focus(self):
        with self.lock:
            self.focus_gen += 1
            gen = self.focus_gen
        t = threading.Timer(self.args.focus_ms / 1000.0, self._focus_done, args=(gen,))
        t.daemon = True
        t.start()

    def _focus_done(self, gen):
        with self.lock:
            if gen != self.focus_gen or self.values[C_S1] != 2:
                return
            changed = self.values[P_FOCUS_FOUND] != 2
            self.values[P_FOCUS_FOUND] = 2
        if changed:
            diag("ev=focus_found")
            self.push_events([(EV_SONY_PROP_CHANGED, P_FOCUS_FOUND)])

    def stop_focus(self, tid=0xFFFFFFFF, notify=True):
        with self.lock:
            self.focus_gen += 1
            changed = self.values[P_FOCUS_FOUND] != 1
            self.values[P_FOCUS_FOUND] = 1
        if changed and notify:
            self.push_events([(EV_SONY_PROP_CHANGED, P_FOCUS_FOUND)], tid)

    def start_capture(self, tid):
        diag("ev=capture_start delay_ms=%d" % self.args.capture_ms)
        t = threading.Timer(self.args.capture_ms / 1000.0, self._capture_done, args=(tid,))
        t.daemon = True
        t.start()

    def _capture_done(self, tid):
        try:
            self.new_shot("remote", tid)
        except Exception:
            diag("ev=capture_error %s" % traceback.format_exc())

    def new_shot(self, origin, tid=0xFFFFFFFF):
        with self.lock:
            if len(self.shots) >= MAX_SHOTS:
                diag("ev=shot_dropped (buffer full, %d waiting)" % len(self.shots))
                return
            k = self.shot_no
            self.shot_no += 1
            name = "DSC%05d.JPG" % (k + 1)
            data = insert_com(self.stills[k % len(self.stills)],
                              "sony_ptp_cam shot %d %s %s" % (k + 1, name, origin))
            shot = Shot(name, data, origin, now_date())
            self.shots.append(shot)
            waiting = len(self.shots)
        diag("ev=shot name=%s origin=%s bytes=%d waiting=%d" % (name, origin, len(data), waiting))
        self.slog("captured", shot)
        evs = [(EV_SONY_OBJECT_ADDED, H_SHOT), (EV_SONY_PROP_CHANGED, P_OBJ_IN_MEMORY)]
        if self.args.shots_on_card:
            obj = self.card_add_shot(shot, k)
            with self.lock:
                visible = self.d295 == 1
            if visible:
                evs.append((EV_OBJECT_ADDED, obj.handle))
        self.push_events(evs, tid)

    def oldest_shot(self):
        with self.lock:
            return self.shots[0] if self.shots else None

    def shot_served(self, shot, tid):
        with self.lock:
            if self.shots and self.shots[0] is shot:
                self.shots.popleft()
            left = len(self.shots)
        self.slog("served", shot)
        diag("ev=shot_served name=%s waiting=%d" % (shot.name, left))
        self.push_events([(EV_SONY_PROP_CHANGED, P_OBJ_IN_MEMORY)], tid)

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
        self.end_session_state("new client")

    def detach_command(self, sess):
        with self.lock:
            if self.cmd is not sess:
                return
            self.cmd = None
            evt, self.evt = self.evt, None
        if evt is not None:
            evt.close()
        self.end_session_state("client gone")

    def end_session_state(self, why):
        self.lv_stop(why, notify=False)
        if self.args.card:
            self.transfer_reset(why)
        with self.lock:
            for c in (C_S1, C_S2, C_S1S2):
                self.values[c] = 1
        self.stop_focus(notify=False)

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
# Command connection (ptp §1.3)

class CmdSession:
    def __init__(self, cam, conn):
        self.cam = cam
        self.args = cam.args
        self.conn = conn
        self.session = 0
        self.pending = None
        self.reset_setup()

    def reset_setup(self):
        self.sdio_steps = []
        self.func_mode = None
        self.lv_info_seen = False

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
        except Dropped as e:
            diag("ev=command_dropped conn=%d %s" % (self.conn.no, e))
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
        data_out = None
        if phase == 2 or op in DATA_OUT_OPS:
            data_out = self.read_data_out(tid)
        rec = {"ev": "op", "code": "0x%04X" % op, "params": params, "tid": tid, "t": time.time()}
        if data_out is not None:
            rec["data"] = data_out.hex()
        self.cam.log.write(rec)
        if data_out is None and self.pending is not None:
            self.send_response(RC_GENERAL_ERROR, tid)
            return
        try:
            if op not in OPS and not (self.args.card and op in CARD_OPS):
                raise PtpError(RC_OP_NOT_SUPPORTED)
            if self.session == 0 and op not in (0x1001, 0x1002, 0x9210):
                raise PtpError(RC_SESSION_NOT_OPEN)
            handler = getattr(self, "op_%04X" % op)
            res = handler(tid, params, data_out)
        except PtpError as e:
            if e.code != RC_ACCESS_DENIED:
                diag("ev=op_error op=0x%04X tid=%d code=0x%04X %s" % (op, tid, e.code, e))
            self.send_response(e.code, tid)
            return
        except (ConnGone, OSError, Garbage, Dropped):
            raise
        except Exception:
            diag("ev=handler_bug op=0x%04X %s" % (op, traceback.format_exc()))
            self.send_response(RC_GENERAL_ERROR, tid)
            return
        if res is None:
            res = (None, ())
        data, rparams = res[0], res[1]
        code = res[2] if len(res) > 2 else RC_OK
        if data is not None:
            self.send_data(tid, data)
        self.send_response(code, tid, rparams)

    # ---- session / info
    def op_1001(self, tid, p, d):
        a = self.args
        cam = self.cam
        std_props = sorted(c for c, pr in cam.props_def.items() if pr.std)
        std_ops = STD_OPS + (list(CARD_OPS) if a.card else [])
        std_evs = [EV_OBJECT_ADDED] if a.shots_on_card else []
        if a.devinfo_vendor == "all":
            ops, evs, props = sorted(std_ops + SONY_OPS), std_evs + SONY_EVENTS, sorted(cam.props_def)
        elif a.devinfo_vendor == "setup":
            ops, evs, props = sorted(std_ops + SETUP_OPS), std_evs, std_props
        else:
            ops, evs, props = sorted(std_ops), std_evs, std_props
        img_formats = [OFC_ASSOCIATION, OFC_EXIF_JPEG, OFC_MP4] if a.card else [OFC_EXIF_JPEG]
        body = (struct.pack("<HIH", 100, 6, 100) + pstr("") + struct.pack("<H", 0) +
                au16(ops) + au16(evs) + au16(props) + au16([OFC_EXIF_JPEG]) + au16(img_formats) +
                pstr("Sony Corporation") + pstr(a.model) + pstr("3.01") + pstr("01234567"))
        return body, ()

    def _open(self, sid):
        if sid == 0:
            raise PtpError(RC_INVALID_PARAMETER, "SessionID")
        if self.session:
            raise PtpError(RC_SESSION_ALREADY_OPEN)
        self.session = sid
        self.reset_setup()
        diag("ev=session_open conn=%d session=%d" % (self.conn.no, sid))

    def op_1002(self, tid, p, d):
        self._open(p[0] if p else 0)
        return None

    def op_9210(self, tid, p, d):
        self._open(p[0] if p else 0)
        self.func_mode = p[1] if len(p) > 1 else 0
        diag("ev=sdio_open_session session=%d function_mode=%d" % (self.session, self.func_mode))
        return None

    def op_1003(self, tid, p, d):
        self.session = 0
        self.reset_setup()
        self.cam.end_session_state("CloseSession")
        return None

    # ---- storage (ptp §8.1): no card exposed without --card or while it is hidden in `empty`
    # style (ptp §8.4 CHOICE); 0x2013 while hidden in `unavailable` style; the card while 0xD295 = 1
    def _card_state(self):
        """-> "none" (no-card answers), "unavailable" (0x2013) or "visible"."""
        if not self.args.card:
            return "none"
        with self.cam.lock:
            if self.cam.d295 == 1:
                return "visible"
        return "none" if self.args.hidden_card == "empty" else "unavailable"

    def op_1004(self, tid, p, d):
        st = self._card_state()
        if st == "unavailable":
            raise PtpError(RC_STORE_NOT_AVAILABLE, "transfer mode off")
        return au32([STORAGE_ID] if st == "visible" else []), ()

    def op_1005(self, tid, p, d):
        st = self._card_state()
        if st == "unavailable":
            raise PtpError(RC_STORE_NOT_AVAILABLE, "transfer mode off")
        if st == "none":
            raise PtpError(RC_INVALID_STORAGE, "no storage exposed")
        if not p or p[0] != STORAGE_ID:
            raise PtpError(RC_INVALID_STORAGE, "storage 0x%08X" % (p[0] if p else 0))
        with self.cam.lock:
            free = max(0, CARD_CAPACITY - self.cam.card_total)
        body = (struct.pack("<HHHQQI", 4, 2, 0, CARD_CAPACITY, free, free // (10 * 1000 * 1000)) +
                pstr("Memory Card Slot 1") + pstr(""))
        return body, ()

    def op_1007(self, tid, p, d):
        storage = p[0] if p else 0xFFFFFFFF
        st = self._card_state()
        if st == "unavailable":
            raise PtpError(RC_STORE_NOT_AVAILABLE, "transfer mode off")
        if st == "none":
            if storage != 0xFFFFFFFF:
                raise PtpError(RC_INVALID_STORAGE, "no storage exposed")
            return au32([]), ()
        fmt = p[1] if len(p) > 1 else 0
        parent = p[2] if len(p) > 2 else 0
        if storage not in (0xFFFFFFFF, STORAGE_ID):
            raise PtpError(RC_INVALID_STORAGE, "storage 0x%08X" % storage)
        cam = self.cam
        with cam.lock:
            objs = cam.objects
            if parent == 0:
                handles = list(objs)
            elif parent == 0xFFFFFFFF:
                handles = list(cam.children.get(0, ()))
            elif parent in objs:
                handles = list(cam.children.get(parent, ()))
            else:
                raise PtpError(RC_INVALID_HANDLE, "parent 0x%08X" % parent)
            if fmt not in (0, 0xFFFFFFFF):
                handles = [h for h in handles if objs[h].fmt == fmt]
        return au32(handles), ()

    def _card_obj(self, h):
        """The card object for handle h, or PtpError (0x2013 hidden / 0x2009 unknown)."""
        st = self._card_state()
        with self.cam.lock:
            obj = self.cam.objects.get(h) if st != "none" else None
        if obj is None:
            raise PtpError(RC_INVALID_HANDLE, "handle 0x%08X" % h)
        if st == "unavailable":
            raise PtpError(RC_STORE_NOT_AVAILABLE, "transfer mode off (handle 0x%08X)" % h)
        return obj

    def _lv_refused(self):
        """--card: live view / presses refused now (transfer mode, or an sdio mode-1 session)."""
        a = self.args
        if not a.card:
            return None
        if a.transfer_session == "sdio" and self.func_mode == 1:
            return "transfer-only session (0x9210 p2=1)"
        if a.lv_during_transfer == "off":
            with self.cam.lock:
                if self.cam.xfer_on:
                    return "transfer mode on"
        return None

    # ---- objects: 0xFFFFC001 shot, 0xFFFFC002 live view
    def op_1008(self, tid, p, d):
        h = p[0] if p else 0
        cam = self.cam
        if h == H_LIVEVIEW:
            with cam.lock:
                if not cam.lv_on:
                    raise PtpError(RC_INVALID_HANDLE, "live view not running")
                n = cam.lv_n
            self.lv_info_seen = True
            size = len(cam.dataset(n)[0])
            return object_info(OFC_EXIF_JPEG, size, cam.W, cam.H, "LiveView.JPG", now_date()), ()
        if h == H_SHOT:
            shot = self._shot_or_fail()
            return object_info(OFC_EXIF_JPEG, len(shot.data), self.args.still_w, self.args.still_h,
                               shot.name, shot.date), ()
        if self.args.card:
            return self._card_obj(h).info(), ()
        raise PtpError(RC_INVALID_HANDLE, "handle 0x%08X" % h)

    def _shot_or_fail(self):
        shot = self.cam.oldest_shot()
        if shot is None:
            if self.args.empty_shot == "drop":
                diag("ev=empty_shot_read -> dropping connections (firmware 'crash')")
                self.cam.break_connections(self)
                raise Dropped("0xFFFFC001 read while empty")
            raise PtpError(RC_INVALID_HANDLE, "no shot waiting")
        return shot

    def op_1009(self, tid, p, d):
        h = p[0] if p else 0
        if h == H_LIVEVIEW:
            return self.get_liveview(tid)
        if h == H_SHOT:
            return self.get_shot(tid)
        if self.args.card:
            obj = self._card_obj(h)
            return self.card_read(0x1009, tid, obj, 0, obj.size)
        raise PtpError(RC_INVALID_HANDLE, "handle 0x%08X" % h)

    # ---- card reads (--card only; the op check answers 0x2005 for 0x100A/0x101B without it)
    def op_100A(self, tid, p, d):
        h = p[0] if p else 0
        if h in (H_SHOT, H_LIVEVIEW):
            raise PtpError(RC_INVALID_HANDLE, "0x%08X is not a card object" % h)
        obj = self._card_obj(h)
        thumb = obj.thumb
        if thumb is None:
            raise PtpError(RC_NO_THUMBNAIL, obj.name)
        self.send_data(tid, thumb)
        self.card_log_read(0x100A, obj, 0, thumb)
        return None

    def op_101B(self, tid, p, d):
        h = p[0] if p else 0
        if h in (H_SHOT, H_LIVEVIEW):
            raise PtpError(RC_INVALID_HANDLE, "0x%08X is not a card object" % h)
        obj = self._card_obj(h)
        off = p[1] if len(p) > 1 else 0
        mx = p[2] if len(p) > 2 else 0xFFFFFFFF
        if off > obj.size:
            raise PtpError(RC_INVALID_PARAMETER, "offset %d > size %d" % (off, obj.size))
        return self.card_read(0x101B, tid, obj, off, min(mx, obj.size - off))

    def card_log_read(self, op, obj, off, sent):
        self.cam.shots_log.write({"ev": "card_read", "op": "0x%04X" % op, "handle": obj.handle,
                                  "name": obj.name, "offset": off, "length": len(sent),
                                  "sha256": sha(sent), "t": time.time()})

    def card_read(self, op, tid, obj, off, length):
        cam = self.cam
        data = obj.data
        part = data if (off == 0 and length == len(data)) else data[off:off + length]
        do_break = False
        if self.args.break_card_read_once and not obj.folder and length > 0:
            with cam.lock:
                if not cam.card_broken_done:
                    cam.card_broken_done = True
                    do_break = True
        if do_break:
            sent = length // 2
            diag("ev=breaking_card_read op=0x%04X name=%s offset=%d sent=%d of %d"
                 % (op, obj.name, off, sent, length))
            self.send_cut(tid, part, length, sent)
            cam.shots_log.write({"ev": "broken_card_read", "op": "0x%04X" % op, "handle": obj.handle,
                                 "name": obj.name, "offset": off, "length": length, "sent": sent,
                                 "t": time.time()})
            cam.break_connections(self)
            raise Dropped("break-card-read-once")
        self.send_data(tid, part)
        self.card_log_read(op, obj, off, part)
        return (None, (length,)) if op == 0x101B else None

    def send_cut(self, tid, data, length, sent):
        """Start_Data announcing `length`, then only the first `sent` bytes (a transfer cut)."""
        try:
            self.conn.send(PT_START_DATA, struct.pack("<IQ", tid, length))
            pos = 0
            while pos < sent:
                k = min(self.args.chunk, sent - pos)
                self.conn.send(PT_DATA, struct.pack("<I", tid) + data[pos:pos + k])
                pos += k
        except OSError:
            pass

    def get_liveview(self, tid):
        cam = self.cam
        why = self._lv_refused()
        if why:
            raise PtpError(RC_ACCESS_DENIED, "live view refused: %s" % why)
        got = cam.lv_get(self)
        if got is None:
            mode = self.args.too_fast
            if mode == "denied":
                raise PtpError(RC_ACCESS_DENIED, "polled too fast")
            empty = struct.pack("<IIII", 0, 0, 0, 0)
            return empty, (), (RC_ACCESS_DENIED if mode == "denied-empty" else RC_OK)
        payload, n, idx, af, raw = got
        self.send_data(tid, payload)
        cam.frames_log.write({"ev": "frame", "n": n, "idx": idx, "sha256": cam.lv_shas[idx],
                              "bytes": len(cam.lv_frames[idx]), "width": cam.W, "height": cam.H,
                              "af": af, "af_raw": raw, "t": time.time()})
        return None

    def get_shot(self, tid):
        cam = self.cam
        shot = self._shot_or_fail()
        do_break = False
        if self.args.break_transfer_once:
            with cam.lock:
                if not cam.broken_done:
                    cam.broken_done = True
                    do_break = True
        if do_break:
            data = shot.data
            sent = len(data) // 2
            diag("ev=breaking_transfer name=%s sent=%d of %d" % (shot.name, sent, len(data)))
            self.send_cut(tid, data, len(data), sent)
            cam.slog("broken", shot, sent=sent)
            cam.break_connections(self)
            raise Dropped("break-transfer-once")
        self.send_data(tid, shot.data)
        cam.shot_served(shot, tid)
        return None

    # ---- standard property reads (CHOICE: read-only access)
    def _prop(self, p):
        code = p[0] if p else 0
        pr = self.cam.props_def.get(code)
        if pr is None:
            raise PtpError(RC_PROP_NOT_SUPPORTED, "prop 0x%04X" % code)
        return code, pr

    def op_1014(self, tid, p, d):
        code, pr = self._prop(p)
        return dpd(code, pr, self.cam.value(code), sony=False), ()

    def op_1015(self, tid, p, d):
        code, pr = self._prop(p)
        return pack_value(pr.dt, self.cam.value(code)), ()

    # ---- Sony SDIO (ptp §2.3)
    def op_9201(self, tid, p, d):
        step = p[0] if p else 0
        if step not in (1, 2, 3):
            raise PtpError(RC_INVALID_PARAMETER, "SDIO_Connect p1=%d" % step)
        self.sdio_steps.append(step)
        diag("ev=sdio_connect step=%d sequence=%s" % (step, self.sdio_steps))
        if step == 3:
            self.cam.lv_start("SDIO_Connect(3)")
        if self.args.connect_data > 0:
            return bytes(self.args.connect_data), ()
        return None

    def op_9202(self, tid, p, d):
        ver = p[0] if p else 0
        if ver not in (200, 300):
            raise PtpError(RC_INVALID_PARAMETER, "version %d" % ver)
        body = (struct.pack("<H", ver) + au16(sorted(SONY_OPS)) + au16(SONY_EVENTS) +
                au16(sorted(self.cam.props_def)))
        return body, ()

    def op_9209(self, tid, p, d):
        cam = self.cam
        codes = sorted(cam.props_def)
        body = struct.pack("<II", len(codes), 0)
        for c in codes:
            body += dpd(c, cam.props_def[c], cam.value(c), sony=True)
        return body, ()

    def _set(self, op, p, d, tid):
        cam = self.cam
        code = p[0] if p else 0
        raw = d or b""
        rec = {"ev": "set", "op": "0x%04X" % op, "code": "0x%04X" % code, "value": None,
               "raw_hex": raw.hex(), "t": time.time()}
        try:
            pr = cam.props_def.get(code)
            if pr is None:
                raise PtpError(RC_PROP_NOT_SUPPORTED, "code 0x%04X" % code)
            is_control = code in CONTROLS
            if self.args.strict_set_ops and (op == 0x9205) == is_control:
                raise PtpError(RC_PROP_NOT_SUPPORTED, "0x%04X not settable with 0x%04X" % (code, op))
            v = decode_value(pr, raw)
            rec["value"] = v
            if not pr.rw:
                raise PtpError(RC_ACCESS_DENIED, "read-only 0x%04X" % code)
            if v is None:
                raise PtpError(RC_INVALID_PROP_VALUE, "data size %d" % len(raw))
            if not pr.allowed(v):
                raise PtpError(RC_INVALID_PROP_VALUE, "value %d" % v)
            if code in PRESS_CONTROLS and v == 2:
                why = self._lv_refused()
                if why:
                    raise PtpError(RC_DEVICE_BUSY, "press refused: %s" % why)
        except PtpError as e:
            rec["result"] = "0x%04X" % e.code
            cam.log.write(rec)
            raise
        rec["result"] = "0x%04X" % RC_OK
        cam.log.write(rec)
        diag("ev=set op=0x%04X code=0x%04X (%s) value=%d" % (op, code, pr.name, v))
        if is_control:
            cam.set_control(code, v, tid)
        else:
            with cam.lock:
                cam.values[code] = v
            cam.push_events([(EV_SONY_PROP_CHANGED, code)], tid)
        return None

    def op_9205(self, tid, p, d):
        return self._set(0x9205, p, d, tid)

    def op_9207(self, tid, p, d):
        return self._set(0x9207, p, d, tid)

    def op_9212(self, tid, p, d):
        if not self.args.card:
            diag("ev=set_contents_transfer_mode params=%s (no effect, no card exposed)" % p)
            return None
        cam = self.cam
        rec = {"ev": "transfer_mode", "params": list(p), "session_mode": self.func_mode,
               "result": None, "t": time.time()}
        try:
            if self.args.transfer_session == "sdio" and self.func_mode not in (1, 2):
                raise PtpError(RC_OP_NOT_SUPPORTED, "0x9212 in a session not opened with 0x9210 p2=1/2 "
                               "(function mode %s)" % self.func_mode)
            select = p[0] if len(p) > 0 else None
            mode = p[1] if len(p) > 1 else None
            info = p[2] if len(p) > 2 else 0
            if select not in (1, 2) or mode not in (0, 1):
                raise PtpError(RC_INVALID_PARAMETER, "0x9212 params %s" % p)
            if info != 0:
                diag("ev=warn 0x9212 AdditionalInformation=%d (accepted)" % info)
        except PtpError as e:
            rec["result"] = "0x%04X" % e.code
            cam.log.write(rec)
            raise
        rec["result"] = "0x%04X" % RC_OK
        cam.log.write(rec)
        diag("ev=set_contents_transfer_mode select=%d mode=%d info=%d session_mode=%s"
             % (select, mode, info, self.func_mode))
        cam.transfer_set(mode == 1, tid)
        return None

    def op_9280(self, tid, p, d):
        d = d or b""
        what = "unknown"
        if len(d) >= 16:
            add, d2, d3, d4 = struct.unpack("<IIII", d[:16])
            want = 18 if add == 2 else 16
            if (add, d2, d3, d4) == (2, 2, 0, 0) and d[16:] == b"\x01\x01":
                what = "init"
            elif (add, d2, d3, d4) == (0, 5, 0, 0) and len(d) == 16:
                what = "close"
            if len(d) != want:
                diag("ev=warn 0x9280 data length %d, expected %d" % (len(d), want))
            diag("ev=op_9280 p1=%s fields=%s extra=%s pattern=%s"
                 % (p[0] if p else None, [add, d2, d3, d4], d[16:].hex(), what))
        else:
            diag("ev=warn 0x9280 short data %s" % d.hex())
        return None

    def op_9281(self, tid, p, d):
        diag("ev=op_9281 p1=%s" % (p[0] if p else None))
        return None


# --------------------------------------------------------------------------
# Accepting (ptp §1.2)

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

def make_images(args, tmp):
    """-> (live-view JPEGs, stills, thumbnails of the stills - only with --card, else None)."""
    jpg = ["-pix_fmt", "yuvj420p", "-q:v", "5", "-huffman", "default", "-f", "image2"]
    cmd = (["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=30" % (args.width, args.height),
            "-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=1" % (args.still_w, args.still_h),
            "-map", "0:v", "-frames:v", str(args.frames)] + jpg + [os.path.join(tmp, "f%03d.jpg"),
           "-map", "1:v", "-frames:v", str(N_STILLS)] + jpg + [os.path.join(tmp, "s%03d.jpg")])
    if args.card:
        # the still scaled into 160x120 (even sizes), letter-boxed in black
        fit = ("scale=%d:%d:force_original_aspect_ratio=decrease:force_divisible_by=2,"
               "pad=%d:%d:(ow-iw)/2:(oh-ih)/2:black" % (THUMB_W, THUMB_H, THUMB_W, THUMB_H))
        cmd += (["-map", "1:v", "-frames:v", str(N_STILLS), "-vf", fit] + jpg +
                [os.path.join(tmp, "t%03d.jpg")])
    subprocess.run(cmd, check=True)

    def load(prefix, n):
        out = []
        for i in range(1, n + 1):
            with open(os.path.join(tmp, "%s%03d.jpg" % (prefix, i)), "rb") as f:
                out.append(f.read())
        return out
    lv = [insert_com(f, "sony_ptp_cam lv frame %d" % i) for i, f in enumerate(load("f", args.frames))]
    return lv, load("s", N_STILLS), (load("t", N_STILLS) if args.card else None)


def parse_size(ap, s, what):
    m = re.fullmatch(r"(\d+)x(\d+)", s)
    if not m:
        ap.error("%s WxH" % what)
    w, h = int(m.group(1)), int(m.group(2))
    if w < 16 or h < 16 or w > 8192 or h > 8192 or w % 2 or h % 2:
        ap.error("%s: even sizes 16..8192" % what)
    return w, h


def main():
    ap = argparse.ArgumentParser(description="Sony PTP/IP test camera (clean-room, from ptp.md + sony.md §4)")
    ap.add_argument("--port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--size", default="640x360", help="live-view JPEG size")
    ap.add_argument("--frames", type=int, default=30, help="distinct live-view JPEGs (default 30)")
    ap.add_argument("--still-size", default="1616x1080")
    ap.add_argument("--model", default="ILCE-7M3")
    ap.add_argument("--log", help="JSON lines: every operation and every set")
    ap.add_argument("--frames-log", help="JSON lines: every live-view dataset served")
    ap.add_argument("--shots-log", help="JSON lines: shots captured / served / broken")
    ap.add_argument("--capture-ms", type=int, default=300)
    ap.add_argument("--focus-ms", type=int, default=100)
    ap.add_argument("--min-interval-ms", type=float, default=33.0)
    ap.add_argument("--too-fast", choices=("denied", "denied-empty", "empty"), default="denied")
    ap.add_argument("--lv-startup-ms", type=int, default=0, help="0x2009 for this long after LV start")
    ap.add_argument("--no-focal", action="store_true", help="omit the FocalFrameInfo block")
    ap.add_argument("--focal-version", type=int, choices=(100, 101, 103), default=101)
    ap.add_argument("--stray-soi", action="store_true", help="16 reserved bytes with FF D8 after the header")
    ap.add_argument("--jpeg-align", type=int, default=0, help="pad the JPEG field to a multiple of N")
    ap.add_argument("--require-lv-objectinfo", action="store_true")
    ap.add_argument("--connect-data", type=int, default=0, help="0x9201 data-in bytes (default none)")
    ap.add_argument("--devinfo-vendor", choices=("setup", "all", "none"), default="setup")
    ap.add_argument("--strict-set-ops", action="store_true")
    ap.add_argument("--focus-mode-code", type=lambda s: int(s, 0), default=0x500A)
    ap.add_argument("--empty-shot", choices=("invalid", "drop"), default="invalid")
    ap.add_argument("--break-transfer-once", action="store_true")
    ap.add_argument("--chunk", type=int, default=65536, help="Data packet payload size")
    ap.add_argument("--empty-end", action="store_true", help="all bytes in Data packets, empty End_Data")
    ap.add_argument("--card", action="store_true",
                    help="a memory card reached through contents-transfer mode (0x9212, 0xD295)")
    ap.add_argument("--card-files", type=int, default=0,
                    help="extra small JPEGs DCIM/100MSDCF/DSC10001.JPG... (default 0, max %d)"
                         % MAX_CARD_FILES)
    ap.add_argument("--shots-on-card", action="store_true",
                    help="every shot is also written to DCIM/100MSDCF (0x4002 while transfer is on)")
    ap.add_argument("--transfer-session", choices=("any", "sdio"), default="any",
                    help="0x9212 in any session, or only in one opened with 0x9210 p2=1/2")
    ap.add_argument("--transfer-enable-ms", type=int, default=200,
                    help="0xD295 reads 1 this long after 0x9212 enable (default 200)")
    ap.add_argument("--hidden-card", choices=("unavailable", "empty"), default="unavailable",
                    help="card ops while 0xD295=0: 0x2013, or the no-card answers")
    ap.add_argument("--lv-during-transfer", choices=("off", "on"), default="off",
                    help="off: live view 0x200F and presses 0x2019 while transfer mode is on")
    ap.add_argument("--break-card-read-once", action="store_true",
                    help="cut the first GetObject/GetPartialObject of a card file halfway")
    ap.add_argument("--help-choices", action="store_true", help="print the documented choices and exit")
    args = ap.parse_args()
    if args.help_choices:
        print(__doc__)
        return
    if args.port is None:
        ap.error("--port is required")
    args.width, args.height = parse_size(ap, args.size, "--size")
    args.still_w, args.still_h = parse_size(ap, args.still_size, "--still-size")
    if (args.frames < 1 or args.capture_ms < 0 or args.focus_ms < 0 or args.chunk < 1
            or args.min_interval_ms < 0 or args.lv_startup_ms < 0 or args.jpeg_align < 0
            or args.connect_data < 0):
        ap.error("--frames >= 1; ms values, --jpeg-align, --connect-data >= 0; --chunk >= 1")
    if not args.card:
        card_only = [f for f, on in (("--card-files", args.card_files != 0),
                                     ("--shots-on-card", args.shots_on_card),
                                     ("--transfer-session", args.transfer_session != "any"),
                                     ("--transfer-enable-ms", args.transfer_enable_ms != 200),
                                     ("--hidden-card", args.hidden_card != "unavailable"),
                                     ("--lv-during-transfer", args.lv_during_transfer != "off"),
                                     ("--break-card-read-once", args.break_card_read_once)) if on]
        if card_only:
            ap.error("%s: only with --card" % ", ".join(card_only))
    if not 0 <= args.card_files <= MAX_CARD_FILES or args.transfer_enable_ms < 0:
        ap.error("--card-files 0..%d; --transfer-enable-ms >= 0" % MAX_CARD_FILES)
    fm = args.focus_mode_code
    known = {P_WB, P_FNUMBER, P_EXPPROG, P_EV, P_SHUTTER, P_COLORTEMP, P_ISO, P_FOCUS_FOUND,
             P_OBJ_IN_MEMORY, P_LV_STATUS, P_LV_EFFECT, P_POSITION_KEY, P_LV_QUALITY} | set(CONTROLS)
    if args.card:
        known.add(P_CONTENT_TRANSFER)
    if not 0 < fm < 0x10000 or fm in known:
        ap.error("--focus-mode-code: a free 16-bit property code")

    stop = threading.Event()
    wake = threading.Event()
    usr1 = []
    # A parent may have started us with these blocked (the mask is inherited): take them back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})
    signal.signal(signal.SIGTERM, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGINT, lambda *a: (stop.set(), wake.set()))
    signal.signal(signal.SIGUSR1, lambda *a: (usr1.append(1), wake.set()))

    tmp = tempfile.mkdtemp(prefix="sony_ptp_cam_")
    try:
        lv_frames, stills, thumbs = make_images(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for i, f in enumerate(lv_frames):
        if jpeg_size(f) != (args.width, args.height) or f[:2] != b"\xff\xd8" or f[-2:] != b"\xff\xd9":
            diag("ev=bad_frame index=%d size=%s" % (i, jpeg_size(f)))
            sys.exit(2)
    if len({sha(f) for f in lv_frames}) != len(lv_frames):
        diag("ev=duplicate_images")
        sys.exit(2)

    logs = (JsonLog(args.log), JsonLog(args.frames_log), JsonLog(args.shots_log))
    cam = Camera(args, lv_frames, stills, logs, thumbs)

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    lsock = socket.socket(family, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((args.host, args.port))
    lsock.listen(16)
    lsock.settimeout(0.2)
    port = lsock.getsockname()[1]
    th = threading.Thread(target=accept_loop, args=(cam, lsock, stop), daemon=True)
    th.start()
    sys.stdout.write("ready ptp=%d\n" % port)
    sys.stdout.flush()
    while not stop.is_set():
        wake.wait(0.5)
        wake.clear()
        while usr1 and not stop.is_set():
            usr1.pop()
            try:
                cam.new_shot("body")
            except Exception:
                diag("ev=body_shot_error %s" % traceback.format_exc())
    try:
        lsock.close()
    except OSError:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
