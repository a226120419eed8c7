package dev.aiguard.provider;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * HTTP 429 (or an in-band rate-limit error): too many requests or tokens for the account.
 * Retryable; {@link #retryAfter()} says when ({@code retry-after-ms}, else {@code Retry-After} in
 * seconds or as an HTTP date), {@link #rateLimits()} what the {@code x-ratelimit-*} headers said.
 *
 * <pre>{@code
 * catch (RateLimitedException e) {
 *     Duration wait = e.retryAfter().orElse(Duration.ofSeconds(1));
 *     long tokensLeft = e.rateLimits().remainingTokens();
 * }
 * }</pre>
 *
 * An exhausted quota ({@code insufficient_quota}) is not this: no wait fixes it, so it is a
 * {@link ProviderClientException}.
 */
public final class RateLimitedException extends ProviderException {

	private static final long serialVersionUID = 1L;

	private final transient RateLimits rateLimits;

	public RateLimitedException(String provider, int status, @Nullable String errorType, @Nullable String errorCode,
			String message, @Nullable Duration retryAfter, RateLimits rateLimits) {
		super(provider, status, errorType, errorCode, message, retryAfter, null);
		this.rateLimits = Objects.requireNonNull(rateLimits, "rateLimits");
	}

	@Override
	public boolean retryable() {
		return true;
	}

	/** @return the rate-limit headers of the response ({@link RateLimits#UNKNOWN} when none) */
	public RateLimits rateLimits() {
		return rateLimits;
	}
}
