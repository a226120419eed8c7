package dev.aiguard.retry;

import dev.aiguard.core.RetryHint;

/**
 * A stream failed after some of its tokens had already reached the subscriber. The guard does not
 * resubscribe then (the user would see those tokens twice); with {@link MidStreamPolicy#fail()}
 * the subscriber receives this instead, wrapping the original failure.
 *
 * <pre>{@code
 * answer.doOnError(PartialStreamException.class, e ->
 *         ui.showBanner("The answer was cut off after " + e.tokensDelivered() + " tokens."))
 * }</pre>
 *
 * Never retryable ({@link #retryable()} is {@code false}), so a {@code retryWhen} further down
 * using {@link RetryRules#DEFAULT_RETRYABLE} does not replay the stream either.
 */
public class PartialStreamException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final long tokensDelivered;

	/**
	 * @param cause what ended the stream
	 * @param tokensDelivered content chunks the subscriber had received
	 */
	public PartialStreamException(Throwable cause, long tokensDelivered) {
		super("stream failed after " + tokensDelivered + " token(s) had reached the subscriber; not retried, "
				+ "to avoid duplicating them: " + cause, cause, true, false);
		this.tokensDelivered = tokensDelivered;
	}

	/** @return always {@code true}: the subscriber received part of an answer */
	public boolean partial() {
		return true;
	}

	/** @return content chunks the subscriber received before the failure */
	public long tokensDelivered() {
		return tokensDelivered;
	}

	/** @return {@code false}: resending would duplicate what the user already saw */
	@Override
	public boolean retryable() {
		return false;
	}
}
