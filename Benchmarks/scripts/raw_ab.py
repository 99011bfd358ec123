#!/usr/bin/env python3
"""Same-window A/B of two livegate builds: CPU per camera frame of the whole gateway process, idle
and with one raw RTSP client, in alternated rounds (host drift hits both builds alike).

    python3 Benchmarks/scripts/raw_ab.py OLD_BINARY NEW_BINARY [--rounds 3] [--seconds 15]

One `emulate sony` camera (from the first binary) serves both gateways, which run one at a time.
Figures come from graph_cpu.py's measure(): utime+stime over the window / frames the camera sent.
"""
import argparse, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_cpu import ffmpeg_client, measure, wait_http  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15)
    a = ap.parse_args()
    emu_port = 18491
    emu = subprocess.Popen([a.binaries[0], "emulate", "sony", "--port", str(emu_port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    results = {b: [] for b in a.binaries}
    try:
        for _ in range(a.rounds):
            for i, b in enumerate(a.binaries):
                http, rtsp = 18480 + i, 18554 + i
                gw = subprocess.Popen([b, "run", "--camera", f"sony://127.0.0.1:{emu_port}", "--rtsp-port", str(rtsp),
                                       "--http-port", str(http), "--linger", "2", "--log-level", "warning"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    wait_http(http, "/api/v1/cameras")
                    time.sleep(3)
                    idle = measure(gw.pid, http, a.seconds / 2, ["cam0"])
                    client = ffmpeg_client(f"rtsp://127.0.0.1:{rtsp}/cam0/raw")
                    time.sleep(2)
                    raw = measure(gw.pid, http, a.seconds, ["cam0"])
                    client.terminate()
                    client.wait()
                    results[b].append((idle["cpu_ms_per_frame"], raw["cpu_ms_per_frame"]))
                    print(f"{b}: idle {idle['cpu_ms_per_frame']:.3f}  one raw client {raw['cpu_ms_per_frame']:.3f} ms/frame "
                          f"({raw['fps']:.1f} fps)", flush=True)
                finally:
                    gw.send_signal(signal.SIGTERM)
                    gw.wait()
    finally:
        emu.terminate()
        emu.wait()
    for b, rows in results.items():
        print(f"mean {b}: idle {sum(r[0] for r in rows) / len(rows):.3f}  raw {sum(r[1] for r in rows) / len(rows):.3f}"
              f"  median: idle {statistics.median(r[0] for r in rows):.3f}  raw {statistics.median(r[1] for r in rows):.3f}")
    # Each round runs every build back to back: the ratio within a round cancels most of the
    # host's drift, which moves single figures by ±15 % on this VM.
    first = results[a.binaries[0]]
    for b in a.binaries[1:]:
        ratios = [r[1] / f[1] for r, f in zip(results[b], first) if f[1] > 0]
        if ratios:
            print(f"{b} / {a.binaries[0]}, one raw client, per round: "
                  + " ".join(f"{x:.2f}" for x in ratios) + f"  median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
