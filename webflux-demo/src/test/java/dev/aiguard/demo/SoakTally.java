package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The soak's counters and the problems it found. Updated from event loops and timer threads by
 * every stream at once, so it is lock-free, and its size does not grow with the run: counters by
 * name, and the first few problems in full.
 */
final class SoakTally {

	/** Problems of single streams kept in full; the rest are counted. */
	private static final int KEPT = 30;

	private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
	private final AtomicLong longestMillis = new AtomicLong();
	private final AtomicLong violations = new AtomicLong();
	private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
	/** Problems of the run as a whole (counts, lanes, breaker, heap, BlockHound): few, always kept. */
	private final ConcurrentLinkedQueue<String> runProblems = new ConcurrentLinkedQueue<>();
	private final ConcurrentLinkedQueue<String> notes = new ConcurrentLinkedQueue<>();

	void count(String name) {
		count(name, 1);
	}

	void count(String name, long n) {
		counts.computeIfAbsent(name, k -> new LongAdder()).add(n);
	}

	long get(String name) {
		LongAdder a = counts.get(name);
		return a == null ? 0 : a.sum();
	}

	/** @return the counters whose names start with {@code prefix}, by the rest of the name */
	Map<String, Long> group(String prefix) {
		Map<String, Long> m = new TreeMap<>();
		counts.forEach((k, v) -> {
			if (k.startsWith(prefix)) {
				m.put(k.substring(prefix.length()), v.sum());
			}
		});
		return m;
	}

	void ended(StreamCheck check, StreamCheck.Verdict verdict) {
		count("end." + verdict.ending());
		count("tokens", verdict.tokens());
		count("numbered", verdict.numbered());
		long millis = verdict.elapsed().toMillis();
		longestMillis.accumulateAndGet(millis, Math::max);
		count("duration." + (millis < 1000 ? "a <1s" : millis < 3000 ? "b 1-3s" : millis < 10_000 ? "c 3-10s" : "d >=10s"));
		for (String p : verdict.problems()) {
			int colon = p.indexOf(':');
			count("problem." + (colon > 0 && colon < 60 ? p.substring(0, colon) : p.substring(0, Math.min(p.length(), 60))));
		}
		if (!verdict.problems().isEmpty() && violations.incrementAndGet() <= KEPT) {
			problems.add(String.join("; ", verdict.problems()) + "\n      " + check.describe(verdict));
		}
	}

	/** A problem of the run as a whole. */
	void problem(String text) {
		violations.incrementAndGet();
		runProblems.add(text);
	}

	/** Something worth reading in the report that breaks no rule. */
	void note(String text) {
		if (notes.size() < KEPT) {
			notes.add(text);
		}
	}

	List<String> notes() {
		return List.copyOf(notes);
	}

	long violations() {
		return violations.get();
	}

	/** @return the run's problems, then the first few streams' */
	List<String> problems() {
		List<String> all = new ArrayList<>(runProblems);
		all.addAll(problems);
		return all;
	}

	long longestMillis() {
		return longestMillis.get();
	}
}
