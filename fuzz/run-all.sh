#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 30), one after another, and exits non-zero if
# any of them crashed (panic, failed assertion, sanitizer report, timeout or OOM).
#
#   fuzz/run-all.sh [SECONDS]
#
# Works on the stable toolchain: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly-only
# flags (-Zsanitizer=address, ...). Crashing inputs land in fuzz/artifacts/<target>/; each
# target's log is in fuzz/target/run-all/<target>.log.
set -uo pipefail

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
    echo "usage: $0 [SECONDS]" >&2
    exit 2
fi

cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz not found; installing it from crates.io" >&2
    cargo install cargo-fuzz --locked || exit 2
fi

targets=$(cargo fuzz list) || exit 2
# Build everything first so that build time does not eat into the fuzzing time.
cargo fuzz build || exit 2

logs=target/run-all
mkdir -p "$logs"
failed=()
for target in $targets; do
    log="$logs/$target.log"
    echo "== $target: fuzzing for ${seconds}s (log: fuzz/$log)"
    # `corpus/<target>` holds the seeds; libFuzzer adds what it finds there (git-ignored).
    cargo fuzz run "$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$status" -eq 0 ]; then
        echo "   ok: ${runs:-?} executions"
    else
        failed+=("$target")
        echo "   CRASH (exit $status):"
        grep -m 1 -A 1 "panicked at" "$log" | sed 's/^/     /'
        grep -m 1 "^SUMMARY" "$log" | sed 's/^/     /'
        sed -n 's/^.*Test unit written to /     input: /p' "$log" | head -n 1
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "crashed: ${failed[*]}"
    exit 1
fi
echo "all targets ran ${seconds}s without a crash"
