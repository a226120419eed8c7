package dev.aiguard.retry;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.function.LongSupplier;

import reactor.core.scheduler.Scheduler;

/**
 * A retry allowance shared by all requests of a service, so that an upstream that fails for
 * everyone is not hit with {@code maxAttempts} times its normal traffic. Within a sliding
 * {@code window}, retries may add at most {@code ratio} of the requests seen in that window, plus
 * a floor of {@code minRetriesPerSecond} so that a quiet service can still retry at all. This is
 * the idea of gRPC retry throttling, Envoy's retry budgets and Finagle's {@code RetryBudget}.
 *
 * <pre>{@code
 * RetryBudget budget = RetryBudget.of(0.1, 10, Duration.ofSeconds(10));   // share it
 *
 * budget.onRequest();                          // once per original request
 * ...
 * if (budget.tryAcquireRetry()) {              // once per retry, right before sending it
 *     resend();
 * } else {
 *     giveUp();                                // metrics: retryBudgetExhausted
 * }
 * }</pre>
 *
 * <p>Lock-free and exact: the window is ten slots; the retries of the current slot live in one
 * word that a single CAS updates, so concurrent callers never overdraw the budget. Both methods
 * are O(1) (ten slots read) and allocation-free. Time comes from an injectable clock.
 */
public final class RetryBudget {

	static final int SLOTS = 10;
	private static final int COUNT_BITS = 24;
	private static final long COUNT_MASK = (1L << COUNT_BITS) - 1L;
	private static final long MAX_EPOCH = (1L << (63 - COUNT_BITS)) - 1L;

	private static final RetryBudget UNLIMITED = new RetryBudget();

	private final boolean unlimited;
	private final double ratio;
	private final int minRetriesPerSecond;
	private final Duration window;
	private final LongSupplier clock;
	private final long origin;
	private final long slotNanos;
	private final long floorRetries;

	/** Requests per slot: (epoch << COUNT_BITS) | count. */
	private final AtomicLongArray deposits;
	/** Final retry counts of past slots, same packing; written before the head leaves a slot. */
	private final AtomicLongArray spent;

	/** Retries of the current slot: (epoch << COUNT_BITS) | count. The one CAS that grants. */
	volatile long head;
	static final AtomicLongFieldUpdater<RetryBudget> HEAD = AtomicLongFieldUpdater.newUpdater(RetryBudget.class, "head");

	private RetryBudget() {
		this.unlimited = true;
		this.ratio = Double.POSITIVE_INFINITY;
		this.minRetriesPerSecond = Integer.MAX_VALUE;
		this.window = Duration.ZERO;
		this.clock = () -> 0L;
		this.origin = 0L;
		this.slotNanos = 1L;
		this.floorRetries = Long.MAX_VALUE;
		// an unlimited budget never counts: empty arrays, never read
		this.deposits = new AtomicLongArray(0);
		this.spent = new AtomicLongArray(0);
	}

	private RetryBudget(double ratio, int minRetriesPerSecond, Duration window, LongSupplier clock) {
		this.unlimited = false;
		this.ratio = ratio;
		this.minRetriesPerSecond = minRetriesPerSecond;
		this.window = window;
		this.clock = clock;
		this.origin = clock.getAsLong();
		long windowNanos = window.toNanos();
		this.slotNanos = Math.max(1L, windowNanos / SLOTS);
		this.floorRetries = (long) Math.floor(minRetriesPerSecond * (windowNanos / 1e9d));
		this.deposits = new AtomicLongArray(SLOTS);
		this.spent = new AtomicLongArray(SLOTS);
	}

	/** @return a new budget: 10 % of requests, at least 10 retries per second, a 10 s window */
	public static RetryBudget create() {
		return of(0.1d, 10, Duration.ofSeconds(10));
	}

	/** @return a budget that grants every retry (the per-request {@link RetryRules} still limits) */
	public static RetryBudget unlimited() {
		return UNLIMITED;
	}

	/**
	 * A new budget on {@link System#nanoTime()}.
	 *
	 * @param ratio retries allowed per request in the window, within {@code [0, 1]} (default 0.1)
	 * @param minRetriesPerSecond the floor, {@code >= 0} (default 10): {@code minRetriesPerSecond *
	 * window} retries are allowed per window whatever the request count
	 * @param window how far back requests and retries count, between 10 ms and 1 h (default 10 s)
	 * @throws IllegalArgumentException naming the bad argument
	 */
	public static RetryBudget of(double ratio, int minRetriesPerSecond, Duration window) {
		return of(ratio, minRetriesPerSecond, window, System::nanoTime);
	}

	/**
	 * A new budget reading time from a scheduler ({@code Scheduler.now}), e.g. a
	 * {@code VirtualTimeScheduler} in tests.
	 *
	 * @see #of(double, int, Duration)
	 */
	public static RetryBudget of(double ratio, int minRetriesPerSecond, Duration window, Scheduler clock) {
		Objects.requireNonNull(clock, "clock");
		return of(ratio, minRetriesPerSecond, window, () -> clock.now(TimeUnit.NANOSECONDS));
	}

	/**
	 * A new budget reading time from {@code nanoClock} (monotonic nanoseconds).
	 *
	 * @see #of(double, int, Duration)
	 */
	public static RetryBudget of(double ratio, int minRetriesPerSecond, Duration window, LongSupplier nanoClock) {
		if (!(ratio >= 0.0d && ratio <= 1.0d)) {
			throw new IllegalArgumentException("ratio must be between 0 and 1, was " + ratio);
		}
		if (minRetriesPerSecond < 0) {
			throw new IllegalArgumentException("minRetriesPerSecond must be >= 0, was " + minRetriesPerSecond);
		}
		if (window == null || window.compareTo(Duration.ofMillis(10)) < 0 || window.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("window must be between 10ms and 1h, was " + window);
		}
		if (nanoClock == null) {
			throw new IllegalArgumentException("nanoClock must not be null, was null");
		}
		return new RetryBudget(ratio, minRetriesPerSecond, window, nanoClock);
	}

	/** Records one original request (not a retry): it earns {@code ratio} of a retry. */
	public void onRequest() {
		if (unlimited) {
			return;
		}
		long epoch = epochNow();
		int i = (int) (epoch % SLOTS);
		for (;;) {
			long v = deposits.get(i);
			long slotEpoch = v >>> COUNT_BITS;
			long next;
			if (slotEpoch == epoch) {
				if ((v & COUNT_MASK) == COUNT_MASK) {
					return;
				}
				next = v + 1L;
			}
			else if (slotEpoch < epoch) {
				next = pack(epoch, 1L);
			}
			else {
				// this thread read the clock a whole window ago: its request is outside every window
				return;
			}
			if (deposits.compareAndSet(i, v, next)) {
				return;
			}
		}
	}

	/**
	 * Takes one retry from the budget.
	 *
	 * @return {@code true} when the retry may be sent; {@code false} when the budget is spent
	 * (do not retry; report {@code retryBudgetExhausted})
	 */
	public boolean tryAcquireRetry() {
		if (unlimited) {
			return true;
		}
		for (;;) {
			long now = epochNow();
			long h = head;
			long epoch = h >>> COUNT_BITS;
			long count = h & COUNT_MASK;
			if (now > epoch) {
				// the slot is over: publish its final count before anyone can see the new head
				archive(epoch, count);
				HEAD.compareAndSet(this, h, pack(now, 0L));
				continue;
			}
			if (count == COUNT_MASK || count + spentBefore(epoch) >= allowance(epoch)) {
				return false;
			}
			if (HEAD.compareAndSet(this, h, h + 1L)) {
				return true;
			}
		}
	}

	/**
	 * @return retries the budget would grant right now (a snapshot for gauges and tests;
	 * {@link Long#MAX_VALUE} when unlimited)
	 */
	public long available() {
		if (unlimited) {
			return Long.MAX_VALUE;
		}
		long now = epochNow();
		for (;;) {
			long h = head;
			long epoch = h >>> COUNT_BITS;
			long used;
			if (now > epoch) {
				// the head's slot is over but nobody has rotated yet: it now counts as a past slot
				used = (epoch > now - SLOTS ? (h & COUNT_MASK) : 0L) + spentBetween(now - SLOTS, epoch);
				epoch = now;
			}
			else {
				used = (h & COUNT_MASK) + spentBefore(epoch);
			}
			long left = Math.max(0L, allowance(epoch) - used);
			// grants and rotations move the head: if it did not move while the deposits were read,
			// the grants counted and the deposits read belong to one moment, and the answer is exact
			if (head == h) {
				return left;
			}
		}
	}

	public double ratio() {
		return ratio;
	}

	public int minRetriesPerSecond() {
		return minRetriesPerSecond;
	}

	public Duration window() {
		return window;
	}

	private long allowance(long epoch) {
		long requests = 0L;
		long oldest = epoch - SLOTS;
		for (int i = 0; i < SLOTS; i++) {
			long v = deposits.get(i);
			long e = v >>> COUNT_BITS;
			if (e > oldest && e <= epoch) {
				requests += v & COUNT_MASK;
			}
		}
		return floorRetries + (long) (ratio * requests);
	}

	/** Retries of the slots before {@code epoch} that are still in its window. */
	private long spentBefore(long epoch) {
		return spentBetween(epoch - SLOTS, epoch);
	}

	/** Sum of archived retry counts with {@code after < epoch < before}. */
	private long spentBetween(long after, long before) {
		long sum = 0L;
		for (int i = 0; i < SLOTS; i++) {
			long v = spent.get(i);
			long e = v >>> COUNT_BITS;
			if (e > after && e < before) {
				sum += v & COUNT_MASK;
			}
		}
		return sum;
	}

	/** Raises the archived count of {@code epoch}; counts of one slot only grow, so max is exact. */
	private void archive(long epoch, long count) {
		int i = (int) (epoch % SLOTS);
		for (;;) {
			long v = spent.get(i);
			long e = v >>> COUNT_BITS;
			if (e > epoch || (e == epoch && (v & COUNT_MASK) >= count)) {
				return;
			}
			if (spent.compareAndSet(i, v, pack(epoch, count))) {
				return;
			}
		}
	}

	private long epochNow() {
		long elapsed = clock.getAsLong() - origin;
		if (elapsed <= 0L) {
			return 0L;
		}
		return Math.min(MAX_EPOCH, elapsed / slotNanos);
	}

	private static long pack(long epoch, long count) {
		return (epoch << COUNT_BITS) | count;
	}

	@Override
	public String toString() {
		if (unlimited) {
			return "RetryBudget{unlimited}";
		}
		return "RetryBudget{ratio=" + ratio + ", minRetriesPerSecond=" + minRetriesPerSecond + ", window=" + window
				+ ", available=" + available() + '}';
	}
}
