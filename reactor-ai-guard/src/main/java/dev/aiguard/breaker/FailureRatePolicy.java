package dev.aiguard.breaker;

import dev.aiguard.core.Outcome;

/**
 * The classic trip rule, read straight from the window's totals: with at least
 * {@link BreakerConfig#minimumCalls()} calls, the pressure is the larger of
 * {@code failureRate / failureRateThreshold} and {@code slowCallRate / slowCallRateThreshold}.
 * Stateless; judged after each failed or slow call.
 *
 * <pre>{@code
 * BreakerConfig config = BreakerConfig.custom()
 *     .tripPolicy(TripPolicy.failureRate())   // the default
 *     .failureRateThreshold(0.5)
 *     .build();
 * }</pre>
 */
public final class FailureRatePolicy implements TripPolicy {

	static final FailureRatePolicy INSTANCE = new FailureRatePolicy();

	private static final Evaluator EVALUATOR = new Evaluator() {
		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			return slow || outcome != Outcome.SUCCESS; // CircuitBreaker applies this same rule inline
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			return classicPressure(window.calls(), window.failures(), window.slowCalls(), config);
		}
	};

	private FailureRatePolicy() {
	}

	/** @return whether {@code evaluator} is this policy's (stateless, needs no time per call) */
	static boolean isClassic(Evaluator evaluator) {
		return evaluator == EVALUATOR;
	}

	/** The classic pressure of a set of counts (also how the breaker judges its HALF_OPEN probes). */
	static double classicPressure(long calls, long failures, long slow, BreakerConfig config) {
		if (calls < config.minimumCalls() || calls == 0) {
			return 0;
		}
		return ratePressure(calls, failures, slow, config);
	}

	/** Pressure without the minimum-calls gate. */
	static double ratePressure(long calls, long failures, long slow, BreakerConfig config) {
		if (calls <= 0) {
			return 0;
		}
		double failureRate = Math.min(1.0, (double) failures / calls);
		double slowRate = Math.min(1.0, (double) slow / calls);
		return Math.max(failureRate / config.failureRateThreshold(), slowRate / config.slowCallRateThreshold());
	}

	@Override
	public Evaluator newEvaluator() {
		return EVALUATOR;
	}

	@Override
	public String toString() {
		return "failureRate";
	}
}
