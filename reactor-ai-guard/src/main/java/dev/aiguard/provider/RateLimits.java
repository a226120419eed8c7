package dev.aiguard.provider;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * What a provider's rate-limit headers said: OpenAI's {@code x-ratelimit-limit-requests},
 * {@code x-ratelimit-remaining-tokens}, {@code x-ratelimit-reset-tokens: 6m0s}... or Anthropic's
 * {@code anthropic-ratelimit-requests-remaining}... Unknown numbers are -1, unknown resets
 * {@code null}.
 *
 * <pre>{@code
 * RateLimits limits = rateLimited.rateLimits();
 * if (limits.remainingTokens() == 0 && limits.resetTokens() != null) {
 *     pauseBatchJobsFor(limits.resetTokens());
 * }
 * }</pre>
 *
 * @param limitRequests requests allowed per window, or -1
 * @param remainingRequests requests left in the window, or -1
 * @param resetRequests time until the request window resets, or {@code null}
 * @param limitTokens tokens allowed per window, or -1
 * @param remainingTokens tokens left in the window, or -1
 * @param resetTokens time until the token window resets, or {@code null}
 */
public record RateLimits(long limitRequests, long remainingRequests, @Nullable Duration resetRequests,
		long limitTokens, long remainingTokens, @Nullable Duration resetTokens) {

	/** No rate-limit header was present. */
	public static final RateLimits UNKNOWN = new RateLimits(-1, -1, null, -1, -1, null);

	/** @return whether any header was present */
	public boolean isKnown() {
		return !equals(UNKNOWN);
	}
}
