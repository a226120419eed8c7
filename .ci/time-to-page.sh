#!/usr/bin/env bash
# Measures the README's run command from a fresh clone: clones this repository into a temporary
# directory, runs the command there, and prints the seconds until the demo's page and its guard
# status answer on 127.0.0.1:8080 (build and first start separately). The Maven repository is the
# user's own (~/.m2): warm it once with any build before measuring. Port 8080 must be free.
# Usage: bash .ci/time-to-page.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
app_pid=""
cleanup() {
	if [ -n "$app_pid" ]; then kill "$app_pid" 2>/dev/null || true; wait "$app_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

git clone -q "$repo" "$work/clone"
cd "$work/clone"
start=$(date +%s.%N)
mvn -B -ntp -Pdemo -pl webflux-demo -am package > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
built=$(date +%s.%N)
java -jar webflux-demo/target/webflux-demo.jar > "$work/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 1 600); do
	if curl -fs -o /dev/null http://127.0.0.1:8080/ && curl -fs -o /dev/null http://127.0.0.1:8080/api/guard; then
		ready=$(date +%s.%N)
		awk -v s="$start" -v b="$built" -v r="$ready" \
			'BEGIN { printf "build %.0f s, first start %.0f s, fresh clone to page %.0f s\n", b - s, r - b, r - s }'
		grep -m1 "Started DemoApplication" "$work/app.log" || true
		exit 0
	fi
	if ! kill -0 "$app_pid" 2>/dev/null; then tail -40 "$work/app.log"; exit 1; fi
	sleep 0.2
done
echo "the page did not answer within two minutes of the build"; tail -40 "$work/app.log"; exit 1
