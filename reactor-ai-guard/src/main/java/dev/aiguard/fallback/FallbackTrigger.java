package dev.aiguard.fallback;

import java.util.EnumSet;
import java.util.Set;

/**
 * A failure of the realtime answer that may send a request down the ladder. Which ones do is
 * configured per chain with {@link FallbackChain.Builder#triggers(Set)}; the default is every
 * trigger except {@link #CLIENT_ERROR}.
 *
 * <pre>{@code
 * FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
 *     .step(Fallback.staticText("The assistant is busy, please try again shortly."))
 *     .triggers(EnumSet.of(FallbackTrigger.BREAKER_OPEN, FallbackTrigger.REJECTED))
 *     .build();
 * }</pre>
 */
public enum FallbackTrigger {

	/** The circuit breaker refused the call. */
	BREAKER_OPEN,
	/** Admission refused the request: lane queue full, queue wait timed out, lanes disposed. */
	REJECTED,
	/**
	 * A budget refused the request before anything was sent: its tenant is over a budget, or its
	 * provider key would have the first attempt wait longer than allowed
	 * ({@code AdmissionRejectedException} with reason {@code BUDGET}). Leave it out of a chain's
	 * triggers to hand the refusal, with its {@code retryAfter}, to the caller (an HTTP 429) instead
	 * of answering it from a cheaper source.
	 */
	BUDGET,
	/** Every retry failed before the first token (or the retry budget was spent). */
	RETRIES_EXHAUSTED,
	/** The first-token deadline passed before any content arrived. */
	STALLED_BEFORE_FIRST_TOKEN,
	/**
	 * The request itself was refused (400/401/403/404, prompt too large). Off by default: another
	 * source rarely fixes a bad request, and hiding it hides a bug.
	 */
	CLIENT_ERROR,
	/**
	 * An output validator rejected the realtime answer before any of it reached the subscriber
	 * (an empty or filtered answer, a held structured answer that did not match its schema), and
	 * no retry was left or allowed.
	 */
	INVALID_OUTPUT,
	/**
	 * The load governor's level sends the request's priority to cheaper sources first (or to the
	 * static answer only): the steps of those sources are walked before the live model is asked,
	 * which answers when none of them does.
	 */
	LOAD;

	/** @return a new mutable set of the default triggers: all but {@link #CLIENT_ERROR} */
	public static EnumSet<FallbackTrigger> defaults() {
		return EnumSet.complementOf(EnumSet.of(CLIENT_ERROR));
	}
}
