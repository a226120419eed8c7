package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import org.jspecify.annotations.Nullable;

/**
 * Fast successes on their way to the window and the trip policies, counted per time-to-first-token
 * bin and handed over in one pass.
 *
 * <p>Every policy that keeps state of its own (decayed sums, histograms, forecasts) costs atomic
 * operations and arithmetic per recorded call, and needs the call's time; for a success that cannot
 * raise the pressure none of it has to happen at once. Such a success adds one word to its bin's
 * cell (one atomic add: the count in the high bits, the time to first token in microseconds in the
 * low bits). Whoever finds a cell at the batch limit takes the lock and hands everything pending to
 * the window and the {@link Batching} evaluator at once, stamped with one clock reading. Nothing is
 * lost: a cell is emptied with {@code getAndSet(0)}, so an add that misses one hand-over is in the
 * next. Failures, slow calls, probes and every read of the window hand the batch over first, so they
 * see every success recorded before them.
 *
 * <p>Time: the first success of a cell after a hand-over and every stride-th after it read the
 * clock (or take the caller's reading); a reading that finds the batch older than
 * {@link #MAX_AGE_NANOS} hands it over before adding. The limit follows the traffic: each hand-over
 * sets it to what the fullest cell gathered per {@link #MAX_AGE_NANOS} since the one before, at
 * most twice the limit before (at least one call, i.e. no batching; at most {@link #MAX_LIMIT});
 * the stride is a quarter of the limit, as a power of two, at most {@link #MAX_STRIDE}. So a success
 * reaches the policies about {@link #MAX_AGE_NANOS} late at most while the traffic is steady, and
 * fewer than a stride of a cell's successes are counted at an earlier reading's time when it
 * pauses.
 */
final class SuccessBatch {

	/** An evaluator that takes a batch of fast successes at once. */
	interface Batching extends TripPolicy.Evaluator {

		/** @return whether this evaluator (and every one inside it) takes batches */
		boolean batches();

		/**
		 * @return a time to first token (as given to {@link #onCall}) below which a success cannot raise
		 * the pressure; {@link Long#MAX_VALUE} when no success can. Only such successes are batched, so
		 * a success that may trip the breaker is judged at once.
		 */
		long quietBelowNanos();

		/**
		 * Sees the successes of one hand-over, as if each had been given to
		 * {@link #onCall onCall(window, config, SUCCESS, its time to first token, false, nowNanos)}.
		 *
		 * @return whether one of them may have raised the pressure
		 */
		boolean onSuccesses(WindowCounts window, BreakerConfig config, Drained successes, long nowNanos);
	}

	/** The largest batch: a hand-over per this many successes when the traffic is heavy. */
	static final int MAX_LIMIT = 256;
	/** How late a success may reach the policies while the traffic is steady. */
	static final long MAX_AGE_NANOS = 10_000_000L;
	/** A cell holding this many successes takes no more (the caller records directly). */
	static final long HARD_LIMIT = 1024;

	private static final int MICROS_BITS = 42;
	private static final long MICROS_MASK = (1L << MICROS_BITS) - 1;
	private static final long COUNT_UNIT = 1L << MICROS_BITS;
	/** Per call at most 2^31 µs (about 36 minutes): HARD_LIMIT plus racing adds cannot carry into the count. */
	private static final long MAX_MICROS = (1L << 31) - 1;
	/** The cell of successes without a first token. */
	private static final int NO_TTFT = TtftHistogram.BINS;
	private static final int CELLS = TtftHistogram.BINS + 1;

	private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(long[].class);
	private static final VarHandle LOCK;
	static {
		try {
			LOCK = MethodHandles.lookup().findVarHandle(SuccessBatch.class, "lock", int.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	private static final long NONE = Long.MIN_VALUE;
	/** The most successes of a cell between two clock readings. */
	static final int MAX_STRIDE = 64;

	private final Batching evaluator;
	private final BreakerClock clock;
	private final long[] cells = new long[CELLS];
	/** Successes with a first token below this are quiet (see {@link Batching#quietBelowNanos()}). */
	private volatile long quietBelow;
	/** Successes per cell at which the adder hands the batch over. */
	private volatile int limit = 1;
	/** An add reads the clock when its cell holds a multiple of {@code strideMask + 1} successes. */
	private volatile int strideMask;
	/** The clock at the last hand-over, {@link #NONE} before the first. */
	private volatile long handedAt = NONE;
	/** The first reading since the last hand-over, {@link #NONE} when none. */
	private volatile long openedAt = NONE;
	/** The latest reading taken by an add, {@link #NONE} before the first. */
	private volatile long lastReadAt = NONE;
	private volatile int lock;
	/** The hand-over's scratch space, used only by the lock holder. */
	private final Drained drained = new Drained();

	SuccessBatch(Batching evaluator, BreakerClock clock) {
		this.evaluator = evaluator;
		this.clock = clock;
		this.quietBelow = evaluator.quietBelowNanos();
	}

	/** @return whether a success with this time to first token (-1: none) may wait in the batch */
	boolean quiet(long ttftNanos) {
		return ttftNanos < quietBelow;
	}

	/** Reads the evaluator's quiet bound again (what it learned may have moved it). */
	void refreshQuietBound() {
		quietBelow = evaluator.quietBelowNanos();
	}

	/** @return a batch for {@code evaluator}, or {@code null} when it does not take batches */
	static @Nullable SuccessBatch forEvaluator(TripPolicy.Evaluator evaluator, BreakerClock clock) {
		return evaluator instanceof Batching && ((Batching) evaluator).batches()
				? new SuccessBatch((Batching) evaluator, clock) : null;
	}

	/**
	 * Adds one fast success.
	 *
	 * @param ttftNanos its time to first token as the policies judge it, or -1 when none arrived
	 * @param nowNanos the clock when the caller has it, else ignored
	 * @param timed whether {@code nowNanos} is a clock reading
	 * @return {@link #ADDED}, {@link #ADDED_HAND_OVER} (the caller should hand the batch over),
	 * {@link #HAND_OVER_FIRST} (not added: the batch is older than the bound, the caller hands it over
	 * and adds again) or {@link #FULL} (not added: the caller records the call directly)
	 */
	int add(long ttftNanos, long nowNanos, boolean timed) {
		int cell;
		long micros;
		if (ttftNanos >= 0) {
			long exact = ttftNanos / 1000;
			cell = TtftHistogram.binOfMicros(exact);
			micros = Math.min(exact, MAX_MICROS);
		}
		else {
			cell = NO_TTFT;
			micros = 0;
		}
		long count = ((long) CELL.getVolatile(cells, cell)) >>> MICROS_BITS;
		if (count >= HARD_LIMIT) {
			return FULL;
		}
		// the first success of a cell since the last hand-over, and every stride-th, reads the clock
		// (or takes the caller's reading)
		if ((count & strideMask) == 0) {
			long now = timed ? nowNanos : clock.nanoTime();
			long opened = openedAt;
			if (opened == NONE) {
				openedAt = now;
			}
			else if (now - opened >= MAX_AGE_NANOS) {
				return HAND_OVER_FIRST;
			}
			if (now != lastReadAt) {
				lastReadAt = now;
			}
		}
		long before = (long) CELL.getAndAdd(cells, cell, COUNT_UNIT + micros);
		return (before >>> MICROS_BITS) + 1 >= limit ? ADDED_HAND_OVER : ADDED;
	}

	static final int ADDED = 0;
	static final int ADDED_HAND_OVER = 1;
	static final int HAND_OVER_FIRST = 2;
	static final int FULL = 3;

	/** The lock's states: free, taken, taken with a judgement owed by its holder. */
	private static final int FREE = 0;
	private static final int TAKEN = 1;
	private static final int JUDGEMENT_OWED = 2;

	/** @return whether this thread now holds the hand-over lock */
	boolean tryLock() {
		return lock == FREE && LOCK.compareAndSet(this, FREE, TAKEN);
	}

	/**
	 * Leaves the judgement of a call just recorded to the thread handing the batch over now, which
	 * judges once the batch is in the window and the policies.
	 *
	 * @return false when no hand-over is running (any more): the caller judges itself
	 */
	boolean oweJudgement() {
		for (;;) {
			int state = lock;
			if (state == FREE) {
				return false;
			}
			if (state == JUDGEMENT_OWED || LOCK.compareAndSet(this, TAKEN, JUDGEMENT_OWED)) {
				return true;
			}
		}
	}

	/**
	 * Frees the lock.
	 *
	 * @return whether a judgement was left to the holder meanwhile ({@link #oweJudgement()})
	 */
	boolean unlock() {
		if (LOCK.compareAndSet(this, TAKEN, FREE)) {
			return false;
		}
		LOCK.setRelease(this, FREE);
		return true;
	}

	/**
	 * Hands every pending success to the window and the evaluator; only the lock holder calls it, and
	 * it keeps the lock.
	 *
	 * @return whether one of them may have raised the pressure
	 */
	boolean handOver(SlidingWindow window, BreakerConfig config, long nowNanos) {
		Drained d = drained;
		d.clear();
		for (int c = 0; c < CELLS; c++) {
			if ((long) CELL.getVolatile(cells, c) != 0) {
				long taken = (long) CELL.getAndSet(cells, c, 0L);
				d.put(c, taken >>> MICROS_BITS, taken & MICROS_MASK);
			}
		}
		long stamp = stamp(nowNanos);
		openedAt = NONE;
		adapt(nowNanos, d.fullest);
		if (d.size == 0) {
			return false;
		}
		window.recordSuccesses(stamp, d.total);
		boolean raised = evaluator.onSuccesses(window, config, d, stamp);
		quietBelow = evaluator.quietBelowNanos();
		return raised;
	}

	/**
	 * The time the successes of this hand-over are counted at: now, or, when the adds' latest clock
	 * reading is more than twice the bound old, the end of the bound after that reading. Every pending
	 * success came less than a stride of adds of its cell after a reading, so after a pause they most
	 * likely came just after the latest one. (Counted late they would linger in the window past
	 * their time and thin out the failures of an outage that follows a quiet spell.)
	 */
	private long stamp(long nowNanos) {
		long read = lastReadAt;
		return read != NONE && nowNanos - read > 2 * MAX_AGE_NANOS ? read + MAX_AGE_NANOS : nowNanos;
	}

	/**
	 * Sets the limit to what the fullest cell took in {@link #MAX_AGE_NANOS} at the rate of this
	 * hand-over, so that it fills in about that time at the current traffic.
	 */
	private void adapt(long nowNanos, long fullest) {
		long last = handedAt;
		handedAt = nowNanos;
		if (fullest == 0 || last == NONE) {
			return;
		}
		long took = nowNanos - last;
		long target = took <= 0 ? MAX_LIMIT : fullest * MAX_AGE_NANOS / took;
		// down at once, up at most twofold: a short burst is no pace to plan the next batch by
		int next = (int) Math.max(1, Math.min(Math.min(MAX_LIMIT, target), 2L * limit));
		limit = next;
		strideMask = Math.min(MAX_STRIDE, Integer.highestOneBit(Math.max(1, next >>> 2))) - 1;
	}

	/** @return successes waiting for the next hand-over (racy: for tests and snapshots) */
	long pending() {
		long n = 0;
		for (int c = 0; c < CELLS; c++) {
			n += ((long) CELL.getVolatile(cells, c)) >>> MICROS_BITS;
		}
		return n;
	}

	/** @return successes of a cell between two clock readings (tests) */
	int stride() {
		return strideMask + 1;
	}

	/** @return the current batch limit (tests) */
	int limit() {
		return limit;
	}

	/** The successes of one hand-over, by time-to-first-token bin. Reused: valid only during the call. */
	static final class Drained {
		private final int[] bins = new int[CELLS];
		private final long[] counts = new long[CELLS];
		private int size;
		private long total;
		private long withTtft;
		private long ttftNanos;
		private long fullest;

		void clear() {
			size = 0;
			fullest = 0;
			total = 0;
			withTtft = 0;
			ttftNanos = 0;
		}

		void put(int cell, long count, long sumMicros) {
			if (count == 0) {
				return;
			}
			bins[size] = cell == NO_TTFT ? -1 : cell;
			counts[size] = count;
			size++;
			total += count;
			fullest = Math.max(fullest, count);
			if (cell != NO_TTFT) {
				withTtft += count;
				ttftNanos += sumMicros * 1000;
			}
		}

		/** @return how many bins (and the no-first-token group) have successes */
		int size() {
			return size;
		}

		/** @return the {@link TtftHistogram} bin of group {@code i}, or -1 for successes without a first token */
		int bin(int i) {
			return bins[i];
		}

		/** @return the successes of group {@code i} */
		long count(int i) {
			return counts[i];
		}

		/** @return all successes of the hand-over */
		long total() {
			return total;
		}

		/** @return the successes that had a first token */
		long withTtft() {
			return withTtft;
		}

		/** @return the sum of their times to first token, in nanoseconds (microsecond resolution) */
		long ttftSumNanos() {
			return ttftNanos;
		}
	}
}
