#!/usr/bin/env bash
# Installs the Debian 12 packages livegate needs to build, run and test. Idempotent and quiet:
# it does nothing when everything is present. Uses sudo only when not root.
#
# --webcam (or LIVEGATE_WEBCAM_DEPS=1) adds what `make test-webcam` needs: QEMU, Debian's kernel with
# its headers and v4l2loopback built for it by DKMS, the V4L2 tools and a static busybox
# (scripts/webcam-guest/). Off by default: it pulls a kernel.
set -euo pipefail

webcam=${LIVEGATE_WEBCAM_DEPS:-0}
for arg in "$@"; do
    case "$arg" in
        --webcam) webcam=1 ;;
        *) echo "install-deps: unknown argument $arg (known: --webcam)" >&2; exit 2 ;;
    esac
done

packages=(
    pkg-config
    libgstreamer1.0-dev
    libgstreamer-plugins-base1.0-dev
    libgstreamer-plugins-bad1.0-dev
    libgstrtspserver-1.0-dev
    gstreamer1.0-plugins-base
    gstreamer1.0-plugins-good
    gstreamer1.0-plugins-bad
    gstreamer1.0-plugins-ugly
    gstreamer1.0-libav
    gstreamer1.0-nice
    gstreamer1.0-rtsp
    gstreamer1.0-tools
    libturbojpeg0-dev
    gstreamer1.0-pipewire
    pipewire
    pipewire-bin
    wireplumber
    dbus
    xdg-desktop-portal
    libglib2.0-bin
    nginx-light
    libnginx-mod-rtmp
    python3-gi
    gir1.2-gst-rtsp-server-1.0
    ffmpeg
    chromium
    curl
    python3
    python3-pip
)

if [ "$webcam" = 1 ]; then
    # linux-image-amd64 and linux-headers-amd64 together, so that DKMS finds the headers of the kernel
    # it builds v4l2loopback for.
    packages+=(
        qemu-system-x86
        linux-image-amd64
        linux-headers-amd64
        v4l2loopback-dkms
        v4l2loopback-utils
        v4l-utils
        busybox-static
        cpio
    )
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    else
        sudo=(sudo)
    fi
    echo "install-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "install-deps: done" >&2
fi

# The test suite's PyPI packages (pinned in requirements-test.txt): only when one is missing.
# Debian's own python3 refuses pip installs into the system (PEP 668) unless told.
requirements="$(dirname "$0")/../requirements-test.txt"
if ! python3 -c "import aiortc, playwright, prometheus_client, jsonschema, yaml, openapi_spec_validator" 2>/dev/null; then
    echo "install-deps: pip install -r requirements-test.txt" >&2
    python3 -m pip install -q -r "$requirements" 2>/dev/null \
        || python3 -m pip install -q --break-system-packages -r "$requirements"
fi
