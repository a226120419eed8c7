package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * The counters behind a breaker: a ring of slots plus running totals, so reading the window is
 * O(1). Recording is lock-free, and a plain success costs one atomic operation (see the two
 * implementations for how). Whatever leaves a slot (eviction, reset) is subtracted from the totals by
 * the thread whose CAS took it out, so slots and totals always agree once writers are quiet.
 */
abstract class SlidingWindow implements WindowCounts {

	static final int CALLS = 0;
	static final int FAILURES = 1;
	static final int SLOW = 2;
	static final int STALLS = 3;
	static final int INCOMPLETE = 4;
	/** Counters per slot. */
	static final int WIDTH = 5;

	static final int CALL_BIT = 1 << CALLS;
	static final int FAILURE_BIT = 1 << FAILURES;
	static final int SLOW_BIT = 1 << SLOW;
	static final int STALL_BIT = 1 << STALLS;
	static final int INCOMPLETE_BIT = 1 << INCOMPLETE;

	static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

	/** Running totals, one per counter (for a time window: of its closed buckets only). */
	final long[] totals = new long[WIDTH];

	/**
	 * Records one call.
	 *
	 * @param nowNanos the breaker clock's reading (ignored by count-based windows)
	 * @param flags {@link #CALL_BIT} plus the bits of the counters to increment
	 * @return whether the call was counted; {@code false} for a record too late for the window
	 */
	abstract boolean record(long nowNanos, int flags);

	/**
	 * Records {@code calls} plain successes at once, as {@code calls} times {@link #record record(nowNanos,
	 * CALL_BIT)} would, with work that does not grow with {@code calls} beyond the window's size.
	 *
	 * @return whether they were counted; {@code false} for a record too late for the window
	 */
	abstract boolean recordSuccesses(long nowNanos, long calls);

	/** Drops buckets that have slid out of the window by {@code nowNanos}. */
	abstract void advanceTo(long nowNanos);

	/** Empties the window (on re-closing: the probes proved the old evidence stale). */
	abstract void reset();

	/** @return whether this window reads time; count-based ones do not */
	abstract boolean timeBased();

	/** @return whether a window built from {@code config} would have the same shape as this one */
	abstract boolean sameShape(BreakerConfig config);

	static SlidingWindow of(BreakerConfig config, long nowNanos) {
		// a time-based config always has its bucket length
		return config.windowType() == BreakerConfig.WindowType.TIME_BASED
				? new TimeWindow(config.windowSize(), Objects.requireNonNull(config.bucketLength(), "bucketLength").toNanos(),
						nowNanos)
				: new CountWindow(config.windowSize());
	}

	final long total(int counter) {
		long v = rawTotal(counter);
		// a reader may see a slot's eviction before the matching increment of a racing writer
		return v < 0 ? 0 : v;
	}

	/** The running total of one counter, unclamped. */
	abstract long rawTotal(int counter);

	final void addTotal(int counter, long delta) {
		LONGS.getAndAdd(totals, counter, delta);
	}

	@Override
	public final long calls() {
		return total(CALLS);
	}

	@Override
	public final long failures() {
		return Math.min(total(FAILURES), calls());
	}

	@Override
	public final long slowCalls() {
		return Math.min(total(SLOW), calls());
	}

	@Override
	public final long stalls() {
		return Math.min(total(STALLS), calls());
	}

	@Override
	public final long incomplete() {
		return Math.min(total(INCOMPLETE), calls());
	}

	/** Sum of one counter over all slots (tests compare it with the running total). */
	abstract long slotSum(int counter);
}
