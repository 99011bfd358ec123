#!/bin/sh
# PID 1 of the webcam guest after switch_root (on the host's root, read-only over 9p). Reads the
# settings run.sh left in the results share, sets up the environment, runs the test script with a
# time limit, records its exit code and powers the guest off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp/home TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb
mkdir -p "$HOME"
R=/run/results
hostname webcam-guest 2>/dev/null
ip link set lo up
echo "webcam-guest: up after $(cut -d' ' -f1 /proc/uptime) s (kernel $(uname -r))"

# shellcheck source=/dev/null
. "$R/guest.env"
export LIVEGATE REPO WEBCAM_RESULTS="$R" WEBCAM_CHROMIUM WEBCAM_PYTHON WEBCAM_V4L2_SINK WEBCAM_COMPLIANCE_MAX_FAIL
if [ -n "${GST_REGISTRY_SRC:-}" ] && [ -f "$GST_REGISTRY_SRC" ]; then
    cp "$GST_REGISTRY_SRC" /tmp/gst-registry.bin
    export GST_REGISTRY=/tmp/gst-registry.bin
    # The host made the registry from the same plugin files; a rescan under TCG takes minutes.
    export GST_REGISTRY_UPDATE=no
fi

rc=0
timeout -k 5 "${GUEST_SCRIPT_TIMEOUT:-480}" /bin/sh "$GUEST_SCRIPT" $GUEST_SCRIPT_ARGS || rc=$?
[ "$rc" -eq 124 ] && echo "webcam-guest: $GUEST_SCRIPT timed out after ${GUEST_SCRIPT_TIMEOUT:-480} s"
echo "$rc" > "$R/exit-code"
echo "webcam-guest: done (exit $rc) after $(cut -d' ' -f1 /proc/uptime) s"
sync
umount "$R" 2>/dev/null
busybox poweroff -f
