package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * A time-decayed, severity-weighted failure rate: each call weighs {@code 2^(-age / halfLife)}, so
 * the last seconds count more than the start of the window, and a failure adds its severity (a stall
 * or a truncated stream can weigh more than a 503). The rate
 * {@code Σ weight·severity / Σ weight} is compared with {@link BreakerConfig#failureRateThreshold()},
 * once the window holds {@link BreakerConfig#minimumCalls()} calls. With severities above 1 the rate
 * can exceed 1: a run of stalls trips sooner than a run of 503s.
 *
 * <p>Immutable, copy-on-write: every setter returns a new policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.decayedFailureRate()
 *     .halfLife(Duration.ofSeconds(15))
 *     .severity(Outcome.STALLED, 3.0)
 *     .severity(Outcome.INCOMPLETE, 2.0);
 * }</pre>
 */
public final class DecayedFailureRatePolicy implements TripPolicy {

	static final DecayedFailureRatePolicy DEFAULTS = new DecayedFailureRatePolicy(Duration.ofSeconds(10), 1.0, 2.0,
			2.0);

	private final Duration halfLife;
	private final double failureSeverity;
	private final double stallSeverity;
	private final double incompleteSeverity;

	private DecayedFailureRatePolicy(Duration halfLife, double failureSeverity, double stallSeverity,
			double incompleteSeverity) {
		this.halfLife = halfLife;
		this.failureSeverity = failureSeverity;
		this.stallSeverity = stallSeverity;
		this.incompleteSeverity = incompleteSeverity;
	}

	/** @param halfLife age at which a call weighs half as much as a new one; between 1 ms and 1 day */
	public DecayedFailureRatePolicy halfLife(Duration halfLife) {
		BreakerConfig.notNull("halfLife", halfLife);
		if (halfLife.compareTo(Duration.ofMillis(1)) < 0 || halfLife.compareTo(Duration.ofDays(1)) > 0) {
			throw new IllegalArgumentException("halfLife must be between 1 ms and 1 day, was " + halfLife);
		}
		return new DecayedFailureRatePolicy(halfLife, failureSeverity, stallSeverity, incompleteSeverity);
	}

	/**
	 * @param outcome {@link Outcome#FAILURE}, {@link Outcome#STALLED} or {@link Outcome#INCOMPLETE}
	 * @param severity what one such failure adds, between 0 and 100 (a success adds 0)
	 */
	public DecayedFailureRatePolicy severity(Outcome outcome, double severity) {
		BreakerConfig.notNull("outcome", outcome);
		if (!(severity >= 0 && severity <= 100)) {
			throw new IllegalArgumentException("severity of " + outcome + " must be between 0 and 100, was " + severity);
		}
		switch (outcome) {
			case FAILURE:
				return new DecayedFailureRatePolicy(halfLife, severity, stallSeverity, incompleteSeverity);
			case STALLED:
				return new DecayedFailureRatePolicy(halfLife, failureSeverity, severity, incompleteSeverity);
			case INCOMPLETE:
				return new DecayedFailureRatePolicy(halfLife, failureSeverity, stallSeverity, severity);
			default:
				throw new IllegalArgumentException(
						"severity outcome must be FAILURE, STALLED or INCOMPLETE, was " + outcome);
		}
	}

	public Duration halfLife() {
		return halfLife;
	}

	/** @return the severity of {@code outcome}: 0 for anything that is not a failure */
	public double severity(Outcome outcome) {
		switch (outcome) {
			case FAILURE:
				return failureSeverity;
			case STALLED:
				return stallSeverity;
			case INCOMPLETE:
				return incompleteSeverity;
			default:
				return 0;
		}
	}

	@Override
	public Evaluator newEvaluator() {
		return new DecayedEvaluator(this);
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof DecayedFailureRatePolicy)) {
			return false;
		}
		DecayedFailureRatePolicy p = (DecayedFailureRatePolicy) o;
		return halfLife.equals(p.halfLife) && failureSeverity == p.failureSeverity
				&& stallSeverity == p.stallSeverity && incompleteSeverity == p.incompleteSeverity;
	}

	@Override
	public int hashCode() {
		return Objects.hash(halfLife, failureSeverity, stallSeverity, incompleteSeverity);
	}

	@Override
	public String toString() {
		return "decayedFailureRate{halfLife=" + halfLife + ", failure=" + failureSeverity + ", stalled="
				+ stallSeverity + ", incomplete=" + incompleteSeverity + "}";
	}

	static final class DecayedEvaluator implements SuccessBatch.Batching {

		private final DecayedFailureRatePolicy policy;
		/** first = Σ weight × severity, second = Σ weight. */
		private final DecayingSums sums;

		DecayedEvaluator(DecayedFailureRatePolicy policy) {
			this.policy = policy;
			this.sums = new DecayingSums(policy.halfLife.toNanos());
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			double severity = policy.severity(outcome);
			sums.add(nowNanos, severity, 1.0);
			return severity > 0;
		}

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			return policy.severity(Outcome.SUCCESS) > 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			double severity = policy.severity(Outcome.SUCCESS);
			long n = successes.total();
			sums.add(nowNanos, severity * n, n);
			return severity > 0;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			if (window.calls() < config.minimumCalls()) {
				return 0;
			}
			return rate() / config.failureRateThreshold();
		}

		/** @return the decayed, weighted failure rate */
		double rate() {
			return sums.ratio(0);
		}

		@Override
		public void reset(long nowNanos) {
			sums.reset();
		}
	}
}
