#!/usr/bin/env bash
# Prints, per module, how long its tests took: the sum of the Surefire and Failsafe report times
# (one XML report per test class) and the number of test cases. Run after `mvn verify`.
# Usage: bash .ci/module-times.sh [repository root]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
printf '%-45s %10s %8s\n' "module" "tests (s)" "cases"
total=0
for dir in */; do
	module=${dir%/}
	reports=$(find "$module/target" -maxdepth 2 -path '*-reports/TEST-*.xml' 2>/dev/null || true)
	[ -n "$reports" ] || continue
	# the <testsuite ...> element carries time="..." and tests="..."
	read -r seconds cases < <(echo "$reports" | xargs grep -h -o -m1 '<testsuite [^>]*>' \
		| awk '{ t = 0; n = 0;
			if (match($0, / time="[0-9.,]+"/)) { v = substr($0, RSTART + 7, RLENGTH - 8); gsub(",", "", v); t = v }
			if (match($0, / tests="[0-9]+"/)) { n = substr($0, RSTART + 8, RLENGTH - 9) }
			s += t; c += n }
			END { printf "%.1f %d\n", s, c }')
	printf '%-45s %10s %8s\n' "$module" "$seconds" "$cases"
	total=$(awk -v a="$total" -v b="$seconds" 'BEGIN { printf "%.1f", a + b }')
done
printf '%-45s %10s\n' "all modules (test time, forks in sequence)" "$total"
