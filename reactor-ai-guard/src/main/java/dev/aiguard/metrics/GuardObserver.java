package dev.aiguard.metrics;

import dev.aiguard.core.Priority;
import reactor.util.context.ContextView;

/**
 * Follows each guarded request from start to end, for tracing: {@link #requestStarted} is called
 * once per request, when its priority is known, and returns the {@link RequestObserver} that hears
 * what happens to that request (admission, each attempt, backoffs, the breaker's decisions, fallback
 * steps, the end). {@link ObservationGuardObserver} turns this into a Micrometer {@code Observation}
 * (a span when tracing is on).
 *
 * <p>Calls are per request and per attempt, never per token. An observer that throws is isolated:
 * its exception goes to {@code Hooks.onErrorDropped}, and the request goes on.
 */
@FunctionalInterface
public interface GuardObserver {

	/**
	 * @param policy the policy's name
	 * @param priority the priority the request runs at
	 * @param context the subscriber's context (e.g. to find a parent observation)
	 * @return the observer of this request; {@link RequestObserver#NOOP} to ignore it
	 */
	RequestObserver requestStarted(String policy, Priority priority, ContextView context);

	/** @return an observer that ignores every request */
	static GuardObserver noop() {
		return NoopGuardObserver.INSTANCE;
	}
}
