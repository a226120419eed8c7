package dev.aiguard.provider;

import dev.aiguard.core.RetryHint;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * A model provider refused or failed a request, before streaming (an HTTP status other than
 * 200) or during it (an error event after a {@code 200}). Subclasses say what kind of failure it
 * was; every one says whether a retry can help and carries what a retry needs.
 *
 * <pre>{@code
 * client.stream(request)
 *     .retryWhen(Retry.backoff(2, Duration.ofMillis(500))
 *         .filter(ProviderErrors::isRetryable));
 *
 * catch (ProviderException e) {
 *     log.warn("{} said {} ({}), retryable={}", e.provider(), e.status(), e.errorType(), e.retryable());
 * }
 * }</pre>
 *
 * <p>These exceptions carry no stack trace: they are expected, frequent under load, and the trace
 * of an event-loop callback says nothing. Their messages never contain credentials.
 */
public abstract class ProviderException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final String provider;
	private final int status;
	private final @Nullable String errorType;
	private final @Nullable String errorCode;
	private final transient @Nullable Duration retryAfter;

	/**
	 * @param provider who answered ({@code openai}, {@code anthropic}, ...)
	 * @param status the HTTP status, or -1 when the error came in-band or from the transport
	 * @param errorType the provider's error type ({@code invalid_request_error}...), or {@code null}
	 * @param errorCode the provider's error code ({@code context_length_exceeded}...), or {@code null}
	 * @param message what went wrong, free of credentials
	 * @param retryAfter how long the provider asked us to wait, or {@code null}
	 * @param cause the underlying error, or {@code null}
	 */
	protected ProviderException(String provider, int status, @Nullable String errorType, @Nullable String errorCode,
			String message, @Nullable Duration retryAfter, @Nullable Throwable cause) {
		super(message, cause, false, false);
		this.provider = Objects.requireNonNull(provider, "provider");
		this.status = status;
		this.errorType = errorType;
		this.errorCode = errorCode;
		this.retryAfter = retryAfter;
	}

	/** @return whether sending the same request again may succeed */
	public abstract boolean retryable();

	/** @return who answered ({@code openai}, {@code anthropic}, ...) */
	public String provider() {
		return provider;
	}

	/** @return the HTTP status, or -1 for an in-band (mid-stream) or transport error */
	public int status() {
		return status;
	}

	/** @return whether the error arrived as an event inside a {@code 200} stream */
	public boolean inBand() {
		return status < 0 && !(this instanceof ProviderConnectionException);
	}

	/** @return the provider's error type ({@code invalid_request_error}, {@code overloaded_error}...), or {@code null} */
	public @Nullable String errorType() {
		return errorType;
	}

	/** @return the provider's error code ({@code context_length_exceeded}...), or {@code null} */
	public @Nullable String errorCode() {
		return errorCode;
	}

	/** @return how long the provider asked to wait before a retry ({@code Retry-After}), if it said */
	public Optional<Duration> retryAfter() {
		return Optional.ofNullable(retryAfter);
	}
}
