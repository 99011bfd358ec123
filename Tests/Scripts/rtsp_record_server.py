#!/usr/bin/python3
"""An RTSP server that accepts RECORD (ANNOUNCE, SETUP mode=record, RECORD) and decodes what it gets:
the receiving end of `livegate run --push rtsp://…` in the tests.

It is gst-rtsp-server in record mode (Debian's python3-gi, gir1.2-gst-rtsp-server-1.0), driven
from Python; nothing of livegate's. Debian 12's `ffmpeg -rtsp_flags listen` cannot play this part:
it only accepts a lower-case `mode=record` in the SETUP Transport header, while RFC 2326 (and
GStreamer's rtspclientsink) write `mode=RECORD`.

    rtsp_record_server.py --port PORT [--path /live/cam0]

Prints one JSON line when listening ({"listening": PORT}), then once a second
{"frames": decoded frames so far, "width": w, "height": h, "span_ms": the stream time from the first
frame to the last} until SIGTERM/SIGINT.
"""
import argparse, json, signal, sys

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import GLib, Gst, GstApp, GstRtspServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", default="/live/cam0")
    a = ap.parse_args()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    Gst.init(None)
    loop = GLib.MainLoop()
    count = {"frames": 0, "width": 0, "height": 0, "span_ms": 0}
    first = {}

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(a.port))
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_transport_mode(GstRtspServer.RTSPTransportMode.RECORD)
    factory.set_launch("( rtph264depay name=depay0 ! h264parse ! avdec_h264 ! appsink name=sink emit-signals=true sync=false )")

    def on_sample(sink):
        sample = sink.emit("pull-sample")
        if sample is not None:
            count["frames"] += 1
            pts = sample.get_buffer().pts
            if pts != Gst.CLOCK_TIME_NONE:
                first.setdefault("pts", pts)
                count["span_ms"] = (pts - first["pts"]) // 1_000_000
            s = sample.get_caps().get_structure(0)
            count["width"], count["height"] = s.get_value("width"), s.get_value("height")
        return Gst.FlowReturn.OK

    def on_configure(_factory, media):
        sink = media.get_element().get_by_name("sink")
        sink.connect("new-sample", on_sample)

    factory.connect("media-configure", on_configure)
    server.get_mount_points().add_factory(a.path, factory)
    if server.attach(None) == 0:
        print(json.dumps({"error": f"cannot listen on 127.0.0.1:{a.port}"}), flush=True)
        sys.exit(2)
    print(json.dumps({"listening": a.port}), flush=True)

    def report():
        print(json.dumps(count), flush=True)
        return True

    GLib.timeout_add(1000, report)
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    loop.run()


if __name__ == "__main__":
    main()
