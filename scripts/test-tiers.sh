#!/usr/bin/env bash
# Runs the tiers of `make test` one after the other (each a make target: test-build, test-unit,
# test-integration, test-tsan-build, test-tsan-run, bench-check, conformance), goes on after a failing
# tier so that one run shows every failure, and ends with each tier's duration and outcome. Exit
# status: 0 when every tier passed.
#
# A tier written `+NAME` runs in the background, at the lowest CPU priority (nice 19), beside the
# next tier written without `+`; its output goes to .build/tiers/NAME.log and is printed (the end of
# it, or all of it when it failed) once that tier is done, and the tier after starts when all of them
# are. That is for compiles (and the allocation gate, which counts mallocs, not time) beside a tier
# that mostly waits: the waiting tier's processes take the CPU whenever they want it, the background
# ones get the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
names=() secs=() results=()
failed=0
logs=.build/tiers
mkdir -p "$logs"
bg_names=() bg_pids=() bg_starts=()
began=$(date +%s)

finish_background() {
    local i result
    for i in "${!bg_pids[@]}"; do
        result=passed
        wait "${bg_pids[$i]}" || { result=FAILED; failed=1; }
        local name=${bg_names[$i]}
        echo "==== make $name (beside, $(date -u +%H:%M:%S) UTC): $result"
        if [ "$result" = passed ]; then tail -n 20 "$logs/$name.log"; else cat "$logs/$name.log"; fi
        names+=("$name (beside)") secs+=($(( $(cat "$logs/$name.end") - bg_starts[i] ))) results+=("$result")
    done
    bg_names=() bg_pids=() bg_starts=()
}

for tier in "$@"; do
    start=$(date +%s)
    if [[ "$tier" == +* ]]; then
        name=${tier#+}
        echo "==== make $name in the background ($(date -u +%H:%M:%S) UTC, log: $logs/$name.log)"
        ( nice -n 19 make --no-print-directory "$name" > "$logs/$name.log" 2>&1; status=$?
          date +%s > "$logs/$name.end"; exit $status ) &
        bg_names+=("$name") bg_pids+=($!) bg_starts+=("$start")
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
