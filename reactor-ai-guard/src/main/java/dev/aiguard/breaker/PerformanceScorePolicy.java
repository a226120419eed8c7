package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * A performance score that weighs speed and errors together:
 * {@code score = α · TTFT_current / TTFT_baseline + (1 − α) · failureRate}, with the pressure
 * {@code score / threshold}. {@code TTFT_current} is the time-decayed mean time to first token of
 * recent calls (half-life {@link #halfLife()}); the failure rate is the window's. A healthy provider
 * scores about {@code α}; with the defaults ({@code α = 0.5}, threshold 1.0) the breaker trips when the
 * first token takes twice the baseline, or when every call fails, or on a mix of both. Judged once the
 * window holds {@link BreakerConfig#minimumCalls()} calls.
 *
 * <p>Immutable, copy-on-write: every setter returns a new policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.performanceScore(Duration.ofMillis(800))
 *     .alpha(0.7)
 *     .threshold(1.2);
 * }</pre>
 */
public final class PerformanceScorePolicy implements TripPolicy {

	static final PerformanceScorePolicy DEFAULTS = new PerformanceScorePolicy(Duration.ofSeconds(1), 0.5, 1.0,
			Duration.ofSeconds(30));

	private final Duration baseline;
	private final double alpha;
	private final double threshold;
	private final Duration halfLife;

	private PerformanceScorePolicy(Duration baseline, double alpha, double threshold, Duration halfLife) {
		this.baseline = baseline;
		this.alpha = alpha;
		this.threshold = threshold;
		this.halfLife = halfLife;
	}

	/** @param baseline the healthy time to first token, between 1 ms and 1 hour */
	public PerformanceScorePolicy baseline(Duration baseline) {
		BreakerConfig.notNull("baseline", baseline);
		if (baseline.compareTo(Duration.ofMillis(1)) < 0 || baseline.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("baseline must be between 1 ms and 1 hour, was " + baseline);
		}
		return new PerformanceScorePolicy(baseline, alpha, threshold, halfLife);
	}

	/** @param alpha weight of speed against errors, in [0, 1] (1 = speed only, 0 = errors only) */
	public PerformanceScorePolicy alpha(double alpha) {
		if (!(alpha >= 0 && alpha <= 1)) {
			throw new IllegalArgumentException("alpha must be between 0 and 1, was " + alpha);
		}
		return new PerformanceScorePolicy(baseline, alpha, threshold, halfLife);
	}

	/** @param threshold the score that trips, positive and at most 1000 */
	public PerformanceScorePolicy threshold(double threshold) {
		if (!(threshold > 0 && threshold <= 1000)) {
			throw new IllegalArgumentException("threshold must be in (0, 1000], was " + threshold);
		}
		return new PerformanceScorePolicy(baseline, alpha, threshold, halfLife);
	}

	/** @param halfLife how fast old first-token times fade from the current mean; 1 ms to 1 day */
	public PerformanceScorePolicy halfLife(Duration halfLife) {
		BreakerConfig.notNull("halfLife", halfLife);
		if (halfLife.compareTo(Duration.ofMillis(1)) < 0 || halfLife.compareTo(Duration.ofDays(1)) > 0) {
			throw new IllegalArgumentException("halfLife must be between 1 ms and 1 day, was " + halfLife);
		}
		return new PerformanceScorePolicy(baseline, alpha, threshold, halfLife);
	}

	public Duration baseline() {
		return baseline;
	}

	public double alpha() {
		return alpha;
	}

	public double threshold() {
		return threshold;
	}

	public Duration halfLife() {
		return halfLife;
	}

	/** @return the score of a first-token ratio and a failure rate */
	double score(double ttftRatio, double failureRate) {
		return alpha * ttftRatio + (1 - alpha) * failureRate;
	}

	@Override
	public Evaluator newEvaluator() {
		return new ScoreEvaluator(this);
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof PerformanceScorePolicy)) {
			return false;
		}
		PerformanceScorePolicy p = (PerformanceScorePolicy) o;
		return baseline.equals(p.baseline) && alpha == p.alpha && threshold == p.threshold
				&& halfLife.equals(p.halfLife);
	}

	@Override
	public int hashCode() {
		return Objects.hash(baseline, alpha, threshold, halfLife);
	}

	@Override
	public String toString() {
		return "performanceScore{baseline=" + baseline + ", alpha=" + alpha + ", threshold=" + threshold
				+ ", halfLife=" + halfLife + "}";
	}

	static final class ScoreEvaluator implements SuccessBatch.Batching {

		private final PerformanceScorePolicy policy;
		private final double baselineNanos;
		/** first = Σ weight × ttft, second = Σ weight, over calls that had a first token. */
		private final DecayingSums ttft;

		ScoreEvaluator(PerformanceScorePolicy policy) {
			this.policy = policy;
			this.baselineNanos = policy.baseline.toNanos();
			this.ttft = new DecayingSums(policy.halfLife.toNanos());
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			if (timeToFirstTokenNanos >= 0) {
				ttft.add(nowNanos, timeToFirstTokenNanos, 1.0);
			}
			return outcome != Outcome.SUCCESS || timeToFirstTokenNanos > baselineNanos;
		}

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			return (long) baselineNanos + 1; // a first token after the baseline raises the mean
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			if (successes.withTtft() > 0) {
				ttft.add(nowNanos, successes.ttftSumNanos(), successes.withTtft());
			}
			for (int i = 0; i < successes.size(); i++) {
				// a bin reaching above the baseline may hold a call that raised the mean
				if (successes.bin(i) >= 0 && TtftHistogram.upperNanos(successes.bin(i)) > baselineNanos) {
					return true;
				}
			}
			return false;
		}

		/** @return current mean time to first token over the baseline; 1 when no call had a first token */
		double ttftRatio() {
			return ttft.ratio(baselineNanos) / baselineNanos;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			if (window.calls() < config.minimumCalls()) {
				return 0;
			}
			return policy.score(ttftRatio(), window.failureRate()) / policy.threshold;
		}

		@Override
		public void reset(long nowNanos) {
			ttft.reset();
		}
	}
}
