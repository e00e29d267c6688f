#!/usr/bin/env bash
# Runs each fuzz target named for SECONDS, starting from its committed corpus (Fuzz/corpus/TARGET) and
# with its dictionary (Fuzz/dictionaries/TARGET.dict) if it has one;
# what a run adds is kept under .build/fuzz/corpus/TARGET for the next run. An input that breaks a
# property (a crash, a sanitizer report, a failed `require`) is copied into the committed corpus, where
# `make test` replays it, and the run fails. Prints each target's executions, executions per second and
# the coverage reached (libFuzzer's edges, `cov`, and features, `ft`).
#   Fuzz/run.sh SECONDS TARGET...      (FUZZ_RUNS=N also stops each target after N executions;
#                                       FUZZ_MAX_LEN=N bounds the inputs libFuzzer makes;
#                                       FUZZ_TIMEOUT=S is how long one input may take, 20 s unless
#                                       set: a run paused with SIGSTOP needs more than the pause)
set -u
seconds=$1
shift
binary=${FUZZ_BINARY:-.build/fuzz/release/gatekeeper-fuzz}
root=$(pwd)
failed=0
printf '%-17s %10s %8s %7s %7s %8s  %s\n' target runs exec/s cov ft corpus result
for target in "$@"; do
    work=.build/fuzz/corpus/$target
    logs=.build/fuzz/logs
    mkdir -p "$work" "$logs" "$work.artifacts"
    # One log a run: two runs of a target at once (make fuzz-smoke beside a long run) keep theirs apart.
    log=$logs/$target-$$.log
    # The grammar's words, where a target has a dictionary (Fuzz/dictionaries/TARGET.dict).
    dictionary=
    [ -f "Fuzz/dictionaries/$target.dict" ] && dictionary=$root/Fuzz/dictionaries/$target.dict
    # Leak checks are off: FoundationEssentials leaks a read buffer in Swift 6.3.1 (see make sanitize);
    # this package's leaks are checked by make leaks.
    (cd "$work.artifacts" && GATEKEEPER_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0 \
        timeout $((seconds + 120)) "$root/$binary" -max_total_time="$seconds" ${FUZZ_RUNS:+"-runs=$FUZZ_RUNS"} \
        ${FUZZ_MAX_LEN:+"-max_len=$FUZZ_MAX_LEN"} \
        -print_final_stats=1 \
        -detect_leaks=0 -rss_limit_mb=4096 -timeout="${FUZZ_TIMEOUT:-20}" ${dictionary:+"-dict=$dictionary"} \
        "$root/$work" "$root/Fuzz/corpus/$target") >"$log" 2>&1
    status=$?
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
    result=ok
    if [ $status -ne 0 ]; then
        failed=1
        result="FAILED (log: $log)"
        for found in "$work.artifacts"/crash-* "$work.artifacts"/timeout-* "$work.artifacts"/oom-*; do
            [ -e "$found" ] || continue
            cp "$found" "Fuzz/corpus/$target/"
            result="$result; input kept as Fuzz/corpus/$target/$(basename "$found")"
        done
    fi
    printf '%-17s %10s %8s %7s %7s %8s  %s\n' "$target" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
        "${corpus:-?}" "$result"
done
exit $failed
