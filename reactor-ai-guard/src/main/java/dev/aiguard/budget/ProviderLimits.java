package dev.aiguard.budget;

import java.util.Objects;

/**
 * A provider key's rate limits as the provider publishes them: requests and tokens per minute.
 * The guard throttles below them, so requests wait on the policy's timer instead of meeting a
 * {@code 429}. Immutable, copy-on-write; a limit left unset does not apply.
 *
 * <pre>{@code
 * ProviderLimits tier = ProviderLimits.unlimited().requestsPerMinute(500).tokensPerMinute(200_000);
 * }</pre>
 */
public final class ProviderLimits {

	private static final ProviderLimits UNLIMITED = new ProviderLimits(0, 0);

	private final long requestsPerMinute;
	private final long tokensPerMinute;

	private ProviderLimits(long requestsPerMinute, long tokensPerMinute) {
		this.requestsPerMinute = requestsPerMinute;
		this.tokensPerMinute = tokensPerMinute;
	}

	/** @return no limit */
	public static ProviderLimits unlimited() {
		return UNLIMITED;
	}

	/** @param requests {@code > 0} */
	public ProviderLimits requestsPerMinute(long requests) {
		return new ProviderLimits(TenantLimits.positive("requestsPerMinute", requests), tokensPerMinute);
	}

	/** @param tokens {@code > 0}, prompt and completion together */
	public ProviderLimits tokensPerMinute(long tokens) {
		return new ProviderLimits(requestsPerMinute, TenantLimits.positive("tokensPerMinute", tokens));
	}

	/** @return requests per minute, {@code 0} when unlimited */
	public long requestsPerMinute() {
		return requestsPerMinute;
	}

	/** @return tokens per minute, {@code 0} when unlimited */
	public long tokensPerMinute() {
		return tokensPerMinute;
	}

	/** @return whether any limit is set */
	public boolean limited() {
		return requestsPerMinute > 0 || tokensPerMinute > 0;
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof ProviderLimits p && p.requestsPerMinute == requestsPerMinute
				&& p.tokensPerMinute == tokensPerMinute;
	}

	@Override
	public int hashCode() {
		return Objects.hash(requestsPerMinute, tokensPerMinute);
	}

	@Override
	public String toString() {
		if (!limited()) {
			return "unlimited";
		}
		return (requestsPerMinute > 0 ? requestsPerMinute + " requests/min" : "")
				+ (requestsPerMinute > 0 && tokensPerMinute > 0 ? ", " : "")
				+ (tokensPerMinute > 0 ? tokensPerMinute + " tokens/min" : "");
	}
}
