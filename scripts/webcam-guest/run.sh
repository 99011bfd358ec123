#!/usr/bin/env bash
# Host side of the virtual-webcam test: boots a QEMU guest on Debian's own kernel (which has V4L2,
# unlike this machine's) with v4l2loopback, the host's root shared read-only over 9p, runs
# guest-test.sh (or --script FILE) in it and prints the results.
#
#   LIVEGATE=/path/to/livegate scripts/webcam-guest/run.sh [--script FILE] [--timeout SECONDS] [-- ARGS…]
#
# Needs (Debian): qemu-system-x86 linux-image-amd64 linux-headers-amd64 v4l2loopback-dkms
# v4l2loopback-utils v4l-utils busybox-static (deploy/install-deps.sh --webcam installs them).
# Without qemu, a guest kernel or its v4l2loopback module it prints "webcam: SKIPPED — reason" and
# exits 0. Otherwise the last line is "webcam: N passed, N failed"; the exit status is non-zero when a
# check failed or the guest did not finish.
#
# Settings (environment):
#   LIVEGATE        the binary to test (default .build/release/livegate); must be on this machine's
#                   root, which the guest sees at the same path
#   WEBCAM_CACHE    cache folder (default .build-webcam): initramfs, GStreamer registry, runs/<time>/
#   WEBCAM_KERNEL   guest kernel version (default: the newest /boot/vmlinuz-* with v4l2loopback built)
#   WEBCAM_ACCEL    auto (KVM when a probe boot gets through within 20 s, else TCG), kvm or tcg
#   WEBCAM_MEM      guest memory in MiB (default 4096); WEBCAM_SMP guest CPUs (default 2)
#   WEBCAM_CHROMIUM 0 skips the Chromium check; WEBCAM_PYTHON a python3 with Playwright (default: found)
#   WEBCAM_V4L2_SINK  given to livegate as --v4l2-sink (e.g. "videoconvert ! v4l2sink device=/dev/video10 sync=false")
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${WEBCAM_CACHE:-$repo/.build-webcam}
# The guest is told the repository's path on the kernel command line (lgrepo=), split at spaces.
case "$repo" in *[[:space:]]*) echo "webcam: the repository path '$repo' has a space; the guest cannot mount it"
    echo "webcam: 0 passed, 1 failed"; exit 1 ;; esac
script=$here/guest-test.sh
timeout_s=480
script_args=()

usage() { sed -n "2,/^set -uo/p" "$0" | sed "$ d" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --script) script=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; script_args=("$@"); break ;;
        *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
script=$(realpath "$script")

skip() { echo "webcam: SKIPPED — $*"; exit 0; }
t0=$(date +%s.%N)
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[webcam $(since)s] $*"; }

# --- what the machine has -------------------------------------------------------------------------
qemu=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || skip "cpio not installed"
command -v modinfo >/dev/null || skip "modinfo (kmod) not installed"
busybox=$(command -v busybox) || skip "busybox not installed (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then skip "$busybox is not statically linked (apt-get install busybox-static)"; fi

find_v4l2loopback() { find "/lib/modules/$1/updates" "/lib/modules/$1/extra" "/lib/modules/$1/kernel" \
    -name 'v4l2loopback.ko*' 2>/dev/null | head -n1; }
kver=${WEBCAM_KERNEL:-}
if [ -z "$kver" ]; then
    for k in $(ls /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -rV); do
        if [ -n "$(find_v4l2loopback "$k")" ]; then kver=$k; break; fi
    done
fi
[ -n "$kver" ] || skip "no guest kernel: no /boot/vmlinuz-* with a v4l2loopback module (apt-get install linux-image-amd64 linux-headers-amd64 v4l2loopback-dkms)"
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || skip "$kernel missing or unreadable"
[ -n "$(find_v4l2loopback "$kver")" ] || skip "v4l2loopback is not built for $kver (apt-get install linux-headers-$kver; dkms autoinstall)"

if [ "$script" = "$here/guest-test.sh" ]; then
    LIVEGATE=${LIVEGATE:-$repo/.build/release/livegate}
    if [ ! -x "$LIVEGATE" ]; then
        echo "webcam: no livegate binary at $LIVEGATE (make build, or LIVEGATE=/path/to/livegate)"
        echo "webcam: 0 passed, 1 failed"
        exit 1
    fi
fi
LIVEGATE=$(realpath "${LIVEGATE:-$repo/.build/release/livegate}" 2>/dev/null || echo "${LIVEGATE:-}")
mkdir -p "$cache/runs"

# --- initramfs: busybox, init, the virtio/9p modules of the guest kernel -------------------------
initrd=$cache/initramfs-$kver.cpio.gz
resolved=()
resolve_module() {  # appends the module and (first) its dependencies to resolved[], as paths
    local name=$1 path dep
    path=$(modinfo -k "$kver" -n "$name" 2>/dev/null) || { echo "run.sh: module $name not found for $kver" >&2; return 1; }
    case "$path" in ""|"(builtin)"|*builtin*) return 0 ;; esac
    for dep in $(modinfo -k "$kver" -F depends "$name" | tr ',' ' '); do
        resolve_module "$dep" || return 1
    done
    local p
    for p in "${resolved[@]}"; do [ "$p" = "$path" ] && return 0; done
    resolved+=("$path")
}
build_initramfs() {
    local stage m rel
    stage=$(mktemp -d "$cache/initramfs.XXXXXX")
    mkdir -p "$stage"/{bin,dev,proc,sys,newroot}
    cp "$busybox" "$stage/bin/busybox"
    cp "$here/init" "$stage/init"
    chmod 755 "$stage/init"
    [ "$(id -u)" -eq 0 ] && mknod "$stage/dev/console" c 5 1
    resolved=()
    # virtio PCI transport, then 9p over virtio (with netfs/fscache as the kernel wants them).
    for m in virtio_pci 9pnet_virtio 9p; do resolve_module "$m" || { rm -rf "$stage"; return 1; }; done
    : > "$stage/modules.order"
    for m in "${resolved[@]}"; do
        rel=${m#/}
        rel=${rel%.xz}; rel=${rel%.zst}; rel=${rel%.gz}
        mkdir -p "$stage/$(dirname "$rel")"
        case "$m" in
            *.xz) xz -dc "$m" > "$stage/$rel" ;;
            *.zst) zstd -qdc "$m" > "$stage/$rel" ;;
            *.gz) gzip -dc "$m" > "$stage/$rel" ;;
            *) cp "$m" "$stage/$rel" ;;
        esac || { rm -rf "$stage"; return 1; }
        echo "/$rel" >> "$stage/modules.order"
    done
    (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 > "$initrd.tmp" && mv "$initrd.tmp" "$initrd"
    local rc=$?
    say "initramfs for $kver: $(tr '\n' ' ' < "$stage/modules.order" | sed 's|/lib/modules/[^/]*/kernel/||g')"
    rm -rf "$stage"
    return $rc
}
if [ ! -s "$initrd" ] || [ "$here/init" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
    build_initramfs || { echo "webcam: cannot build the initramfs"; echo "webcam: 0 passed, 1 failed"; exit 1; }
fi

# --- GStreamer registry, made here: a plugin scan under TCG takes minutes --------------------------
registry=$cache/gst-registry.bin
if command -v gst-inspect-1.0 >/dev/null; then
    GST_REGISTRY=$registry gst-inspect-1.0 >/dev/null 2>&1 || say "warning: gst-inspect-1.0 failed; the guest will scan plugins itself"
fi

# --- accelerator: nested KVM may hang in the guest's decompressor; TCG always works ---------------
base=("$qemu" -display none -monitor none -no-reboot -nic none -kernel "$kernel" -initrd "$initrd")
accel=${WEBCAM_ACCEL:-auto}
kvm_cpu=host
accel_cache=$cache/accel-$(uname -r)-$kver
if [ "$accel" = auto ]; then
    if [ -s "$accel_cache" ]; then
        read -r accel kvm_cpu < "$accel_cache"
    elif [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        accel=tcg
        # Some nested hosts refuse MSR 0x10a (IA32_ARCH_CAPABILITIES): QEMU aborts at once with
        # "failed to set MSR 0x10a"; without it the guest may still hang, hence the time limit.
        for cpu in host host,-arch-capabilities; do
            say "probing KVM with -cpu $cpu (20 s at most)"
            if timeout -k 2 20 "${base[@]}" -accel kvm -cpu "$cpu" -m 256 -serial stdio \
                    -append "console=ttyS0 loglevel=1 panic=-1 lgprobe" </dev/null 2>/dev/null | grep -q "probe ok"; then
                accel=kvm kvm_cpu=$cpu
                break
            fi
        done
        echo "$accel $kvm_cpu" > "$accel_cache"
        [ "$accel" = tcg ] && say "KVM did not boot the guest; using TCG (cached in $accel_cache)"
    else
        accel=tcg
    fi
fi
case "$accel" in
    kvm) accel_args=(-accel kvm -cpu "$kvm_cpu") ;;
    tcg) accel_args=(-accel tcg -cpu max) ;;
    *) echo "run.sh: WEBCAM_ACCEL must be auto, kvm or tcg" >&2; exit 2 ;;
esac

# A Python that has Playwright (for the Chromium check), as a real path: the guest has no pyenv shims.
webcam_python=
for py in ${WEBCAM_PYTHON:-} python3 /usr/bin/python3; do
    if exe=$("$py" -c 'import playwright, sys; print(sys.executable)' 2>/dev/null); then
        webcam_python=$exe
        break
    fi
done

# --- the run --------------------------------------------------------------------------------------
out=$cache/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
ln -sfn "$out" "$cache/runs/latest"
ls -1d "$cache"/runs/2* 2>/dev/null | head -n -5 | xargs -r rm -rf
# The guest runs a copy: a build on the host meanwhile must not change the binary under it.
if [ -n "$LIVEGATE" ] && [ -x "$LIVEGATE" ]; then
    cp "$LIVEGATE" "$out/livegate"
    LIVEGATE=$out/livegate
fi
q() { printf '%q' "$1"; }
{
    echo "GUEST_SCRIPT=$(q "$script")"
    echo "GUEST_SCRIPT_ARGS=$(q "${script_args[*]:-}")"
    echo "GUEST_SCRIPT_TIMEOUT=$timeout_s"
    echo "LIVEGATE=$(q "$LIVEGATE")"
    echo "REPO=$(q "$repo")"
    echo "GST_REGISTRY_SRC=$(q "$registry")"
    echo "WEBCAM_CHROMIUM=${WEBCAM_CHROMIUM:-1}"
    echo "WEBCAM_PYTHON=$(q "${webcam_python:-python3}")"
    echo "WEBCAM_V4L2_SINK=$(q "${WEBCAM_V4L2_SINK:-}")"
    echo "WEBCAM_COMPLIANCE_MAX_FAIL=${WEBCAM_COMPLIANCE_MAX_FAIL:-5}"
    echo "WEBCAM_ACCEL=$accel"
} > "$out/guest.env"

# A repository under /tmp, /run or /var/tmp is hidden in the guest by the tmpfs there: it gets a
# 9p share of its own, mounted at its host path. Elsewhere the host's root shows it (one share only:
# a second, cached view of the results folder made a run here slow and lose its reader).
repo_share=()
case "$repo/" in /tmp/*|/run/*|/var/tmp/*)
    repo_share=(-virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap") ;;
esac
say "booting $kver under $accel (${WEBCAM_SMP:-2} CPUs, ${WEBCAM_MEM:-4096} MiB); script $(basename "$script"); results in $out"
timeout -k 5 $((timeout_s + 90)) "${base[@]}" "${accel_args[@]}" -smp "${WEBCAM_SMP:-2}" -m "${WEBCAM_MEM:-4096}" \
    -chardev "stdio,id=con,signal=off,logfile=$out/console.log" -serial chardev:con \
    -append "console=ttyS0 loglevel=4 panic=-1 lgscript=$here/guest-boot.sh${repo_share:+ lgrepo=$repo}" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    "${repo_share[@]}" \
    -virtfs "local,path=$out,mount_tag=results,security_model=none" </dev/null
qrc=$?
say "guest ended (qemu exit $qrc)"

# --- summary --------------------------------------------------------------------------------------
results=$out/results.txt
[ -f "$results" ] || : > "$results"
echo "---- results ($out)"
grep -E '^(PASS|FAIL|INFO) ' "$results"
pass=$(grep -c '^PASS ' "$results")
fail=$(grep -c '^FAIL ' "$results")
if [ ! -s "$out/exit-code" ]; then
    echo "FAIL guest: did not finish (qemu exit $qrc; see $out/console.log)"
    fail=$((fail + 1))
elif [ "$(cat "$out/exit-code")" = 124 ]; then
    echo "FAIL guest: $(basename "$script") ran out of its $timeout_s s (--timeout); later checks did not run"
    fail=$((fail + 1))
elif [ "$(cat "$out/exit-code")" != 0 ] && [ "$fail" -eq 0 ]; then
    echo "FAIL guest: $(basename "$script") exited $(cat "$out/exit-code")"
    fail=$((fail + 1))
fi
echo "webcam: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
