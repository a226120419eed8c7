package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Retries of a policy, {@code aiguard.policies.<name>.retry}; without {@code max-attempts} the
 * policy never retries.
 *
 * <pre>
 * retry: { max-attempts: 3, min-backoff: 250ms, budget: true }
 * </pre>
 */
public class RetryProperties {

	/** Upstream calls for the start of an answer, the first one included (1 = no retry); unset: no retries. */
	@Nullable
	private Integer maxAttempts;

	/** Shortest backoff before a retry. Default: 500ms. */
	@Nullable
	private Duration minBackoff;

	/** Longest backoff before a retry. Default: 8s. */
	@Nullable
	private Duration maxBackoff;

	/** Longest provider Retry-After the guard waits for; a longer one fails the request. Default: 60s. */
	@Nullable
	private Duration maxRetryAfter;

	/** Jitter factor 0..1 (1 = full jitter). Default: 1. */
	@Nullable
	private Double jitter;

	/** Whether retries draw on the shared retry budget ({@code aiguard.retry-budget}). */
	private boolean budget;

	public @Nullable Integer getMaxAttempts() {
		return maxAttempts;
	}

	public void setMaxAttempts(@Nullable Integer maxAttempts) {
		this.maxAttempts = maxAttempts;
	}

	public @Nullable Duration getMinBackoff() {
		return minBackoff;
	}

	public void setMinBackoff(@Nullable Duration minBackoff) {
		this.minBackoff = minBackoff;
	}

	public @Nullable Duration getMaxBackoff() {
		return maxBackoff;
	}

	public void setMaxBackoff(@Nullable Duration maxBackoff) {
		this.maxBackoff = maxBackoff;
	}

	public @Nullable Duration getMaxRetryAfter() {
		return maxRetryAfter;
	}

	public void setMaxRetryAfter(@Nullable Duration maxRetryAfter) {
		this.maxRetryAfter = maxRetryAfter;
	}

	public @Nullable Double getJitter() {
		return jitter;
	}

	public void setJitter(@Nullable Double jitter) {
		this.jitter = jitter;
	}

	public boolean isBudget() {
		return budget;
	}

	public void setBudget(boolean budget) {
		this.budget = budget;
	}
}
