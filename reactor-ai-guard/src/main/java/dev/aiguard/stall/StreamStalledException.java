package dev.aiguard.stall;

import dev.aiguard.core.RetryHint;

import java.time.Duration;
import dev.aiguard.core.StallPhase;

/**
 * A stream passed one of its {@link StallSpec} deadlines: the upstream was cancelled and the
 * stream failed with this. Carries what a caller needs to decide about a retry.
 */
public class StreamStalledException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final StallPhase phase;
	private final long tokensReceived;
	private final Duration elapsed;

	public StreamStalledException(StallPhase phase, long tokensReceived, Duration elapsed) {
		super("stream stalled (" + phase + ") after " + tokensReceived + " token(s) and " + elapsed.toMillis() + " ms",
				null, false, false);
		this.phase = phase;
		this.tokensReceived = tokensReceived;
		this.elapsed = elapsed;
	}

	/** @return which deadline passed */
	public StallPhase phase() {
		return phase;
	}

	/** @return content chunks received before the stall */
	public long tokensReceived() {
		return tokensReceived;
	}

	/** @return time from subscription to the stall */
	public Duration elapsed() {
		return elapsed;
	}

	/** @return {@code true}: the same request, sent again, may well stream to the end */
	@Override
	public boolean retryable() {
		return true;
	}
}
