#!/usr/bin/env python3
"""A private PipeWire session and a webcam consumer, for testing livegate's virtual camera.

Python 3.11 standard library only; runs Debian's dbus-daemon, pipewire, wireplumber, pw-cli,
pw-dump and gst-launch-1.0 (gstreamer1.0-pipewire, -tools, -plugins-base).  Works as root as is.

  pipewire_webcam.py daemon --dir DIR [--portal [--deny]]
      DIR (mode 700) becomes XDG_RUNTIME_DIR; starts dbus-daemon, pipewire and wireplumber (logs
      in DIR/*.log), prints one JSON line with the env a client needs, then runs until
      SIGTERM/SIGINT/SIGHUP or until its stdin (a pipe, socket or tty) closes, and stops its
      children.  Exit 2, with the tail of the failing log, if one does not start or dies.
      --portal also starts the desktop's camera portal, as a browser reaches a PipeWire camera:
      xdg-desktop-portal with one desktop back-end, portal_access.py, which answers its
      permission question ("Turn On Camera?") as a user clicking Allow (Deny with --deny) and
      logs each question as a JSON line in DIR/portal-access.log.  The permission store keeps
      its answers in DIR/data (XDG_DATA_HOME), never in $HOME.
  pipewire_webcam.py read --node NAME [--frames N] [--timeout S] [--dir DIR]
      Waits for the node, reads N buffers from it and prints {"frames", "width", "height",
      "format" (the node's raw format), "frames_detail": [{"mean", "md5"}...], "seconds"} and
      "error" when short; mean (0-255) and md5 are of the frame as GRAY8, visible pixels only.
      Exit 0 with N frames, 1 with fewer (node missing, timeout or error).
  pipewire_webcam.py nodes [--node NAME --timeout S] [--dir DIR]
      Prints a JSON list of the Video/Source nodes: id, node.name, media.class, media.role,
      state.  With --node, waits up to S seconds for that one (exit 1 if it never shows).

read and nodes use the env printed by daemon, or --dir DIR (the daemon's DIR) in its place.

Seen with PipeWire 0.3.65 / WirePlumber 0.4.13: when the element before pipewiresink
mode=provide writes into the sink's own buffer pool (videotestsrc straight into it), a consumer
that comes while the node is "idle" (the last one left < 5 s ago, before WirePlumber suspends
it) often gets no buffer at all.  `identity drop-allocation=true` before the sink, or the stream
property node.pause-on-idle=false, avoids it; a consumer can also wait for state "suspended".
"""
import argparse, ctypes, hashlib, json, os, re, select, signal, stat, subprocess, sys, tempfile
import time

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when this script dies, even by SIGKILL (no orphans)."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def client_env(d):
    d = os.path.abspath(d)
    return {"XDG_RUNTIME_DIR": d, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={d}/bus",
            "PIPEWIRE_RUNTIME_DIR": d}


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"({e})\n"


# ---------------------------------------------------------------------------------------- daemon
HERE = os.path.dirname(os.path.abspath(__file__))
XDP = "/usr/libexec/xdg-desktop-portal"  # Debian's xdg-desktop-portal package
ACCESS_NAME = "org.freedesktop.impl.portal.desktop.livegatetest"


def gi_python():
    """A python3 that can import gi (PyGObject): this one, or Debian's own."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and subprocess.run([py, "-c", "import gi"], capture_output=True).returncode == 0:
            return py
    raise RuntimeError("no python3 with PyGObject (python3-gi) for the portal's back-end")


class Session:
    """dbus-daemon, pipewire and wireplumber for one runtime dir, each logging to DIR/NAME.log."""

    def __init__(self, d):
        self.d, self.children, self.current = d, [], "dbus"  # children: (name, Popen)
        self.env = dict(os.environ, **client_env(d))
        # WirePlumber keeps restore state in XDG_STATE_HOME and reads XDG_CONFIG_HOME: both stay
        # inside DIR, so a run neither sees the user's files nor leaves any in $HOME.
        # The portal's permission store (started by the bus) writes XDG_DATA_HOME: DIR too.
        self.env.update(XDG_STATE_HOME=os.path.join(d, "state"),
                        XDG_CONFIG_HOME=os.path.join(d, "config"),
                        XDG_DATA_HOME=os.path.join(d, "data"))

    def log(self, name):
        return os.path.join(self.d, f"{name}.log")

    def start(self, name, argv, stdout=None):
        self.current = name
        with open(self.log(name), "wb") as f:
            p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stderr=f,
                                 stdout=stdout or f, start_new_session=True,
                                 preexec_fn=die_with_parent)
        self.children.append((name, p))
        return p

    def wait_until(self, p, ready, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if p.poll() is not None:
                raise RuntimeError(f"exited with code {p.returncode} while starting")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"not ready after {timeout:g} s")

    def pw_cli(self, *args):
        return subprocess.run(["pw-cli", *args], env=self.env, capture_output=True, text=True,
                              timeout=5)

    def start_all(self):
        # 1. A session bus: WirePlumber exits at once without one, and then nothing links nodes.
        #    --print-address prints the address once the bus listens: that is the readiness.
        bus = self.start("dbus", ["dbus-daemon", "--session", "--nofork", "--print-address=1",
                                  "--address=" + self.env["DBUS_SESSION_BUS_ADDRESS"]],
                         stdout=subprocess.PIPE)
        if not select.select([bus.stdout], [], [], 10)[0] or not bus.stdout.readline():
            raise RuntimeError("dbus-daemon did not print its address")
        # 2. PipeWire itself: ready when its socket answers a core query.
        pw = self.start("pipewire", ["pipewire"])
        self.wait_until(pw, lambda: os.path.exists(os.path.join(self.d, "pipewire-0"))
                        and self.pw_cli("info", "0").returncode == 0)
        # 3. WirePlumber, the session manager that links a consumer to its target-object: ready
        #    once it has made the "default" metadata (pw-dump leaves that one out: ask pw-cli);
        #    its policy scripts load right after.
        wp = self.start("wireplumber", ["wireplumber"])
        self.wait_until(wp, lambda: 'metadata.name = "default"' in self.pw_cli("ls", "Metadata").stdout)
        time.sleep(0.3)

    def start_portal(self, deny):
        """xdg-desktop-portal exports its Camera portal only when a desktop back-end implements
        Access (the permission dialog): a .portal file in DIR/portals names portal_access.py's
        bus name for the desktop XDG_CURRENT_DESKTOP says, and the back-end owns that name
        before the portal starts."""
        portals = os.path.join(self.d, "portals")
        os.makedirs(portals, exist_ok=True)
        with open(os.path.join(portals, "livegate-test.portal"), "w") as f:
            f.write(f"[portal]\nDBusName={ACCESS_NAME}\nInterfaces=org.freedesktop.impl.portal.Access;\n"
                    "UseIn=livegate-test\n")
        access_log = os.path.join(self.d, "portal-access.log")
        with open(access_log, "wb") as out:
            access = self.start("portal-access", [gi_python(), os.path.join(HERE, "portal_access.py"),
                                                  "--name", ACCESS_NAME] + (["--deny"] if deny else []),
                                stdout=out)
        self.wait_until(access, lambda: '"ready"' in open(access_log).read())
        self.env.update(XDG_DESKTOP_PORTAL_DIR=portals, XDG_CURRENT_DESKTOP="livegate-test")
        xdp = self.start("xdg-desktop-portal", [XDP, "--verbose", "--replace"])

        def camera_portal():
            r = subprocess.run(["gdbus", "introspect", "--session", "--dest", "org.freedesktop.portal.Desktop",
                                "--object-path", "/org/freedesktop/portal/desktop"], env=self.env,
                               capture_output=True, text=True, timeout=5)
            return "org.freedesktop.portal.Camera" in r.stdout
        self.wait_until(xdp, camera_portal, timeout=20)

    def stop_all(self):
        for _, p in reversed(self.children):  # wireplumber, then pipewire, then the bus
            p.terminate()
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def fail(self, name, why):
        print(f"pipewire_webcam daemon: {name}: {why}\n--- tail of {self.log(name)}:\n"
              f"{tail(self.log(name))}", end="", file=sys.stderr, flush=True)
        return 2


def daemon(args):
    d = os.path.abspath(args.dir)
    os.makedirs(d, mode=0o700, exist_ok=True)
    os.chmod(d, 0o700)  # PipeWire and D-Bus want a private runtime dir
    for stale in ("bus", "pipewire-0", "pipewire-0.lock", "pipewire-0-manager",
                  "pipewire-0-manager.lock"):  # left by an earlier run that was SIGKILLed
        if os.path.lexists(os.path.join(d, stale)):
            os.unlink(os.path.join(d, stale))
    s = Session(d)
    try:  # `finally` stops the children however we leave: error, signal or stdin closed
        try:
            s.start_all()
            if args.portal:
                s.start_portal(args.deny)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            return s.fail(s.current, e)
        print(json.dumps(client_env(d)), flush=True)
        # 4. Run until told to stop.  stdin is watched only if it is a pipe, socket or tty:
        #    /dev/null (a background job, CI without stdin) would read as closed at once.
        mode = os.fstat(0).st_mode
        watch = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(0)
        while True:
            if not watch:
                time.sleep(0.5)
            elif select.select([0], [], [], 0.5)[0] and not os.read(0, 4096):
                return 0  # stdin closed: the test is gone
            for name, p in s.children:
                if p.poll() is not None:
                    return s.fail(name, f"died (exit code {p.returncode})")
    finally:
        s.stop_all()


# ----------------------------------------------------------------------------------------- nodes
def video_sources(env):
    """The Video/Source nodes with the properties the test asserts ([] if PipeWire is silent)."""
    try:
        r = subprocess.run(["pw-dump"], env=env, capture_output=True, timeout=5)
        objects = json.loads(r.stdout) if r.returncode == 0 else []
    except (subprocess.TimeoutExpired, ValueError):
        objects = []
    found = []
    for o in objects:
        info = o.get("info") or {}
        props = info.get("props") or {}
        if o.get("type", "").endswith(":Node") and props.get("media.class") == "Video/Source":
            found.append({"id": o["id"], "node.name": props.get("node.name"),
                          "media.class": props.get("media.class"),
                          "media.role": props.get("media.role"), "state": info.get("state")})
    return found


def wait_for_node(env, name, timeout):
    """video_sources(), polled until one is called `name` (if given) or the timeout passes."""
    end = time.monotonic() + timeout
    while True:
        found = video_sources(env)
        if not name or any(n["node.name"] == name for n in found) or time.monotonic() >= end:
            return found
        time.sleep(0.2)


def nodes(args, env):
    found = wait_for_node(env, args.node, args.timeout)
    print(json.dumps(found), flush=True)
    return 1 if args.node and not any(n["node.name"] == args.node for n in found) else 0


# ------------------------------------------------------------------------------------------ read
def run_gst(argv, env, timeout):
    """gst-launch's output.  On timeout it is stopped as by Ctrl-C, so that it leaves PipeWire
    cleanly, and killed if that does not end it."""
    try:
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace",
                             preexec_fn=die_with_parent)
    except OSError as e:
        return str(e)
    try:
        return p.communicate(timeout=max(timeout, 0.1))[0]
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            return p.communicate(timeout=3)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            return p.communicate()[0]


def read(args, env):
    t0 = time.monotonic()
    res = {"frames": 0, "width": 0, "height": 0, "format": None, "frames_detail": []}
    # 1. Wait for the node first: WirePlumber links a consumer to its target-object only if that
    #    node exists when the consumer appears; one started earlier stays unlinked for good.
    if not any(n["node.name"] == args.node for n in wait_for_node(env, args.node, args.timeout)):
        res["error"] = f"no Video/Source node named {args.node!r} after {args.timeout:g} s"
    else:
        # 2. Read N buffers.  -v prints the node's own caps (on pipewiresrc's pad); each frame is
        #    turned into GRAY8 (luma) and written to a file of its own, so mean and md5 need no
        #    image library.
        with tempfile.TemporaryDirectory(prefix="pwcam-read-") as tmp:
            out = run_gst(["gst-launch-1.0", "-v", "pipewiresrc", f"target-object={args.node}",
                           f"num-buffers={args.frames}", "!", "videoconvert", "!",
                           "video/x-raw,format=GRAY8", "!", "multifilesink",
                           f"location={tmp}/f%06d.raw"], env, args.timeout - (time.monotonic() - t0))
            caps = re.findall(r"pipewiresrc0\.GstPad:src: caps = video/x-raw, (.*)", out)
            caps = dict(re.findall(r"(\w+)=\(\w+\)([^,\s]+)", caps[-1] if caps else ""))
            w, h = int(caps.get("width", 0)), int(caps.get("height", 0))
            res.update(width=w, height=h, format=caps.get("format"))
            stride = (w + 3) & ~3  # GStreamer pads GRAY8 rows to 4 bytes
            for name in sorted(os.listdir(tmp)):
                with open(os.path.join(tmp, name), "rb") as f:
                    data = f.read()
                if stride != w:  # keep the visible pixels only
                    data = b"".join(data[r * stride:r * stride + w] for r in range(h))
                res["frames_detail"].append({"mean": round(sum(data) / max(len(data), 1), 2),
                                             "md5": hashlib.md5(data).hexdigest()})
        res["frames"] = len(res["frames_detail"])
        if res["frames"] < args.frames:
            res["error"] = "timeout or error; gst-launch said: " + " | ".join(
                out.strip().splitlines()[-4:])
    res["seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(res), flush=True)
    return 0 if res["frames"] >= args.frames else 1


def main():
    # A test runner may start us with signals blocked: undo that (children inherit the mask).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(signal.Signals))
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(0))  # unwinds through the `finally` blocks
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    dm = sub.add_parser("daemon")
    dm.add_argument("--dir", required=True)
    dm.add_argument("--portal", action="store_true", help="also the camera portal (xdg-desktop-portal)")
    dm.add_argument("--deny", action="store_true", help="with --portal: the user answers Deny")
    r = sub.add_parser("read")
    r.add_argument("--node", required=True)
    r.add_argument("--frames", type=int, default=30)
    r.add_argument("--timeout", type=float, default=15)
    n = sub.add_parser("nodes")
    n.add_argument("--node")
    n.add_argument("--timeout", type=float, default=0)
    for p in (r, n):
        p.add_argument("--dir", help="the daemon's DIR, instead of its env")
    args = ap.parse_args()
    if args.cmd == "daemon":
        return daemon(args)
    env = dict(os.environ, **client_env(args.dir)) if args.dir else dict(os.environ)
    return read(args, env) if args.cmd == "read" else nodes(args, env)


if __name__ == "__main__":
    sys.exit(main())
