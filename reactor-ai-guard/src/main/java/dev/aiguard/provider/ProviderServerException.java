package dev.aiguard.provider;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * The provider failed: HTTP 5xx (500, 502, 503, 504...), or an unexpected non-error status.
 * Retryable when the status is 5xx.
 *
 * <pre>{@code
 * catch (ProviderServerException e) {
 *     if (e.status() == 503) { ... }
 * }
 * }</pre>
 */
public final class ProviderServerException extends ProviderException {

	private static final long serialVersionUID = 1L;

	public ProviderServerException(String provider, int status, @Nullable String errorType, @Nullable String errorCode,
			String message, @Nullable Duration retryAfter) {
		super(provider, status, errorType, errorCode, message, retryAfter, null);
	}

	@Override
	public boolean retryable() {
		return status() >= 500;
	}
}
