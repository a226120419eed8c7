package dev.aiguard.metrics;

import java.util.Map;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import dev.aiguard.internal.Callbacks;

/**
 * The one rule for meters that throw, applied once where a policy, lanes or a breaker is built:
 * every call is passed on, and what it throws goes to {@code Hooks.onErrorDropped} — it never
 * changes an outcome, a permit or a stream. See {@link GuardMetrics#isolated(GuardMetrics)}.
 */
final class IsolatedGuardMetrics implements GuardMetrics {

	final GuardMetrics delegate;

	IsolatedGuardMetrics(GuardMetrics delegate) {
		this.delegate = delegate;
	}

	@Override
	public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos, long timeToFirstTokenNanos, long chunks) {
		isolate(metrics -> metrics.streamEnded(policy, priority, outcome, durationNanos, timeToFirstTokenNanos, chunks));
	}

	@Override
	public void stalled(String policy, Priority priority, StallPhase phase) {
		isolate(metrics -> metrics.stalled(policy, priority, phase));
	}

	@Override
	public void outputTruncated(String policy, Priority priority) {
		isolate(metrics -> metrics.outputTruncated(policy, priority));
	}

	@Override
	public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate, DoubleSupplier slowCallRate) {
		isolate(metrics -> metrics.breakerCreated(breaker, state, failureRate, slowCallRate));
	}

	@Override
	public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
		isolate(metrics -> metrics.breakerTransition(breaker, from, to));
	}

	@Override
	public void breakerRejected(String breaker) {
		isolate(metrics -> metrics.breakerRejected(breaker));
	}

	@Override
	public void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn, ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
		isolate(metrics -> metrics.lanesCreated(lanes, inFlightOwn, inFlightBorrowed, queued));
	}

	@Override
	public void laneCapacity(String lanes, ToIntFunction<Priority> capacity) {
		isolate(metrics -> metrics.laneCapacity(lanes, capacity));
	}

	@Override
	public void laneResized(String lanes, Priority lane, int concurrency) {
		isolate(metrics -> metrics.laneResized(lanes, lane, concurrency));
	}

	@Override
	public void admissionWaited(String lanes, Priority priority, long nanos) {
		isolate(metrics -> metrics.admissionWaited(lanes, priority, nanos));
	}

	@Override
	public void admissionRejected(String lanes, Priority priority, String reason) {
		isolate(metrics -> metrics.admissionRejected(lanes, priority, reason));
	}

	@Override
	public void preempted(String lanes, Priority priority) {
		isolate(metrics -> metrics.preempted(lanes, priority));
	}

	@Override
	public void retried(String policy, Priority priority, String reason) {
		isolate(metrics -> metrics.retried(policy, priority, reason));
	}

	@Override
	public void retryBudgetExhausted(String policy, Priority priority) {
		isolate(metrics -> metrics.retryBudgetExhausted(policy, priority));
	}

	@Override
	public void tokensWasted(String policy, Priority priority, long chunks) {
		isolate(metrics -> metrics.tokensWasted(policy, priority, chunks));
	}

	@Override
	public void promptTruncated(String policy, Priority priority, long tokensDropped) {
		isolate(metrics -> metrics.promptTruncated(policy, priority, tokensDropped));
	}

	@Override
	public void continued(String policy, Priority priority) {
		isolate(metrics -> metrics.continued(policy, priority));
	}

	@Override
	public void invalidAnswer(String policy, Priority priority, String validator) {
		isolate(metrics -> metrics.invalidAnswer(policy, priority, validator));
	}

	@Override
	public void answered(String policy, Priority priority, Source source) {
		isolate(metrics -> metrics.answered(policy, priority, source));
	}

	@Override
	public void fallbackStepFailed(String policy, Priority priority, Source source) {
		isolate(metrics -> metrics.fallbackStepFailed(policy, priority, source));
	}

	@Override
	public void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
		isolate(metrics -> metrics.fallbackStepTime(policy, priority, source, nanos));
	}

	@Override
	public void cacheLookup(String policy, boolean hit) {
		isolate(metrics -> metrics.cacheLookup(policy, hit));
	}

	@Override
	public void loadGovernorCreated(String governor, DoubleSupplier level, DoubleSupplier score, DoubleSupplier load,
			DoubleSupplier forecastPeak, Map<String, DoubleSupplier> subScores) {
		isolate(metrics -> metrics.loadGovernorCreated(governor, level, score, load, forecastPeak, subScores));
	}

	@Override
	public void loadLevelChanged(String governor, String from, String to, String reason) {
		isolate(metrics -> metrics.loadLevelChanged(governor, from, to, reason));
	}

	@Override
	public void policyChanged(String policy) {
		isolate(metrics -> metrics.policyChanged(policy));
	}

	@Override
	public void policyChangeRefused(String policy) {
		isolate(metrics -> metrics.policyChangeRefused(policy));
	}

	@Override
	public void tokensUsed(String policy, String model, String tenant, String source, long promptTokens, long completionTokens) {
		isolate(metrics -> metrics.tokensUsed(policy, model, tenant, source, promptTokens, completionTokens));
	}

	@Override
	public void cost(String policy, String model, String tenant, String source, String currency, double amount) {
		isolate(metrics -> metrics.cost(policy, model, tenant, source, currency, amount));
	}

	@Override
	public void retryCost(String policy, String model, String tenant, long promptTokens, long completionTokens, String currency, double amount) {
		isolate(metrics -> metrics.retryCost(policy, model, tenant, promptTokens, completionTokens, currency, amount));
	}

	@Override
	public void budgetRejected(String policy, Priority priority, String scope, String limit) {
		isolate(metrics -> metrics.budgetRejected(policy, priority, scope, limit));
	}

	@Override
	public void budgetThrottled(String policy, Priority priority, String providerKey, long waitNanos) {
		isolate(metrics -> metrics.budgetThrottled(policy, priority, providerKey, waitNanos));
	}

	@Override
	public void budgetRemaining(String policy, String scope, String id, String limit, LongSupplier remaining) {
		isolate(metrics -> metrics.budgetRemaining(policy, scope, id, limit, remaining));
	}

	@Override
	public void budgetForgotten(String policy, String scope, String id) {
		isolate(metrics -> metrics.budgetForgotten(policy, scope, id));
	}

	@Override
	public void bucketStoreMode(String policy, Supplier<Enum<?>> mode) {
		isolate(metrics -> metrics.bucketStoreMode(policy, mode));
	}

	@Override
	public void outputCapped(String policy, Priority priority) {
		isolate(metrics -> metrics.outputCapped(policy, priority));
	}

	/**
	 * Passes one call on; what it throws goes to {@code Hooks.onErrorDropped}. The call's lambda
	 * never escapes: once this small method is inlined, escape analysis can drop its allocation.
	 */
	private void isolate(Consumer<GuardMetrics> call) {
		try {
			call.accept(delegate);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public String toString() {
		return "isolated(" + delegate + ")";
	}
}
