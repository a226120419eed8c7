package dev.aiguard.admission;

import dev.aiguard.core.Priority;

/**
 * A request could not enter its lane. Cheap: no stack trace.
 *
 * <pre>{@code
 * client.stream(request)
 *     .transform(lanes.admit())
 *     .onErrorResume(AdmissionRejectedException.class,
 *         e -> e.reason() == Reason.QUEUE_FULL ? busyAnswer() : Flux.error(e));
 * }</pre>
 */
public class AdmissionRejectedException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	/** Why admission was refused. */
	public enum Reason {
		/** The lane's wait queue was full. */
		QUEUE_FULL,
		/** The request waited longer than the lane's maximum queue wait. */
		WAIT_TIMEOUT,
		/** The lanes were disposed. */
		DISPOSED,
		/** Refused to shed load; no component of the library refuses with it yet, a caller's own admission may. */
		SHED
	}

	private final Priority priority;
	private final Reason reason;

	public AdmissionRejectedException(Priority priority, Reason reason, String message) {
		super(message, null, false, false);
		this.priority = priority;
		this.reason = reason;
	}

	public Priority priority() {
		return priority;
	}

	public Reason reason() {
		return reason;
	}
}
