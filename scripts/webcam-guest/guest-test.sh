#!/bin/sh
# Runs inside the webcam guest (see run.sh): loads v4l2loopback with the options livegate ships
# (deploy/v4l2loopback.conf), starts an emulated Sony camera (`livegate emulate sony`) and
# `livegate run --camera … --v4l2 /dev/video10 --no-hls`, then checks the device with real consumers.
# Each check appends "PASS name: details" or "FAIL name: details" to $WEBCAM_RESULTS/results.txt;
# logs go to $WEBCAM_RESULTS/logs/.
#
# Environment (from run.sh): LIVEGATE (the binary), REPO (the checkout), WEBCAM_RESULTS,
# WEBCAM_CHROMIUM (0: skip the Chromium check), WEBCAM_COMPLIANCE_MAX_FAIL (default 5: the v4l2-compliance
# failures v4l2loopback 0.12.7 has with a plain GStreamer writer), WEBCAM_V4L2_SINK (passed to livegate's
# hidden --v4l2-sink, e.g. "videoconvert ! v4l2sink device=/dev/video10 sync=false").
R=${WEBCAM_RESULTS:-/run/results}
L=$R/logs
mkdir -p "$L"
: > "$R/results.txt"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$HERE/../.." && pwd)}
LG=${LIVEGATE:?LIVEGATE must name the livegate binary}
DEV=/dev/video10
EMU_PORT=18080
HTTP_PORT=18081
RTSP_PORT=18554
CAMERA_URL=sony://127.0.0.1:$EMU_PORT
# The host's root is read-only in the guest; livegate keeps captures in ./captures.
mkdir -p /tmp/webcam-test && cd /tmp/webcam-test || exit 1

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
res() {  # res PASS|FAIL name details…
    r=$1 n=$2
    shift 2
    echo "$r $n: $*" >> "$R/results.txt"
    echo "webcam-test: $r $n: $*"
}
note() { echo "webcam-test [$(now)s]: $*"; }
wait_for() {  # wait_for SECONDS command… : polls every 0.5 s
    w_end=$(awk -v a="$(now)" -v s="$1" 'BEGIN { print a + s }')
    shift
    while :; do
        "$@" && return 0
        awk -v a="$(now)" -v e="$w_end" 'BEGIN { exit !(a >= e) }' && return 1
        sleep 0.5
    done
}

# Running and not a zombie (children are reaped only when waited for).
alive() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat"; }

emu_pid= lg_pid= mon_pid=
cleanup() {
    for p in $mon_pid $lg_pid $emu_pid; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 143' TERM INT

start_emulator() {
    "$LG" emulate sony --port $EMU_PORT --listen 127.0.0.1 >> "$L/emulator.log" 2>&1 &
    emu_pid=$!
}
emulator_up() { grep -q "listening on" "$L/emulator.log" 2>/dev/null; }
stop_emulator() {
    kill "$emu_pid" 2>/dev/null
    wait "$emu_pid" 2>/dev/null
    emu_pid=
}

# --- 1. the module, with the options livegate's deploy/v4l2loopback.conf gives --------------------
t=$(now)
opts=$(sed -n 's/^options v4l2loopback //p' "$REPO/deploy/v4l2loopback.conf" 2>/dev/null)
[ -n "$opts" ] || opts='devices=1 video_nr=10 card_label=livegate exclusive_caps=1'
eval "set -- $opts"
if modprobe v4l2loopback "$@" > "$L/modprobe.log" 2>&1 && wait_for 5 test -e $DEV; then
    res PASS module "modprobe v4l2loopback $opts: $DEV '$(cat /sys/class/video4linux/video10/name 2>/dev/null)'," \
        "v4l2loopback $(modinfo -F version v4l2loopback 2>/dev/null) on $(uname -r) ($(since "$t") s)"
else
    res FAIL module "modprobe v4l2loopback $opts: $(tr '\n' ' ' < "$L/modprobe.log")"
    exit 1
fi

t=$(now)
ver=$(timeout 60 "$LG" --version 2>&1 | head -n1)
note "livegate --version: $ver ($(since "$t") s)"

# --- 2. an emulated camera and the gateway writing to the device -----------------------------------
t=$(now)
start_emulator
wait_for 60 emulator_up || note "emulator not up after 60 s: $(tail -n3 "$L/emulator.log" | tr '\n' ' ')"
note "emulator up ($(since "$t") s)"

t=$(now)
set -- run --camera "cam0=$CAMERA_URL" --v4l2 $DEV --no-hls --http-port $HTTP_PORT --rtsp-port $RTSP_PORT
[ -n "${WEBCAM_V4L2_SINK:-}" ] && set -- "$@" --v4l2-sink "$WEBCAM_V4L2_SINK"
note "livegate $*"
# A crash prints only the crashed thread, unsymbolicated registers and images left out (TCG is slow).
SWIFT_BACKTRACE="interactive=no,color=no,threads=crashed,registers=none,images=none" "$LG" "$@" > "$L/livegate.log" 2>&1 &
lg_pid=$!
lg_streaming() { grep -q "virtual webcam streaming" "$L/livegate.log"; }
lg_broken() { ! alive "$lg_pid" || grep -qE "not-negotiated|Internal data stream error" "$L/livegate.log"; }
lg_up_or_dead() { lg_streaming || ! alive "$lg_pid"; }
wait_for 150 lg_up_or_dead
sleep 2  # an appsrc that cannot negotiate fails on its first buffer
capture_format() { v4l2-ctl -d $DEV --get-fmt-video 2>/dev/null | grep -q "1280/720"; }
camera_streaming() { curl -s -m 5 "http://127.0.0.1:$HTTP_PORT/api/v1/cameras" | grep -Eq '"state" ?: ?"streaming"'; }
if lg_streaming && ! lg_broken && wait_for 30 capture_format; then
    wait_for 60 camera_streaming || note "camera not streaming after 60 s: $(curl -s -m 5 "http://127.0.0.1:$HTTP_PORT/api/v1/cameras" | head -c 300)"
    res PASS livegate-start "'livegate run --v4l2 $DEV --no-hls${WEBCAM_V4L2_SINK:+ --v4l2-sink '$WEBCAM_V4L2_SINK'}' streaming into the device after $(since "$t") s"
    live=1
else
    why=$(grep -E "not-negotiated|Internal data stream|error|ERROR|virtual webcam" "$L/livegate.log" | head -n 4 | tr '\n' ' ' | cut -c1-600)
    res FAIL livegate-start "after $(since "$t") s: ${why:-no 'virtual webcam streaming' in its log}"
    live=0
fi

# --- 3. the device as consumers see it ------------------------------------------------------------
v4l2-ctl -d $DEV --all > "$L/v4l2-ctl.txt" 2>&1
fmt=$(grep -A8 'Format Video Capture' "$L/v4l2-ctl.txt" | grep -E 'Width/Height|Pixel Format|Colorspace' \
      | sed 's/^[[:space:]]*//; s/[[:space:]]*:[[:space:]]*/: /' | tr '\n' ' ')
caps=$(grep -E 'Device Caps' -A3 "$L/v4l2-ctl.txt" | tr -s ' \t\n' ' ')
if echo "$fmt" | grep -q "1280/720" && echo "$fmt" | grep -q "YUYV"; then
    res PASS device-format "$fmt; $caps"
else
    out=$(v4l2-ctl -d $DEV --get-fmt-video-out 2>/dev/null | grep -E 'Width/Height|Pixel Format' | sed 's/^[[:space:]]*//; s/[[:space:]]*:[[:space:]]*/: /' | tr '\n' ' ')
    res FAIL device-format "${fmt:-no capture format} (want 1280/720 YUYV); $caps; output format: ${out:-none}"
fi

snapshot() {  # snapshot NAME: one frame of the device as $L/NAME.png (a second reader, for people)
    timeout 30 ffmpeg -hide_banner -nostdin -loglevel error -f v4l2 -i $DEV -frames:v 1 -y "$L/$1.png" 2>/dev/null
}

skip_unless_live() {
    [ "$live" = 1 ] && return 0
    res FAIL "$1" "not run: livegate is not streaming into the device"
    return 1
}

if skip_unless_live ffmpeg-read; then
    t=$(now)
    timeout 90 ffmpeg -hide_banner -nostdin -f v4l2 -i $DEV -frames:v 30 -f null - > "$L/ffmpeg-read.log" 2>&1
    rc=$?
    stream=$(grep -m1 'Stream #0:0' "$L/ffmpeg-read.log" | sed 's/^[[:space:]]*//')
    frames=$(grep -o 'frame= *[0-9]*' "$L/ffmpeg-read.log" | tail -n1 | tr -dc 0-9)
    if [ $rc -eq 0 ] && [ "${frames:-0}" -ge 30 ] && echo "$stream" | grep -q 1280x720; then
        fps=$(tr '\r' '\n' < "$L/ffmpeg-read.log" | grep -o 'fps= *[0-9.]*' | tail -n1 | tr -d ' ')
        res PASS ffmpeg-read "ffmpeg -f v4l2: ${frames} frames in $(since "$t") s ($fps); $stream"
    else
        res FAIL ffmpeg-read "rc=$rc frames=${frames:-0} after $(since "$t") s; ${stream:-$(tail -n 2 "$L/ffmpeg-read.log" | tr '\n' ' ')}"
    fi
fi

if skip_unless_live gst-v4l2src; then
    t=$(now)
    timeout 90 gst-launch-1.0 -v v4l2src device=$DEV num-buffers=30 ! fakesink sync=false > "$L/gst-v4l2src.log" 2>&1
    rc=$?
    gcaps=$(grep -m1 'v4l2src0.GstPad:src: caps' "$L/gst-v4l2src.log" | sed 's/.*caps = //')
    if [ $rc -eq 0 ] && echo "$gcaps" | grep -q 'width=(int)1280'; then
        res PASS gst-v4l2src "30 buffers in $(since "$t") s; $gcaps"
    else
        res FAIL gst-v4l2src "rc=$rc after $(since "$t") s; ${gcaps:-$(grep -E 'ERROR|error' "$L/gst-v4l2src.log" | head -n 2 | tr '\n' ' ')}"
    fi
fi

# --- 4. live picture → offline slate → live picture, one reader that never reopens the device ------
if skip_unless_live live-picture; then
    stats=$L/frames.txt
    : > "$stats"
    (timeout 300 ffmpeg -hide_banner -nostdin -loglevel error -f v4l2 -i $DEV -vf fps=4,scale=64:36 \
        -f rawvideo -pix_fmt rgb24 - 2> "$L/monitor.log" | python3 "$HERE/framestats.py" 64 36 "$stats") &
    mon_pid=$!
    seen() { [ "$(awk -v s="$2" '$1 >= s && $2 == k' k="$1" "$stats" | wc -l)" -ge "${3:-3}" ]; }
    t=$(now)
    if wait_for 60 seen live "$t"; then
        snapshot live
        res PASS live-picture "the camera's colourful test pattern: $(grep ' live ' "$stats" | tail -n1 | cut -d' ' -f3-) ($(since "$t") s)"
    else
        res FAIL live-picture "no colour frames in 60 s; last: $(tail -n1 "$stats")"
    fi

    t=$(now)
    stop_emulator
    if wait_for 40 seen slate "$t"; then
        snapshot slate
        res PASS slate "camera killed: offline slate after $(awk -v s="$t" '$1 >= s && $2 == "slate" { print $1 - s; exit }' "$stats") s: $(grep ' slate ' "$stats" | tail -n1 | cut -d' ' -f3-)"
    else
        res FAIL slate "camera killed, no grey slate within 40 s; last: $(tail -n1 "$stats")"
    fi

    t=$(now)
    start_emulator
    if wait_for 150 seen live "$t"; then
        snapshot live-again
        reopened=no
        alive $mon_pid || reopened="reader died"
        res PASS live-again "camera back: live picture after $(awk -v s="$t" '$1 >= s && $2 == "live" { print $1 - s; exit }' "$stats") s in the same reader (device opened once; reader died: $reopened); frames seen by kind: $(awk '{ print $2 }' "$stats" | uniq -c | tr -s ' \n' ' ')"
    else
        res FAIL live-again "camera restarted, no live picture within 150 s; last: $(tail -n1 "$stats"); $(grep -iE 'camera|reconnect' "$L/livegate.log" | tail -n 2 | tr '\n' ' ')"
    fi
    kill $mon_pid 2>/dev/null
    pkill -P $mon_pid 2>/dev/null
    wait $mon_pid 2>/dev/null
    mon_pid=
fi

# --- 5. Chromium: getUserMedia → RTCPeerConnection pair → pixels -----------------------------------
if [ "${WEBCAM_CHROMIUM:-1}" = 0 ]; then
    note "Chromium check skipped (WEBCAM_CHROMIUM=0)"
elif skip_unless_live chromium; then
    # Chromium's WebRTC gathers no ICE candidates on loopback alone: a dummy interface (no link to
    # anything; its address is delivered locally like 127.0.0.1) gives the two peers a host candidate.
    if ! ip -o -4 addr show scope global | grep -q inet; then
        modprobe dummy 2>/dev/null
        ip link add lgdummy0 type dummy && ip addr add 10.213.0.1/24 dev lgdummy0 && ip link set lgdummy0 up \
            || note "no dummy interface: the peer connection may not connect"
    fi
    t=$(now)
    timeout 300 "${WEBCAM_PYTHON:-python3}" "$HERE/chromium-check.py" --label livegate --frames 20 --size 1280x720 --timeout 150 --out "$L" > "$L/chromium.log" 2>&1
    rc=$?
    summary=$(grep -E '^\[chromium.*(launched|page loaded|granted|cameras:|connected|first frame|frames [0-9]+ size|error|did not finish)' "$L/chromium.log" \
        | sed 's/^\[chromium \([0-9.]*s\)\] /\1 /; s/page: [0-9.]*s //' | tr '\n' ';' | cut -c1-700)
    verdict=$(grep '^result:' "$L/chromium.log" | tail -n1)
    if [ $rc -eq 0 ]; then
        res PASS chromium "$(since "$t") s: $summary"
    else
        [ $rc -eq 124 ] && verdict="timed out after 300 s"
        res FAIL chromium "${verdict:-rc=$rc} ($(since "$t") s): $summary"
    fi
fi

# --- 6. the gateway is still streaming ----------------------------------------------------------------
if [ "$live" = 1 ]; then
    if alive "$lg_pid" && ! grep -qE "not-negotiated|Internal data stream error" "$L/livegate.log"; then
        curl -s -m 10 "http://127.0.0.1:$HTTP_PORT/metrics" > "$L/metrics.txt" 2>/dev/null
        res PASS livegate-alive "still running, no pipeline error; $(grep -E '^livegate_(output_[a-z_]*\{[^}]*output="v4l2"|slate_frames_total)' "$L/metrics.txt" | tr '\n' ' ' | cut -c1-400)"
    else
        res FAIL livegate-alive "$(grep -E "not-negotiated|error" "$L/livegate.log" | tail -n 3 | tr '\n' ' ')"
    fi
fi

# --- 7. v4l2-compliance while livegate writes (last: its streaming tests can stop the writer) -----
t=$(now)
timeout 120 v4l2-compliance -d $DEV > "$L/v4l2-compliance.txt" 2>&1
total=$(grep -E '^Total' "$L/v4l2-compliance.txt" | tail -n1)
nfail=$(echo "$total" | sed -n 's/.*Failed: \([0-9]*\).*/\1/p')
failures=$(grep -E 'fail:' "$L/v4l2-compliance.txt" | sed 's/^[[:space:]]*fail: //' | sort -u | head -n 8 | tr '\n' ';')
sleep 2
after="livegate's writer survived it"
if [ "$live" != 1 ]; then
    after="livegate was not writing"
elif ! alive "$lg_pid" || grep -qE "not-negotiated|Internal data stream error" "$L/livegate.log"; then
    after="livegate's writer stopped: $(grep -E 'GStreamer error|streaming stopped' "$L/livegate.log" | tail -n 1 | cut -c1-200)"
    # livegate opens the device again (1 s, then doubling): wait for it.
    lg_again() { grep -q "virtual webcam streaming again" "$L/livegate.log" || ! alive "$lg_pid"; }
    wait_for 20 lg_again
    if grep -q "virtual webcam streaming again" "$L/livegate.log"; then after="$after; livegate opened it again"; fi
    alive "$lg_pid" || after="$after; livegate DIED: $(grep -E 'Signal|Fatal|fault' "$L/livegate.log" | head -n 2 | tr '\n' ' ')"
    sleep 2
fi
if [ "$live" = 1 ]; then
    if timeout 20 ffmpeg -hide_banner -nostdin -f v4l2 -i $DEV -frames:v 5 -f null - > "$L/ffmpeg-after-compliance.log" 2>&1; then
        after="$after; the device still gives frames"
    else
        after="$after; the device gives no frames any more"
    fi
fi
if [ -n "$total" ] && [ "${nfail:-99}" -le "${WEBCAM_COMPLIANCE_MAX_FAIL:-5}" ]; then
    res PASS v4l2-compliance "${total#Total for } ($(since "$t") s); failing: $failures"
else
    res FAIL v4l2-compliance "${total:-no totals} (at most ${WEBCAM_COMPLIANCE_MAX_FAIL:-5} failures expected); failing: $failures"
fi
# Not counted: v4l2-compliance's buffer tests on a v4l2loopback device stop any GStreamer writer
# (gst-launch-1.0 too: "buffer 0 was not queued, this indicate a driver bug", then "failed to allocate
# buffer"); whether livegate's webcam comes back afterwards is worth knowing.
res INFO v4l2-compliance-aftermath "$after"
# Counted: whatever the device went through, the gateway is still up (a crash takes every camera,
# viewer and recording down with it).
if [ "$live" = 1 ]; then
    if alive "$lg_pid"; then
        res PASS livegate-survives-compliance "still running after v4l2-compliance had the device"
    else
        res FAIL livegate-survives-compliance "livegate died: $(grep -E 'Signal|Fatal|fault' "$L/livegate.log" | head -n 2 | tr '\n' ' ')"
    fi
fi

# --- 8. stop ------------------------------------------------------------------------------------------
t=$(now)
kill -TERM "$lg_pid" 2>/dev/null
lg_gone() { ! alive "$lg_pid"; }
wait_for 30 lg_gone || kill -KILL "$lg_pid" 2>/dev/null
note "livegate stopped ($(since "$t") s)"
lg_pid=
exit 0
