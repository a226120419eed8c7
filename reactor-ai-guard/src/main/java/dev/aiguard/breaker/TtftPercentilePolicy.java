package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * Trips on a latency percentile: when the p95 (or p99, or any percentile) time to first token of
 * the last {@link #window()} reaches a fixed {@link #limit()}. The pressure is
 * {@code percentile / limit}, so it rises smoothly and {@link TripPolicy#predictive(TripPolicy)} can
 * forecast it. No trip on fewer than {@link #minSamples()} first tokens in the window.
 *
 * <p>The window is a ring of {@value #SLICES} log-scale histograms ({@link TtftHistogram}: bins at
 * most 25 % wide; the percentile is interpolated inside its bin), each covering a sixth of the window,
 * so the window slides in sixths. A stream that stalls before its first token counts as the slowest
 * possible first token; a failure without a first token adds nothing. Where the breaker normalises
 * slowness by prompt size, the policy sees first-token times scaled to an empty prompt.
 *
 * <p>It judges latency only: pair it with {@link TripPolicy#failureRate()} through
 * {@link TripPolicy#anyOf(TripPolicy...)}. Immutable, copy-on-write: every setter returns a new
 * policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.anyOf(
 *     TripPolicy.failureRate(),
 *     TripPolicy.ttftPercentile(Duration.ofSeconds(8)).percentile(0.99));
 * }</pre>
 */
public final class TtftPercentilePolicy implements TripPolicy {

	/** Histograms in the ring. */
	static final int SLICES = 6;

	static final TtftPercentilePolicy DEFAULTS = new TtftPercentilePolicy(Duration.ofSeconds(10), 0.95,
			Duration.ofSeconds(60), 20);

	private final Duration limit;
	private final double percentile;
	private final Duration window;
	private final int minSamples;

	private TtftPercentilePolicy(Duration limit, double percentile, Duration window, int minSamples) {
		this.limit = limit;
		this.percentile = percentile;
		this.window = window;
		this.minSamples = minSamples;
	}

	/** @param limit the percentile's time to first token at which the breaker trips, 1 ms to 1 hour */
	public TtftPercentilePolicy limit(Duration limit) {
		BreakerConfig.notNull("limit", limit);
		if (limit.compareTo(Duration.ofMillis(1)) < 0 || limit.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("limit must be between 1 ms and 1 hour, was " + limit);
		}
		return new TtftPercentilePolicy(limit, percentile, window, minSamples);
	}

	/** @param percentile which percentile, a fraction in [0.5, 1): 0.95 for p95, 0.99 for p99 */
	public TtftPercentilePolicy percentile(double percentile) {
		if (!(percentile >= 0.5 && percentile < 1)) {
			throw new IllegalArgumentException("percentile must be a fraction in [0.5, 1), was " + percentile
					+ (percentile >= 50 && percentile < 100 ? " (write 0.95 for p95)" : ""));
		}
		return new TtftPercentilePolicy(limit, percentile, window, minSamples);
	}

	/** @param window how far back the percentile looks, between 60 ms and 1 hour */
	public TtftPercentilePolicy window(Duration window) {
		BreakerConfig.notNull("window", window);
		if (window.compareTo(Duration.ofMillis(60)) < 0 || window.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("window must be between 60 ms and 1 hour, was " + window);
		}
		return new TtftPercentilePolicy(limit, percentile, window, minSamples);
	}

	/** @param samples first tokens in the window needed to judge, between 1 and 1 000 000 */
	public TtftPercentilePolicy minSamples(int samples) {
		if (samples < 1 || samples > 1_000_000) {
			throw new IllegalArgumentException("minSamples must be between 1 and 1000000, was " + samples);
		}
		return new TtftPercentilePolicy(limit, percentile, window, samples);
	}

	public Duration limit() {
		return limit;
	}

	public double percentile() {
		return percentile;
	}

	public Duration window() {
		return window;
	}

	public int minSamples() {
		return minSamples;
	}

	@Override
	public Evaluator newEvaluator() {
		return new PercentileEvaluator(this);
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof TtftPercentilePolicy)) {
			return false;
		}
		TtftPercentilePolicy p = (TtftPercentilePolicy) o;
		return limit.equals(p.limit) && percentile == p.percentile && window.equals(p.window)
				&& minSamples == p.minSamples;
	}

	@Override
	public int hashCode() {
		return Objects.hash(limit, percentile, window, minSamples);
	}

	@Override
	public String toString() {
		return "ttftPercentile{limit=" + limit + ", percentile=" + percentile + ", window=" + window
				+ ", minSamples=" + minSamples + "}";
	}

	/**
	 * {@value #SLICES} slice histograms in a ring, each tagged with its slice number. A thread that
	 * meets a slot still tagged with an older slice claims it: a CAS to {@code CLAIMING}, then it clears
	 * the counts and publishes the new tag. Samples that arrive at a slot being claimed are dropped (a
	 * few hundred nanoseconds once per slice), never added to a histogram about to be cleared; readers
	 * skip a slot being claimed.
	 */
	static final class PercentileEvaluator implements SuccessBatch.Batching {

		private static final long NONE = Long.MIN_VALUE;
		private static final long CLAIMING = Long.MIN_VALUE + 1;
		private static final VarHandle TAGS = MethodHandles.arrayElementVarHandle(long[].class);

		private final double percentile;
		private final long limitNanos;
		private final long sliceNanos;
		private final int minSamples;
		private final long[] counts = new long[SLICES * TtftHistogram.BINS];
		private final long[] tags = new long[SLICES];
		/** The slice of the latest call: most calls fall in it, and a multiplication costs less than a division. */
		private volatile long lastSlice;

		PercentileEvaluator(TtftPercentilePolicy policy) {
			this.percentile = policy.percentile;
			this.limitNanos = policy.limit.toNanos();
			this.sliceNanos = Math.max(1, policy.window.toNanos() / SLICES);
			this.minSamples = policy.minSamples;
			java.util.Arrays.fill(tags, NONE);
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos,
				boolean slow, long nowNanos) {
			int bin;
			if (timeToFirstTokenNanos >= 0) {
				bin = TtftHistogram.bin(timeToFirstTokenNanos);
			}
			else if (outcome == Outcome.STALLED) {
				bin = TtftHistogram.LAST;
			}
			else {
				return false;
			}
			int slot = slotFor(sliceOf(nowNanos));
			if (slot < 0) {
				return false;
			}
			SlidingWindow.LONGS.getAndAdd(counts, slot * TtftHistogram.BINS + bin, 1L);
			// only a first token at or over the limit can have raised the percentile to it
			return TtftHistogram.upperNanos(bin) > limitNanos;
		}

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			return TtftHistogram.quietBelow(limitNanos, false);
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			int slot = slotFor(sliceOf(nowNanos));
			if (slot < 0) {
				return false;
			}
			boolean judge = false;
			for (int i = 0; i < successes.size(); i++) {
				int bin = successes.bin(i);
				if (bin >= 0) {
					SlidingWindow.LONGS.getAndAdd(counts, slot * TtftHistogram.BINS + bin, successes.count(i));
					judge |= TtftHistogram.upperNanos(bin) > limitNanos;
				}
			}
			return judge;
		}

		/** @return the slot that counts {@code slice}, claimed if need be; -1 when too late or being turned over */
		private int slotFor(long slice) {
			int slot = (int) Math.floorMod(slice, (long) SLICES);
			long tag = (long) TAGS.getAcquire(tags, slot);
			if (tag != slice && (tag == CLAIMING || (tag != NONE && tag > slice) || !claim(slot, tag, slice))) {
				return -1;
			}
			return slot;
		}

		private long sliceOf(long nowNanos) {
			long last = lastSlice;
			long into = nowNanos - last * sliceNanos;
			if (into >= 0 && into < sliceNanos) {
				return last;
			}
			long slice = Math.floorDiv(nowNanos, sliceNanos);
			lastSlice = slice;
			return slice;
		}

		private boolean claim(int slot, long tag, long slice) {
			if (!TAGS.compareAndSet(tags, slot, tag, CLAIMING)) {
				return (long) TAGS.getAcquire(tags, slot) == slice; // another thread claimed it for us
			}
			int base = slot * TtftHistogram.BINS;
			for (int b = 0; b < TtftHistogram.BINS; b++) {
				SlidingWindow.LONGS.setRelease(counts, base + b, 0L);
			}
			TAGS.setRelease(tags, slot, slice);
			return true;
		}

		/** @return the percentile over the window in nanoseconds, or -1 with too few samples */
		long currentPercentile(long nowNanos) {
			long slice = Math.floorDiv(nowNanos, sliceNanos);
			int[] live = new int[SLICES];
			int used = 0;
			for (int slot = 0; slot < SLICES; slot++) {
				long tag = (long) TAGS.getAcquire(tags, slot);
				if (tag != NONE && tag != CLAIMING && tag <= slice && slice - tag < SLICES) {
					live[used++] = slot;
				}
			}
			return used == 0 ? -1
					: TtftHistogram.interpolatedQuantile(counts, live, used, percentile, minSamples);
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			long p = currentPercentile(nowNanos);
			return p < 0 ? 0 : (double) p / limitNanos;
		}

		@Override
		public void reset(long nowNanos) {
			for (int slot = 0; slot < SLICES; slot++) {
				long tag = (long) TAGS.getAcquire(tags, slot);
				if (tag != CLAIMING && TAGS.compareAndSet(tags, slot, tag, CLAIMING)) {
					int base = slot * TtftHistogram.BINS;
					for (int b = 0; b < TtftHistogram.BINS; b++) {
						SlidingWindow.LONGS.setRelease(counts, base + b, 0L);
					}
					TAGS.setRelease(tags, slot, NONE);
				}
			}
		}
	}
}
