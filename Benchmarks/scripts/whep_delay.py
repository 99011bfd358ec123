#!/usr/bin/env python3
"""How much delay the WebRTC (WHEP) preview adds over the RTSP H.264 path, measured in one run.

Starts `livegate run --no-hls` without --camera (the in-process emulated Sony camera, 768x432 at
30 fps, a 6-digit 7-segment frame counter in the top-left corner) on free ports, in a temporary
directory, and in this one process, at the same time:
  (a) an RTSP H.264 client: PyAV on rtsp://127.0.0.1:R/cam0 (TCP, nobuffer, low_delay), decoding
      in a thread;
  (b) a WHEP client: aiortc, a recvonly offer POSTed to http://127.0.0.1:H/whep/cam0, decoding
      with aiortc's H.264 decoder (PyAV/FFmpeg as well).
Both record time.monotonic() when each decoded frame comes out, and the counter read from the
frame's luma plane. Both sides read the same x264 encoder's output, so for each counter seen by
both, delta = t_webrtc - t_rtsp is what WebRTC (RTP packetisation, SRTP, the peer connection,
aiortc's jitter buffer and decoder) adds over RTSP (interleaved RTP over TCP, FFmpeg's demuxer
and decoder). Both include decode: a viewer sees decoded frames. After a warm-up of --warmup
seconds the frames of --seconds seconds are counted. Also measured: the WHEP session's first-frame
time (POST sent -> first decoded frame; the encoder is already running for the RTSP client).

Note: aiortc's jitter buffer hands a frame on only when the first packet of the next frame
arrives (it ignores the RTP marker bit), so ~1 frame interval (~33 ms at 30 fps) of the delta
is this client's, not the gateway's; a browser does not wait for it.

Run from the repository root (niced; the machine has 2 cores):
  python3 Benchmarks/scripts/whep_delay.py [--binary .build/release/livegate] [--seconds 20]
Prints one JSON object and a line "WebRTC adds X ms (p50) over RTSP H.264; target <= 150 ms".
"""
import argparse, asyncio, json, os, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.parse

import av
import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Scripts"))
from whep_client import http  # noqa: E402  (also limits aioice to 127.0.0.1, where the gateway listens)

# The counter reader (JPEGKit/TestPattern.swift readCounter), for the 768x432 pattern.
W, H = 768, 432
DH = max(20, H // 7); DW = DH * 9 // 16; GAP = max(4, DW // 4); T = max(3, DH // 8); HALF = DH // 2
PROBES = [(DW // 2, T // 2), (DW - T // 2 - 1, HALF // 2), (DW - T // 2 - 1, HALF + (DH - HALF) // 2),
          (DW // 2, DH - T // 2 - 1), (T // 2, HALF + (DH - HALF) // 2), (T // 2, HALF // 2), (DW // 2, HALF)]
PX = np.array([16 + GAP + i * (DW + GAP) + px for i in range(6) for px, _ in PROBES])
PY = np.array([16 + GAP + py for _ in range(6) for _, py in PROBES])
SEGMENTS = ["abcdef", "bc", "abdeg", "abcdg", "bcfg", "acdfg", "acdefg", "abc", "abcdefg", "abcdfg"]
DIGIT = {sum(1 << "abcdefg".index(s) for s in segs): d for d, segs in enumerate(SEGMENTS)}
WEIGHTS = 1 << np.arange(7)
# Segments are luma 235, the panel 0. The AF overlay's green/orange lines (luma ~145-150) cross
# the counter; the threshold (as in TestPattern.readCounter) sits between the overlay and white,
# so a line on a probe gives an unreadable frame, never a wrong number.
THRESHOLD = 192


def read_counter(frame):
    """The counter of a decoded av.VideoFrame (yuv420p, 768x432), or None when unreadable."""
    if frame.width != W or frame.height != H or frame.format.name not in ("yuv420p", "yuvj420p"):
        return None
    plane = frame.planes[0]
    y = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)
    masks = ((y[PY, PX] > THRESHOLD).reshape(6, 7) * WEIGHTS).sum(axis=1)
    value = 0
    for m in masks:
        d = DIGIT.get(int(m))
        if d is None:
            return None
        value = value * 10 + d
    return value


class Recorder:
    """(arrival time, counter or None) of every decoded frame of one client."""
    def __init__(self):
        self.frames, self.sizes = [], set()

    def add(self, frame):
        now = time.monotonic()
        self.frames.append((now, read_counter(frame)))
        self.sizes.add(f"{frame.width}x{frame.height} {frame.format.name}")

    def window(self, t0, t1):
        return [(t, c) for t, c in self.frames if t0 <= t < t1]

    def first_seen(self):
        seen = {}
        for t, c in self.frames:
            if c is not None and c not in seen:
                seen[c] = t
        return seen


def rtsp_client(url, rec, stop, info):
    opts = {"rtsp_transport": "tcp", "fflags": "nobuffer", "flags": "low_delay", "max_delay": "0"}
    t0 = time.monotonic()
    while not stop.is_set():
        try:
            container = av.open(url, options=opts, timeout=5)
            break
        except Exception:
            time.sleep(0.3)
    else:
        return
    try:
        for frame in container.decode(video=0):
            rec.add(frame)
            info.setdefault("rtsp_first_frame_ms", round(1000 * (time.monotonic() - t0)))
            if stop.is_set():
                break
    except Exception as e:
        info["rtsp_error"] = repr(e)
    finally:
        container.close()


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


async def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def pct(xs, q):
    return round(float(np.percentile(xs, q)), 1) if xs else None


async def measure(a, http_port, rtsp_port):
    loop = asyncio.get_running_loop()
    base = f"http://127.0.0.1:{http_port}"
    await wait_for(lambda: http("GET", base + "/api/v1/cameras")[0] == 200, 20, "the gateway's API")
    rtsp, webrtc, info, stop = Recorder(), Recorder(), {}, threading.Event()
    thread = threading.Thread(target=rtsp_client, args=(f"rtsp://127.0.0.1:{rtsp_port}/cam0", rtsp, stop, info),
                              daemon=True)
    thread.start()
    await wait_for(lambda: rtsp.frames, 30, "the first RTSP frame")

    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")

    @pc.on("track")
    def on_track(track):
        async def pump():
            while True:
                try:
                    frame = await track.recv()
                except Exception:
                    return
                webrtc.add(frame)
        asyncio.ensure_future(pump())

    await pc.setLocalDescription(await pc.createOffer())
    t_post = time.monotonic()
    status, headers, body = await loop.run_in_executor(
        None, http, "POST", base + "/whep/cam0", pc.localDescription.sdp.encode(), "application/sdp")
    if status != 201:
        raise SystemExit(f"WHEP POST answered {status}: {body[:300]!r}")
    location = urllib.parse.urljoin(base + "/whep/cam0", headers.get("Location") or headers.get("location"))
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body.decode(), type="answer"))
    await wait_for(lambda: webrtc.frames, 30, "the first WebRTC frame")
    info["whep_first_frame_ms"] = round(1000 * (webrtc.frames[0][0] - t_post))

    await asyncio.sleep(a.warmup)
    t0 = time.monotonic()
    await asyncio.sleep(a.seconds)
    t1 = time.monotonic()
    await asyncio.sleep(0.5)  # late WebRTC frames of the window's last RTSP frames
    stop.set()
    await pc.close()
    info["whep_delete"] = (await loop.run_in_executor(None, http, "DELETE", location))[0]
    thread.join(timeout=5)
    return report(rtsp, webrtc, info, t0, t1)


def report(rtsp, webrtc, info, t0, t1):
    seen_w = webrtc.first_seen()
    deltas = [1000 * (seen_w[c] - t) for c, t in rtsp.first_seen().items() if t0 <= t < t1 and c in seen_w]
    out = {"seconds": round(t1 - t0, 1)}
    for name, rec in (("rtsp", rtsp), ("webrtc", webrtc)):
        win = rec.window(t0, t1)
        counters = [c for _, c in win if c is not None]
        out[name] = {"frames": len(win), "fps": round(len(win) / (t1 - t0), 1),
                     "unreadable": sum(c is None for _, c in win),
                     "repeated": len(counters) - len(set(counters)), "decoded": sorted(rec.sizes)}
    out["matched"] = len(deltas)
    out["delta_ms"] = {"p50": pct(deltas, 50), "p90": pct(deltas, 90), "p99": pct(deltas, 99),
                       "min": pct(deltas, 0), "max": pct(deltas, 100)}
    out.update(info)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/release/livegate"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=2)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    http_port, rtsp_port = free_ports(2)
    with tempfile.TemporaryDirectory(prefix="whep-delay-") as tmp:
        log = open(os.path.join(tmp, "livegate.log"), "w+")
        gw = subprocess.Popen([binary, "run", "--http-port", str(http_port), "--rtsp-port", str(rtsp_port),
                               "--no-hls", "--log-level", "warning"], cwd=tmp, stdout=log, stderr=log)
        try:
            out = asyncio.run(measure(a, http_port, rtsp_port))
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read()[-2000:])
            raise
        finally:
            gw.send_signal(signal.SIGTERM)
            try:
                gw.wait(timeout=10)
            except subprocess.TimeoutExpired:
                gw.kill()
                gw.wait()
    print(json.dumps(out))
    p50 = out["delta_ms"]["p50"]
    print(f"WebRTC adds {p50:.1f} ms (p50) over RTSP H.264; target <= 150 ms" if p50 is not None
          else "no frame matched: no delay measured")
    sys.stdout.flush()
    os._exit(0 if p50 is not None else 1)  # aiortc/PyAV threads can hold the interpreter at exit


if __name__ == "__main__":
    main()
