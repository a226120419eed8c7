package dev.aiguard.provider;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * The provider is overloaded: HTTP 529, or an {@code overloaded_error} (Anthropic sends it
 * in-band too, after a {@code 200}). Retryable, after a pause.
 *
 * <pre>{@code
 * flux.onErrorResume(ProviderOverloadedException.class, e -> fallbackModel.stream(request));
 * }</pre>
 */
public final class ProviderOverloadedException extends ProviderException {

	private static final long serialVersionUID = 1L;

	public ProviderOverloadedException(String provider, int status, @Nullable String errorType, String message,
			@Nullable Duration retryAfter) {
		super(provider, status, errorType, null, message, retryAfter, null);
	}

	@Override
	public boolean retryable() {
		return true;
	}
}
