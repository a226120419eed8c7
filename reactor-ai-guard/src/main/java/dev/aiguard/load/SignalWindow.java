package dev.aiguard.load;

import java.util.Arrays;

import dev.aiguard.core.Priority;

/**
 * The span the health signals read: the counts of the last few intervals, a ring the decision
 * loop enters each interval's {@link IntervalStats} into. The signals get the ring's totals, so a
 * quiet service still gathers evidence over several intervals, and one interval's burst is weighed
 * against its neighbours. Decision loop only.
 */
final class SignalWindow {

	private static final int PRIORITIES = Priority.values().length;

	private final long minSamples;
	private final long[][] arrivals;
	private final long[] nanos;
	private final long[] firstTokens;
	private final long[] ttftNanos;
	private final long[] attempts;
	private final long[] failures;
	private int next;

	/**
	 * @param intervals the intervals the window spans, >= 1
	 * @param minSamples what the window's totals carry as {@link IntervalStats#minSamples()}
	 */
	SignalWindow(int intervals, long minSamples) {
		this.minSamples = minSamples;
		this.arrivals = new long[intervals][PRIORITIES];
		this.nanos = new long[intervals];
		this.firstTokens = new long[intervals];
		this.ttftNanos = new long[intervals];
		this.attempts = new long[intervals];
		this.failures = new long[intervals];
	}

	/** Forgets every interval. */
	void clear() {
		for (long[] a : arrivals) {
			Arrays.fill(a, 0L);
		}
		Arrays.fill(nanos, 0L);
		Arrays.fill(firstTokens, 0L);
		Arrays.fill(ttftNanos, 0L);
		Arrays.fill(attempts, 0L);
		Arrays.fill(failures, 0L);
		next = 0;
	}

	/**
	 * Enters {@code latest} in place of the oldest interval.
	 *
	 * @return the totals of the intervals in the window, {@code latest} included
	 */
	IntervalStats add(IntervalStats latest) {
		int slot = next;
		next = (slot + 1) % nanos.length;
		for (Priority p : Priority.values()) {
			arrivals[slot][p.ordinal()] = latest.arrivals(p);
		}
		nanos[slot] = latest.intervalNanos();
		firstTokens[slot] = latest.firstTokens();
		ttftNanos[slot] = latest.ttftNanosTotal();
		attempts[slot] = latest.attempts();
		failures[slot] = latest.failures();

		long[] offered = new long[PRIORITIES];
		long nanosTotal = 0;
		long tokens = 0;
		long ttft = 0;
		long attempted = 0;
		long failed = 0;
		for (int i = 0; i < nanos.length; i++) {
			for (int p = 0; p < PRIORITIES; p++) {
				offered[p] += arrivals[i][p];
			}
			nanosTotal += nanos[i];
			tokens += firstTokens[i];
			ttft += ttftNanos[i];
			attempted += attempts[i];
			failed += failures[i];
		}
		return IntervalStats.measured(nanosTotal, offered, tokens, ttft, attempted, failed, minSamples);
	}
}
