#!/usr/bin/env python3
"""A camera whose every HTTP answer is hostile, whatever was asked (for the reliability suite:
Sony's JSON-RPC, Panasonic's and Olympus's CGIs, Bandit's REST API all ask over HTTP).

usage: hostile_camera.py MODE
  huge    — a 100 MB reply with its Content-Length (a JSON string that never ends within any sane limit)
  unsized — 100 MB without a Content-Length, ended by closing the connection
  nested  — 200 000 nested arrays
  silent  — accepts the connection and the request, then says nothing
Prints the port it listens on (127.0.0.1), then serves until killed.
"""
import socket
import sys
import threading

mode = sys.argv[1]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
print(server.getsockname()[1], flush=True)


def serve(conn):
    try:
        conn.settimeout(60)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        if mode == "silent":
            threading.Event().wait(3600)
            return
        if mode in ("huge", "unsized"):
            size = 100 * 1024 * 1024
            if mode == "huge":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size)
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            conn.sendall(b'{"result": ["')
            block = b"a" * 65536
            sent = 13
            while sent + len(block) < size - 3:
                conn.sendall(block)
                sent += len(block)
            conn.sendall(b"a" * (size - 3 - sent) + b'"]}')
        else:
            body = b"[" * 200000 + b"]" * 200000
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    finally:
        conn.close()


while True:
    c, _ = server.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
