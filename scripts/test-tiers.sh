#!/usr/bin/env bash
# Runs the tiers of `make test` one after the other (each a make target: test-build, test-unit,
# test-integration, test-tsan-build, test-tsan-run, conformance), goes on after a failing tier so that
# one run shows every failure, and ends with each tier's duration and outcome. Exit status: 0 when
# every tier passed.
#
# A tier written `+NAME` runs in the background, at the lowest CPU priority (nice 19), beside the tier
# that follows it; its output goes to .build/tiers/NAME.log and is printed (the end of it, or all of it
# when it failed) once the tier beside it is done, and the next tier starts after both. That is for a
# compile beside a tier that mostly waits: the waiting tier's processes take the CPU whenever they
# want it, the compile gets the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
names=() secs=() results=()
failed=0
logs=.build/tiers
mkdir -p "$logs"
bg_name="" bg_pid="" bg_start=0
began=$(date +%s)

finish_background() {
    [ -n "$bg_pid" ] || return 0
    local result=passed
    wait "$bg_pid" || { result=FAILED; failed=1; }
    echo "==== make $bg_name (beside the tier before, $(date -u +%H:%M:%S) UTC): $result"
    if [ "$result" = passed ]; then tail -n 20 "$logs/$bg_name.log"; else cat "$logs/$bg_name.log"; fi
    names+=("$bg_name (beside)") secs+=($(( $(cat "$logs/$bg_name.end") - bg_start ))) results+=("$result")
    bg_name="" bg_pid=""
}

for tier in "$@"; do
    start=$(date +%s)
    if [[ "$tier" == +* ]]; then
        bg_name=${tier#+} bg_start=$start
        echo "==== make $bg_name in the background ($(date -u +%H:%M:%S) UTC, log: $logs/$bg_name.log)"
        ( nice -n 19 make --no-print-directory "$bg_name" > "$logs/$bg_name.log" 2>&1; status=$?
          date +%s > "$logs/$bg_name.end"; exit $status ) &
        bg_pid=$!
        continue
    fi
    echo "==== make $tier ($(date -u +%H:%M:%S) UTC)"
    if make --no-print-directory "$tier"; then result=passed; else result=FAILED; failed=1; fi
    names+=("$tier") secs+=($(( $(date +%s) - start ))) results+=("$result")
    finish_background
done
finish_background

echo
echo "==== make test: tier durations (a tier 'beside' another ran at the same time as it)"
for i in "${!names[@]}"; do
    printf '  %-26s %4d s  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
done
total=$(( $(date +%s) - began ))
printf '  %-26s %4d s (%d min %d s)\n' total "$total" $(( total / 60 )) $(( total % 60 ))
exit $failed
