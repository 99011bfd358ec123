#!/usr/bin/env python3
"""Hostile HTTP clients against the gateway's control API (for the reliability suite).

usage: hostile_http.py HOST:PORT MODE [ARGS] [--pid PID] [options]
  idle N SECONDS       N connections that send nothing
  slowloris N SECONDS  N connections send "GET /api/v1/cameras HTTP/1.1" and Host, then one short
                       header line every --interval seconds (default 5), never ending the head
                       (--trickle byte: one byte of a header line per interval instead)
  slowbody N SECONDS   N connections send a whole PUT head with Content-Length: 1000, then one body
                       byte every --interval seconds
  flood SECONDS        --connections C (default 8) keep-alive connections in --processes P
                       (default 2) processes, each pipelining --depth (default 32) GET
                       /api/v1/cameras and reading the answers, as fast as the server goes
  bigbody              a 100 MB PUT body (Content-Length: stopping once answered, and sending it
                       all regardless; then chunked), a 16 MB request line and a 16 MB header
                       line, each streamed; reports each answer, when it came and whether the
                       server closed (--body-mb, --line-mb, --timeout)
  traversal            raw request targets that try to leave /hls and /snapshot (../, %2e%2e%2f,
                       %2f, backslashes, NUL); reports each status and whether a file leaked

Every mode also, once a second, asks GET /api/v1/cameras on a fresh connection (the probe; 5 s
timeout = failure) and samples the gateway's open descriptors and VmRSS (with --pid). With
--rtsp URL an RTSP client (TCP interleaved) counts the stream's frames meanwhile. One JSON object
goes to stdout; exit 0 when the mode ran, 1 (message on stderr) when the server cannot be reached.
The caller asserts on it. Main keys: idle/slowloris/slowbody: opened, closed_by_server,
remaining_open_at_end, all_closed_at_s (seconds after the last connection opened), lifetime_s,
timeline; flood: requests_per_second, statuses, errors; bigbody: cases.<case>.status/answer_ms/
closed; traversal: leaks, ok_200; all: fds and rss_kib {baseline, peak, end[, after_close]},
probes {statuses, failures, max_ms, ...}, rtsp {frames, fps, max_gap_ms, error}, gateway_nofile.
Python 3 standard library only.
"""
import argparse
import errno
import json
import multiprocessing
import re
import resource
import select
import selectors
import socket
import statistics
import sys
import threading
import time
from urllib.parse import urlparse

import lgtest

API = "/api/v1/cameras"
PROPERTY = "/api/v1/cameras/cam0/properties/iso"
CLOSED_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED, errno.ENOTCONN, errno.ETIMEDOUT)


def fail(message):
    print(f"hostile_http: {message}", file=sys.stderr)
    sys.exit(1)


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)


# ---------------------------------------------------------------- the gateway process

class Sampler(threading.Thread):
    """Samples the gateway's descriptors and RSS every `period` seconds."""

    def __init__(self, pid, period=1.0):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.stop_event = threading.Event()
        self.samples = []  # (t, fds, rss)
        self.t0 = time.monotonic()
        self.baseline = self.sample() if pid else None

    def sample(self):
        return (round(time.monotonic() - self.t0, 2), lgtest.open_fds(self.pid), lgtest.rss_kib(self.pid))

    def run(self):
        while not self.stop_event.wait(self.period):
            self.samples.append(self.sample())

    def stop(self):
        self.stop_event.set()
        self.join()
        if self.pid:
            self.samples.append(self.sample())

    def report(self, after_close=None):
        if not self.pid:
            return {"fds": None, "rss_kib": None}

        def series(i):
            values = [s[i] for s in self.samples if s[i] is not None]
            out = {"baseline": self.baseline[i], "peak": max(values) if values else None,
                   "end": values[-1] if values else None}
            if after_close is not None:
                out["after_close"] = after_close[i]
            return out
        return {"fds": series(1), "rss_kib": series(2)}


# ---------------------------------------------------------------- plain HTTP helpers

class Target:
    def __init__(self, hostport, token):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            fail(f"HOST:PORT expected, not {hostport!r}")
        self.host, self.port = host.strip("[]"), int(port)
        self.host_header = hostport
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""

    def connect(self, timeout=5.0):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def head(self, method, path, extra="", close=False):
        conn = "Connection: close\r\n" if close else ""
        return f"{method} {path} HTTP/1.1\r\nHost: {self.host_header}\r\n{self.auth}{conn}{extra}\r\n".encode()


def parse_head(head):
    """(status or None, {lowercase name: value}) of a response head (bytes without the blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/\d\.\d (\d{3})", lines[0])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return (int(m.group(1)) if m else None), headers


def read_response(sock, deadline, limit=1 << 20):
    """Reads one response: (status, headers, body, closed_after). Raises socket.timeout/OSError."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before an answer" if not buf else "closed inside the answer head")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    status, headers = parse_head(head)
    length = int(headers.get("content-length", "-1") or -1)
    closed = False
    while (length < 0 or len(body) < length) and len(body) < limit:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            closed = True
            break
        body += chunk
    return status, headers, body, closed


class Prober(threading.Thread):
    """GET /api/v1/cameras on a fresh connection once a second."""

    def __init__(self, target, period=1.0, timeout=5.0):
        super().__init__(daemon=True)
        self.target, self.period, self.timeout = target, period, timeout
        self.stop_event = threading.Event()
        self.results = []  # (t, status or error string, ms)
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.threads = []

    def probe(self):
        start = time.monotonic()
        deadline = start + self.timeout
        try:
            s = self.target.connect(timeout=self.timeout)
            try:
                s.sendall(self.target.head("GET", API, close=True))
                status, _, _, _ = read_response(s, deadline)
                outcome = status if status is not None else "bad status line"
            finally:
                s.close()
        except socket.timeout:
            outcome = "timeout"
        except OSError as e:
            outcome = f"{type(e).__name__}: {e.strerror or e}"
        return outcome, round((time.monotonic() - start) * 1000, 1)

    def run(self):
        # Each probe in its own thread, so a hung probe (up to the timeout) does not delay the next.
        def one():
            t = round(time.monotonic() - self.t0, 2)
            outcome, ms = self.probe()
            with self.lock:
                self.results.append((t, outcome, ms))
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            th = threading.Thread(target=one, daemon=True)
            th.start()
            self.threads.append(th)
            next_at += self.period
            self.stop_event.wait(max(0.0, next_at - time.monotonic()))

    def stop(self):
        self.stop_event.set()
        self.join()
        for th in self.threads:
            th.join(self.timeout + 1)
        self.results.sort(key=lambda r: r[0])

    def report(self):
        ms = [r[2] for r in self.results if r[1] == 200]
        statuses = {}
        for r in self.results:
            statuses[str(r[1])] = statuses.get(str(r[1]), 0) + 1
        failures = [r for r in self.results if r[1] != 200]
        run = longest = 0
        for r in self.results:
            run = run + 1 if r[1] != 200 else 0
            longest = max(longest, run)
        return {
            "count": len(self.results),
            "statuses": statuses,
            "failures": len(failures),
            "longest_failure_run": longest,
            "failure_samples": [{"t": t, "outcome": o, "ms": m} for t, o, m in failures[:10]],
            "max_ms": max((r[2] for r in self.results), default=None),
            "median_ms": round(statistics.median(ms), 1) if ms else None,
            "p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1) if ms else None,
            "latencies_ms": [r[2] for r in self.results],
        }


# ---------------------------------------------------------------- an RTSP frame counter

class RTSPWatch(threading.Thread):
    """PLAYs an RTSP URL over TCP interleaved and notes when each frame (RTP marker bit) ends."""

    def __init__(self, url, token):
        super().__init__(daemon=True)
        self.url, self.token = url, token
        self.frames = []  # monotonic times
        self.packets = 0
        self.error = None
        self.stop_event = threading.Event()
        self.cseq = 0

    def request(self, s, method, target, extra=""):
        self.cseq += 1
        auth = lgtest.basic_auth("livegate", self.token) if self.token else ""
        s.sendall(lgtest.request_bytes(method, target, self.cseq, auth + extra))

    def read_reply(self, s, buf):
        status, headers, first, body, rest = lgtest.read_reply(s, buf)
        if status != 200:
            raise RuntimeError(f"RTSP {first}")
        return headers, body.decode("latin-1"), rest

    def run(self):
        try:
            u = urlparse(self.url)
            s = socket.create_connection((u.hostname, u.port or 554), timeout=10)
            self.request(s, "DESCRIBE", self.url, lgtest.ACCEPT_SDP)
            headers, sdp, buf = self.read_reply(s, b"")
            # Content-Base is a header of the DESCRIBE reply (the request URL when absent).
            base = headers.get("content-base", self.url.rstrip("/") + "/")
            controls = [c for c in lgtest.sdp_controls(sdp) if c != "*"] or ["stream=0"]
            self.request(s, "SETUP", lgtest.track_url(base, controls[0]), lgtest.TCP_INTERLEAVED)
            headers, _, buf = self.read_reply(s, buf)
            session = lgtest.session_id(headers["session"])
            self.request(s, "PLAY", self.url, f"Session: {session}\r\n")
            _, _, buf = self.read_reply(s, buf)
            s.settimeout(1.0)
            keepalive = time.monotonic() + 20
            while not self.stop_event.is_set():
                if time.monotonic() > keepalive:
                    self.request(s, "GET_PARAMETER", self.url, f"Session: {session}\r\n")
                    keepalive = time.monotonic() + 20
                try:
                    chunk = s.recv(262144)
                except socket.timeout:
                    continue
                if not chunk:
                    raise ConnectionError("RTSP connection closed by the server")
                buf += chunk
                while buf:
                    if buf[0] == 0x24:  # '$' channel length(2) payload
                        if len(buf) < 4:
                            break
                        n = int.from_bytes(buf[2:4], "big")
                        if len(buf) < 4 + n:
                            break
                        channel, payload = buf[1], buf[4:4 + n]
                        buf = buf[4 + n:]
                        if channel == 0 and len(payload) >= 2:
                            self.packets += 1
                            if payload[1] & 0x80:
                                self.frames.append(time.monotonic())
                    else:  # an RTSP reply (to GET_PARAMETER)
                        end = buf.find(b"\r\n\r\n")
                        if end < 0:
                            break
                        m = re.search(rb"(?i)content-length:\s*(\d+)", buf[:end])
                        total = end + 4 + (int(m.group(1)) if m else 0)
                        if len(buf) < total:
                            break
                        buf = buf[total:]
            s.close()
        except Exception as e:  # reported, not raised: the HTTP figures still matter
            self.error = f"{type(e).__name__}: {e}"

    def stop(self):
        self.stop_event.set()
        self.join(timeout=5)

    def report(self, start, end):
        inside = [t for t in self.frames if start <= t <= end]
        before = [t for t in self.frames if t < start]
        gaps = [b - a for a, b in zip(inside, inside[1:])]
        if before and inside:
            gaps.append(inside[0] - before[-1])
        per_second = [0] * max(1, int(end - start + 0.999))
        for t in inside:
            per_second[min(len(per_second) - 1, int(t - start))] += 1
        return {
            "url": self.url,
            "error": self.error,
            "frames_before_window": len(before),
            "frames": len(inside),
            "fps": round(len(inside) / max(0.001, end - start), 1),
            "max_gap_ms": round(max(gaps) * 1000, 1) if gaps else None,
            "frames_per_second": per_second,
            "rtp_packets": self.packets,
        }


# ---------------------------------------------------------------- the modes

def close_all(socks):
    for s in socks:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass


def hold_connections(target, n, seconds, pid, kind, interval, trickle, until_closed=False):
    """idle / slowloris / slowbody: N connections held for SECONDS, the server's closes noted
    (until_closed: the hold ends once the server has closed every one, after two probes at least)."""
    if kind == "slowloris":
        first = f"GET {API} HTTP/1.1\r\nHost: {target.host_header}\r\n{target.auth}".encode()
    elif kind == "slowbody":
        first = target.head("PUT", PROPERTY, "Content-Type: application/json\r\nContent-Length: 1000\r\n")
    else:
        first = b""
    socks, opened_at, closed_at, said, errors = [], [], {}, {}, {}
    sent_bytes = [len(first)] * n
    t_open = time.monotonic()
    for i in range(n):
        try:
            s = target.connect(timeout=5)
            if first:
                s.sendall(first)
            s.setblocking(False)
            socks.append(s)
        except OSError as e:
            errors[str(e)] = errors.get(str(e), 0) + 1
            socks.append(None)
        opened_at.append(time.monotonic())
    opened = sum(1 for s in socks if s is not None)
    if opened == 0:
        fail(f"could not open any connection to {target.host_header}: {errors}")
    t_start = time.monotonic()
    poller = select.poll()
    by_fd = {}
    for i, s in enumerate(socks):
        if s is not None:
            poller.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
            by_fd[s.fileno()] = i
    # Staggered sends so the trickle is spread over each interval.
    next_send = [t_start + interval * (i + 1) / n for i in range(n)]
    line_no = [0] * n
    pending_line = [b""] * n

    def mark_closed(i, how):
        if i not in closed_at:
            closed_at[i] = (time.monotonic(), how)
            try:
                poller.unregister(socks[i])
            except (KeyError, ValueError, OSError):
                pass

    def check_reads():
        for fd, _ in poller.poll(0):
            i = by_fd[fd]
            try:
                data = socks[i].recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                mark_closed(i, errno.errorcode.get(e.errno, str(e.errno)))
                continue
            if not data:
                mark_closed(i, "eof")
            else:
                if i not in said:
                    said[i] = data.split(b"\r\n", 1)[0].decode("latin-1")[:80]

    timeline = []  # (second, closed, fds, rss)
    sampler = Sampler(pid)  # only for its sample(); the baseline is BASELINE, taken before connecting
    prober = Prober(target)
    prober.start()
    second = 0
    deadline = t_start + seconds
    while True:
        now = time.monotonic()
        if kind != "idle":
            for i, s in enumerate(socks):
                if s is None or i in closed_at or now < next_send[i]:
                    continue
                if kind == "slowloris":
                    if not pending_line[i]:
                        line_no[i] += 1
                        pending_line[i] = f"X-Slow-{line_no[i]}: {line_no[i]}\r\n".encode()
                    if trickle == "byte":
                        piece, pending_line[i] = pending_line[i][:1], pending_line[i][1:]
                    else:
                        piece, pending_line[i] = pending_line[i], b""
                else:
                    piece = b" "
                try:
                    sent = s.send(piece)
                    sent_bytes[i] += sent
                except BlockingIOError:
                    pass
                except OSError as e:
                    mark_closed(i, "send " + errno.errorcode.get(e.errno, str(e.errno)))
                next_send[i] += interval
        check_reads()
        end = now >= deadline or (until_closed and len(closed_at) >= opened and now - t_start >= 2.0)
        if now >= t_start + second + 1 or end:
            second += 1
            s = sampler.sample() if pid else (None, None, None)
            sampler.samples.append(s)
            timeline.append((min(second, seconds), len(closed_at), s[1], s[2]))
        if end:
            break
        time.sleep(0.05)
    prober.stop()
    remaining = opened - len(closed_at)
    close_all(socks)
    time.sleep(1.0)
    after = sampler.sample() if pid else None
    lifetimes = sorted(closed_at[i][0] - opened_at[i] for i in closed_at)
    hows, answers = {}, {}
    for i, (_, how) in closed_at.items():
        hows[how] = hows.get(how, 0) + 1
    for i, line in said.items():
        answers[line] = answers.get(line, 0) + 1
    all_closed_at = None
    for sec, closed, _, _ in timeline:
        if closed >= opened:
            all_closed_at = sec
            break
    report = {
        "opened": opened,
        "open_seconds": round(t_start - t_open, 2),
        "connect_errors": errors,
        "closed_by_server": len(closed_at),
        "remaining_open_at_end": remaining,
        "all_closed_at_s": all_closed_at,
        "lifetime_s": {"min": round(lifetimes[0], 2), "median": round(statistics.median(lifetimes), 2),
                       "max": round(lifetimes[-1], 2)} if lifetimes else None,
        "close_kinds": hows,
        "server_answers": answers,
        "bytes_sent_per_connection_max": max(sent_bytes) if kind != "idle" else 0,
        "timeline": [{"t": t, "closed": c, "fds": f, "rss_kib": r} for t, c, f, r in timeline],
    }
    sampler.baseline = BASELINE or sampler.baseline
    report.update(sampler.report(after_close=after))
    report["probes"] = prober.report()
    return report, t_start, time.monotonic()


def flood_worker(hostport, token, conns, seconds, depth, start_at, queue):
    target = Target(hostport, token)
    batch = target.head("GET", API) * depth
    sel = selectors.DefaultSelector()
    statuses, errors = {}, {}
    per_second = [0] * (int(seconds) + 1)
    sent = reconnects = 0
    state = {}

    def note(kind):
        errors[kind] = errors.get(kind, 0) + 1

    def open_one():
        try:
            s = target.connect(timeout=5)
        except OSError as e:
            note("connect " + (errno.errorcode.get(e.errno, "") or str(e)))
            return
        s.setblocking(False)
        state[s] = {"buf": bytearray(), "pending": 0}
        sel.register(s, selectors.EVENT_READ)

    def drop(s, why):
        st = state.pop(s)
        note(why)
        if st["pending"]:
            errors["unanswered"] = errors.get("unanswered", 0) + st["pending"]
        sel.unregister(s)
        s.close()

    while time.time() < start_at:
        time.sleep(0.005)
    for _ in range(conns):
        open_one()
    t0 = time.monotonic()
    end = t0 + seconds
    answered = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        for s, st in list(state.items()):
            if st["pending"] == 0:
                try:
                    s.setblocking(True)
                    s.settimeout(5)
                    s.sendall(batch)
                    s.setblocking(False)
                    st["pending"] = depth
                    sent += depth
                except OSError as e:
                    drop(s, "send " + errno.errorcode.get(getattr(e, "errno", 0) or 0, type(e).__name__))
        while len(state) < conns and time.monotonic() < end:
            reconnects += 1
            before = len(state)
            open_one()
            if len(state) == before:
                time.sleep(0.05)
                break
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            st = state.get(s)
            if st is None:
                continue
            try:
                data = s.recv(262144)
            except BlockingIOError:
                continue
            except OSError as e:
                drop(s, "recv " + errno.errorcode.get(e.errno, str(e.errno)))
                continue
            if not data:
                drop(s, "server closed")
                continue
            buf = st["buf"]
            buf += data
            pos = 0
            second = min(int(time.monotonic() - t0), len(per_second) - 1)
            close_after = False
            while True:
                h = buf.find(b"\r\n\r\n", pos)
                if h < 0:
                    break
                head = bytes(buf[pos:h]).lower()
                code = head[9:12].decode("latin-1", "replace")
                i = head.find(b"content-length:")
                if i >= 0:
                    j = head.find(b"\r\n", i)
                    length = int(head[i + 15:j if j >= 0 else len(head)])
                    if len(buf) < h + 4 + length:
                        break
                    pos = h + 4 + length
                elif b"transfer-encoding: chunked" in head:
                    k, done = h + 4, False
                    while True:
                        e = buf.find(b"\r\n", k)
                        if e < 0:
                            break
                        size = int(bytes(buf[k:e]).split(b";")[0], 16)
                        if size == 0:
                            t = buf.find(b"\r\n\r\n", e)
                            if t >= 0 and t == e:  # no trailers
                                k, done = e + 2, True
                            elif t >= 0:
                                k, done = t + 4, True
                            break
                        if len(buf) < e + 2 + size + 2:
                            break
                        k = e + 2 + size + 2
                    if not done:
                        break
                    pos = k
                else:
                    pos = h + 4
                statuses[code] = statuses.get(code, 0) + 1
                per_second[second] += 1
                answered += 1
                st["pending"] -= 1
                if b"connection: close" in head:
                    close_after = True
            del buf[:pos]
            if close_after:
                drop(s, "connection: close")
    elapsed = time.monotonic() - t0
    for s in list(state):
        st = state.pop(s)
        s.close()
    queue.put({"answered": answered, "sent": sent, "statuses": statuses, "errors": errors,
               "reconnects": reconnects, "per_second": per_second[:int(seconds)], "elapsed": elapsed})


def flood(target, seconds, pid, connections, processes, depth):
    processes = max(1, min(processes, connections))
    sampler = Sampler(pid)
    sampler.baseline = BASELINE or sampler.baseline
    prober = Prober(target)
    queue = multiprocessing.Queue()
    start_at = time.time() + 0.5
    shares = [connections // processes + (1 if i < connections % processes else 0) for i in range(processes)]
    workers = [multiprocessing.Process(target=flood_worker,
                                       args=(target.host_header, TOKEN, share, seconds, depth, start_at, queue))
               for share in shares]
    for w in workers:
        w.start()
    while time.time() < start_at:
        time.sleep(0.01)
    t_start = time.monotonic()
    sampler.t0 = prober.t0 = t_start
    sampler.start()
    prober.start()
    results, lost = [], 0
    for _ in workers:
        try:
            results.append(queue.get(timeout=seconds + 60))
        except Exception:  # queue.Empty: a worker died; its share is reported as lost
            lost += 1
    t_end = time.monotonic()
    for w in workers:
        w.join()
    prober.stop()
    sampler.stop()
    time.sleep(1.0)
    after = sampler.sample() if pid else None
    statuses, errors = {}, {}
    per_second = [0] * int(seconds)
    for r in results:
        for k, v in r["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
        for i, v in enumerate(r["per_second"]):
            per_second[i] += v
    answered = sum(r["answered"] for r in results)
    elapsed = max([r["elapsed"] for r in results] or [seconds])
    if lost:
        errors["workers_lost"] = lost
    report = {
        "connections": connections,
        "processes": processes,
        "depth": depth,
        "requests_sent": sum(r["sent"] for r in results),
        "answered": answered,
        "requests_per_second": round(answered / elapsed, 1),
        "answered_per_second": per_second,
        "statuses": statuses,
        "errors": errors,
        "reconnects": sum(r["reconnects"] for r in results),
        "timeline": [{"t": t, "fds": f, "rss_kib": r} for t, f, r in sampler.samples],
    }
    report.update(sampler.report(after_close=after))
    report["probes"] = prober.report()
    return report, t_start, t_end


def stream_request(target, parts, total_hint, timeout, stop_on_answer=True):
    """Sends the byte blocks of `parts` ((block, repeat) pairs) while watching for an answer."""
    t0 = time.monotonic()
    out = {"bytes_sent": 0, "status": None, "answer_ms": None, "closed": None, "closed_ms": None,
           "send_error": None, "answer_line": None}
    try:
        s = target.connect(timeout=5)
    except OSError as e:
        out["send_error"] = f"connect: {e}"
        return out
    s.setblocking(False)
    poller = select.poll()
    poller.register(s, select.POLLIN | select.POLLOUT | select.POLLERR | select.POLLHUP)

    def blocks():
        for block, repeat in parts:
            for _ in range(repeat):
                yield block
    gen = blocks()
    current, offset = next(gen, None), 0
    got = b""
    deadline = t0 + timeout
    answer_at = sent_all_at = None
    try:
        while time.monotonic() < deadline:
            if stop_on_answer and answer_at and current is not None:
                current = None  # a client that stops sending once answered
                sent_all_at = time.monotonic()
            sending = current is not None
            poller.modify(s, select.POLLIN | select.POLLERR | select.POLLHUP | (select.POLLOUT if sending else 0))
            events = poller.poll(100)
            ev = events[0][1] if events else 0
            if ev & (select.POLLIN | select.POLLERR | select.POLLHUP):
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    data = None
                except OSError as e:
                    out["closed"] = errno.errorcode.get(e.errno, str(e.errno))
                    out["closed_ms"] = round((time.monotonic() - t0) * 1000, 1)
                    break
                if data == b"":
                    out["closed"] = "eof"
                    out["closed_ms"] = round((time.monotonic() - t0) * 1000, 1)
                    break
                if data:
                    got += data
                    if answer_at is None and b"\r\n" in got:
                        answer_at = time.monotonic()
                        out["answer_ms"] = round((answer_at - t0) * 1000, 1)
                        out["answer_line"] = got.split(b"\r\n", 1)[0].decode("latin-1")[:100]
                        m = re.match(rb"HTTP/\d\.\d (\d{3})", got)
                        out["status"] = int(m.group(1)) if m else None
            if answer_at and current is None and time.monotonic() - max(answer_at, sent_all_at or 0) > 2.0:
                break  # answered, all sent (or sending stopped), and the server did not close within 2 s
            if sending and ev & select.POLLOUT:
                try:
                    n = s.send(memoryview(current)[offset:])
                except BlockingIOError:
                    continue
                except OSError as e:
                    out["send_error"] = errno.errorcode.get(e.errno, str(e.errno))
                    current, sent_all_at = None, time.monotonic()
                    continue
                out["bytes_sent"] += n
                if answer_at:
                    out["bytes_sent_after_answer"] = out.get("bytes_sent_after_answer", 0) + n
                offset += n
                if offset >= len(current):
                    current, offset = next(gen, None), 0
                    if current is None:
                        sent_all_at = time.monotonic()
                        out["all_sent_ms"] = round((sent_all_at - t0) * 1000, 1)
        else:
            out["timed_out"] = True
    finally:
        # Whatever arrived after a reset is lost; read what is left before closing.
        try:
            s.setblocking(False)
            rest = s.recv(65536)
            if rest:
                got += rest
        except OSError:
            pass
        s.close()
    out["complete_body_sent"] = out["bytes_sent"] >= total_hint
    head, _, body = got.partition(b"\r\n\r\n")
    out["answer_head"] = head[:400].decode("latin-1")
    out["answer_body"] = body[:300].decode("latin-1")
    out["answers"] = len(re.findall(rb"HTTP/1\.[01] \d{3}", got))
    out["total_ms"] = round((time.monotonic() - t0) * 1000, 1)
    return out


def bigbody(target, pid, size_mb, line_mb, timeout):
    sampler = Sampler(pid, period=0.25)
    sampler.baseline = BASELINE or sampler.baseline
    prober = Prober(target)
    t_start = time.monotonic()
    sampler.start()
    prober.start()
    block = b" " * 65536
    size = size_mb * 1024 * 1024
    cases = {}
    head = target.head("PUT", PROPERTY, f"Content-Type: application/json\r\nContent-Length: {size}\r\n")
    body = [(b'{"value":"', 1), (block, (size - 10) // len(block)), (b" " * ((size - 10) % len(block)), 1)]
    # A client that stops sending once answered, then one that sends the whole body regardless.
    cases["content_length_body"] = stream_request(target, [(head, 1)] + body, len(head) + size, timeout)
    cases["content_length_body_keep_sending"] = stream_request(
        target, [(head, 1)] + body, len(head) + size, timeout, stop_on_answer=False)
    head = target.head("PUT", PROPERTY, "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n")
    chunk = b"%x\r\n" % len(block) + block + b"\r\n"
    cases["chunked_body"] = stream_request(
        target, [(head, 1), (chunk, size // len(block)), (b"0\r\n\r\n", 1)], len(head) + size, timeout)
    line = line_mb * 1024 * 1024
    cases["long_request_line"] = stream_request(
        target, [(b"GET /", 1), (b"a" * 65536, line // 65536),
                 (f" HTTP/1.1\r\nHost: {target.host_header}\r\n{target.auth}\r\n".encode(), 1)], line, 10)
    cases["long_header"] = stream_request(
        target, [(f"GET {API} HTTP/1.1\r\nHost: {target.host_header}\r\n{target.auth}X-Long: ".encode(), 1),
                 (b"a" * 65536, line // 65536), (b"\r\n\r\n", 1)], line, 10)
    time.sleep(1.0)
    t_end = time.monotonic()
    prober.stop()
    sampler.stop()
    report = {"body_mb": size_mb, "line_mb": line_mb, "cases": cases,
              "timeline": [{"t": t, "fds": f, "rss_kib": r} for t, f, r in sampler.samples]}
    report.update(sampler.report())
    report["probes"] = prober.report()
    return report, t_start, t_end


TRAVERSALS = [
    "/hls/cam0/../../../../../../etc/passwd",
    "/hls/cam0/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/hls/cam0/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/hls/cam0/%252e%252e%252f%252e%252e%252fetc%252fpasswd",
    "/hls/cam0/..%5c..%5c..%5c..%5cetc%5cpasswd",
    "/hls/cam0/%2fetc%2fpasswd",
    "/hls/cam0/....//....//....//etc/passwd",
    "/hls/..%2f..%2f..%2f..%2f..%2fetc/passwd",
    "/hls/%2e%2e/index.m3u8",
    "/hls/cam0/..",
    "/hls/cam0/.",
    "/hls/cam0/index.m3u8%00.ts",
    "/hls/cam0/%00",
    "/hls/cam0/..%2f..%2f..%2f..%2f..%2f..%2fproc%2fself%2fenviron",
    "/hls/cam0/..%2f..%2f..%2f..%2f..%2f..%2fproc%2fself%2fcmdline",
    "/snapshot/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/snapshot/../../../../../../etc/passwd",
    "/snapshot/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/snapshot/..%2f..%2f..%2f..%2f..%2f..%2fproc%2fself%2fenviron",
    "/mjpeg/..%2f..%2f..%2fetc%2fpasswd",
    "/api/v1/cameras/..%2f..%2f..%2fetc%2fpasswd",
    "/api/v1/cameras/cam0/properties/..%2f..%2f..%2fetc%2fpasswd",
    "/../../../../etc/passwd",
    "//etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "http://127.0.0.1/../../etc/passwd",
    "/api/v1/openapi.yaml/../../../../etc/passwd",
]
CONTROLS = ["/hls/cam0/index.m3u8", "/snapshot/cam0.jpg", "/api/v1/cameras/cam0/properties/iso"]
LEAK_MARKS = [b"root:x:0:0", b"root:*:0:0", b"PATH=", b"\x7fELF", b"HOME=", b"livegate\x00run"]


def traversal(target, pid):
    sampler = Sampler(pid)
    sampler.baseline = BASELINE or sampler.baseline
    t_start = time.monotonic()
    results, leaks = [], []
    for path in CONTROLS + TRAVERSALS:
        entry = {"target": path}
        if path in CONTROLS:
            entry["control"] = True
        start = time.monotonic()
        try:
            s = target.connect(timeout=5)
            try:
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: {target.host_header}\r\n{target.auth}Connection: close\r\n\r\n"
                          .encode("latin-1"))
                status, headers, body, _ = read_response(s, time.monotonic() + 5, limit=4 << 20)
            finally:
                s.close()
            entry.update(status=status, bytes=len(body), content_type=headers.get("content-type"))
            marks = [m.decode("latin-1") for m in LEAK_MARKS if m in body]
            if marks:
                entry["leaked"] = marks
                leaks.append(path)
        except OSError as e:
            entry["error"] = f"{type(e).__name__}: {e}"
        entry["ms"] = round((time.monotonic() - start) * 1000, 1)
        results.append(entry)
    statuses = {}
    for r in results:
        if r.get("control"):
            continue
        k = str(r.get("status", "error"))
        statuses[k] = statuses.get(k, 0) + 1
    prober = Prober(target)
    outcome, ms = prober.probe()
    t_end = time.monotonic()
    report = {"requests": results, "statuses": statuses, "leaks": leaks,
              "ok_200": [r["target"] for r in results if r.get("status") == 200 and not r.get("control")],
              "controls": {r["target"]: r.get("status", r.get("error")) for r in results if r.get("control")}}
    sampler.samples.append(sampler.sample() if pid else (0, None, None))
    report.update(sampler.report())
    report["probe_after"] = {"status": outcome, "ms": ms}
    return report, t_start, t_end


BASELINE = None
TOKEN = None


def main():
    global BASELINE, TOKEN
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="HOST:PORT")
    p.add_argument("mode", choices=["idle", "slowloris", "slowbody", "flood", "bigbody", "traversal"])
    p.add_argument("args", nargs="*", type=float, help="N SECONDS (idle, slowloris, slowbody) or SECONDS (flood)")
    p.add_argument("--pid", type=int, help="the gateway's process id (descriptors, RSS, limits)")
    p.add_argument("--token", help="bearer token for the API (and RTSP password)")
    p.add_argument("--interval", type=float, default=5.0, help="slowloris/slowbody: seconds between sends (default 5)")
    p.add_argument("--until-closed", action="store_true",
                   help="idle/slowloris/slowbody: end as soon as the server has closed every connection "
                        "(SECONDS is then the deadline)")
    p.add_argument("--trickle", choices=["line", "byte"], default="line",
                   help="slowloris: a short header line (default) or one byte of it per interval")
    p.add_argument("--connections", type=int, default=8, help="flood: keep-alive connections (default 8)")
    p.add_argument("--processes", type=int, default=2, help="flood: processes (default 2)")
    p.add_argument("--depth", type=int, default=32, help="flood: requests pipelined per batch (default 32)")
    p.add_argument("--body-mb", type=int, default=100, help="bigbody: body size in MiB (default 100)")
    p.add_argument("--line-mb", type=int, default=16, help="bigbody: request line / header size in MiB (default 16)")
    p.add_argument("--timeout", type=float, default=30.0, help="bigbody: seconds allowed per big body (default 30)")
    p.add_argument("--rtsp", metavar="URL", help="count this RTSP stream's frames during the run")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.add_argument("--rtsp-warmup", type=float, default=3.0, help="seconds the RTSP client plays before the run")
    a = p.parse_args()
    TOKEN = a.token
    need = {"idle": 2, "slowloris": 2, "slowbody": 2, "flood": 1, "bigbody": 0, "traversal": 0}[a.mode]
    if len(a.args) != need:
        p.error(f"{a.mode} takes {need} number(s)")
    limit = raise_fd_limit()
    target = Target(a.target, a.token)
    try:
        target.connect(timeout=5).close()
    except OSError as e:
        fail(f"cannot connect to {a.target}: {e}")
    if a.pid and lgtest.open_fds(a.pid) is None:
        fail(f"cannot read /proc/{a.pid}/fd (no such process, or not allowed)")
    watch = None
    if a.rtsp:
        watch = RTSPWatch(a.rtsp, a.token)
        watch.start()
        time.sleep(a.rtsp_warmup)
    BASELINE = (0.0, lgtest.open_fds(a.pid), lgtest.rss_kib(a.pid)) if a.pid else None
    if a.mode in ("idle", "slowloris", "slowbody"):
        n, seconds = int(a.args[0]), a.args[1]
        report, t0, t1 = hold_connections(target, n, seconds, a.pid, a.mode, a.interval, a.trickle,
                                            a.until_closed)
        report.update(n=n, seconds=seconds)
        if a.mode != "idle":
            report.update(interval=a.interval)
        if a.mode == "slowloris":
            report.update(trickle=a.trickle)
    elif a.mode == "flood":
        report, t0, t1 = flood(target, a.args[0], a.pid, a.connections, a.processes, a.depth)
        report["seconds"] = a.args[0]
    elif a.mode == "bigbody":
        report, t0, t1 = bigbody(target, a.pid, a.body_mb, a.line_mb, a.timeout)
    else:
        report, t0, t1 = traversal(target, a.pid)
    if watch:
        report["rtsp"] = watch.report(t0, t1)
        watch.stop()
    out = {"mode": a.mode, "target": a.target, "pid": a.pid, **report,
           "gateway_nofile": lgtest.nofile_limit(a.pid) if a.pid else None,
           "client_nofile": {"soft": limit[0], "hard": limit[1]}}
    print(json.dumps(out, indent=1 if a.pretty else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
