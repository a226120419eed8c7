package dev.aiguard.admission;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

import dev.aiguard.core.Priority;
import dev.aiguard.core.RetryHint;
import org.jspecify.annotations.Nullable;

/**
 * A request could not enter its lane, the load governor shed it, or a budget refused it. Cheap: no stack trace. As a
 * {@link RetryHint} it is retryable unless the lanes are disposed, and a shed request carries how
 * long to wait before asking again ({@link #retryAfter()}), for a {@code Retry-After} header.
 *
 * <pre>{@code
 * client.stream(request)
 *     .transform(lanes.admit())
 *     .onErrorResume(AdmissionRejectedException.class,
 *         e -> e.reason() == Reason.QUEUE_FULL ? busyAnswer() : Flux.error(e));
 * }</pre>
 */
public class AdmissionRejectedException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	/** Why admission was refused. */
	public enum Reason {
		/** The lane's wait queue was full. */
		QUEUE_FULL,
		/** The request waited longer than the lane's maximum queue wait. */
		WAIT_TIMEOUT,
		/** The lanes were disposed. */
		DISPOSED,
		/** The load governor shed the request's priority at the current load level. */
		SHED,
		/**
		 * A budget refused the request: its tenant is over a budget, or its provider key's limit
		 * would have it wait longer than allowed. {@link #retryAfter()} says when the budget has
		 * room again, when that is known.
		 */
		BUDGET
	}

	private final Priority priority;
	private final Reason reason;
	@Nullable
	private final Duration retryAfter;

	/**
	 * @param priority the refused request's priority
	 * @param reason why it was refused
	 * @param message what happened, with the limit that refused it
	 */
	public AdmissionRejectedException(Priority priority, Reason reason, String message) {
		this(priority, reason, message, null);
	}

	/**
	 * @param priority the refused request's priority
	 * @param reason why it was refused
	 * @param message what happened, with the limit that refused it
	 * @param retryAfter how long the caller should wait before asking again, or {@code null}
	 * @throws IllegalArgumentException when {@code retryAfter} is negative
	 */
	public AdmissionRejectedException(Priority priority, Reason reason, String message, @Nullable Duration retryAfter) {
		super(message, null, false, false);
		this.priority = Objects.requireNonNull(priority, "priority");
		this.reason = Objects.requireNonNull(reason, "reason");
		if (retryAfter != null && retryAfter.isNegative()) {
			throw new IllegalArgumentException("retryAfter must not be negative, was " + retryAfter);
		}
		this.retryAfter = retryAfter;
	}

	public Priority priority() {
		return priority;
	}

	public Reason reason() {
		return reason;
	}

	/** @return false only when the lanes are disposed: a later request may be admitted otherwise */
	@Override
	public boolean retryable() {
		return reason != Reason.DISPOSED;
	}

	/** @return how long to wait before asking again, when the refusal says (a shed request does) */
	@Override
	public Optional<Duration> retryAfter() {
		return Optional.ofNullable(retryAfter);
	}
}
