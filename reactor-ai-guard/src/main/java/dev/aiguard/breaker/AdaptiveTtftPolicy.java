package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * Trips on latency without a fixed number to guess: it learns the healthy p95 time to first token
 * and trips when the current p95 reaches {@code multiplier ×} that baseline.
 *
 * <p>Time is cut into periods ({@link #period()}, 10 s by default). The current p95 is read from
 * the current and the previous period, once they hold {@link #minSamples()} first tokens. When a
 * period closes with enough samples, its p95 teaches the baseline: the first such period sets it,
 * later ones move it by {@link #learningRate()} (an exponential average) if they were healthy
 * ({@code p95 ≤ multiplier × baseline}). A stream that stalls before its first token counts as the
 * slowest possible first token. A policy given a {@link #startingBaseline(Duration)} judges from the
 * first call, and healthy periods move that baseline like a learned one. Until a baseline exists the
 * policy never trips: pair it with
 * {@link TripPolicy#failureRate()} through {@link TripPolicy#anyOf(TripPolicy...)}, since it judges
 * latency only.
 *
 * <p>Immutable, copy-on-write: every setter returns a new policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.anyOf(
 *     TripPolicy.failureRate(),
 *     TripPolicy.adaptiveTtft().multiplier(3).minSamples(50));
 * }</pre>
 */
public final class AdaptiveTtftPolicy implements TripPolicy {

	static final AdaptiveTtftPolicy DEFAULTS = new AdaptiveTtftPolicy(2.0, Duration.ofSeconds(10), 20, 0.05,
			Duration.ZERO);

	private final double multiplier;
	private final Duration period;
	private final int minSamples;
	private final double learningRate;
	private final Duration startingBaseline;

	private AdaptiveTtftPolicy(double multiplier, Duration period, int minSamples, double learningRate,
			Duration startingBaseline) {
		this.multiplier = multiplier;
		this.period = period;
		this.minSamples = minSamples;
		this.learningRate = learningRate;
		this.startingBaseline = startingBaseline;
	}

	/** @param k the current p95 trips at more than k × the baseline p95; in (1, 100] */
	public AdaptiveTtftPolicy multiplier(double k) {
		if (!(k > 1 && k <= 100)) {
			throw new IllegalArgumentException("multiplier must be in (1, 100], was " + k);
		}
		return new AdaptiveTtftPolicy(k, period, minSamples, learningRate, startingBaseline);
	}

	/** @param period length of one measuring period, between 10 ms and 1 hour */
	public AdaptiveTtftPolicy period(Duration period) {
		BreakerConfig.notNull("period", period);
		if (period.compareTo(Duration.ofMillis(10)) < 0 || period.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("period must be between 10 ms and 1 hour, was " + period);
		}
		return new AdaptiveTtftPolicy(multiplier, period, minSamples, learningRate, startingBaseline);
	}

	/** @param samples first tokens needed to read a p95, between 1 and 1 000 000 */
	public AdaptiveTtftPolicy minSamples(int samples) {
		if (samples < 1 || samples > 1_000_000) {
			throw new IllegalArgumentException("minSamples must be between 1 and 1000000, was " + samples);
		}
		return new AdaptiveTtftPolicy(multiplier, period, samples, learningRate, startingBaseline);
	}

	/** @param rate share of a healthy period's p95 blended into the baseline, in (0, 1] */
	public AdaptiveTtftPolicy learningRate(double rate) {
		if (!(rate > 0 && rate <= 1)) {
			throw new IllegalArgumentException("learningRate must be in (0, 1], was " + rate);
		}
		return new AdaptiveTtftPolicy(multiplier, period, minSamples, rate, startingBaseline);
	}

	/**
	 * A baseline to start from, so the policy judges from the first call instead of after its first
	 * full period (a cold start): for example last run's learned p95, or the provider's published
	 * latency. Healthy periods then move it by {@link #learningRate()}; an unhealthy one teaches
	 * nothing, so a guess that is too low trips rather than learns the bad latency.
	 *
	 * <pre>{@code
	 * TripPolicy.adaptiveTtft().startingBaseline(Duration.ofMillis(800))
	 * }</pre>
	 *
	 * @param baseline the healthy p95 time to first token, between 1 µs and 1 hour, or zero for none
	 */
	public AdaptiveTtftPolicy startingBaseline(Duration baseline) {
		BreakerConfig.notNull("startingBaseline", baseline);
		if (!baseline.isZero() && (baseline.compareTo(Duration.ofNanos(1000)) < 0
				|| baseline.compareTo(Duration.ofHours(1)) > 0)) {
			throw new IllegalArgumentException(
					"startingBaseline must be zero (none) or between 1 µs and 1 hour, was " + baseline);
		}
		return new AdaptiveTtftPolicy(multiplier, period, minSamples, learningRate, baseline);
	}

	public double multiplier() {
		return multiplier;
	}

	/** @return the baseline the policy starts from, zero when it learns one first */
	public Duration startingBaseline() {
		return startingBaseline;
	}

	public Duration period() {
		return period;
	}

	public int minSamples() {
		return minSamples;
	}

	public double learningRate() {
		return learningRate;
	}

	@Override
	public Evaluator newEvaluator() {
		return new AdaptiveEvaluator(this);
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof AdaptiveTtftPolicy)) {
			return false;
		}
		AdaptiveTtftPolicy p = (AdaptiveTtftPolicy) o;
		return multiplier == p.multiplier && period.equals(p.period) && minSamples == p.minSamples
				&& learningRate == p.learningRate && startingBaseline.equals(p.startingBaseline);
	}

	@Override
	public int hashCode() {
		return Objects.hash(multiplier, period, minSamples, learningRate, startingBaseline);
	}

	@Override
	public String toString() {
		return "adaptiveTtft{multiplier=" + multiplier + ", period=" + period + ", minSamples=" + minSamples
				+ ", learningRate=" + learningRate
				+ (startingBaseline.isZero() ? "" : ", startingBaseline=" + startingBaseline) + "}";
	}

	/**
	 * Two period histograms in a ring (current and previous), claimed by CAS on their tags like the
	 * time window's buckets; the thread that claims a new period teaches the baseline from the one that
	 * just closed.
	 */
	static final class AdaptiveEvaluator implements SuccessBatch.Batching {

		private static final long NONE = Long.MIN_VALUE;

		private final AdaptiveTtftPolicy policy;
		private final long periodNanos;
		private final long[] counts = new long[2 * TtftHistogram.BINS];
		private final long[] tags = { NONE, NONE };
		/** The period of the latest call (a hint only: any value is safe). */
		private volatile long lastPeriod;
		/** Learned p95 in nanoseconds as double bits; 0 = not learned yet. */
		private volatile long baselineBits;

		AdaptiveEvaluator(AdaptiveTtftPolicy policy) {
			this.policy = policy;
			this.periodNanos = policy.period.toNanos();
			this.baselineBits = Double.doubleToRawLongBits(policy.startingBaseline.toNanos());
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
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
			return add(bin, 1, periodOf(nowNanos)) && raises(bin);
		}

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			double baseline = baseline();
			return baseline > 0 ? TtftHistogram.quietBelow(policy.multiplier * baseline, true) : Long.MAX_VALUE;
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			long period = periodOf(nowNanos);
			boolean judge = false;
			for (int i = 0; i < successes.size(); i++) {
				int bin = successes.bin(i);
				if (bin >= 0 && add(bin, successes.count(i), period)) {
					judge |= raises(bin);
				}
			}
			return judge;
		}

		/** @return whether the calls were counted (false: too late for their period) */
		private boolean add(int bin, long calls, long period) {
			int slot = (int) (period & 1);
			for (;;) {
				long tag = (long) SlidingWindow.LONGS.getAcquire(tags, slot);
				if (tag == period) {
					SlidingWindow.LONGS.getAndAdd(counts, slot * TtftHistogram.BINS + bin, calls);
					return true;
				}
				if (tag > period) {
					return false; // too late for its period
				}
				clear(slot);
				if (SlidingWindow.LONGS.compareAndSet(tags, slot, tag, period)) {
					learnFrom(1 - slot, period - 1);
				}
			}
		}

		/** @return whether a first token in {@code bin} is far enough above the baseline to raise the pressure */
		private boolean raises(int bin) {
			double baseline = baseline();
			return baseline > 0 && TtftHistogram.upperNanos(bin) >= policy.multiplier * baseline;
		}

		/** Most calls fall in the period of the one before: a multiplication instead of a division. */
		private long periodOf(long nowNanos) {
			long last = lastPeriod;
			long into = nowNanos - last * periodNanos;
			if (into >= 0 && into < periodNanos) {
				return last;
			}
			long period = Math.floorDiv(nowNanos, periodNanos);
			lastPeriod = period;
			return period;
		}

		private void clear(int slot) {
			int base = slot * TtftHistogram.BINS;
			for (int b = 0; b < TtftHistogram.BINS; b++) {
				SlidingWindow.LONGS.setRelease(counts, base + b, 0L);
			}
		}

		private void learnFrom(int slot, long period) {
			if ((long) SlidingWindow.LONGS.getAcquire(tags, slot) != period) {
				return; // no calls in the period that just closed
			}
			long p95 = TtftHistogram.quantile(counts, new int[] { slot }, 1, 0.95, policy.minSamples);
			if (p95 < 0) {
				return;
			}
			for (;;) {
				long bits = baselineBits;
				double baseline = Double.longBitsToDouble(bits);
				double next;
				if (baseline <= 0) {
					next = p95;
				}
				else if (p95 <= policy.multiplier * baseline) {
					next = baseline + policy.learningRate * (p95 - baseline);
				}
				else {
					return; // an unhealthy period teaches nothing
				}
				if (BASELINE.compareAndSet(this, bits, Double.doubleToRawLongBits(next))) {
					return;
				}
			}
		}

		/** @return the learned healthy p95 in nanoseconds, 0 before the first full period */
		double baseline() {
			return Double.longBitsToDouble(baselineBits);
		}

		/** @return the p95 of the current and previous period in nanoseconds, or -1 with too few samples */
		long currentP95(long nowNanos) {
			long period = Math.floorDiv(nowNanos, periodNanos);
			int[] live = new int[2];
			int used = 0;
			for (int slot = 0; slot < 2; slot++) {
				long tag = (long) SlidingWindow.LONGS.getAcquire(tags, slot);
				if (tag == period || tag == period - 1) {
					live[used++] = slot;
				}
			}
			return used == 0 ? -1 : TtftHistogram.quantile(counts, live, used, 0.95, policy.minSamples);
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			double baseline = baseline();
			if (baseline <= 0) {
				return 0;
			}
			long p95 = currentP95(nowNanos);
			return p95 < 0 ? 0 : p95 / (policy.multiplier * baseline);
		}

		@Override
		public void reset(long nowNanos) {
			// forget the current evidence, keep the learned baseline
			for (int slot = 0; slot < 2; slot++) {
				clear(slot);
			}
		}

		private static final java.lang.invoke.VarHandle BASELINE;

		static {
			try {
				BASELINE = java.lang.invoke.MethodHandles.lookup().findVarHandle(AdaptiveEvaluator.class,
						"baselineBits", long.class);
			}
			catch (ReflectiveOperationException e) {
				throw new ExceptionInInitializerError(e);
			}
		}
	}
}
