#!/bin/sh
# Guest script (run.sh --script scripts/webcam-guest/caps-matrix.sh): which caps does v4l2sink
# negotiate with v4l2loopback? For each writer pipeline (plain gst-launch-1.0, no livegate) the module
# is loaded afresh, the writer started with GST_DEBUG=v4l2*:5, and the device read back with ffmpeg,
# v4l2src and v4l2-ctl. Logs: $WEBCAM_RESULTS/caps/<variant>.*; one PASS/FAIL line per variant.
# Arguments: variant names to run (default all).
R=${WEBCAM_RESULTS:-/run/results}
L=$R/caps
mkdir -p "$L"
DEV=/dev/video10
MODOPTS=${WEBCAM_MODOPTS:-devices=1 video_nr=10 card_label=livegate exclusive_caps=1 max_buffers=2}
export GST_DEBUG_NO_COLOR=1

now() { cut -d' ' -f1 /proc/uptime; }
res() { echo "$*" | tee -a "$R/results.txt"; }

load() {
    rmmod v4l2loopback 2>/dev/null
    # shellcheck disable=SC2086
    modprobe v4l2loopback $MODOPTS || { echo "modprobe failed"; return 1; }
    i=0
    while [ ! -e "$DEV" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

YUY2="video/x-raw,format=YUY2,width=1280,height=720,framerate=30/1"
I420="video/x-raw,format=I420,width=1280,height=720,framerate=30/1"
# What livegate's appsrc announces (AppSource.ensureRawCaps) and its capsfilter (pipelines/v4l2.pipeline).
APPSRC="video/x-raw,format=I420,width=1280,height=720,framerate=30/1,pixel-aspect-ratio=1/1,colorimetry=1:4:0:0"
LGCAPS="video/x-raw,format=YUY2,width=1280,height=720,pixel-aspect-ratio=1/1,framerate=30/1,colorimetry=bt601"
SRC="videotestsrc is-live=true"
# sync=false as in pipelines/v4l2-sink.pipeline: under TCG videotestsrc needs ~35 ms a frame, and a
# syncing sink drops nearly every frame as late (about one frame a second gets through).
SINK="v4l2sink device=$DEV sync=false"

REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
# pipelines/v4l2.pipeline and v4l2-sink.pipeline as they are in the checkout, rendered like livegate
# does (1280x720 YUY2 at 30), with a videotestsrc carrying the appsrc's caps in place of the appsrc.
from_files() {
    sink=$(sed "s|{device}|$DEV|g" "$REPO/pipelines/v4l2-sink.pipeline" | tr -d '"')
    sed "s|{format}|YUY2|g; s|{width}|1280|g; s|{height}|720|g; s|{fps}|30|g; s|{sink}|$sink|g" "$REPO/pipelines/v4l2.pipeline" \
        | sed "s|^appsrc [^!]*!|$SRC ! $APPSRC !|"
}

pipeline() {
    case "$1" in
        pipeline-files) from_files ;;
        yuy2) echo "$SRC ! $YUY2 ! $SINK" ;;
        yuy2-bt601) echo "$SRC ! $YUY2,colorimetry=bt601 ! $SINK" ;;
        yuy2-par) echo "$SRC ! $YUY2,pixel-aspect-ratio=1/1 ! $SINK" ;;
        yuy2-par-bt601) echo "$SRC ! $YUY2,pixel-aspect-ratio=1/1,colorimetry=bt601 ! $SINK" ;;
        yuy2-convert) echo "$SRC ! videoconvert ! $YUY2 ! $SINK" ;;
        yuy2-convert-bt601) echo "$SRC ! videoconvert ! $YUY2,colorimetry=bt601 ! $SINK" ;;
        yuy2-bt709) echo "$SRC ! $YUY2,colorimetry=bt709 ! $SINK" ;;
        yuy2-srgb) echo "$SRC ! $YUY2,colorimetry=sRGB ! $SINK" ;;
        # What v4l2sink reports for v4l2loopback's V4L2_COLORSPACE_SRGB on YUV formats.
        yuy2-2471) echo "$SRC ! $YUY2,colorimetry=2:4:7:1 ! $SINK" ;;
        i420) echo "$SRC ! $I420 ! $SINK" ;;
        i420-bt601) echo "$SRC ! $I420,colorimetry=bt601 ! $SINK" ;;
        # pipelines/v4l2.pipeline as livegate renders it, a videotestsrc with the appsrc's caps in
        # place of the appsrc.
        livegate) echo "$SRC ! $APPSRC ! videoscale add-borders=true ! videoconvert ! $LGCAPS ! $SINK" ;;
        # The same without colorimetry=bt601 in the capsfilter.
        livegate-nocolor) echo "$SRC ! $APPSRC ! videoscale add-borders=true ! videoconvert ! video/x-raw,format=YUY2,width=1280,height=720,pixel-aspect-ratio=1/1,framerate=30/1 ! $SINK" ;;
        # The capsfilter with the device's own colorimetry instead of bt601.
        livegate-2471) echo "$SRC ! $APPSRC ! videoscale add-borders=true ! videoconvert ! video/x-raw,format=YUY2,width=1280,height=720,pixel-aspect-ratio=1/1,framerate=30/1,colorimetry=2:4:7:1 ! $SINK" ;;
        # I420 (the README's other option) through livegate's pipeline without colorimetry.
        livegate-i420-nocolor) echo "$SRC ! $APPSRC ! videoscale add-borders=true ! videoconvert ! video/x-raw,format=I420,width=1280,height=720,pixel-aspect-ratio=1/1,framerate=30/1 ! $SINK" ;;
        # The unchanged capsfilter, then a second videoconvert before the sink (what
        # `livegate run --v4l2-sink "videoconvert ! v4l2sink device=… sync=false"` builds).
        livegate-sinkconvert) echo "$SRC ! $APPSRC ! videoscale add-borders=true ! videoconvert ! $LGCAPS ! videoconvert ! $SINK" ;;
        *) return 1 ;;
    esac
}
all="yuy2 yuy2-bt601 yuy2-par yuy2-par-bt601 yuy2-convert yuy2-convert-bt601 yuy2-bt709 yuy2-srgb yuy2-2471 i420 i420-bt601 pipeline-files livegate livegate-nocolor livegate-2471 livegate-sinkconvert livegate-i420-nocolor"
compliance=${WEBCAM_COMPLIANCE:-yuy2 livegate-nocolor}

load || exit 1
{
    echo "== module: $MODOPTS"
    cat /sys/module/v4l2loopback/version 2>/dev/null
    v4l2-ctl -d $DEV --all
    v4l2-ctl -d $DEV --list-formats-out
} > "$L/00-idle-device.txt" 2>&1

for v in ${*:-$all}; do
    p=$(pipeline "$v") || { res "FAIL caps $v: unknown variant"; continue; }
    load || { res "FAIL caps $v: modprobe"; continue; }
    echo "---- [$(now)] $v: gst-launch-1.0 $p"
    echo "gst-launch-1.0 $p" > "$L/$v.pipeline"
    t=$(now)
    # shellcheck disable=SC2086
    GST_DEBUG="v4l2*:5,basesrc:4,capsfilter:5,GST_CAPS:4" timeout 120 gst-launch-1.0 $p > "$L/$v.writer.log" 2>&1 &
    wpid=$!
    # Up when the sink has written a frame (or the writer died); 40 s at most.
    i=0
    state=starting
    while [ $i -lt 400 ]; do
        if ! kill -0 $wpid 2>/dev/null; then state=died; break; fi
        if grep -q "Setting pipeline to PLAYING" "$L/$v.writer.log" && grep -qE "gst_v4l2_buffer_pool_process|gst_v4l2_buffer_pool_qbuf|queuing buffer" "$L/$v.writer.log"; then
            state=playing; break
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "[$(now)] writer $state after $(awk -v a="$t" -v b="$(now)" 'BEGIN{print b-a}') s"
    grep -E "ERROR|not-negotiated|Device wants|colorimetry|Failed to set|invalid|Could not|refused|doesn't match|not supported" "$L/$v.writer.log" | grep -v 'GST_CAPS' | head -n 12
    if [ $state = died ]; then
        wait $wpid 2>/dev/null
        why=$(grep -E "^ERROR|Device wants|not-negotiated|Could not" "$L/$v.writer.log" | head -n 3 | tr '\n' ' ')
        res "FAIL caps $v: writer $state: $why"
        continue
    fi
    sleep 1
    v4l2-ctl -d $DEV --all > "$L/$v.v4l2-ctl.txt" 2>&1
    fmt=$(grep -A8 'Format Video Capture' "$L/$v.v4l2-ctl.txt" | grep -E 'Width/Height|Pixel Format|Colorspace' | sed 's/^[[:space:]]*//' | tr '\n' ' ')
    t=$(now)
    timeout 60 ffmpeg -hide_banner -nostdin -f v4l2 -i $DEV -frames:v 30 -f null - > "$L/$v.ffmpeg.log" 2>&1
    frc=$?
    fstream=$(grep -m1 'Stream #0:0' "$L/$v.ffmpeg.log" | sed 's/^[[:space:]]*//')
    frames=$(grep -o 'frame= *[0-9]*' "$L/$v.ffmpeg.log" | tail -n1 | tr -dc 0-9)
    ft=$(awk -v a="$t" -v b="$(now)" 'BEGIN{print b-a}')
    t=$(now)
    timeout 60 gst-launch-1.0 -q v4l2src device=$DEV num-buffers=30 ! fakesink sync=false > "$L/$v.v4l2src.log" 2>&1
    grc=$?
    gt=$(awk -v a="$t" -v b="$(now)" 'BEGIN{print b-a}')
    ccount=
    case " $compliance " in
        *" $v "*)
            timeout 120 v4l2-compliance -d $DEV > "$L/$v.compliance.txt" 2>&1
            ccount=$(grep -E '^Total' "$L/$v.compliance.txt" | tail -n1)
            ;;
    esac
    kill $wpid 2>/dev/null
    wait $wpid 2>/dev/null
    detail="device [$fmt] ffmpeg rc=$frc frames=${frames:-0} (${ft}s) [$fstream] v4l2src rc=$grc (${gt}s)${ccount:+ compliance [$ccount]}"
    if [ $frc -eq 0 ] && [ "${frames:-0}" -ge 30 ] && [ $grc -eq 0 ]; then
        res "PASS caps $v: $detail"
    else
        res "FAIL caps $v: $detail"
    fi
done
exit 0
