#!/usr/bin/env python3
"""CPU per camera frame of the whole gateway process with 1 and with 5 WebRTC (WHEP) viewers,
alternated for --rounds rounds (the ratio is the median of the rounds'), see Benchmarks/README.md.

The camera is `livegate emulate sony` (768x432 at 30 fps) in its own process, the gateway
`livegate run` in another, the viewers are aiortc clients (Tests/Scripts/whep_client.py, decoding
the video) in processes of their own. The gateway's CPU (utime + stime of /proc/PID/stat) over the
window is divided by the frames the camera delivered (livegate_frames_received_total).
"""
import argparse, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_cpu import measure, wait_http  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT = os.path.join(ROOT, "Tests", "Scripts", "whep_client.py")


def viewers(url, n, seconds):
    return [subprocess.Popen([sys.executable, CLIENT, url, "--seconds", str(seconds)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--livegate", default=os.path.join(ROOT, ".build/release/livegate"))
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--viewers", type=int, default=5)
    a = ap.parse_args()
    emu_port, rtsp, http = 18491, 18654, 18480
    emu = subprocess.Popen([a.livegate, "emulate", "sony", "--port", str(emu_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    gw = subprocess.Popen([a.livegate, "run", "--camera", f"sony://127.0.0.1:{emu_port}", "--rtsp-port", str(rtsp),
                           "--http-port", str(http), "--linger", "2", "--log-level", "warning"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{http}/whep/cam0"
    rows = []
    try:
        wait_http(http, "/api/v1/cameras")
        time.sleep(3)
        for _ in range(a.rounds):
            r = {}
            for n in (1, a.viewers):
                procs = viewers(url, n, a.seconds + 6)
                time.sleep(4)
                r[n] = measure(gw.pid, http, a.seconds, ["cam0"])["cpu_ms_per_frame"]
                for p in procs:
                    p.wait(timeout=60)
                time.sleep(3)
            rows.append(r)
            print(f"1 viewer {r[1]:.3f} ms/frame, {a.viewers} viewers {r[a.viewers]:.3f} ms/frame: {r[a.viewers] / r[1]:.2f}x", flush=True)
    finally:
        gw.send_signal(signal.SIGTERM)
        try: gw.wait(timeout=10)
        except Exception: gw.kill()
        emu.terminate(); emu.wait()
    ratios = [r[a.viewers] / r[1] for r in rows]
    print(f"{a.viewers} WebRTC viewers vs one: median {statistics.median(ratios):.2f}x "
          f"(rounds {', '.join(f'{x:.2f}' for x in sorted(ratios))}; target <= 1.5)")


if __name__ == "__main__":
    main()
