#!/usr/bin/env bash
# Prints the `swift test --filter/--skip` expression for the suites tagged TAG
# (Tests/TestSupport/Tags.swift): every suite whose `@Suite(...)` attribute has `.tags(... .TAG ...)`,
# on the line of its `struct` or the line before. Nested suites follow their parent. (This toolchain's
# `swift test --filter` does not take tags, so the tiers are chosen by the tagged suites' names.)
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:?usage: test-filter.sh TAG}"
names=$(find Tests -name '*.swift' -print0 | xargs -0 awk -v tag="$tag" '
    function tagged(line) { return line ~ /@Suite\(/ && line ~ ("\\.tags\\([^)]*\\." tag "[,)]") }
    FNR == 1 { prev = "" }
    {
        # Top-level suites only: `struct` at the start of the line, or after the attribute.
        if ((tagged($0) && match($0, /^@Suite\(.*\) *(final +)?struct [A-Za-z0-9_]+/)) ||
            (tagged(prev) && prev ~ /^@Suite/ && match($0, /^(final +)?struct [A-Za-z0-9_]+/))) {
            n = split(substr($0, RSTART, RLENGTH), words, / +/)
            print words[n]
        }
        prev = $0
    }' | sort -u | paste -sd'|' -)
if [ -z "$names" ]; then echo "test-filter.sh: no suite is tagged $tag" >&2; exit 1; fi
echo "^[A-Za-z]+Tests\\.($names)/"
