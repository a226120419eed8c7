package dev.aiguard.provider;

import org.jspecify.annotations.Nullable;

/**
 * The transport failed: connection refused or reset, closed before the response ended
 * (premature close, mid-event), or no response headers in time. Retryable. The cause is the
 * original transport exception.
 *
 * <pre>{@code
 * flux.retryWhen(Retry.max(1).filter(ProviderConnectionException.class::isInstance));
 * }</pre>
 */
public final class ProviderConnectionException extends ProviderException {

	private static final long serialVersionUID = 1L;

	public ProviderConnectionException(String provider, String message, @Nullable Throwable cause) {
		super(provider, -1, null, null, message, null, cause);
	}

	@Override
	public boolean retryable() {
		return true;
	}
}
