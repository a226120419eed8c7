package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Arrays;

import dev.aiguard.core.Outcome;

/**
 * Decides when a CLOSED breaker trips. A policy is an immutable, shareable description; each breaker
 * asks it for its own {@link Evaluator}, which keeps whatever per-breaker state the policy needs.
 *
 * <p>An evaluator speaks in <em>pressure</em>: 1.0 means "at the threshold". The breaker trips at
 * {@code pressure ≥ 1} and, for hysteresis, re-closes only when its probes are below
 * {@code 1 - hysteresis}.
 *
 * <pre>{@code
 * BreakerConfig config = BreakerConfig.custom()
 *     .tripPolicy(TripPolicy.anyOf(
 *         TripPolicy.failureRate(),                              // the classic
 *         TripPolicy.predictive(TripPolicy.decayedFailureRate()), // trips early on a rising trend
 *         TripPolicy.adaptiveTtft().multiplier(3)))               // p95 first token > 3 × learned
 *     .build();
 * }</pre>
 *
 * <p>The shipped policies: {@link #failureRate()}, {@link #decayedFailureRate()},
 * {@link #performanceScore(Duration)}, {@link #adaptiveTtft()}, {@link #ttftPercentile(Duration)},
 * {@link #expectedLoss(double)}, {@link #predictive(TripPolicy)},
 * combined with {@link #anyOf(TripPolicy...)}. Policies are compared with {@code equals} when a
 * breaker is reconfigured: an equal policy keeps its evaluator (and what it learned).
 */
public interface TripPolicy {

	/** @return fresh per-breaker state for this policy */
	Evaluator newEvaluator();

	/**
	 * A policy's per-breaker state. Called from any thread, concurrently; {@link #onCall} is on the
	 * record path of every call and must be O(1), lock-free and allocation-free.
	 */
	interface Evaluator {

		/**
		 * Sees one recorded call (after the breaker's window counted it).
		 *
		 * @param window the breaker's window, totals already including this call
		 * @param config the breaker's current config
		 * @param outcome {@link Outcome#SUCCESS}, {@link Outcome#FAILURE}, {@link Outcome#STALLED} or
		 * {@link Outcome#INCOMPLETE} (a client error recorded as a failure arrives as {@code FAILURE})
		 * @param timeToFirstTokenNanos nanoseconds to the first token, or -1 when none arrived
		 * @param slow whether the call reached the slow time-to-first-token threshold
		 * @param nowNanos the breaker clock
		 * @return whether this call may have raised the pressure, so the breaker should judge now
		 */
		boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos);

		/**
		 * @return the pressure: at least 1 trips the breaker; 0 when there is not enough evidence
		 */
		double pressure(WindowCounts window, BreakerConfig config, long nowNanos);

		/** Forgets current evidence (the breaker re-closed); learned baselines may be kept. */
		default void reset(long nowNanos) {
		}
	}

	/**
	 * The classic: trips when, with at least {@code minimumCalls} in the window, the failure rate
	 * reaches {@code failureRateThreshold} or the slow-call rate reaches {@code slowCallRateThreshold}.
	 */
	static FailureRatePolicy failureRate() {
		return FailureRatePolicy.INSTANCE;
	}

	/** Time-decayed, severity-weighted failure rate (defaults: 10 s half-life, stall and incomplete weigh 2). */
	static DecayedFailureRatePolicy decayedFailureRate() {
		return DecayedFailureRatePolicy.DEFAULTS;
	}

	/**
	 * Performance score {@code α·TTFT_current / TTFT_baseline + (1 − α)·failureRate} against a threshold.
	 *
	 * @param baselineTtft the time to first token of a healthy provider
	 */
	static PerformanceScorePolicy performanceScore(Duration baselineTtft) {
		return PerformanceScorePolicy.DEFAULTS.baseline(baselineTtft);
	}

	/** Learns the healthy p95 time to first token and trips when the current p95 exceeds k × that. */
	static AdaptiveTtftPolicy adaptiveTtft() {
		return AdaptiveTtftPolicy.DEFAULTS;
	}

	/**
	 * Trips when the p95 time to first token of the last minute reaches {@code limit} (set
	 * {@link TtftPercentilePolicy#percentile(double)} for p99, {@link TtftPercentilePolicy#window} for
	 * another span).
	 *
	 * @param limit the percentile's time to first token at which the breaker trips
	 */
	static TtftPercentilePolicy ttftPercentile(Duration limit) {
		return TtftPercentilePolicy.DEFAULTS.limit(limit);
	}

	/**
	 * Trips while {@code P(failure) × C(failure) ≥ C(unavailable)}: the expected loss of calling
	 * reaches what answering from the fallback ladder's next step costs. Price the failed attempt with
	 * the policy's setters (prompt tokens, wait, failed answer; a failed answer costs 1 by default).
	 *
	 * @param unavailableCost what an answer from the ladder's next step costs, positive
	 */
	static ExpectedLossPolicy expectedLoss(double unavailableCost) {
		return ExpectedLossPolicy.DEFAULTS.unavailableCost(unavailableCost);
	}

	/** Forecasts {@code inner}'s pressure (Holt: level + trend) and trips when the forecast crosses 1. */
	static PredictivePolicy predictive(TripPolicy inner) {
		return PredictivePolicy.DEFAULTS.inner(inner);
	}

	/** Trips when any of {@code policies} would: the pressure is the highest of theirs. */
	static TripPolicy anyOf(TripPolicy... policies) {
		BreakerConfig.notNull("policies", policies);
		if (policies.length == 0) {
			throw new IllegalArgumentException("anyOf needs at least one policy, was none");
		}
		TripPolicy[] copy = Arrays.copyOf(policies, policies.length);
		for (int i = 0; i < copy.length; i++) {
			BreakerConfig.notNull("policies[" + i + "]", copy[i]);
		}
		return copy.length == 1 ? copy[0] : new AnyOfPolicy(copy);
	}
}
