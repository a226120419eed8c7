package dev.aiguard.admission;

import dev.aiguard.core.Priority;

/**
 * A stream running on a borrowed, more urgent lane's permit was stopped so that a more urgent
 * request could run. The guard never retries it (the permit is gone); the caller may try again later.
 *
 * <pre>{@code
 * batchClient.stream(request)
 *     .transform(lanes.admit(Priority.P2))
 *     .retryWhen(Retry.backoff(5, Duration.ofSeconds(2)).filter(PreemptedException.class::isInstance));
 * }</pre>
 */
public class PreemptedException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final Priority priority;
	private final Priority lane;

	public PreemptedException(Priority priority, Priority lane) {
		super(priority + " stream preempted on borrowed " + lane + " capacity", null, false, false);
		this.priority = priority;
		this.lane = lane;
	}

	/** @return the priority of the preempted request */
	public Priority priority() {
		return priority;
	}

	/** @return the lane whose permit it had borrowed */
	public Priority lane() {
		return lane;
	}
}
