"""Pieces shared by the test scripts in this directory (standard library only).

RTSP: building requests, parsing reply heads, reading one reply on a blocking socket, the SDP's
control attributes and the session id. The scripts drive the exchanges themselves (blocking or on
a selector) and keep their own interleaved-stream parsing.

/proc: a process's memory, CPU time, open descriptors and descriptor limit, for the scripts that
watch the gateway while they run.

The scripts import it as `import lgtest`: Python puts a script's own directory first on sys.path.
"""
import base64
import os

# ---------------------------------------------------------------- RTSP

TCP_INTERLEAVED = "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"  # SETUP: RTP on channels 0-1
ACCEPT_SDP = "Accept: application/sdp\r\n"


def basic_auth(user, password):
    """An Authorization header line (with its CRLF) for HTTP Basic credentials."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Authorization: Basic {token}\r\n"


def request_bytes(method, target, cseq, headers=""):
    """One RTSP request; headers are complete lines, each ending in CRLF."""
    return f"{method} {target} RTSP/1.0\r\nCSeq: {cseq}\r\n{headers}\r\n".encode()


def parse_head(raw):
    """(status, {lower-case header: value}, first line) of an RTSP reply head (without the blank
    line); status is None when the head is not an RTSP reply (e.g. a request from the server)."""
    lines = raw.decode("utf-8", "replace").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("RTSP/"):
        return None, {}, lines[0]
    try:
        status = int(parts[1])
    except ValueError:
        return None, {}, lines[0]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return status, headers, lines[0]


def read_reply(sock, buf=b""):
    """Reads one reply on a blocking socket, after the bytes already received in buf:
    (status, headers, first line, body, the bytes that followed the reply). The status is not
    checked. Raises ConnectionError when the server closes the connection first."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("RTSP connection closed")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status, headers, first = parse_head(head)
    length = int(headers.get("content-length", "0") or 0)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("RTSP connection closed")
        rest += chunk
    return status, headers, first, rest[:length], rest[length:]


def session_id(value):
    """The session id of a Session header value ("id;timeout=60" -> "id")."""
    return value.split(";")[0].strip()


def sdp_controls(sdp):
    """The values of the SDP's a=control attributes, session and media level, in order."""
    return [l.split(":", 1)[1].strip() for l in sdp.splitlines() if l.startswith("a=control:")]


def track_url(base, control):
    """The URL of a control attribute: itself when absolute, else appended to base."""
    return control if control.startswith("rtsp://") else base.rstrip("/") + "/" + control


# ---------------------------------------------------------------- /proc

def memory_kib(pid):
    """(VmRSS, RssAnon) of pid in KiB, or None when it cannot be read."""
    rss = anon = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None if rss is None else (rss, anon)


def rss_kib(pid):
    """VmRSS of pid in KiB, or None."""
    m = memory_kib(pid)
    return None if m is None else m[0]


def cpu_seconds(pid):
    """User + system CPU time of pid in seconds, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def open_fds(pid):
    """How many descriptors pid has open, or None."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def nofile_limit(pid):
    """pid's open-files limit as {"soft", "hard"} strings (as /proc shows them), or None."""
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    parts = line.split()
                    return {"soft": parts[3], "hard": parts[4]}
    except OSError:
        pass
    return None
