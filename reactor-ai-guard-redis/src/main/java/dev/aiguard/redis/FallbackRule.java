package dev.aiguard.redis;

import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

/**
 * When a {@link RedisBucketStore} stops and starts counting on Redis, apart from how it enforces that:
 * facts in (an operation answered or timed out, a probe answered or not), a verdict out.
 *
 * <ul>
 * <li><b>Falling back.</b> {@code timeouts} operations in a row without an answer within the command
 * timeout, the first and the latest at least one command timeout apart. One stall of Redis or of this
 * JVM (a pause, a busy machine) times out the operations in flight together, within one command
 * timeout of each other: that is one slow moment, not a Redis that stopped answering. An answered
 * operation ends the streak.</li>
 * <li><b>Returning.</b> {@code probes} answered pings in a row while in fallback (one for the very
 * first connection); a ping not answered starts the count again.</li>
 * </ul>
 *
 * <p>Operations complete on many threads: the streak is one immutable value replaced by a
 * compare-and-swap. Probes run one at a time on the store's worker, so their count is a plain
 * volatile field.
 */
final class FallbackRule {

	/** Timeouts since the last answered operation: the first one's time and how many. */
	private record Streak(long firstNanos, int count) {
	}

	private static final AtomicReferenceFieldUpdater<FallbackRule, Streak> STREAK = AtomicReferenceFieldUpdater
			.newUpdater(FallbackRule.class, Streak.class, "streak");

	private final int timeouts;
	private final long spanNanos;
	private final int probes;
	/** {@code null} while the latest operation was answered. */
	private volatile Streak streak;
	private volatile int answeredProbes;

	/**
	 * @param timeouts operations in a row without an answer that make Redis count as down, {@code >= 2}
	 * @param spanNanos how far apart the first and the latest of them must be (the command timeout)
	 * @param probes pings answered in a row that make Redis count as back, {@code >= 1}
	 */
	FallbackRule(int timeouts, long spanNanos, int probes) {
		this.timeouts = timeouts;
		this.spanNanos = spanNanos;
		this.probes = probes;
	}

	/** An operation was answered in time: a streak of timeouts ends. */
	void answered() {
		if (streak != null) { // read first: the common path writes nothing
			streak = null;
		}
	}

	/**
	 * An operation was not answered within the command timeout.
	 *
	 * @param nowNanos the time it timed out
	 * @return whether Redis now counts as down
	 */
	boolean timedOut(long nowNanos) {
		for (;;) {
			Streak s = streak;
			Streak next = s == null ? new Streak(nowNanos, 1) : new Streak(s.firstNanos, s.count + 1);
			if (STREAK.compareAndSet(this, s, next)) {
				return next.count >= timeouts && nowNanos - next.firstNanos >= spanNanos;
			}
		}
	}

	/** @return the operations timed out in a row so far (for the reason of a fall-back) */
	int timeoutsInARow() {
		Streak s = streak;
		return s == null ? 0 : s.count;
	}

	/**
	 * A ping was answered while in fallback.
	 *
	 * @param firstConnection whether the store has never been shared yet: one answer is enough
	 * @return whether Redis now counts as back
	 */
	boolean probeAnswered(boolean firstConnection) {
		int n = answeredProbes + 1;
		answeredProbes = n;
		return firstConnection || n >= probes;
	}

	/** @return the pings answered in a row so far */
	int probesInARow() {
		return answeredProbes;
	}

	/** A ping failed or timed out: the count of answered ones starts again. */
	void probeFailed() {
		answeredProbes = 0;
	}

	/** The store changed its mode: both counts start again. */
	void reset() {
		streak = null;
		answeredProbes = 0;
	}
}
