#!/usr/bin/env bash
# Runs the tiers of `make test` one after the other (each a make target: test-build, test-unit,
# test-integration, test-tsan, conformance), goes on after a failing tier so that one run shows every
# failure, and ends with each tier's duration and outcome. Exit status: 0 when every tier passed.
set -uo pipefail
cd "$(dirname "$0")/.."
names=() secs=() results=()
failed=0
for tier in "$@"; do
    start=$(date +%s)
    echo "==== make $tier ($(date -u +%H:%M:%S) UTC)"
    if make --no-print-directory "$tier"; then result=passed; else result=FAILED; failed=1; fi
    names+=("$tier") secs+=($(( $(date +%s) - start ))) results+=("$result")
done
echo
echo "==== make test: tier durations"
total=0
for i in "${!names[@]}"; do
    printf '  %-18s %4d s  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
    total=$(( total + secs[i] ))
done
printf '  %-18s %4d s (%d min %d s)\n' total "$total" $(( total / 60 )) $(( total % 60 ))
exit $failed
