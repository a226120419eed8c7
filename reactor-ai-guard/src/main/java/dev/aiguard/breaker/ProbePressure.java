package dev.aiguard.breaker;

/**
 * An evaluator that judges half-open probes by its own rule rather than the classic rates: the
 * breaker closes only when this pressure is below {@code 1 - hysteresis}, and re-opens at 1. An
 * evaluator without it has its probes judged by {@link FailureRatePolicy#ratePressure}.
 */
interface ProbePressure {

	/** @return the pressure of a set of probe results (no minimum-calls gate) */
	double probePressure(long calls, long failures, long slow, BreakerConfig config);

	/** @return {@code evaluator}'s probe pressure, or the classic rates' when it has no rule of its own */
	static double of(TripPolicy.Evaluator evaluator, long calls, long failures, long slow, BreakerConfig config) {
		return evaluator instanceof ProbePressure own ? own.probePressure(calls, failures, slow, config)
				: FailureRatePolicy.ratePressure(calls, failures, slow, config);
	}
}
