#!/usr/bin/env bash
# Checks the deployment files in deploy/ without installing anything:
#   - deploy/livegate.service passes `systemd-analyze verify`, warnings included;
#   - deploy/livegate.yaml parses and uses only the configuration's keys;
#   - deploy/compose.yaml parses and publishes ports on 127.0.0.1 only;
#   - deploy/Containerfile's runtime stage installs no -dev package and runs as a non-root USER.
# One line per check (PASS, FAIL or SKIP with the reason); exits 1 when any check fails.
# Usage: Tests/Scripts/deploy_check.sh [DEPLOY_DIR]   (default: deploy/ of this repository)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
deploy="${1:-$here/../../deploy}"
deploy="$(cd "$deploy" && pwd)"
failures=0

pass() { echo "PASS $1"; }
skip() { echo "SKIP $1"; }
fail() {
    echo "FAIL $1"
    if [ -n "${2:-}" ]; then printf '%s\n' "$2" | sed 's/^/    /'; fi
    failures=$((failures + 1))
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- systemd unit ------------------------------------------------------------------------------
# `systemd-analyze verify` fails when ExecStart's binary does not exist, and only warns (exit 0)
# on unknown or misspelt directives. So: verify a copy whose ExecStart names a stub executable
# (the unit keeps its name and every other line), and treat any message about the unit as a
# failure.
unit="$deploy/livegate.service"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    skip "unit: systemd-analyze not installed"
elif [ ! -f "$unit" ]; then
    fail "unit: $unit missing"
else
    mkdir -p "$work/bin" "$work/unit"
    printf '#!/bin/sh\nexit 0\n' >"$work/bin/livegate"
    chmod +x "$work/bin/livegate"
    sed "s#^ExecStart=/usr/local/bin/livegate\\([[:space:]]\\)#ExecStart=$work/bin/livegate\\1#" \
        "$unit" >"$work/unit/livegate.service"
    if ! grep -q "^ExecStart=$work/bin/livegate " "$work/unit/livegate.service"; then
        fail "unit: no 'ExecStart=/usr/local/bin/livegate …' line to verify"
    else
        rc=0
        out="$(systemd-analyze verify "$work/unit/livegate.service" 2>&1)" || rc=$?
        out="${out//$work\/unit\//deploy/}"
        about_unit="$(printf '%s\n' "$out" | grep -F 'livegate.service' || true)"
        if [ "$rc" -ne 0 ] || [ -n "$about_unit" ]; then
            fail "unit: systemd-analyze verify (exit $rc)" "$out"
        else
            pass "unit: systemd-analyze verify $(systemd-analyze --version | head -n1 | cut -d' ' -f1-2)"
        fi
    fi
fi

# --- YAML files --------------------------------------------------------------------------------
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import yaml' 2>/dev/null; then
    skip "config: python3 with PyYAML not available (apt-get install python3-yaml)"
    skip "compose: python3 with PyYAML not available"
else
    rc=0
    out="$(python3 - "$deploy/livegate.yaml" <<'EOF' 2>&1
import sys, yaml
# Keys and values are livegate's parser's to judge (ConfigFileTests.theShippedExampleLoads reads
# this file with it); here: YAML, a mapping, cameras with a name and a URL.
try:
    with open(sys.argv[1]) as f:
        doc = yaml.safe_load(f)
except (OSError, yaml.YAMLError) as e:
    sys.exit(str(e))
problems = []
if not isinstance(doc, dict):
    sys.exit("not a mapping at the top")
cams = doc.get("cameras")
if not isinstance(cams, list) or not cams:
    problems.append("cameras: not a non-empty list")
else:
    for i, c in enumerate(cams):
        if not isinstance(c, dict):
            problems.append(f"cameras[{i}]: not a mapping")
            continue
        problems += [f"cameras[{i}]: no {k}" for k in ("name", "url") if not isinstance(c.get(k), str)]
if problems:
    sys.exit("\n".join(problems))
print(f"{len(doc)} keys, {len(cams)} cameras")
EOF
)" || rc=$?
    if [ "$rc" -eq 0 ]; then pass "config: deploy/livegate.yaml parses ($out)"; else fail "config: deploy/livegate.yaml" "$out"; fi

    rc=0
    out="$(python3 - "$deploy/compose.yaml" <<'EOF' 2>&1
import sys, yaml
try:
    with open(sys.argv[1]) as f:
        doc = yaml.safe_load(f)
except (OSError, yaml.YAMLError) as e:
    sys.exit(str(e))
services = doc.get("services") if isinstance(doc, dict) else None
if not isinstance(services, dict) or "livegate" not in services:
    sys.exit("no services.livegate")
problems = []
for name, svc in services.items():
    for p in (svc or {}).get("ports", []):
        if not str(p).startswith("127.0.0.1:"):
            problems.append(f"{name}: port {p!r} not published on 127.0.0.1")
if problems:
    sys.exit("\n".join(problems))
print(", ".join(services))
EOF
)" || rc=$?
    if [ "$rc" -eq 0 ]; then pass "compose: deploy/compose.yaml parses, ports on 127.0.0.1 ($out)"; else fail "compose: deploy/compose.yaml" "$out"; fi
fi

# --- Containerfile -----------------------------------------------------------------------------
# The runtime stage is everything after the last FROM. Comments are dropped and continuation
# lines joined before the apt-get install arguments are read.
containerfile="$deploy/Containerfile"
if [ ! -f "$containerfile" ]; then
    fail "containerfile: $containerfile missing"
else
    runtime="$(awk 'toupper($1) == "FROM" { stage = "" } { stage = stage $0 "\n" } END { printf "%s", stage }' "$containerfile" \
        | grep -v '^[[:space:]]*#' | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta')"
    from="$(printf '%s\n' "$runtime" | awk 'toupper($1) == "FROM" { print $2; exit }')"
    packages="$(printf '%s\n' "$runtime" | grep -oE 'apt-get[[:space:]]+install[^&;|]*' \
        | sed -E 's/apt-get[[:space:]]+install//' | tr -s ' \t' '\n' | grep -v '^-' | grep -v '^$' || true)"
    dev="$(printf '%s\n' "$packages" | grep -E -- '-dev($|[:=])' || true)"
    if [ -z "$packages" ]; then
        fail "containerfile: runtime stage ($from) installs no package with apt-get install"
    elif [ -n "$dev" ]; then
        fail "containerfile: runtime stage ($from) installs -dev packages" "$dev"
    else
        pass "containerfile: runtime stage ($from) installs $(printf '%s\n' "$packages" | wc -l) packages, none -dev"
    fi
    user="$(printf '%s\n' "$runtime" | awk 'toupper($1) == "USER" { u = $2 } END { print u }')"
    case "${user%%:*}" in
        "") fail "containerfile: runtime stage sets no USER (it would run as root)" ;;
        root | 0) fail "containerfile: runtime stage runs as root (USER $user)" ;;
        *) pass "containerfile: runtime stage runs as USER $user" ;;
    esac
fi

if [ "$failures" -ne 0 ]; then
    echo "deploy_check: $failures check(s) failed"
    exit 1
fi
echo "deploy_check: all checks passed"
