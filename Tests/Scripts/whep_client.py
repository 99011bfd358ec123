#!/usr/bin/env python3
"""An independent WHEP client (aiortc) for livegate's tests.

Posts a recvonly H.264 offer to a WHEP endpoint, receives video for --seconds, then DELETEs the
session and DELETEs it again (which must answer 404). Prints one JSON line:
  {"status": 201, "first_frame_ms": …, "frames": n, "fps": …, "fps_after_1s": …, "fps_stream": …, "width": w, "height": h,
   "delete": 200, "delete_again": 404, "location": "…"}
aioice skips loopback addresses when it gathers candidates; the gateway listens on 127.0.0.1, so
the client's host addresses are replaced by 127.0.0.1.
"""
import argparse, asyncio, json, os, sys, time, urllib.error, urllib.parse, urllib.request

import aioice.ice
from aiortc import RTCPeerConnection, RTCSessionDescription


def only_loopback(*args, **kwargs):
    return ["127.0.0.1"]


aioice.ice.get_host_addresses = only_loopback


def http(method, url, body=None, content_type=None):
    """(status, headers, body) of one request; status None when the server cannot be reached."""
    req = urllib.request.Request(url, data=body, method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except OSError:
        return None, {}, b""


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--vanish", action="store_true", help="leave without closing or DELETE (a peer that dies)")
    ap.add_argument("--offer-only", action="store_true", help="print the offer's SDP and exit")
    ap.add_argument("--pli-after", type=float, default=None,
                    help="after this many seconds, send one RTCP PLI 100 ms after a key frame arrived, and report "
                         "how long the next key frame took (pli_keyframe_ms; the encoder's own grid is 1 s)")
    a = ap.parse_args()
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    frames = {"n": 0, "first": None, "size": None, "after_first": 0, "t_first": None, "pts": []}
    pli = {"at": None, "keyframe": None, "armed": False}

    @pc.on("track")
    def on_track(track):
        async def pump():
            while True:
                try:
                    f = await track.recv()
                except Exception:
                    return
                now = time.monotonic()
                if frames["first"] is None:
                    frames["first"] = now
                    frames["size"] = (f.width, f.height)
                frames["n"] += 1
                if f.pts is not None and f.time_base is not None:
                    frames["pts"].append(float(f.pts * f.time_base))
                if now - frames["first"] >= 1.0:
                    frames["after_first"] += 1
                    frames["t_first"] = frames["t_first"] or now
                if a.pli_after is not None and getattr(f, "key_frame", False):
                    if pli["at"] is not None and pli["keyframe"] is None:
                        pli["keyframe"] = now
                    elif pli["at"] is None and not pli["armed"] and frames["first"] is not None and now - frames["first"] >= a.pli_after:
                        pli["armed"] = True
                        asyncio.ensure_future(send_pli())
        asyncio.ensure_future(pump())

    async def send_pli():
        await asyncio.sleep(0.1)
        receiver = pc.getTransceivers()[0].receiver
        ssrcs = list(getattr(receiver, "_RTCRtpReceiver__active_ssrc", {}).keys())
        if ssrcs:
            pli["at"] = time.monotonic()
            await receiver._send_rtcp_pli(ssrcs[0])

    await pc.setLocalDescription(await pc.createOffer())
    if a.offer_only:
        sys.stdout.write(pc.localDescription.sdp)
        return
    t0 = time.monotonic()
    status, headers, body = await asyncio.get_running_loop().run_in_executor(
        None, http, "POST", a.url, pc.localDescription.sdp.encode(), "application/sdp")
    answered = time.monotonic()
    out = {"status": status, "answer_ms": round(1000 * (answered - t0))}
    if status != 201:
        out["body"] = body.decode(errors="replace")[:300]
        print(json.dumps(out))
        await pc.close()
        return
    location = urllib.parse.urljoin(a.url, headers.get("Location") or headers.get("location"))
    out["location"] = location
    out["content_type"] = headers.get("Content-Type") or headers.get("content-type")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body.decode(), type="answer"))
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    if frames["first"] is not None:
        span = time.monotonic() - frames["first"]
        out.update(first_frame_ms=round(1000 * (frames["first"] - answered)), frames=frames["n"],
                   fps=round((frames["n"] - 1) / span, 1) if span > 0 else 0,
                   fps_after_1s=round((frames["after_first"] - 1) / (time.monotonic() - frames["t_first"]), 1)
                   if frames["after_first"] > 1 else 0,
                   width=frames["size"][0], height=frames["size"][1])
        # Frames per second of the stream's own (RTP) time: every frame the camera made arrived,
        # whatever the client's own pace.
        pts = frames["pts"]
        if len(pts) > 1 and pts[-1] > pts[0]:
            out["fps_stream"] = round((len(pts) - 1) / (pts[-1] - pts[0]), 1)
    else:
        out.update(first_frame_ms=None, frames=0, fps=0)
    if a.pli_after is not None:
        out["pli_sent"] = pli["at"] is not None
        out["pli_keyframe_ms"] = round(1000 * (pli["keyframe"] - pli["at"])) if pli["keyframe"] and pli["at"] else None
    if a.vanish:
        print(json.dumps(out), flush=True)
        os._exit(0)
    await pc.close()
    out["delete"] = (await asyncio.get_running_loop().run_in_executor(None, http, "DELETE", location))[0]
    out["delete_again"] = (await asyncio.get_running_loop().run_in_executor(None, http, "DELETE", location))[0]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
