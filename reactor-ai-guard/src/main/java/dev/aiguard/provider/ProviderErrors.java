package dev.aiguard.provider;

import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import dev.aiguard.core.RetryHint;
import reactor.core.Exceptions;

import org.jspecify.annotations.Nullable;

/**
 * Classifies provider errors: an HTTP status, its headers and body (OpenAI or Anthropic shape)
 * become a typed {@link ProviderException}; any error becomes an {@link dev.aiguard.core.Outcome} and a retry
 * decision.
 *
 * <pre>{@code
 * ProviderException e = ProviderErrors.fromHttp("openai", 429, response.headers()::get, body);
 * // e is a RateLimitedException with retryAfter() = 2 s
 *
 * GuardPolicy policy = GuardPolicy.builder("chat").errorClassifier(ErrorClassifier::outcomeOf).build();
 * }</pre>
 *
 * <table>
 * <caption>HTTP status to exception</caption>
 * <tr><th>answer</th><th>exception</th><th>retryable</th><th>outcome</th></tr>
 * <tr><td>429 (not {@code insufficient_quota})</td><td>{@link RateLimitedException}</td><td>yes</td><td>FAILURE</td></tr>
 * <tr><td>529, {@code overloaded_error}</td><td>{@link ProviderOverloadedException}</td><td>yes</td><td>FAILURE</td></tr>
 * <tr><td>5xx</td><td>{@link ProviderServerException}</td><td>yes</td><td>FAILURE</td></tr>
 * <tr><td>4xx saying the prompt is too long</td><td>{@link ContextLengthExceededException}</td><td>no</td><td>CLIENT_ERROR</td></tr>
 * <tr><td>other 4xx, {@code insufficient_quota}</td><td>{@link ProviderClientException}</td><td>408, 409 only</td><td>CLIENT_ERROR</td></tr>
 * <tr><td>reset, premature close, no headers in time</td><td>{@link ProviderConnectionException}</td><td>yes</td><td>FAILURE</td></tr>
 * <tr><td>error event in a 200 stream</td><td>{@link ProviderStreamException} (or the two above)</td><td>per type</td><td>FAILURE</td></tr>
 * </table>
 *
 * {@link #isRetryable} needs neither Jackson nor Netty; parsing a body does
 * need Jackson.
 */
public final class ProviderErrors {

	/** Longest provider message kept in an exception message. */
	static final int MAX_MESSAGE_CHARS = 500;

	private ProviderErrors() {
	}

	/**
	 * Classifies a non-200 HTTP answer, reading {@code Retry-After} dates against the system clock.
	 *
	 * @param provider who answered, e.g. {@code openai}
	 * @param status the HTTP status
	 * @param header looks a response header up by lower-case name, {@code null} when absent
	 *        (e.g. {@code response.responseHeaders()::get})
	 * @param body the response body, possibly truncated or empty; JSON of either provider or text
	 */
	public static ProviderException fromHttp(String provider, int status, Function<String, String> header,
			String body) {
		return fromHttp(provider, status, header, body, Clock.systemUTC());
	}

	/**
	 * As {@link #fromHttp(String, int, Function, String)}, with the clock that HTTP-date
	 * {@code Retry-After} and Anthropic reset timestamps are measured against.
	 */
	public static ProviderException fromHttp(String provider, int status, Function<String, String> header,
			String body, Clock clock) {
		Objects.requireNonNull(provider, "provider");
		Objects.requireNonNull(header, "header");
		Objects.requireNonNull(clock, "clock");
		ErrorBodies.Parsed parsed = ErrorBodies.parse(body == null ? "" : body);
		String message = describe(status, parsed.message());
		String type = parsed.type();
		String code = parsed.code();
		Duration retryAfter = RetryHeaders.retryAfter(header, clock);
		if ("overloaded_error".equals(type) || status == 529) {
			return new ProviderOverloadedException(provider, status, type, message, retryAfter);
		}
		if (status == 429) {
			if ("insufficient_quota".equals(code) || "insufficient_quota".equals(type)) {
				return new ProviderClientException(provider, status, type, code, message);
			}
			return new RateLimitedException(provider, status, type, code, message, retryAfter,
					RetryHeaders.rateLimits(header, clock));
		}
		if (status >= 400 && status < 500) {
			if (ContextLengthExceededException.matches(code, parsed.message())) {
				return ContextLengthExceededException.parse(provider, status, type, code, message, parsed.message());
			}
			return new ProviderClientException(provider, status, type, code, message);
		}
		return new ProviderServerException(provider, status, type, code, message, retryAfter);
	}

	/**
	 * Classifies an error event that arrived inside a {@code 200} stream.
	 *
	 * @param provider who sent it
	 * @param errorType the event's error type ({@code server_error}, {@code overloaded_error}...), or {@code null}
	 * @param errorCode the event's error code, or {@code null}
	 * @param message the event's message, or {@code null}
	 */
	public static ProviderException inBand(String provider, @Nullable String errorType, @Nullable String errorCode,
			String message) {
		Objects.requireNonNull(provider, "provider");
		String text = "in-band error" + (errorType != null ? " " + errorType : "") + ": "
				+ excerpt(message == null ? "(no message)" : message);
		if ("overloaded_error".equals(errorType)) {
			return new ProviderOverloadedException(provider, -1, errorType, text, null);
		}
		if ("rate_limit_error".equals(errorType) || "rate_limit_exceeded".equals(errorCode)) {
			return new RateLimitedException(provider, -1, errorType, errorCode, text, null, RateLimits.UNKNOWN);
		}
		if (message != null && ContextLengthExceededException.matches(errorCode, message)) {
			return ContextLengthExceededException.parse(provider, -1, errorType, errorCode, text, message);
		}
		return new ProviderStreamException(provider, errorType, errorCode, text);
	}

	/**
	 * Whether sending the request again may help: a {@link ProviderException} says so itself;
	 * stalls, truncated streams, I/O errors and timeouts (anywhere in the cause chain) are
	 * retryable; anything else is not.
	 */
	public static boolean isRetryable(Throwable error) {
		Throwable e = Exceptions.unwrap(Objects.requireNonNull(error, "error"));
		if (e instanceof RetryHint) {
			// typed provider errors say it themselves, and so do stalled and incomplete streams
			return ((RetryHint) e).retryable();
		}
		for (int depth = 0; e != null && depth < 8; depth++, e = e.getCause()) {
			if (e instanceof IOException || e instanceof TimeoutException) {
				return true;
			}
		}
		return false;
	}

	/** @return the wait the provider asked for, when the error is a {@link ProviderException} that carries one */
	public static Optional<Duration> retryAfter(Throwable error) {
		Throwable e = Exceptions.unwrap(Objects.requireNonNull(error, "error"));
		return e instanceof ProviderException ? ((ProviderException) e).retryAfter() : Optional.empty();
	}

	private static String describe(int status, String providerMessage) {
		String m = providerMessage == null || providerMessage.isBlank() ? "(no message)" : excerpt(providerMessage);
		return "HTTP " + status + ": " + m;
	}

	static String excerpt(String text) {
		String t = text.strip();
		return t.length() <= MAX_MESSAGE_CHARS ? t : t.substring(0, MAX_MESSAGE_CHARS) + "...";
	}
}
