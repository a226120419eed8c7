package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Outcome;

/**
 * The trip rule as a decision: keep calling while the expected loss of an attempt,
 * {@code P(failure) × C(failure)}, is below {@code C(unavailable)}, what answering from the
 * fallback ladder's next step costs instead. The pressure is
 * {@code P(failure) × C(failure) / C(unavailable)}, so the breaker trips when the loss of calling
 * reaches the cost of not calling.
 *
 * <ul>
 * <li>{@code P(failure)} is the window's failure rate, judged once the window holds
 * {@link BreakerConfig#minimumCalls()} calls. Wrapped in {@link TripPolicy#predictive(TripPolicy)},
 * the pressure is forecast instead; as the costs are fixed, that is a forecast of
 * {@code P(failure)}.</li>
 * <li>{@code C(failure)} is what one failed attempt costs: its prompt tokens, paid and lost
 * ({@link #promptTokens(int)} × {@link #promptPricePerMillion(double)}, the guarded model's input
 * price from the budget's price table); the user's wait for a first token that did not come
 * ({@link #failureWait(Duration)} × {@link #waitPricePerSecond(double)}); and the failed answer
 * itself ({@link #failedAnswerCost(double)}, default 1).</li>
 * <li>{@code C(unavailable)} is what the ladder's next step costs per answer
 * ({@link #unavailableCost(double)}): a cheaper model's price for the same prompt, nothing for a
 * cache hit (weighted by its hit rate), a static answer's configured cost.</li>
 * </ul>
 *
 * <p>All costs are in one unit of your choice (the price table's currency, say). With the defaults
 * (a failed answer costs 1, nothing else is priced) the rule is a failure-rate threshold of
 * {@code C(unavailable)}. Half-open probes are judged by the same ratio, so the breaker closes only
 * when the probes' failure rate × {@code C(failure) / C(unavailable)} is below
 * {@code 1 - hysteresis}. Stateless; judged after each failed call.
 *
 * <p>Immutable, copy-on-write: every setter returns a new policy.
 *
 * <pre>{@code
 * TripPolicy policy = TripPolicy.expectedLoss(0.0009)   // the cheaper model answers for 0.0009
 *     .promptTokens(1200)
 *     .promptPricePerMillion(2.50)                      // the guarded model's input price
 *     .waitPricePerSecond(0.0005)
 *     .failureWait(Duration.ofSeconds(8))
 *     .failedAnswerCost(0.002);
 * }</pre>
 */
public final class ExpectedLossPolicy implements TripPolicy {

	private static final double MAX_COST = 1e9;

	static final ExpectedLossPolicy DEFAULTS = new ExpectedLossPolicy(1000, 0, 0, Duration.ofSeconds(10), 1.0, 0.5);

	private final int promptTokens;
	private final double promptPricePerMillion;
	private final double waitPricePerSecond;
	private final Duration failureWait;
	private final double failedAnswerCost;
	private final double unavailableCost;
	/** {@code C(failure) / C(unavailable)}: the pressure is the failure rate times this. */
	private final double lossRatio;

	private ExpectedLossPolicy(int promptTokens, double promptPricePerMillion, double waitPricePerSecond,
			Duration failureWait, double failedAnswerCost, double unavailableCost) {
		this.promptTokens = promptTokens;
		this.promptPricePerMillion = promptPricePerMillion;
		this.waitPricePerSecond = waitPricePerSecond;
		this.failureWait = failureWait;
		this.failedAnswerCost = failedAnswerCost;
		this.unavailableCost = unavailableCost;
		this.lossRatio = failureCost() / unavailableCost;
	}

	/** @param tokens the prompt tokens of a typical attempt, paid again when it fails; 0 to 10 million */
	public ExpectedLossPolicy promptTokens(int tokens) {
		if (tokens < 0 || tokens > 10_000_000) {
			throw new IllegalArgumentException("promptTokens must be between 0 and 10000000, was " + tokens);
		}
		return new ExpectedLossPolicy(tokens, promptPricePerMillion, waitPricePerSecond, failureWait,
				failedAnswerCost, unavailableCost);
	}

	/** @param price what a million prompt tokens of the guarded model cost, {@code >= 0} */
	public ExpectedLossPolicy promptPricePerMillion(double price) {
		return new ExpectedLossPolicy(promptTokens, cost("promptPricePerMillion", price), waitPricePerSecond,
				failureWait, failedAnswerCost, unavailableCost);
	}

	/** @param price what a second of the user's wait for a first token costs, {@code >= 0} */
	public ExpectedLossPolicy waitPricePerSecond(double price) {
		return new ExpectedLossPolicy(promptTokens, promptPricePerMillion, cost("waitPricePerSecond", price),
				failureWait, failedAnswerCost, unavailableCost);
	}

	/** @param wait how much longer a failed attempt makes the user wait for a first token; 0 to 1 hour */
	public ExpectedLossPolicy failureWait(Duration wait) {
		BreakerConfig.notNull("failureWait", wait);
		if (wait.isNegative() || wait.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException("failureWait must be between 0 and 1 hour, was " + wait);
		}
		return new ExpectedLossPolicy(promptTokens, promptPricePerMillion, waitPricePerSecond, wait,
				failedAnswerCost, unavailableCost);
	}

	/** @param cost what a failed answer costs beyond its tokens and wait, {@code >= 0} */
	public ExpectedLossPolicy failedAnswerCost(double cost) {
		return new ExpectedLossPolicy(promptTokens, promptPricePerMillion, waitPricePerSecond, failureWait,
				cost("failedAnswerCost", cost), unavailableCost);
	}

	/** @param cost what an answer from the ladder's next step costs, positive */
	public ExpectedLossPolicy unavailableCost(double cost) {
		if (!(cost > 0 && cost <= MAX_COST)) {
			throw new IllegalArgumentException("unavailableCost must be positive and at most 1e9, was " + cost);
		}
		return new ExpectedLossPolicy(promptTokens, promptPricePerMillion, waitPricePerSecond, failureWait,
				failedAnswerCost, cost);
	}

	private static double cost(String field, double value) {
		if (!(value >= 0 && value <= MAX_COST)) {
			throw new IllegalArgumentException(field + " must be between 0 and 1e9, was " + value);
		}
		return value;
	}

	public int promptTokens() {
		return promptTokens;
	}

	public double promptPricePerMillion() {
		return promptPricePerMillion;
	}

	public double waitPricePerSecond() {
		return waitPricePerSecond;
	}

	public Duration failureWait() {
		return failureWait;
	}

	public double failedAnswerCost() {
		return failedAnswerCost;
	}

	public double unavailableCost() {
		return unavailableCost;
	}

	/** @return {@code C(failure)}: prompt tokens paid, wait lost and the failed answer, in cost units */
	public double failureCost() {
		return promptTokens * promptPricePerMillion / 1e6 + failureWait.toNanos() / 1e9 * waitPricePerSecond
				+ failedAnswerCost;
	}

	/** @return the failure rate at which the breaker trips: {@code C(unavailable) / C(failure)} (may exceed 1: never) */
	public double tripFailureRate() {
		return 1 / lossRatio;
	}

	/** The pressure of {@code failures} among {@code calls}: their rate times {@code C(failure) / C(unavailable)}. */
	double pressure(long calls, long failures) {
		return calls <= 0 ? 0 : Math.min(1.0, (double) failures / calls) * lossRatio;
	}

	/**
	 * Checks what one setter alone cannot: that a failed attempt costs something, else the policy
	 * could never trip. Called by {@link BreakerConfig.Builder#build()} for every expected-loss policy
	 * in the trip policy.
	 */
	static void check(TripPolicy policy) {
		if (policy instanceof ExpectedLossPolicy loss && !(loss.failureCost() > 0)) {
			throw new IllegalArgumentException("tripPolicy.failedAnswerCost: a failed attempt must cost something"
					+ " (failedAnswerCost, promptPricePerMillion × promptTokens or waitPricePerSecond × failureWait),"
					+ " was 0 in " + loss);
		}
		if (policy instanceof PredictivePolicy predictive) {
			check(predictive.inner());
		}
		if (policy instanceof AnyOfPolicy any) {
			any.forEach(ExpectedLossPolicy::check);
		}
	}

	@Override
	public Evaluator newEvaluator() {
		return new LossEvaluator(this);
	}

	@Override
	public boolean equals(Object o) {
		if (!(o instanceof ExpectedLossPolicy)) {
			return false;
		}
		ExpectedLossPolicy p = (ExpectedLossPolicy) o;
		return promptTokens == p.promptTokens && promptPricePerMillion == p.promptPricePerMillion
				&& waitPricePerSecond == p.waitPricePerSecond && failureWait.equals(p.failureWait)
				&& failedAnswerCost == p.failedAnswerCost && unavailableCost == p.unavailableCost;
	}

	@Override
	public int hashCode() {
		return Objects.hash(promptTokens, promptPricePerMillion, waitPricePerSecond, failureWait, failedAnswerCost,
				unavailableCost);
	}

	@Override
	public String toString() {
		return "expectedLoss{promptTokens=" + promptTokens + ", promptPricePerMillion=" + promptPricePerMillion
				+ ", waitPricePerSecond=" + waitPricePerSecond + ", failureWait=" + failureWait
				+ ", failedAnswerCost=" + failedAnswerCost + ", unavailableCost=" + unavailableCost + "}";
	}

	/** Stateless: reads the window's totals; no success can raise the pressure, so successes batch. */
	static final class LossEvaluator implements SuccessBatch.Batching, ProbePressure {

		private final ExpectedLossPolicy policy;

		LossEvaluator(ExpectedLossPolicy policy) {
			this.policy = policy;
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos,
				boolean slow, long nowNanos) {
			return outcome != Outcome.SUCCESS;
		}

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			return false;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			long calls = window.calls();
			return calls < config.minimumCalls() ? 0 : policy.pressure(calls, window.failures());
		}

		@Override
		public double probePressure(long calls, long failures, long slow, BreakerConfig config) {
			return policy.pressure(calls, failures);
		}
	}
}
