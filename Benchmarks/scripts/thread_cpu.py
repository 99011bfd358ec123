#!/usr/bin/env python3
"""CPU per camera frame of each thread of the gateway, for one emulated camera of any vendor, idle or
with one raw RTSP client: where the time goes (ingest, GStreamer, Swift concurrency's timer and
worker threads) and how often each thread wakes.

    python3 Benchmarks/scripts/thread_cpu.py [--livegate BIN] [--vendor sony] [--seconds 12] [--raw-client]

Run times and wake-ups come from /proc/PID/task/*/schedstat (nanoseconds on CPU, timeslices run);
"per frame" divides by the frames the gateway received in the window.
"""
import argparse, os, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_cpu import ffmpeg_client, metric, wait_http  # noqa: E402


def snapshot(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            ns, _, slices = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
            out[tid] = (comm, ns, slices)
        except (OSError, ValueError):
            pass  # the thread ended between the listing and the read
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--livegate", default="./.build/release/livegate")
    ap.add_argument("--vendor", default="sony", help="an `emulate` vendor: sony, panasonic, olympus, bandit, nikon, …")
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--raw-client", action="store_true", help="measure with one ffmpeg client on /cam0/raw")
    a = ap.parse_args()
    emu_port, http, rtsp = 18491, 18480, 18554
    emu = subprocess.Popen([a.livegate, "emulate", a.vendor, "--port", str(emu_port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    gw = subprocess.Popen([a.livegate, "run", "--camera", f"{a.vendor}://127.0.0.1:{emu_port}", "--rtsp-port", str(rtsp),
                           "--http-port", str(http), "--linger", "2", "--log-level", "warning"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        wait_http(http, "/api/v1/cameras")
        time.sleep(4)
        if a.raw_client:
            client = ffmpeg_client(f"rtsp://127.0.0.1:{rtsp}/cam0/raw")
            time.sleep(3)
        received = lambda: metric(http, "livegate_frames_received_total", {"camera": "cam0"})
        before, f0, t0 = snapshot(gw.pid), received(), time.time()
        time.sleep(a.seconds)
        after, f1, dt = snapshot(gw.pid), received(), time.time() - t0
        frames = max(f1 - f0, 1)
        rows, total = [], 0
        for tid, (comm, ns, slices) in after.items():
            _, ns0, slices0 = before.get(tid, (comm, 0, 0))
            d = ns - ns0
            total += d
            if d > 0:
                rows.append((d, comm, tid, slices - slices0))
        print(f"{'thread':20s} {'tid':>8s} {'ms/frame':>9s} {'wakes/s':>8s} {'us/wake':>8s}")
        for d, comm, tid, s in sorted(rows, reverse=True):
            print(f"{comm:20s} {tid:>8s} {d / 1e6 / frames:9.4f} {s / dt:8.1f} {d / max(s, 1) / 1e3:8.1f}")
        print(f"total {total / 1e6 / frames:.4f} ms/frame over {dt:.1f} s, {frames / dt:.1f} fps ({a.vendor}, "
              f"{'one raw client' if a.raw_client else 'idle'})")
    finally:
        if client:
            client.terminate()
            client.wait()
        gw.send_signal(signal.SIGTERM)
        gw.wait()
        emu.terminate()
        emu.wait()


if __name__ == "__main__":
    main()
