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

/**
 * Where the guard reports what happens. Every method has a no-op default, so an implementation
 * overrides only what it records, and {@link #noop()} costs nothing.
 *
 * <p>Implementations are called from event loops: they must not block and should not allocate
 * per call. A throwing implementation is isolated by the guard (the exception is dropped to
 * {@code Hooks.onErrorDropped}); it never breaks a stream.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .metrics(new MicrometerGuardMetrics(meterRegistry))
 *     .build();
 * }</pre>
 *
 * @see MicrometerGuardMetrics
 */
public interface GuardMetrics {

	/** @return an implementation that records nothing. */
	static GuardMetrics noop() {
		return NoopGuardMetrics.INSTANCE;
	}

	/**
	 * @return {@code metrics} with the library's one rule for callbacks that throw: a throw is
	 *         passed to {@code Hooks.onErrorDropped} and goes no further. Policies, lanes and
	 *         breakers apply it once when they are built; applying it twice wraps once.
	 */
	static GuardMetrics isolated(GuardMetrics metrics) {
		if (metrics instanceof IsolatedGuardMetrics || metrics instanceof NoopGuardMetrics) {
			return metrics;
		}
		return new IsolatedGuardMetrics(java.util.Objects.requireNonNull(metrics, "metrics"));
	}

	// ---- streams (foundation) ----

	/**
	 * One attempt of a guarded stream ended.
	 *
	 * @param timeToFirstTokenNanos nanoseconds to the first content chunk, or -1 when none arrived
	 * @param chunks content chunks delivered in this attempt (chunks, not tokens: a provider's chunk
	 *        may carry several tokens; {@link #tokensUsed} has the tokens)
	 */
	default void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos,
			long timeToFirstTokenNanos, long chunks) {
	}

	/** A stream passed a deadline. */
	default void stalled(String policy, Priority priority, StallPhase phase) {
	}

	/** A stream finished with a {@code length}/{@code max_tokens} finish reason: the answer was cut. */
	default void outputTruncated(String policy, Priority priority) {
	}

	// ---- breaker ----

	/** A breaker was created; gauges may sample the suppliers. */
	default void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate,
			DoubleSupplier slowCallRate) {
	}

	/** A breaker changed state. */
	default void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
	}

	/** A breaker refused a call. */
	default void breakerRejected(String breaker) {
	}

	// ---- admission ----

	/**
	 * Priority lanes were created; gauges may sample the functions.
	 *
	 * @param inFlightOwn streams running on their own lane's permits
	 * @param inFlightBorrowed streams of that priority running on another lane's permits
	 * @param queued waiters in the lane's queue
	 */
	default void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn,
			ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
	}

	/**
	 * Priority lanes were created; a gauge may sample each lane's current number of permits,
	 * which {@code PriorityLanes.resize} changes at run time.
	 */
	default void laneCapacity(String lanes, ToIntFunction<Priority> capacity) {
	}

	/** A lane was resized to {@code concurrency} permits. */
	default void laneResized(String lanes, Priority lane, int concurrency) {
	}

	/** A request waited this long for a lane permit (0 when admitted at once). */
	default void admissionWaited(String lanes, Priority priority, long nanos) {
	}

	/** Admission was refused; {@code reason} is the rejection reason's name. */
	default void admissionRejected(String lanes, Priority priority, String reason) {
	}

	/** A stream on a borrowed permit was preempted by a more urgent arrival. */
	default void preempted(String lanes, Priority priority) {
	}

	// ---- retry and truncation ----

	/** A new attempt starts; {@code reason} names what failed (e.g. the exception's simple name). */
	default void retried(String policy, Priority priority, String reason) {
	}

	/** A retry was not made because the shared retry budget was spent. */
	default void retryBudgetExhausted(String policy, Priority priority) {
	}

	/**
	 * A request failed after its failed attempts had delivered content: {@code chunks} content
	 * chunks (not tokens) were shown and abandoned. {@link #retryCost} has the tokens, with a budget.
	 */
	default void tokensWasted(String policy, Priority priority, long chunks) {
	}

	/** The prompt was shrunk after a context-length error. */
	default void promptTruncated(String policy, Priority priority, long tokensDropped) {
	}

	/** A continuation request was sent after a mid-stream failure. */
	default void continued(String policy, Priority priority) {
	}

	/**
	 * An output validator rejected an attempt's answer (at its end, or by cutting its stream).
	 *
	 * @param validator the validator's name ({@code empty}, {@code finish-reason}, {@code repetition}...)
	 */
	default void invalidAnswer(String policy, Priority priority, String validator) {
	}

	// ---- fallback ----

	/** A request was answered (completed) from {@code source}. */
	default void answered(String policy, Priority priority, Source source) {
	}

	/** A fallback step failed and the ladder moved on. */
	default void fallbackStepFailed(String policy, Priority priority, Source source) {
	}

	/** Time spent in one fallback step, successful or not. */
	default void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
	}

	/** A response-cache lookup. */
	default void cacheLookup(String policy, boolean hit) {
	}

	// ---- load governor ----

	/**
	 * A load governor was created; gauges may sample the suppliers.
	 *
	 * @param level severity of the current level: 0 HEALTHY, 1 WARNING, 2 DEGRADED, 3 CRITICAL
	 * @param score health score 0..100 (NaN when no signal has data)
	 * @param load the offered request rate ÷ capacity, smoothed (the utilization the levels read)
	 * @param forecastPeak highest forecast request rate within the horizon ÷ capacity
	 * @param subScores each health signal's sub-score 0..100 (NaN: no data), by signal name
	 */
	default void loadGovernorCreated(String governor, DoubleSupplier level, DoubleSupplier score, DoubleSupplier load,
			DoubleSupplier forecastPeak, Map<String, DoubleSupplier> subScores) {
	}

	/**
	 * A load governor changed level; levels and reason are the enum constants' names (e.g.
	 * {@code HEALTHY}, {@code DEGRADED}, {@code SCORE}).
	 */
	default void loadLevelChanged(String governor, String from, String to, String reason) {
	}

	/** A live guard's policy changed (a {@code GuardControl} put a new policy in force). */
	default void policyChanged(String policy) {
	}

	/** A live change of a guard's policy was refused as invalid; the policy in force stayed. */
	default void policyChangeRefused(String policy) {
	}

	// ---- budgets ----

	/**
	 * The tokens one attempt used.
	 *
	 * @param model the model priced and counted
	 * @param tenant the request's tenant
	 * @param source {@code provider} when the provider reported its usage, {@code counted} when the
	 *        guard counted (the prompt before sending, the content chunks received)
	 */
	default void tokensUsed(String policy, String model, String tenant, String source, long promptTokens,
			long completionTokens) {
	}

	/**
	 * What one attempt cost, by the policy's price table.
	 *
	 * @param source as in {@link #tokensUsed}
	 * @param amount in {@code currency}
	 */
	default void cost(String policy, String model, String tenant, String source, String currency, double amount) {
	}

	/**
	 * What an attempt whose text did not become the user's answer used (it failed, stalled, was
	 * refused for its prompt's size or its output, or a retry or a continuation replaced it),
	 * besides being counted in {@link #tokensUsed} and {@link #cost}.
	 */
	default void retryCost(String policy, String model, String tenant, long promptTokens, long completionTokens,
			String currency, double amount) {
	}

	/**
	 * A budget refused a request.
	 *
	 * @param scope {@code tenant} or {@code provider}
	 * @param limit {@code requests}, {@code tokens}, {@code cost}, or {@code store} (the bucket store failed)
	 */
	default void budgetRejected(String policy, Priority priority, String scope, String limit) {
	}

	/** A request waits for its provider key's bucket instead of meeting the provider's 429. */
	default void budgetThrottled(String policy, Priority priority, String providerKey, long waitNanos) {
	}

	/**
	 * A budget bucket was first used; a gauge may sample what it holds (negative while in debt).
	 *
	 * @param scope {@code tenant} or {@code provider}
	 * @param id the tenant or the provider key
	 * @param limit {@code requests}, {@code tokens} or {@code cost} (the supplier gives micro-units of the currency)
	 */
	default void budgetRemaining(String policy, String scope, String id, String limit, LongSupplier remaining) {
	}

	/**
	 * A budget let go of a tenant's buckets (idle, or beyond its cap of tenants): gauges registered
	 * for them by {@link #budgetRemaining} should go.
	 *
	 * @param scope {@code tenant}
	 * @param id the tenant
	 */
	default void budgetForgotten(String policy, String scope, String id) {
	}

	/** A policy with budgets was built; {@code mode} says where its buckets are (a {@code BucketStore.Mode}). */
	default void bucketStoreMode(String policy, Supplier<Enum<?>> mode) {
	}

	/** The output cap ended an answer. */
	default void outputCapped(String policy, Priority priority) {
	}
}
