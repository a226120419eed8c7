package dev.aiguard.validation;

import java.util.Objects;

import dev.aiguard.core.RetryHint;

/**
 * An output validator rejected the answer of an attempt. The attempt's outcome is
 * {@link dev.aiguard.core.Outcome#INVALID}; when the answer had already reached the subscriber the
 * request ends with a {@code PartialStreamException} wrapping this one (or the mid-stream
 * policy's notice).
 *
 * <pre>{@code
 * answer.onErrorResume(InvalidOutputException.class, e ->
 *         Flux.just(ChatChunk.token("No usable answer (" + e.validator() + ": " + e.reason() + ")")));
 * }</pre>
 *
 * Built without a stack trace: it describes an answer, not a place in the code.
 */
public class InvalidOutputException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final String validator;
	private final String reason;
	private final boolean retryable;

	/**
	 * A rejection that a retry of the same request is not expected to fix.
	 *
	 * @param validator the name of the validator that rejected the answer
	 * @param reason what is wrong with the answer
	 */
	public InvalidOutputException(String validator, String reason) {
		this(validator, reason, false);
	}

	/**
	 * @param validator the name of the validator that rejected the answer
	 * @param reason what is wrong with the answer
	 * @param retryable whether sending the request again may bring a valid answer
	 */
	public InvalidOutputException(String validator, String reason, boolean retryable) {
		super("output validator '" + Objects.requireNonNull(validator, "validator") + "' rejected the answer: "
				+ Objects.requireNonNull(reason, "reason"), null, false, false);
		this.validator = validator;
		this.reason = reason;
		this.retryable = retryable;
	}

	/** @return the name of the validator that rejected the answer */
	public String validator() {
		return validator;
	}

	/** @return what is wrong with the answer */
	public String reason() {
		return reason;
	}

	/** @return whether sending the request again may bring a valid answer */
	@Override
	public boolean retryable() {
		return retryable;
	}
}
