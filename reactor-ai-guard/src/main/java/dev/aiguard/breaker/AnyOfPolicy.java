package dev.aiguard.breaker;

import java.util.Arrays;
import java.util.function.Consumer;

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

	/** Hands each combined policy to {@code action}, in order. */
	void forEach(Consumer<TripPolicy> action) {
		for (TripPolicy p : policies) {
			action.accept(p);
		}
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

	static final class AnyOfEvaluator implements SuccessBatch.Batching, ProbePressure {

		private final Evaluator[] evaluators;
		/** The evaluators that keep state: the stateless classic one is answered inline on the record path. */
		private final Evaluator[] recording;
		private final boolean classic;

		AnyOfEvaluator(Evaluator[] evaluators) {
			this.evaluators = evaluators;
			this.recording = Arrays.stream(evaluators).filter(e -> !FailureRatePolicy.isClassic(e))
					.toArray(Evaluator[]::new);
			this.classic = recording.length < evaluators.length;
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos, boolean slow,
				long nowNanos) {
			// the classic rule's onCall, without the call
			boolean judge = classic && (slow || outcome != Outcome.SUCCESS);
			for (Evaluator e : recording) {
				judge |= e.onCall(window, config, outcome, timeToFirstTokenNanos, slow, nowNanos);
			}
			return judge;
		}

		/** The evaluators in the order of the policies (tests read what each learned). */
		Evaluator[] evaluators() {
			return evaluators.clone();
		}

		@Override
		public boolean batches() {
			for (Evaluator e : recording) {
				if (!(e instanceof SuccessBatch.Batching) || !((SuccessBatch.Batching) e).batches()) {
					return false;
				}
			}
			return true;
		}

		@Override
		public long quietBelowNanos() {
			long quiet = Long.MAX_VALUE;
			for (Evaluator e : recording) {
				quiet = Math.min(quiet, ((SuccessBatch.Batching) e).quietBelowNanos());
			}
			return quiet;
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			boolean judge = false;
			for (Evaluator e : recording) {
				judge |= ((SuccessBatch.Batching) e).onSuccesses(window, config, successes, nowNanos);
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

		/** The highest of the policies' probe pressures (each judged by its own rule, or the classic rates). */
		@Override
		public double probePressure(long calls, long failures, long slow, BreakerConfig config) {
			double max = 0;
			for (Evaluator e : evaluators) {
				max = Math.max(max, ProbePressure.of(e, calls, failures, slow, config));
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
