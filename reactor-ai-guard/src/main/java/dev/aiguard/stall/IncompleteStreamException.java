package dev.aiguard.stall;

import dev.aiguard.core.RetryHint;

/**
 * The upstream completed without a terminal marker and without a finish reason: the answer was
 * silently truncated (a proxy closed the connection, the server crashed between chunks...).
 */
public class IncompleteStreamException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final long tokensReceived;

	public IncompleteStreamException(long tokensReceived) {
		super("stream completed without a terminal marker after " + tokensReceived + " token(s)", null, false, false);
		this.tokensReceived = tokensReceived;
	}

	/** @return content chunks received before the stream ended */
	public long tokensReceived() {
		return tokensReceived;
	}

	/** @return {@code true}: the same request, sent again, may well stream to the end */
	@Override
	public boolean retryable() {
		return true;
	}
}
