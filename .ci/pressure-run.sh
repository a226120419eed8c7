#!/usr/bin/env bash
# Runs the CI entry point while other processes keep every core busy, to find tests that depend on
# an idle machine before CI does. Each busy process is a shell loop at normal priority; they are
# stopped when the run ends, however it ends.
# Usage: bash .ci/pressure-run.sh [busy processes, default: one per core] [runs, default 1]
# Exit code: that of the first failing run, else 0. Prints each run's time and result.
set -uo pipefail
cd "$(dirname "$0")/.."
busy=${1:-$(nproc)}
runs=${2:-1}
pids=()
stop_busy() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	pids=()
}
trap stop_busy EXIT INT TERM
for _ in $(seq 1 "$busy"); do
	( while :; do :; done ) &
	pids+=("$!")
done
echo "== pressure: ${busy} busy processes on $(nproc) cores"
status=0
for run in $(seq 1 "$runs"); do
	start=$(date +%s)
	bash .ci/run > "target-pressure-run-${run}.log" 2>&1
	rc=$?
	echo "run ${run}: exit ${rc} in $(( $(date +%s) - start )) s (log: target-pressure-run-${run}.log)"
	grep -E "Tests run:.*(Failures: [1-9]|Errors: [1-9])|BUILD (SUCCESS|FAILURE)" "target-pressure-run-${run}.log" | tail -5
	if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then status=$rc; fi
done
exit "$status"
