#!/usr/bin/env python3
"""Checks a running livegate against docs/openapi.yaml: the document is valid OpenAPI 3.1, and
real answers (status and JSON body, events included) match what it says.

usage: openapi_check.py BASE_URL OPENAPI_YAML CAMERA
Prints one line per check; exits 1 when any answer is undocumented or does not match its schema.
"""
import json
import re
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import yaml
from openapi_spec_validator import validate as validate_spec

base, doc_path, cam = sys.argv[1], sys.argv[2], sys.argv[3]
with open(doc_path) as f:
    spec = yaml.safe_load(f)
validate_spec(spec)
failures = []


def schema_validator(schema):
    # '#/components/...' references resolve against the document root.
    root = dict(schema)
    root["components"] = spec["components"]
    return jsonschema.Draft202012Validator(root)


def resolve(obj):
    while isinstance(obj, dict) and "$ref" in obj:
        node = spec
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def operation(method, path):
    bare = path.split("?")[0]
    for template, item in spec["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if template.endswith("{path}"):
            pattern = pattern.replace("[^/]+$", ".+$")
        if re.match(pattern, bare) and method.lower() in item:
            return template, item[method.lower()]
    return None, None


def check(method, path, body=None, expect=None, content_type="application/json"):
    data = json.dumps(body).encode() if body is not None else (b"{}" if method in ("POST", "PUT") else None)
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, ctype, raw = r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        status, ctype, raw = e.code, e.headers.get("Content-Type", ""), e.read()
    label = f"{method} {path} -> {status}"
    if expect is not None and status != expect:
        failures.append(f"{label}: expected {expect}: {raw[:300]!r}")
    template, op = operation(method, path)
    if op is None:
        failures.append(f"{label}: no such operation in the document")
        return None
    response = resolve(op["responses"].get(str(status)) or op["responses"].get("default"))
    if response is None:
        failures.append(f"{label}: status {status} not documented for {template}")
        return None
    content = response.get("content") or {}
    media = content.get(ctype) or content.get(ctype.split(";")[0].strip())
    if media is None:
        failures.append(f"{label}: content type '{ctype}' not documented")
        return None
    if ctype.startswith("application/json"):
        value = json.loads(raw)
        errors = sorted(schema_validator(media["schema"]).iter_errors(value), key=str)
        for e in errors[:3]:
            failures.append(f"{label}: {'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message}")
        print(f"{'ok ' if not errors else 'BAD'} {label} ({template})")
        return value
    print(f"ok  {label} ({template}, {ctype})")
    return raw


c = f"/api/v1/cameras/{cam}"
check("GET", "/api/v1/cameras", expect=200)
check("GET", c, expect=200)
check("GET", "/api/v1/cameras/no-such-camera", expect=404)
props = check("GET", f"{c}/properties", expect=200) or []
check("GET", f"{c}/properties/iso", expect=200)
check("GET", f"{c}/properties/no-such-property", expect=404)
check("PUT", f"{c}/properties/iso", {"value": 123}, expect=400)
check("PUT", f"{c}/properties/iso", {"value": True}, expect=400)
check("PUT", f"{c}/properties/whiteBalance", {"value": "tungsten"}, expect=200)
check("PUT", f"{c}/properties/iso", "400", expect=400)  # a JSON string, not an object
check("POST", f"{c}/focus", {"x": 10, "y": 10}, expect=200)
check("POST", f"{c}/focus", {"x": "left"}, expect=400)
check("POST", f"{c}/capture", {"autofocus": False}, expect=200)
check("POST", f"{c}/capture", {"autofocus": "yes"}, expect=400)
check("GET", f"{c}/captures", expect=200)
check("GET", f"{c}/files?limit=5", expect=None)
check("GET", f"{c}/files?limit=0", expect=None)  # 400, or 501 first where the camera has no card access
check("POST", "/api/v1/reload", expect=409)
check("PUT", f"{c}/properties/iso", {"value": 400}, expect=415, content_type="text/plain")
check("GET", "/api/v1/openapi.yaml", expect=200)
check("GET", "/metrics", expect=200)
check("GET", f"/snapshot/{cam}.jpg", expect=200)
check("GET", "/snapshot/no-such-camera.jpg", expect=404)

# Events: the first few seconds of the stream, each event's data against its schema.
event_schemas = {
    "state": "StateEvent", "property": "PropertyEvent", "af": "AFEvent", "storage": "StorageEvent",
    "recording": "RecordingEvent", "capture": "SavedCapture", "capture-failed": "CaptureFailedEvent",
    "push": "PushEvent", "config": "ConfigEvent",
}
seen = {}
req = urllib.request.Request(base + "/api/v1/events")
with urllib.request.urlopen(req, timeout=10) as r:
    name = None
    deadline = time.time() + 4
    while time.time() < deadline and len(seen) < 3:
        line = r.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name:
            schema_name = event_schemas.get(name)
            if schema_name is None:
                failures.append(f"event '{name}' not documented")
                continue
            value = json.loads(line[6:])
            errors = list(schema_validator({"$ref": f"#/components/schemas/{schema_name}"}).iter_errors(value))
            for e in errors[:3]:
                failures.append(f"event {name}: {'/'.join(map(str, e.absolute_path)) or '(data)'}: {e.message}")
            seen[name] = seen.get(name, 0) + 1
print(f"events checked: {seen}")
if "state" not in seen:
    failures.append(f"no state event within 4 s: {seen}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
