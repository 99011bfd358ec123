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

url, stalled_n, idle_n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
u = urlparse(url)
host, port = u.hostname, u.port or 554


def request(sock, method, target, cseq, extra=""):
    sock.sendall(f"{method} {target} RTSP/1.0\r\nCSeq: {cseq}\r\n{extra}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            raise RuntimeError(f"{method}: connection closed")
        head += chunk
    text = head.decode(errors="replace")
    length = 0
    for line in text.split("\r\n"):
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = b""
    while len(body) < length:
        body += sock.recv(length - len(body))
    status = int(text.split(" ", 2)[1])
    if status != 200:
        raise RuntimeError(f"{method}: {text.splitlines()[0]}")
    return text, body.decode(errors="replace")


def stalled_client():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, port))
    _, sdp = request(s, "DESCRIBE", url, 1, "Accept: application/sdp\r\n")
    control = next((l.split(":", 1)[1].strip() for l in sdp.splitlines() if l.startswith("a=control:") and "stream" in l), "stream=0")
    track = control if control.startswith("rtsp://") else url.rstrip("/") + "/" + control
    head, _ = request(s, "SETUP", track, 2, "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n")
    session = next(l.split(":", 1)[1].strip().split(";")[0] for l in head.split("\r\n") if l.lower().startswith("session:"))
    s.sendall(f"PLAY {url} RTSP/1.0\r\nCSeq: 3\r\nSession: {session}\r\n\r\n".encode())
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
