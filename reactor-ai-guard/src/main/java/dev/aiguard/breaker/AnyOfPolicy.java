package dev.aiguard.breaker;

import java.util.Arrays;

import dev.aiguard.core.Outcome;

/** Several policies at once: the highest pressure wins. */
final class AnyOfPolicy implements TripPolicy {

	private final TripPolicy[] policies;

	AnyOfPolicy(TripPolicy[] policies) {
		this.policies = policies;
	}

	@Override
	public Evaluator newEvaluator() {
		Evaluator[] evaluators = new Evaluator[policies.length];
		for (int i = 0; i < policies.length; i++) {
			evaluators[i] = policies[i].newEvaluator();
		}
		return new AnyOfEvaluator(evaluators);
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof AnyOfPolicy && Arrays.equals(policies, ((AnyOfPolicy) o).policies);
	}

	@Override
	public int hashCode() {
		return Arrays.hashCode(policies);
	}

	@Override
	public String toString() {
		return "anyOf" + Arrays.toString(policies);
	}

	static final class AnyOfEvaluator implements Evaluator {

		private final Evaluator[] evaluators;

		AnyOfEvaluator(Evaluator[] evaluators) {
			this.evaluators = evaluators;
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			boolean judge = false;
			for (Evaluator e : evaluators) {
				judge |= e.onCall(window, config, outcome, timeToFirstTokenNanos, slow, nowNanos);
			}
			return judge;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			double max = 0;
			for (Evaluator e : evaluators) {
				max = Math.max(max, e.pressure(window, config, nowNanos));
			}
			return max;
		}

		@Override
		public void reset(long nowNanos) {
			for (Evaluator e : evaluators) {
				e.reset(nowNanos);
			}
		}
	}
}
