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
