package dev.aiguard.metrics;

import java.util.Map;
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
	public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos, long timeToFirstTokenNanos, long tokens) {
		try {
			delegate.streamEnded(policy, priority, outcome, durationNanos, timeToFirstTokenNanos, tokens);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void stalled(String policy, Priority priority, StallPhase phase) {
		try {
			delegate.stalled(policy, priority, phase);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void outputTruncated(String policy, Priority priority) {
		try {
			delegate.outputTruncated(policy, priority);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate, DoubleSupplier slowCallRate) {
		try {
			delegate.breakerCreated(breaker, state, failureRate, slowCallRate);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
		try {
			delegate.breakerTransition(breaker, from, to);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void breakerRejected(String breaker) {
		try {
			delegate.breakerRejected(breaker);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn, ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
		try {
			delegate.lanesCreated(lanes, inFlightOwn, inFlightBorrowed, queued);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void laneCapacity(String lanes, ToIntFunction<Priority> capacity) {
		try {
			delegate.laneCapacity(lanes, capacity);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void laneResized(String lanes, Priority lane, int concurrency) {
		try {
			delegate.laneResized(lanes, lane, concurrency);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void admissionWaited(String lanes, Priority priority, long nanos) {
		try {
			delegate.admissionWaited(lanes, priority, nanos);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void admissionRejected(String lanes, Priority priority, String reason) {
		try {
			delegate.admissionRejected(lanes, priority, reason);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void preempted(String lanes, Priority priority) {
		try {
			delegate.preempted(lanes, priority);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void retried(String policy, Priority priority, String reason) {
		try {
			delegate.retried(policy, priority, reason);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void retryBudgetExhausted(String policy, Priority priority) {
		try {
			delegate.retryBudgetExhausted(policy, priority);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void tokensWasted(String policy, Priority priority, long tokens) {
		try {
			delegate.tokensWasted(policy, priority, tokens);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void promptTruncated(String policy, Priority priority, long tokensDropped) {
		try {
			delegate.promptTruncated(policy, priority, tokensDropped);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void continued(String policy, Priority priority) {
		try {
			delegate.continued(policy, priority);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void invalidAnswer(String policy, Priority priority, String validator) {
		try {
			delegate.invalidAnswer(policy, priority, validator);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void answered(String policy, Priority priority, Source source) {
		try {
			delegate.answered(policy, priority, source);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void fallbackStepFailed(String policy, Priority priority, Source source) {
		try {
			delegate.fallbackStepFailed(policy, priority, source);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
		try {
			delegate.fallbackStepTime(policy, priority, source, nanos);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void cacheLookup(String policy, boolean hit) {
		try {
			delegate.cacheLookup(policy, hit);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void loadGovernorCreated(String governor, DoubleSupplier level, DoubleSupplier score, DoubleSupplier load,
			DoubleSupplier forecastPeak, Map<String, DoubleSupplier> subScores) {
		try {
			delegate.loadGovernorCreated(governor, level, score, load, forecastPeak, subScores);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void loadLevelChanged(String governor, String from, String to, String reason) {
		try {
			delegate.loadLevelChanged(governor, from, to, reason);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void policyChanged(String policy) {
		try {
			delegate.policyChanged(policy);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void policyChangeRefused(String policy) {
		try {
			delegate.policyChangeRefused(policy);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void tokensUsed(String policy, String model, String tenant, String source, long promptTokens, long completionTokens) {
		try {
			delegate.tokensUsed(policy, model, tenant, source, promptTokens, completionTokens);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void cost(String policy, String model, String tenant, String source, String currency, double amount) {
		try {
			delegate.cost(policy, model, tenant, source, currency, amount);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void retryCost(String policy, String model, String tenant, long promptTokens, long completionTokens, String currency, double amount) {
		try {
			delegate.retryCost(policy, model, tenant, promptTokens, completionTokens, currency, amount);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void budgetRejected(String policy, Priority priority, String scope, String limit) {
		try {
			delegate.budgetRejected(policy, priority, scope, limit);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void budgetThrottled(String policy, Priority priority, String providerKey, long waitNanos) {
		try {
			delegate.budgetThrottled(policy, priority, providerKey, waitNanos);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void budgetRemaining(String policy, String scope, String id, String limit, LongSupplier remaining) {
		try {
			delegate.budgetRemaining(policy, scope, id, limit, remaining);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void budgetForgotten(String policy, String scope, String id) {
		try {
			delegate.budgetForgotten(policy, scope, id);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void bucketStoreMode(String policy, Supplier<Enum<?>> mode) {
		try {
			delegate.bucketStoreMode(policy, mode);
		}
		catch (Throwable meterFailure) {
			Callbacks.dropped(meterFailure);
		}
	}

	@Override
	public void outputCapped(String policy, Priority priority) {
		try {
			delegate.outputCapped(policy, priority);
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
