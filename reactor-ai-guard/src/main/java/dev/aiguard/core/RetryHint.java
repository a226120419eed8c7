package dev.aiguard.core;

import java.time.Duration;
import java.util.Optional;

/**
 * Implemented by exceptions that know whether sending the same request again can help, and how
 * long the server asked the client to wait. {@link dev.aiguard.retry.RetryRules#DEFAULT_RETRYABLE} trusts the answer,
 * and {@link dev.aiguard.retry.RetryRules#delayBefore} honours the wait.
 *
 * <pre>{@code
 * final class QuotaPausedException extends RuntimeException implements RetryHint {
 *     public boolean retryable() { return true; }
 *     public Optional<Duration> retryAfter() { return Optional.of(Duration.ofSeconds(2)); }
 * }
 * }</pre>
 */
public interface RetryHint {

	/** @return whether the same request, sent again, may succeed */
	boolean retryable();

	/** @return how long the server asked to wait before a retry ({@code Retry-After}), if it said */
	default Optional<Duration> retryAfter() {
		return Optional.empty();
	}
}
