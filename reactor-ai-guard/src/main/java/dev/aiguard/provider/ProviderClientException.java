package dev.aiguard.provider;

import org.jspecify.annotations.Nullable;

/**
 * The provider refused the request itself: HTTP 4xx other than 429 and context length (400
 * invalid request, 401 bad key, 403, 404 unknown model, 413, 422...), or an exhausted quota.
 * Not retryable, except 408 and 409, which the official SDKs retry too. Not the provider's fault:
 * a breaker ignores it by default.
 *
 * <pre>{@code
 * catch (ProviderClientException e) {
 *     if (e.status() == 401) alertOps("model API key rejected");
 * }
 * }</pre>
 */
public final class ProviderClientException extends ProviderException {

	private static final long serialVersionUID = 1L;

	public ProviderClientException(String provider, int status, @Nullable String errorType,
			@Nullable String errorCode, String message) {
		super(provider, status, errorType, errorCode, message, null, null);
	}

	@Override
	public boolean retryable() {
		return status() == 408 || status() == 409;
	}
}
