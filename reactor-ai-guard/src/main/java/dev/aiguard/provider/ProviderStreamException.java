package dev.aiguard.provider;

import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * An error event inside a {@code 200} stream ({@code data: {"error":{...}}} from OpenAI-compatible
 * servers, {@code event: error} from Anthropic) whose type is not rate limiting or overload, which
 * have their own exceptions. Retryable when its type says the server failed ({@code server_error},
 * {@code api_error}, {@code internal_error}, {@code timeout}...), not when it blames the request.
 *
 * <pre>{@code
 * catch (ProviderStreamException e) {
 *     log.warn("stream broke: {} {}", e.errorType(), e.getMessage());
 * }
 * }</pre>
 */
public final class ProviderStreamException extends ProviderException {

	private static final long serialVersionUID = 1L;

	private static final Set<String> SERVER_SIDE = Set.of("server_error", "api_error", "internal_error",
			"internal_server_error", "service_unavailable", "timeout", "timeout_error", "overloaded_error");

	public ProviderStreamException(String provider, @Nullable String errorType, @Nullable String errorCode,
			String message) {
		super(provider, -1, errorType, errorCode, message, null, null);
	}

	@Override
	public boolean retryable() {
		return errorType() == null || SERVER_SIDE.contains(errorType());
	}
}
