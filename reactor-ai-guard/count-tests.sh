#!/usr/bin/env bash
# Counts the library's distinct test methods from the test sources, each method once however often it
# runs (repetitions, parameters, tries and dynamic tests are not multiplied). The Reactive Streams TCK
# verifications are a separate line: their rules come from the TCK jar, not from our sources (the
# @Test methods under tck/ only override TCK rules, so they are not counted as ours).
# Usage: reactor-ai-guard/count-tests.sh
set -euo pipefail
cd "$(dirname "$0")/src/test/java"

kinds="Test RepeatedTest ParameterizedTest Property TestFactory"
total=0
detail=""
for kind in $kinds; do
	# an annotation that starts its line; "@Test" is not a prefix match of "@TestFactory"
	n=$( (grep -rhE "^[[:space:]]*@${kind}([^[:alnum:]_]|$)" --include='*.java' --exclude-dir=tck . || true) | wc -l)
	total=$((total + n))
	detail="${detail:+$detail, }@${kind} ${n}"
done
echo "distinct test methods: ${total} (${detail})"

repeats=$( (grep -rhoE "@RepeatedTest\(([[:space:]]*value[[:space:]]*=[[:space:]]*)?[0-9]+" --include='*.java' . || true) \
	| grep -oE "[0-9]+$" | awk '{ s += $1 } END { print s + 0 }')
echo "  the @RepeatedTest methods run ${repeats} times in all"

publishers=$( (grep -lE "^public class \w+ extends (PublisherVerification|GuardVerification)\b" dev/aiguard/tck/*.java || true) | wc -l)
blackbox=$( (grep -lE "^public class \w+ extends SubscriberBlackboxVerification\b" dev/aiguard/tck/*.java || true) | wc -l)
whitebox=$( (grep -lE "^public class \w+ extends SubscriberWhiteboxVerification\b" dev/aiguard/tck/*.java || true) | wc -l)
echo "Reactive Streams TCK verifications, counted apart: $((publishers + blackbox + whitebox)) classes" \
	"(${publishers} publisher, ${blackbox} blackbox subscriber, ${whitebox} whitebox subscriber)"

# The rules each verification runs, read from the TCK jar in the local Maven repository, when javap can.
jar=$(ls "${HOME}"/.m2/repository/org/reactivestreams/reactive-streams-tck/*/reactive-streams-tck-*[0-9].jar 2>/dev/null \
	| sort | tail -1 || true)
if [ -n "${jar}" ] && command -v javap > /dev/null; then
	rules() { # prints "<required+optional+stochastic> <untested>" for one TCK verification class
		javap -cp "${jar}" "org.reactivestreams.tck.$1" \
			| grep -oE "public void (required|optional|stochastic|untested)_[[:alnum:]_]+" \
			| awk '/untested_/ { u++; next } { r++ } END { print r + 0, u + 0 }'
	}
	read -r pr pu <<< "$(rules PublisherVerification)"
	read -r br bu <<< "$(rules SubscriberBlackboxVerification)"
	read -r wr wu <<< "$(rules SubscriberWhiteboxVerification)"
	verified=$((publishers * pr + blackbox * br + whitebox * wr))
	untested=$((publishers * pu + blackbox * bu + whitebox * wu))
	echo "  they run ${verified} required/optional/stochastic TCK rules, plus ${untested} 'untested' rules" \
		"the TCK always skips ($(basename "${jar}"))"
fi
