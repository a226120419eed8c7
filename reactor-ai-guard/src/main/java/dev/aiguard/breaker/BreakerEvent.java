package dev.aiguard.breaker;

import java.time.Instant;

/**
 * What a {@link CircuitBreaker} tells its {@link BreakerListener}s. Events are created only when
 * someone listens, never per token.
 *
 * <pre>{@code
 * breaker.addListener(event -> {
 *     if (event instanceof BreakerEvent.ConfigChanged c) {
 *         audit.record(c.at(), c.breakerName(), c.oldConfig(), c.newConfig(), c.reason());
 *     }
 * });
 * }</pre>
 */
public sealed interface BreakerEvent
		permits BreakerEvent.StateTransition, BreakerEvent.CallRejected, BreakerEvent.ConfigChanged {

	/** @return the breaker's name */
	String breakerName();

	/** @return the breaker clock's reading when it happened */
	long nanoTime();

	/**
	 * The breaker changed state.
	 *
	 * @param reason why, in words (e.g. {@code "failure rate 0.55 >= 0.5"}, {@code "operator"})
	 * @param window the window at the moment of the transition
	 */
	record StateTransition(String breakerName, long nanoTime, BreakerState from, BreakerState to, String reason,
			BreakerSnapshot window) implements BreakerEvent {
	}

	/**
	 * The breaker refused a call.
	 *
	 * @param state the state that refused
	 */
	record CallRejected(String breakerName, long nanoTime, BreakerState state) implements BreakerEvent {
	}

	/**
	 * The breaker was reconfigured at runtime: the audit trail of who changed what, and why.
	 *
	 * @param at wall-clock time of the change
	 * @param reason what the caller of {@link CircuitBreaker#reconfigure} said
	 */
	record ConfigChanged(String breakerName, long nanoTime, Instant at, BreakerConfig oldConfig,
			BreakerConfig newConfig, String reason) implements BreakerEvent {
	}
}
