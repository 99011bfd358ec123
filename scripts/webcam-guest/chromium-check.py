#!/usr/bin/env python3
"""Chromium against the virtual webcam: Debian's chromium, driven by Playwright for Python, opens
webcam.html (served on 127.0.0.1), which takes the camera labelled LABEL with getUserMedia, sends it
through a local RTCPeerConnection pair and reports the received video. Prints one JSON object (and
`result: ok` or `result: fail <why>`); exit status 0 when the video came through in colour and moving.

    chromium-check.py [--label livegate] [--frames 20] [--size 1280x720] [--timeout 150] [--out DIR]

The page asks for --size (Chrome opens the device at its one mode, 1280x720 YUY2, and scales; under
QEMU's TCG the VP8 encoder adapts 1280x720 down to 640x360 by itself). The page's progress is printed
as it happens, so a check that runs out of time shows how far it got.
"""
import argparse
import functools
import http.server
import json
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def chromium_binary() -> str:
    # /usr/bin/chromium is Debian's wrapper script; Playwright wants the browser itself.
    for p in ("/usr/lib/chromium/chromium", shutil.which("chromium") or "", "/usr/bin/chromium"):
        if p and os.access(p, os.X_OK):
            return p
    raise SystemExit("result: fail chromium not installed")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="livegate")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--size", default="1280x720", help="the size getUserMedia asks for")
    ap.add_argument("--timeout", type=float, default=150, help="seconds for the page's check (after it loaded)")
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--chromium-arg", action="append", default=[],
                    help="one more Chromium switch (repeatable), e.g. --enable-features=WebRtcPipeWireCamera")
    a = ap.parse_args()
    t0 = time.monotonic()

    def mark(s: str) -> None:
        print(f"[chromium {time.monotonic() - t0:.1f}s] {s}", flush=True)

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("result: fail playwright for Python not installed (pip install playwright)")
        return 1

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=HERE)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/webcam.html"

    result: dict = {}
    with sync_playwright() as p:
        mark("playwright up")
        browser = p.chromium.launch(
            executable_path=chromium_binary(), headless=True, timeout=180_000,
            args=["--no-sandbox", "--use-fake-ui-for-media-stream", "--disable-gpu", "--disable-dev-shm-usage",
                  "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
                  *a.chromium_arg])
        mark(f"chromium {browser.version} launched")
        ctx = browser.new_context()
        ctx.grant_permissions(["camera"], origin=url.rsplit("/", 1)[0])
        page = ctx.new_page()
        page.on("console", lambda m: mark(f"page: {m.text}"))
        page.on("pageerror", lambda e: mark(f"page error: {e}"))
        page.goto(url, timeout=120_000)
        mark("page loaded")
        w, h = (int(v) for v in a.size.lower().split("x"))
        page.evaluate("([l, n, t, w, h]) => { window.__result = null; runCheck(l, n, t, w, h).then(r => { window.__result = r; }); }",
                      [a.label, a.frames, int(a.timeout * 1000), w, h])
        try:
            page.wait_for_function("window.__result !== null", timeout=(a.timeout + 60) * 1000, polling=1000)
            result = page.evaluate("window.__result")
            mark("check done")
        except Exception as e:
            result = {"error": f"page check did not finish: {type(e).__name__}", "log": page.evaluate("lines")}
            mark("page check did not finish in time")
        try:
            page.screenshot(path=os.path.join(a.out, "chromium.png"), timeout=30_000)
        except Exception as e:  # the screenshot is a convenience
            mark(f"no screenshot: {e}")
        browser.close()
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result, indent=1))

    why = []
    if "error" in result:
        why.append(result["error"])
    if result.get("framesDecoded", 0) < a.frames:
        why.append(f"{result.get('framesDecoded', 0)} frames decoded (want {a.frames})")
    if result.get("chroma", 0) < 15:
        why.append(f"picture not in colour (chroma {result.get('chroma')}): not the camera's picture")
    if result.get("change", 0) < 0.3:
        why.append(f"picture does not change (difference {result.get('change')})")
    print("result: " + ("ok" if not why else "fail " + "; ".join(why)))
    return 0 if not why else 1


if __name__ == "__main__":
    sys.exit(main())
