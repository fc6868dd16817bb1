#!/usr/bin/env bash
# The long reliability campaign (CI runs the short versions inside scripts/test.sh):
#   - SIGKILL: tests/tests/crash.rs with CRASH_ROUNDS (default 50) kills during running jobs;
#   - bad input and a full disk: tests/tests/faults.rs (the disk test needs root for a tmpfs);
#   - fuzzing: every cargo-fuzz target for FUZZ_SECONDS (default 600) each (fuzz/run-all.sh).
#
#   scripts/reliability.sh [crash|faults|fuzz|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"

if [ "$what" = crash ] || [ "$what" = all ]; then
  echo "== SIGKILL campaign: ${CRASH_ROUNDS:-50} rounds"
  cargo build --workspace --bins --locked
  CRASH_ROUNDS="${CRASH_ROUNDS:-50}" cargo test -p landscaper-e2e --locked --test crash -- --nocapture
fi
if [ "$what" = faults ] || [ "$what" = all ]; then
  echo "== bad input and full disk"
  cargo build --workspace --bins --locked
  cargo test -p landscaper-e2e --locked --test faults -- --nocapture
fi
if [ "$what" = fuzz ] || [ "$what" = all ]; then
  echo "== fuzzing: ${FUZZ_SECONDS:-600} s per target"
  fuzz/run-all.sh "${FUZZ_SECONDS:-600}"
fi
