package dev.aiguard.load;

import java.util.concurrent.atomic.LongAdder;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;

/**
 * What the guard records for the governor, on its hot path: monotonic striped counters that any
 * thread adds to without a lock or an allocation, and that the decision loop reads as deltas
 * since its previous reading ({@link #takeInterval}).
 */
final class LoadCounters {

	private static final int PRIORITIES = Priority.values().length;

	// ---- recording: any thread ----
	private final LongAdder[] arrivals = new LongAdder[PRIORITIES];
	private final LongAdder firstTokens = new LongAdder();
	private final LongAdder ttftNanos = new LongAdder();
	private final LongAdder successes = new LongAdder();
	private final LongAdder failures = new LongAdder();

	// ---- owned by the decision loop ----
	private final long[] seenArrivals = new long[PRIORITIES];
	private long seenFirstTokens;
	private long seenTtftNanos;
	private long seenSuccesses;
	private long seenFailures;
	/** Carried by every {@link IntervalStats} taken. */
	private final long minSamples;

	LoadCounters(long minSamples) {
		this.minSamples = minSamples;
		for (int p = 0; p < arrivals.length; p++) {
			arrivals[p] = new LongAdder();
		}
	}

	void arrived(Priority priority) {
		arrivals[priority.ordinal()].increment();
	}

	void firstToken(long ttftNanos) {
		firstTokens.increment();
		this.ttftNanos.add(Math.max(0L, ttftNanos));
	}

	void ended(Outcome outcome) {
		if (outcome == Outcome.SUCCESS) {
			successes.increment();
		}
		else if (outcome.isUpstreamFault()) {
			failures.increment();
		}
	}

	/** Reads the counters as deltas since the previous reading (decision loop only). */
	IntervalStats takeInterval(long elapsedNanos) {
		long[] offered = new long[PRIORITIES];
		for (int p = 0; p < offered.length; p++) {
			long total = arrivals[p].sum();
			offered[p] = total - seenArrivals[p];
			seenArrivals[p] = total;
		}
		// the count before the sum: a first token between the two reads adds time without its count
		// to this interval at worst, never a count without time
		long tokensTotal = firstTokens.sum();
		long ttftTotal = ttftNanos.sum();
		long successTotal = successes.sum();
		long failureTotal = failures.sum();
		long tokens = tokensTotal - seenFirstTokens;
		long ttft = ttftTotal - seenTtftNanos;
		long success = successTotal - seenSuccesses;
		long failed = failureTotal - seenFailures;
		seenFirstTokens = tokensTotal;
		seenTtftNanos = ttftTotal;
		seenSuccesses = successTotal;
		seenFailures = failureTotal;
		return IntervalStats.measured(elapsedNanos, offered, tokens, ttft, success + failed, failed, minSamples);
	}
}
