package dev.aiguard.breaker;

import dev.aiguard.core.Priority;

/**
 * What a guard asks for permission before each attempt: one {@link CircuitBreaker}, or a
 * {@link BreakerPath} through a {@link BreakerTree} (one permit per level, settled together). The
 * permit is settled exactly once with the attempt's outcome.
 *
 * <pre>{@code
 * BreakerGate gate = tree.path("openai", "gpt-4o");     // or a plain CircuitBreaker
 * BreakerPermit permit;
 * try {
 *     permit = gate.acquire(Priority.P0);
 * }
 * catch (BreakerOpenException refused) {
 *     return fallback(refused.breakerName());
 * }
 * // ... at the attempt's end, exactly once:
 * permit.record(Outcome.SUCCESS, timeToFirstTokenNanos);
 * }</pre>
 */
public interface BreakerGate {

	/** @return the gate's name: the breaker's, or the path's ({@code tree/provider/endpoint}) */
	String name();

	/**
	 * Asks to make one call at {@code priority}.
	 *
	 * @param priority the call's priority (it matters for priority-aware probing only)
	 * @return a permit to settle exactly once
	 * @throws BreakerOpenException when refused, naming the breaker that refused and its state (no
	 *         stack trace; the refusal is already counted and reported)
	 */
	BreakerPermit acquire(Priority priority);

	/**
	 * @return whether a breaker behind the gate allows long prompts a later first token
	 *         ({@link BreakerConfig#slowTimeToFirstTokenPerPromptToken()}), so the caller should tell
	 *         the permit the prompt's size
	 */
	boolean weighsPromptTokens();
}
