package dev.aiguard.breaker;

/**
 * Receives a breaker's {@link BreakerEvent}s. Called synchronously on the thread that caused the event
 * (often an event loop), so it must not block; hand heavy work to another thread. A listener that
 * throws is isolated: the exception is logged and every other listener, and the call, go on.
 *
 * <pre>{@code
 * breaker.addListener(event -> {
 *     if (event instanceof BreakerEvent.StateTransition t) {
 *         log.warn("breaker {} {} -> {}: {}", t.breakerName(), t.from(), t.to(), t.reason());
 *     }
 * });
 * }</pre>
 */
@FunctionalInterface
public interface BreakerListener {

	/** @param event what happened */
	void onEvent(BreakerEvent event);
}
