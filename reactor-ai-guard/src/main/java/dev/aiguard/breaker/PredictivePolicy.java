package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * Trips <em>before</em> the threshold is crossed: samples another policy's pressure (the health
 * score) once per {@link #sampleInterval()}, keeps a Holt forecast of it (a smoothed level plus a
 * smoothed trend), and trips when the forecast {@link #horizon()} ahead reaches 1 — the inner
 * policy's own threshold. The forecast only counts while the current pressure is at least
 * {@link #armedAt()} and after {@link #warmupSamples()} samples, so a healthy service with a noisy
 * trend is left alone. The inner policy still trips on its own when its pressure reaches 1.
 *
 * <p>Samples are taken when calls are recorded (no timer); a gap of several intervals is one step of
 * that many intervals, and a gap longer than the horizon restarts the forecast.
 *
 * <p>Immutable, copy-on-write: every setter returns a new policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.predictive(TripPolicy.failureRate())
 *     .horizon(Duration.ofSeconds(15))
 *     .armedAt(0.6);
 * }</pre>
 */
public final class PredictivePolicy implements TripPolicy {

	static final PredictivePolicy DEFAULTS = new PredictivePolicy(FailureRatePolicy.INSTANCE, Duration.ofSeconds(1),
			Duration.ofSeconds(10), 0.5, 0.3, 0.5, 3);

	private final TripPolicy inner;
	private final Duration sampleInterval;
	private final Duration horizon;
	private final double levelSmoothing;
	private final double trendSmoothing;
	private final double armedAt;
	private final int warmupSamples;

	private PredictivePolicy(TripPolicy inner, Duration sampleInterval, Duration horizon, double levelSmoothing,
			double trendSmoothing, double armedAt, int warmupSamples) {
		this.inner = inner;
		this.sampleInterval = sampleInterval;
		this.horizon = horizon;
		this.levelSmoothing = levelSmoothing;
		this.trendSmoothing = trendSmoothing;
		this.armedAt = armedAt;
		this.warmupSamples = warmupSamples;
	}

	/** @param policy the policy whose pressure is forecast */
	public PredictivePolicy inner(TripPolicy policy) {
		BreakerConfig.notNull("inner", policy);
		if (policy instanceof PredictivePolicy) {
			throw new IllegalArgumentException("inner must not itself be predictive, was " + policy);
		}
		return new PredictivePolicy(policy, sampleInterval, horizon, levelSmoothing, trendSmoothing, armedAt,
				warmupSamples);
	}

	/** @param interval time between two samples of the score, between 10 ms and 1 hour */
	public PredictivePolicy sampleInterval(Duration interval) {
		BreakerConfig.notNull("sampleInterval", interval);
		if (interval.compareTo(Duration.ofMillis(10)) < 0 || interval.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("sampleInterval must be between 10 ms and 1 hour, was " + interval);
		}
		return new PredictivePolicy(inner, interval, horizon, levelSmoothing, trendSmoothing, armedAt, warmupSamples);
	}

	/** @param horizon how far ahead the forecast looks, positive and at most 1 hour */
	public PredictivePolicy horizon(Duration horizon) {
		BreakerConfig.notNull("horizon", horizon);
		if (horizon.isNegative() || horizon.isZero() || horizon.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("horizon must be positive and at most 1 hour, was " + horizon);
		}
		return new PredictivePolicy(inner, sampleInterval, horizon, levelSmoothing, trendSmoothing, armedAt,
				warmupSamples);
	}

	/** @param alpha Holt level smoothing in (0, 1]: higher follows the latest sample more */
	public PredictivePolicy levelSmoothing(double alpha) {
		if (!(alpha > 0 && alpha <= 1)) {
			throw new IllegalArgumentException("levelSmoothing must be in (0, 1], was " + alpha);
		}
		return new PredictivePolicy(inner, sampleInterval, horizon, alpha, trendSmoothing, armedAt, warmupSamples);
	}

	/** @param beta Holt trend smoothing in (0, 1]: higher follows the latest change more */
	public PredictivePolicy trendSmoothing(double beta) {
		if (!(beta > 0 && beta <= 1)) {
			throw new IllegalArgumentException("trendSmoothing must be in (0, 1], was " + beta);
		}
		return new PredictivePolicy(inner, sampleInterval, horizon, levelSmoothing, beta, armedAt, warmupSamples);
	}

	/** @param pressure the current pressure, in [0, 1), from which a forecast may trip */
	public PredictivePolicy armedAt(double pressure) {
		if (!(pressure >= 0 && pressure < 1)) {
			throw new IllegalArgumentException("armedAt must be in [0, 1), was " + pressure);
		}
		return new PredictivePolicy(inner, sampleInterval, horizon, levelSmoothing, trendSmoothing, pressure,
				warmupSamples);
	}

	/** @param samples samples before the forecast counts, between 2 and 1000 */
	public PredictivePolicy warmupSamples(int samples) {
		if (samples < 2 || samples > 1000) {
			throw new IllegalArgumentException("warmupSamples must be between 2 and 1000, was " + samples);
		}
		return new PredictivePolicy(inner, sampleInterval, horizon, levelSmoothing, trendSmoothing, armedAt, samples);
	}

	public TripPolicy inner() {
		return inner;
	}

	public Duration sampleInterval() {
		return sampleInterval;
	}

	public Duration horizon() {
		return horizon;
	}

	public double levelSmoothing() {
		return levelSmoothing;
	}

	public double trendSmoothing() {
		return trendSmoothing;
	}

	public double armedAt() {
		return armedAt;
	}

	public int warmupSamples() {
		return warmupSamples;
	}

	@Override
	public Evaluator newEvaluator() {
		return new HoltEvaluator(this, inner.newEvaluator());
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof PredictivePolicy)) {
			return false;
		}
		PredictivePolicy p = (PredictivePolicy) o;
		return inner.equals(p.inner) && sampleInterval.equals(p.sampleInterval) && horizon.equals(p.horizon)
				&& levelSmoothing == p.levelSmoothing && trendSmoothing == p.trendSmoothing && armedAt == p.armedAt
				&& warmupSamples == p.warmupSamples;
	}

	@Override
	public int hashCode() {
		return Objects.hash(inner, sampleInterval, horizon, levelSmoothing, trendSmoothing, armedAt, warmupSamples);
	}

	@Override
	public String toString() {
		return "predictive{inner=" + inner + ", sampleInterval=" + sampleInterval + ", horizon=" + horizon
				+ ", levelSmoothing=" + levelSmoothing + ", trendSmoothing=" + trendSmoothing + ", armedAt="
				+ armedAt + ", warmupSamples=" + warmupSamples + "}";
	}

	/**
	 * The Holt state is updated only by the thread that wins the CAS on the sample number, so updates
	 * never interleave; readers may see a level and a trend from neighbouring samples, which is fine for
	 * a forecast.
	 */
	static final class HoltEvaluator implements SuccessBatch.Batching, ProbePressure {

		private static final long NONE = Long.MIN_VALUE;
		private static final java.lang.invoke.VarHandle SAMPLE;

		static {
			try {
				SAMPLE = java.lang.invoke.MethodHandles.lookup().findVarHandle(HoltEvaluator.class, "sample",
						long.class);
			}
			catch (ReflectiveOperationException e) {
				throw new ExceptionInInitializerError(e);
			}
		}

		private final PredictivePolicy policy;
		private final Evaluator inner;
		private final long intervalNanos;
		private final double horizonSteps;

		private volatile long sample = NONE;
		private volatile double level;
		private volatile double trend;
		private volatile int samples;

		HoltEvaluator(PredictivePolicy policy, Evaluator inner) {
			this.policy = policy;
			this.inner = inner;
			this.intervalNanos = policy.sampleInterval.toNanos();
			this.horizonSteps = (double) policy.horizon.toNanos() / intervalNanos;
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			return sample(window, config, nowNanos,
					inner.onCall(window, config, outcome, timeToFirstTokenNanos, slow, nowNanos));
		}

		@Override
		public boolean batches() {
			return inner instanceof SuccessBatch.Batching && ((SuccessBatch.Batching) inner).batches();
		}

		@Override
		public long quietBelowNanos() {
			return ((SuccessBatch.Batching) inner).quietBelowNanos();
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			return sample(window, config, nowNanos,
					((SuccessBatch.Batching) inner).onSuccesses(window, config, successes, nowNanos));
		}

		/** Takes a sample of the inner pressure when {@code nowNanos} starts a new interval. */
		private boolean sample(WindowCounts window, BreakerConfig config, long nowNanos, boolean judge) {
			long last = sample;
			// still inside the sampled interval (the common case): no division
			if (last != NONE && nowNanos - (last + 1) * intervalNanos < 0) {
				return judge;
			}
			long current = Math.floorDiv(nowNanos, intervalNanos);
			if (current > last && SAMPLE.compareAndSet(this, last, current)) {
				observe(inner.pressure(window, config, nowNanos), last == NONE ? Long.MAX_VALUE : current - last);
				judge |= forecast() >= 1;
			}
			return judge;
		}

		/** Feeds one sample of the score, {@code steps} intervals after the previous one. */
		void observe(double x, long steps) {
			if (samples == 0 || steps > Math.max(1, (long) horizonSteps)) {
				level = x;
				trend = 0;
				samples = 1;
				return;
			}
			double previous = level;
			double predicted = previous + steps * trend;
			double nextLevel = policy.levelSmoothing * x + (1 - policy.levelSmoothing) * predicted;
			trend = policy.trendSmoothing * (nextLevel - previous) / steps + (1 - policy.trendSmoothing) * trend;
			level = nextLevel;
			samples = samples + 1;
		}

		/** @return the pressure forecast {@link #horizon()} ahead, or -1 before warm-up */
		double forecast() {
			return samples < policy.warmupSamples ? -1 : level + horizonSteps * trend;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			double current = inner.pressure(window, config, nowNanos);
			if (current >= 1 || current < policy.armedAt) {
				return current;
			}
			long last = sample;
			if (last == NONE || Math.floorDiv(nowNanos, intervalNanos) - last > horizonSteps) {
				return current; // the forecast is older than its horizon
			}
			return Math.max(current, forecast());
		}

		/** Probes are judged by the inner policy's rule (the forecast needs the CLOSED window). */
		@Override
		public double probePressure(long calls, long failures, long slow, BreakerConfig config) {
			return ProbePressure.of(inner, calls, failures, slow, config);
		}

		@Override
		public void reset(long nowNanos) {
			inner.reset(nowNanos);
			samples = 0;
			trend = 0;
			level = 0;
		}
	}
}
