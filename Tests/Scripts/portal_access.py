#!/usr/bin/env python3
"""The desktop's permission dialog, answered by a script: an org.freedesktop.impl.portal.Access
back-end for xdg-desktop-portal on the session bus of DBUS_SESSION_BUS_ADDRESS.

xdg-desktop-portal (Debian 12: 1.16) exports its Camera portal only when a desktop back-end
implements Access, and asks that back-end's AccessDialog whether an app may use the camera (the
first time, for an app without a stored answer). A desktop shows a dialog there; this answers
every request at once, as a user clicking Allow (or Deny with --deny), and prints one JSON line
per request (app_id, title, the answer) so a test can see that the question was asked.

  portal_access.py --name org.freedesktop.impl.portal.desktop.NAME [--deny]

Prints {"ready": NAME} once the bus name is owned; runs until SIGTERM/SIGINT. Needs PyGObject
(python3-gi), as GStreamer's Python tools do.
"""
import argparse
import json
import signal
import sys

from gi.repository import Gio, GLib

INTERFACE = """
<node>
  <interface name="org.freedesktop.impl.portal.Access">
    <method name="AccessDialog">
      <arg type="o" name="handle" direction="in"/>
      <arg type="s" name="app_id" direction="in"/>
      <arg type="s" name="parent_window" direction="in"/>
      <arg type="s" name="title" direction="in"/>
      <arg type="s" name="subtitle" direction="in"/>
      <arg type="s" name="body" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="response" direction="out"/>
      <arg type="a{sv}" name="results" direction="out"/>
    </method>
  </interface>
</node>
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="the bus name the .portal file names")
    ap.add_argument("--deny", action="store_true", help="answer Deny instead of Allow")
    a = ap.parse_args()
    loop = GLib.MainLoop()
    info = Gio.DBusNodeInfo.new_for_xml(INTERFACE).interfaces[0]
    answer = 1 if a.deny else 0  # the portal's responses: 0 allowed, 1 cancelled by the user

    def on_call(conn, sender, path, iface, method, params, invocation):
        if method != "AccessDialog":
            invocation.return_dbus_error("org.freedesktop.DBus.Error.UnknownMethod", method)
            return
        handle, app_id, _parent, title, _subtitle, _body, _options = params.unpack()
        print(json.dumps({"request": handle, "app_id": app_id, "title": title, "answer": answer}), flush=True)
        invocation.return_value(GLib.Variant("(ua{sv})", (answer, {})))

    def on_bus(conn, _name):
        conn.register_object("/org/freedesktop/portal/desktop", info, on_call, None, None)

    def on_name(_conn, name):
        print(json.dumps({"ready": name}), flush=True)

    def on_lost(_conn, name):
        print(json.dumps({"error": f"could not own {name}"}), flush=True)
        loop.quit()

    Gio.bus_own_name(Gio.BusType.SESSION, a.name, Gio.BusNameOwnerFlags.NONE, on_bus, on_name, on_lost)
    for s in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, s, lambda *_: (loop.quit(), False)[1])
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
