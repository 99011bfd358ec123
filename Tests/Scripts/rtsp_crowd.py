#!/usr/bin/env python3
"""A crowd of RTSP clients on one mount: many that read, a few that stall.

usage: rtsp_crowd.py URL READERS STALLED SECONDS [--pid PID] [--warmup S] [--settle S]

READERS clients do DESCRIBE / SETUP (TCP interleaved, channels 0-1) / PLAY on URL and read the
interleaved stream; STALLED clients (receive buffer 4096 bytes) do the same and then never read
again. Everything runs in one thread on a selector, so the script costs little CPU next to the
gateway it measures.

Timeline: all clients are set up concurrently; once every one of them plays, WARMUP seconds pass
(default 2: each H.264 join holds the shared stream for a frame or two) and then the measured
window of SECONDS starts. Per reader, over that window:
  frames       RTP packets on channel 0 with the marker bit (one per frame)
  fps_stream   (frames - 1) / (stream time between the first and last frame), stream time from the
               RTP timestamps (32-bit wrap handled) at the clock rate of the SDP's a=rtpmap
  fps_wall     (frames - 1) / (wall time between the arrival of the first and last frame)
  max_gap_ms   the largest RTP-timestamp step between consecutive frames, in ms
  max_wall_gap_ms  the largest arrival-time step between consecutive frames, in ms
  lost         RTP sequence numbers skipped on channel 0
After the window the stalled clients are drained (readers keep reading meanwhile): one whose
connection ends (EOF or reset) was closed by the server; one that stays silent for 2 s or still
streams after 10 s of reading was not. Then every client disconnects.

With --pid, the VmRSS of that process (KiB) is sampled before the clients connect (baseline), every
half second until they are gone (peak), and SETTLE seconds (default 3) after they all disconnected
(after); so is its RssAnon (heap and other anonymous memory, without the pages of mapped code
that a first use brings in). Its CPU time over the run is reported too (pid_cpu_s), and so is the
script's own (script_cpu_s).

Also reported: setup_s (from the first connect until every client plays), max_connect_s and, per
reader, connect_s / setup_s (a TCP connect of about 1 s or 3 s means the server's listen queue
overflowed and the SYN was retried).

Prints one JSON object on stdout and exits 0; exits 1 (message on stderr) when a client cannot be
set up (refused, a non-200 reply, or not playing within --setup-timeout, default 20 s).
"""
import argparse
import json
import os
import resource
import selectors
import socket
import struct
import sys
import time
from urllib.parse import urljoin, urlparse, urlunparse

import lgtest

DRAIN_SILENCE = 2.0       # a stalled client silent this long is still open
DRAIN_LIMIT = 10.0        # a stalled client still streaming after this long was not closed
RECV_SIZE = 256 * 1024
MAX_PACKET = 4 + 65535
_unpack_u32 = struct.Struct(">I").unpack_from


class SetupError(Exception):
    pass


def parse_args():
    p = argparse.ArgumentParser(description="RTSP crowd: readers keep their frame rate, stalled clients get dropped.")
    p.add_argument("url")
    p.add_argument("readers", type=int)
    p.add_argument("stalled", type=int)
    p.add_argument("seconds", type=float)
    p.add_argument("--pid", type=int, help="process whose VmRSS and CPU time to sample (the gateway)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds between all clients playing and the measured window (default 2)")
    p.add_argument("--settle", type=float, default=3.0, help="seconds after the clients left before the last RSS sample (default 3)")
    p.add_argument("--setup-timeout", type=float, default=20.0, help="seconds for every client to be playing (default 20)")
    return p.parse_args()


# ---------------------------------------------------------------- RTSP

class Target:
    """The URL split into where to connect, what to put in requests and the credentials."""

    def __init__(self, url):
        u = urlparse(url)
        if u.scheme not in ("rtsp", "rtsps") or not u.hostname:
            raise SetupError(f"not an rtsp:// URL: {url}")
        if u.scheme == "rtsps":
            raise SetupError("rtsps:// is not supported")
        self.host, self.port = u.hostname, u.port or 554
        netloc = u.hostname if ":" not in u.hostname else f"[{u.hostname}]"
        if u.port:
            netloc += f":{u.port}"
        self.url = urlunparse(u._replace(netloc=netloc))
        self.auth = ""
        if u.username is not None:
            self.auth = lgtest.basic_auth(u.username, u.password or "")


def parse_sdp(sdp, base):
    """(track URL, aggregate control or None, clock rate) from a DESCRIBE answer."""
    session_control, media_control, clock = None, None, None
    in_media = seen_media = False
    for line in sdp.splitlines():
        line = line.strip()
        if line.startswith("m="):
            if seen_media:
                break  # first media only
            in_media = seen_media = True
        elif line.startswith("a=control:"):
            value = line[len("a=control:"):].strip()
            if in_media:
                media_control = value
            else:
                session_control = value
        elif in_media and line.startswith("a=rtpmap:") and clock is None:
            try:
                clock = int(line.split(None, 1)[1].split("/")[1])
            except (IndexError, ValueError):
                pass
    if not seen_media:
        raise SetupError("the SDP has no m= line")
    if not clock:
        raise SetupError("the SDP has no clock rate (a=rtpmap) for its first media")

    def resolve(control):
        if control is None or control == "*":
            return None
        return control if control.startswith("rtsp://") else urljoin(base, control)

    return resolve(media_control) or base.rstrip("/"), resolve(session_control), clock


class Client:
    """One RTSP connection: set up on the selector, then read (reader) or left alone (stalled)."""

    def __init__(self, index, stalled, target, run):
        self.index, self.stalled, self.target, self.run = index, stalled, target, run
        self.state = "connect"
        self.rx = bytearray()          # RTSP replies before PLAY
        self.tail = b""                # an unfinished interleaved packet between recvs
        self.cseq = 0
        self.session = None
        self.session_timeout = 60
        self.play_cseq = None
        self.playing = False
        self.clock = 90000
        self.aggregate = target.url
        self.closed_by_server = None   # monotonic time the server ended the connection
        self.error = None
        self.last_keepalive = 0.0
        self.t_start = time.monotonic()
        self.t_connected = self.t_playing = None
        # stream statistics (measured window only)
        self.counting = False
        self.frames = self.packets = self.lost = self.backwards = self.garbage = 0
        self.bytes = 0
        self.early_frames = 0
        self.first_ts = self.last_ts = None
        self.span = 0
        self.first_wall = self.last_wall = None
        self.max_gap = 0
        self.max_wall_gap = 0.0
        self.last_seq = None
        # drain result (stalled clients)
        self.drain = None
        self.drain_start = self.drain_last = 0.0
        self.drained = 0
        s = socket.socket(socket.AF_INET6 if ":" in target.host else socket.AF_INET, socket.SOCK_STREAM)
        if stalled:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        else:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.setblocking(False)
        self.sock = s
        try:
            s.connect((target.host, target.port))
        except BlockingIOError:
            pass
        except OSError as e:
            raise SetupError(f"client {index}: connect to {target.host}:{target.port}: {e}")

    # -- requests

    def request(self, method, target, extra=""):
        self.cseq += 1
        session = f"Session: {self.session}\r\n" if self.session else ""
        headers = f"{session}{self.target.auth}User-Agent: rtsp_crowd\r\n{extra}"
        self.sock.sendall(lgtest.request_bytes(method, target, self.cseq, headers))  # small, fits the socket buffer
        return self.cseq

    def on_connected(self):
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise SetupError(f"client {self.index}: connect to {self.target.host}:{self.target.port}: {os.strerror(err)}")
        self.t_connected = time.monotonic()
        self.request("DESCRIBE", self.target.url, lgtest.ACCEPT_SDP)
        self.state = "describe"

    def fail(self, what, status_line):
        hint = " (credentials needed: put user:password in the URL)" if status_line and " 401 " in status_line + " " else ""
        raise SetupError(f"client {self.index}: {what}: {status_line}{hint}")

    def on_setup_data(self, data):
        """Handles data before PLAY was sent: one reply at a time."""
        self.rx += data
        while self.state in ("describe", "setup"):
            end = self.rx.find(b"\r\n\r\n")
            if end < 0:
                if len(self.rx) > 65536:
                    self.fail(self.state.upper(), "reply head too long")
                return
            status, headers, first = lgtest.parse_head(bytes(self.rx[:end]))
            length = int(headers.get("content-length", "0") or 0)
            if len(self.rx) < end + 4 + length:
                return
            body = bytes(self.rx[end + 4:end + 4 + length])
            del self.rx[:end + 4 + length]
            if status is None:
                self.fail(self.state.upper(), f"not an RTSP reply: {first!r}")
            if status != 200:
                self.fail(self.state.upper(), first)
            if self.state == "describe":
                base = headers.get("content-base") or headers.get("content-location") or self.target.url
                if not base.endswith("/"):
                    base += "/"
                track, aggregate, self.clock = parse_sdp(body.decode("utf-8", "replace"), base)
                if aggregate:
                    self.aggregate = aggregate
                self.request("SETUP", track, lgtest.TCP_INTERLEAVED)
                self.state = "setup"
            else:
                session = headers.get("session")
                if not session:
                    self.fail("SETUP", "reply without a Session header")
                parts = [p.strip() for p in session.split(";")]
                self.session = parts[0]
                for p in parts[1:]:
                    if p.lower().startswith("timeout="):
                        try:
                            self.session_timeout = max(5, int(p.split("=", 1)[1]))
                        except ValueError:
                            pass
                self.play_cseq = self.request("PLAY", self.aggregate)
                self.last_keepalive = time.monotonic()
                self.state = "stream"
                rest = bytes(self.rx)
                self.rx = bytearray()
                if rest:
                    self.feed_bytes(rest, time.monotonic())

    # -- the interleaved stream

    def feed_bytes(self, data, now):
        buf = bytearray(data)
        used = self.parse(buf, len(buf), now)
        self.tail = bytes(buf[used:])

    def on_text(self, head, body_len):
        status, headers, first = lgtest.parse_head(head)
        if status is None:
            return  # a request from the server: skipped
        if not self.playing and headers.get("cseq") == str(self.play_cseq):
            if status != 200:
                self.fail("PLAY", first)
            self.playing = True
            self.t_playing = time.monotonic()
            self.run.on_playing(self)

    def parse(self, buf, end, now):
        """Parses buf[0:end]; returns how many bytes were used (the rest is an unfinished message)."""
        pos = 0
        counting = self.counting
        while end - pos >= 4:
            b = buf[pos]
            if b == 36:  # '$' channel length(2) packet
                nxt = pos + 4 + ((buf[pos + 2] << 8) | buf[pos + 3])
                if nxt > end:
                    break
                if buf[pos + 1] == 0 and nxt - pos >= 16:
                    if counting:
                        self.packets += 1
                        seq = (buf[pos + 6] << 8) | buf[pos + 7]
                        last = self.last_seq
                        if last is not None and seq != ((last + 1) & 0xFFFF):
                            self.lost += (seq - last - 1) & 0xFFFF
                        self.last_seq = seq
                    if buf[pos + 5] & 0x80:
                        if counting:
                            self.frame(_unpack_u32(buf, pos + 8)[0], now)
                        elif self.frames == 0:
                            self.early_frames += 1
                pos = nxt
            elif 65 <= b <= 90:  # 'A'..'Z': an RTSP reply (or request) between the packets
                head_end = buf.find(b"\r\n\r\n", pos, end)
                if head_end < 0:
                    if end - pos > 65536:
                        self.garbage += end - pos
                        pos = end
                    break
                head = bytes(buf[pos:head_end])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:].strip() or 0)
                nxt = head_end + 4 + length
                if nxt > end:
                    break
                self.on_text(head, length)
                counting = self.counting
                pos = nxt
            else:  # lost sync: skip to the next '$'
                j = buf.find(b"$", pos + 1, end)
                j = end if j < 0 else j
                self.garbage += j - pos
                pos = j
        return pos

    def frame(self, ts, now):
        if self.frames == 0:
            self.first_ts, self.first_wall = ts, now
        else:
            d = (ts - self.last_ts) & 0xFFFFFFFF
            if d >= 0x80000000:
                d -= 1 << 32
                self.backwards += 1
            self.span += d
            if d > self.max_gap:
                self.max_gap = d
            w = now - self.last_wall
            if w > self.max_wall_gap:
                self.max_wall_gap = w
        self.last_ts, self.last_wall = ts, now
        self.frames += 1

    def start_counting(self):
        self.counting = True
        self.last_seq = None

    def report(self):
        fps_stream = fps_wall = None
        if self.frames >= 2:
            if self.span > 0:
                fps_stream = (self.frames - 1) / (self.span / self.clock)
            window = self.last_wall - self.first_wall
            if window > 0:
                fps_wall = (self.frames - 1) / window
        return {
            "id": self.index,
            "connect_s": round(self.t_connected - self.t_start, 3),
            "setup_s": round(self.t_playing - self.t_start, 3),
            "frames": self.frames,
            "fps_stream": None if fps_stream is None else round(fps_stream, 3),
            "fps_wall": None if fps_wall is None else round(fps_wall, 3),
            "max_gap_ms": round(self.max_gap * 1000 / self.clock, 1),
            "max_wall_gap_ms": round(self.max_wall_gap * 1000, 1),
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "first_wall": None if self.first_wall is None else round(self.first_wall - self.run.window_start, 3),
            "last_wall": None if self.last_wall is None else round(self.last_wall - self.run.window_start, 3),
            "packets": self.packets,
            "lost": self.lost,
            "bytes": self.bytes,
            "early_frames": self.early_frames,
            **({"ts_backwards": self.backwards} if self.backwards else {}),
            **({"garbage_bytes": self.garbage} if self.garbage else {}),
            "closed_by_server": self.closed_by_server is not None,
            **({"closed_at": round(self.closed_by_server - self.run.window_start, 3)} if self.closed_by_server else {}),
            **({"error": self.error} if self.error else {}),
        }


class Run:
    def __init__(self, args):
        self.args = args
        self.target = Target(args.url)
        self.sel = selectors.DefaultSelector()
        self.rbuf = bytearray(MAX_PACKET + RECV_SIZE)
        self.rview = memoryview(self.rbuf)
        self.readers, self.stalled = [], []
        self.waiting = 0             # clients not yet playing
        self.window_start = 0.0
        self.rss = {"baseline": None, "peak": None, "after": None}
        self.anon = {"baseline": None, "peak": None, "after": None}

    def sample(self):
        if self.args.pid:
            m = lgtest.memory_kib(self.args.pid)
            if m is None:
                return
            for d, v in zip((self.rss, self.anon), m):
                if v is not None and (d["peak"] is None or v > d["peak"]):
                    d["peak"] = v

    def on_playing(self, client):
        self.waiting -= 1
        if client.stalled:
            self.sel.unregister(client.sock)  # never read again
            client.state = "stalled"

    # -- events

    def on_event(self, client, mask, now):
        if client.state == "connect":
            if mask & selectors.EVENT_WRITE:
                client.on_connected()
                self.sel.modify(client.sock, selectors.EVENT_READ, client)
            return
        if client.state == "drain":
            self.drain_read(client, now)
            return
        if client.state in ("describe", "setup"):
            try:
                data = client.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                client.fail(client.state.upper(), str(e))
            if not data:
                client.fail(client.state.upper(), "the server closed the connection")
            client.on_setup_data(data)
            return
        # streaming: recv into the shared buffer behind what is left of the last packet
        tail = client.tail
        n0 = len(tail)
        if n0:
            self.rbuf[:n0] = tail
        try:
            n = client.sock.recv_into(self.rview[n0:], RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            n = 0
            client.error = str(e)
        if n == 0:
            if not client.playing:
                client.fail("PLAY", client.error or "the server closed the connection")
            client.closed_by_server = now
            self.sel.unregister(client.sock)
            client.state = "closed"
            return
        if client.counting:
            client.bytes += n
        end = n0 + n
        used = client.parse(self.rbuf, end, now)
        client.tail = bytes(self.rbuf[used:end]) if used < end else b""

    def drain_read(self, client, now):
        try:
            data = client.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # ECONNRESET and the like: the server closed it
        if not data:
            client.drain = "closed"
            self.sel.unregister(client.sock)
            client.state = "done"
            return
        client.drained += len(data)
        client.drain_last = now

    def loop_until(self, done, deadline, on_tick=None):
        next_sample = 0.0
        while not done():
            now = time.monotonic()
            if now >= next_sample:
                self.sample()
                if on_tick:
                    on_tick(now)
                next_sample = now + 0.5
            if deadline is not None and now >= deadline:
                return False
            timeout = next_sample - now
            if deadline is not None:
                timeout = min(timeout, deadline - now)
            events = self.sel.select(max(0.0, timeout))
            now = time.monotonic()
            for key, mask in events:
                self.on_event(key.data, mask, now)
        return True

    def keepalive(self, now):
        for c in self.readers:
            if c.state == "stream" and c.playing and now - c.last_keepalive > c.session_timeout / 2:
                c.last_keepalive = now
                try:
                    c.request("GET_PARAMETER", c.aggregate)
                except OSError:
                    pass

    def run(self):
        a = self.args
        if a.pid:
            m = lgtest.memory_kib(a.pid)
            if m is None:
                raise SetupError(f"no VmRSS for pid {a.pid} (is it running?)")
            self.rss["baseline"], self.anon["baseline"] = m
            self.rss["peak"], self.anon["peak"] = m
            cpu0 = lgtest.cpu_seconds(a.pid)
        started = time.monotonic()
        for i in range(a.readers + a.stalled):
            c = Client(i, i >= a.readers, self.target, self)
            (self.stalled if c.stalled else self.readers).append(c)
            self.sel.register(c.sock, selectors.EVENT_WRITE, c)
            self.waiting += 1
        if not self.loop_until(lambda: self.waiting == 0, started + a.setup_timeout):
            waiting_for = {"connect": "TCP connect", "describe": "DESCRIBE reply", "setup": "SETUP reply", "stream": "PLAY reply"}
            late = {}
            for c in self.readers + self.stalled:
                if not c.playing:
                    late.setdefault(waiting_for.get(c.state, c.state), []).append(c.index)
            what = "; ".join(f"{len(ids)} waiting for the {w} (clients {ids[:10]})" for w, ids in late.items())
            raise SetupError(f"{sum(map(len, late.values()))} of {len(self.readers) + len(self.stalled)} clients "
                             f"not playing after {a.setup_timeout:g} s: {what}")
        setup_s = time.monotonic() - started

        # warm-up, then the measured window
        self.window_start = time.monotonic() + a.warmup
        self.loop_until(lambda: False, self.window_start, self.keepalive)
        for c in self.readers:
            c.start_counting()
        self.window_start = time.monotonic()
        self.loop_until(lambda: False, self.window_start + a.seconds, self.keepalive)
        window_end = time.monotonic()
        for c in self.readers:
            c.counting = False

        # drain the stalled clients (readers keep reading)
        for c in self.stalled:
            c.state = "drain"
            c.drain_start = c.drain_last = window_end
            self.sel.register(c.sock, selectors.EVENT_READ, c)

        def drain_tick(now):
            self.keepalive(now)
            for c in self.stalled:
                if c.state != "drain":
                    continue
                if now - c.drain_last >= DRAIN_SILENCE:
                    c.drain = "open"       # connected, but nothing arrives
                elif now - c.drain_start >= DRAIN_LIMIT:
                    c.drain = "streaming"  # never closed: the backlog keeps coming
                else:
                    continue
                self.sel.unregister(c.sock)
                c.state = "done"

        self.loop_until(lambda: all(c.state == "done" for c in self.stalled), None, drain_tick)

        # everyone leaves
        self.sample()
        for c in self.readers + self.stalled:
            try:
                if c.state not in ("closed", "done"):
                    self.sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
        if a.pid:
            time.sleep(a.settle)
            m = lgtest.memory_kib(a.pid) or (None, None)
            self.rss["after"], self.anon["after"] = m
            cpu1 = lgtest.cpu_seconds(a.pid)

        readers = [c.report() for c in self.readers]

        def minimum(key):
            vals = [r[key] or 0.0 for r in readers]
            return min(vals) if vals else None

        usage = resource.getrusage(resource.RUSAGE_SELF)
        out = {
            "url": self.target.url,
            "seconds": round(window_end - self.window_start, 3),
            "warmup": a.warmup,
            "setup_s": round(setup_s, 3),
            "max_connect_s": round(max(c.t_connected - c.t_start for c in self.readers + self.stalled), 3),
            "readers": readers,
            "min_fps_stream": minimum("fps_stream"),
            "min_fps_wall": minimum("fps_wall"),
            "max_gap_ms": max((r["max_gap_ms"] for r in readers), default=None),
            "max_wall_gap_ms": max((r["max_wall_gap_ms"] for r in readers), default=None),
            "readers_closed": sum(r["closed_by_server"] for r in readers),
            "lost_packets": sum(r["lost"] for r in readers),
            "stalled_closed": sum(c.drain == "closed" for c in self.stalled),
            "stalled": len(self.stalled),
            "stalled_detail": [{"id": c.index, "result": c.drain, "drained_bytes": c.drained} for c in self.stalled],
            "rss_kib": self.rss if a.pid else None,
            **({"rss_anon_kib": self.anon} if a.pid else {}),
            "script_cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        }
        if a.pid and cpu0 is not None and cpu1 is not None:
            out["pid_cpu_s"] = round(cpu1 - cpu0, 3)
        return out


def main():
    args = parse_args()
    if args.readers < 0 or args.stalled < 0 or args.seconds <= 0 or args.readers + args.stalled == 0:
        print("rtsp_crowd: READERS and STALLED must be >= 0 (not both 0) and SECONDS > 0", file=sys.stderr)
        return 1
    try:
        out = Run(args).run()
    except SetupError as e:
        print(f"rtsp_crowd: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
