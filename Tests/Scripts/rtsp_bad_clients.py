#!/usr/bin/env python3
"""RTSP clients that hold a server's resources without using them.

usage: rtsp_bad_clients.py URL STALLED IDLE SECONDS
  STALLED clients set up the stream (TCP interleaved) and PLAY, then never read again (their
  receive buffers are made small so the server's side fills quickly); IDLE clients connect and
  send nothing. After SECONDS the script reports, as JSON, how many of each the server closed.
"""
import json
import socket
import sys
import time
from urllib.parse import urlparse

import lgtest

url, stalled_n, idle_n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
u = urlparse(url)
host, port = u.hostname, u.port or 554


def request(sock, method, target, cseq, extra=""):
    sock.sendall(lgtest.request_bytes(method, target, cseq, extra))
    try:
        status, headers, first, body, _ = lgtest.read_reply(sock)
    except ConnectionError:
        raise RuntimeError(f"{method}: connection closed") from None
    if status != 200:
        raise RuntimeError(f"{method}: {first}")
    return headers, body.decode(errors="replace")


def stalled_client():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, port))
    _, sdp = request(s, "DESCRIBE", url, 1, lgtest.ACCEPT_SDP)
    control = next((c for c in lgtest.sdp_controls(sdp) if "stream" in c), "stream=0")
    headers, _ = request(s, "SETUP", lgtest.track_url(url, control), 2, lgtest.TCP_INTERLEAVED)
    session = lgtest.session_id(headers["session"])
    s.sendall(lgtest.request_bytes("PLAY", url, 3, f"Session: {session}\r\n"))
    return s  # never read again


def closed_by_server(s):
    """Drains what is buffered; True when the server had closed the connection."""
    s.settimeout(2)
    end = time.time() + 10
    try:
        while time.time() < end:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False  # still streaming after 10 s of reading


stalled = [stalled_client() for _ in range(stalled_n)]
idle = []
for _ in range(idle_n):
    s = socket.socket()
    s.connect((host, port))
    idle.append(s)
time.sleep(seconds)
print(json.dumps({
    "stalled": stalled_n, "stalledClosed": sum(closed_by_server(s) for s in stalled),
    "idle": idle_n, "idleClosed": sum(closed_by_server(s) for s in idle),
}))
