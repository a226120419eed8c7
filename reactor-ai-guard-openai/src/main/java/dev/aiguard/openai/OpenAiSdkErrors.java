package dev.aiguard.openai;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.openai.core.JsonValue;
import com.openai.core.ObjectMappers;
import com.openai.core.http.Headers;
import com.openai.errors.OpenAIInvalidDataException;
import com.openai.errors.OpenAIIoException;
import com.openai.errors.OpenAIServiceException;
import com.openai.errors.SseException;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderFormatException;

/**
 * Turns the errors of the official OpenAI Java SDK into the library's typed
 * {@link ProviderException}s, so the guard's retry rules, {@code Retry-After} waits, breaker and
 * truncation see what they would see from the library's own client.
 *
 * <pre>{@code
 * Flux<ChatCompletionChunk> chunks = ...;                   // any Flux fed by the SDK
 * chunks.onErrorMap(OpenAiSdkErrors::map)
 *     .transform(AiGuard.of(policy, OpenAiChunks.INSPECTOR));   // OpenAiStreams does this for you
 *
 * catch (CompletionException e) {                           // a future of the SDK failed
 *     throw Exceptions.propagate(OpenAiSdkErrors.map(e));
 * }
 * }</pre>
 *
 * <table>
 * <caption>SDK error to library error</caption>
 * <tr><th>SDK error</th><th>becomes</th></tr>
 * <tr><td>{@link CompletionException}, {@link ExecutionException} around an error</td><td>the error inside, mapped</td></tr>
 * <tr><td>{@link SseException} (an error event in a {@code 200} stream)</td><td>{@link ProviderErrors#inBand}: a
 * {@code ProviderStreamException}, or a rate-limit / overload / context-length error when the event says so</td></tr>
 * <tr><td>other {@link OpenAIServiceException} (an HTTP status: {@code RateLimitException},
 * {@code BadRequestException}, {@code InternalServerException}...)</td><td>{@link ProviderErrors#fromHttp} with the
 * status, the response headers ({@code Retry-After}, {@code x-ratelimit-*}) and the error body</td></tr>
 * <tr><td>{@link OpenAIIoException}, {@link IOException}, {@link UncheckedIOException} (refused, reset, premature
 * close, read timeout)</td><td>{@link ProviderConnectionException}, the original error as its cause</td></tr>
 * <tr><td>{@link OpenAIInvalidDataException} (a chunk or body the SDK could not read)</td><td>{@link ProviderFormatException},
 * not retryable</td></tr>
 * <tr><td>a {@link ProviderException}, anything else</td><td>unchanged</td></tr>
 * </table>
 *
 * <p>Every provider text that goes into a mapped exception (the error body, the in-band event's
 * message, a transport error's message) is scrubbed first ({@link Secrets#scrub}): the secrets
 * given to {@link #map(Throwable, String...)} (the client's API key) and anything shaped like a
 * credential become {@value Secrets#REDACTED}. A transport error keeps the SDK's exception as its
 * cause unless a message in that exception's chain holds a secret; then the scrubbed message
 * stands alone.
 */
public final class OpenAiSdkErrors {

	/** The provider name the mapped exceptions carry. */
	public static final String PROVIDER = "openai";

	/** How many wrappers are looked through before giving up; a cause cycle cannot loop. */
	private static final int MAX_WRAPPERS = 8;

	private static final String[] NO_SECRETS = new String[0];

	private OpenAiSdkErrors() {
	}

	/**
	 * Maps an error of the SDK to the library's typed error; see the class documentation for the
	 * table. Never throws; returns the argument itself when it has nothing better. Provider texts
	 * are scrubbed of anything shaped like a credential; {@link #map(Throwable, String...)} also
	 * removes the secrets you know.
	 *
	 * @param error what the SDK threw or completed a future with
	 * @return the library's typed exception, or {@code error} unchanged
	 */
	public static Throwable map(Throwable error) {
		return map(error, NO_SECRETS);
	}

	/**
	 * As {@link #map(Throwable)}, with the secrets no mapped message may show.
	 *
	 * <pre>{@code
	 * catch (CompletionException e) {
	 *     throw Exceptions.propagate(OpenAiSdkErrors.map(e, apiKey));
	 * }
	 * }</pre>
	 *
	 * @param error what the SDK threw or completed a future with
	 * @param secrets the client's API key and any other secret a provider might echo (nulls skipped)
	 * @return the library's typed exception, or {@code error} unchanged
	 */
	public static Throwable map(Throwable error, String... secrets) {
		Objects.requireNonNull(error, "error");
		String[] known = secrets == null ? NO_SECRETS : secrets;
		Throwable e = unwrap(error);
		if (e instanceof ProviderException) {
			return e;
		}
		if (e instanceof SseException) {
			return inBand((SseException) e, known);
		}
		if (e instanceof OpenAIServiceException) {
			return fromHttp((OpenAIServiceException) e, known);
		}
		if (e instanceof OpenAIIoException || e instanceof IOException) {
			return connection(e, known);
		}
		if (e instanceof OpenAIInvalidDataException) {
			return new ProviderFormatException(PROVIDER,
					"the answer could not be read: " + Secrets.scrub(e.getMessage(), known), Secrets.inCauseChain(e, known) ? null : e);
		}
		return error;
	}

	/**
	 * Looks through the wrappers that futures and streams put around the real error. An
	 * {@link UncheckedIOException} is replaced by its {@link IOException}.
	 */
	private static Throwable unwrap(Throwable error) {
		Throwable e = error;
		for (int i = 0; i < MAX_WRAPPERS; i++) {
			boolean wrapper = e instanceof CompletionException || e instanceof ExecutionException
					|| e instanceof UncheckedIOException;
			if (!wrapper || e.getCause() == null) {
				return e;
			}
			e = e.getCause();
		}
		return e;
	}

	private static ProviderException inBand(SseException e, String[] secrets) {
		String message = errorMessage(e.body());
		return ProviderErrors.inBand(PROVIDER, e.type().orElse(null), e.code().orElse(null),
				Secrets.scrub(message != null ? message : e.getMessage(), secrets));
	}

	private static ProviderException fromHttp(OpenAIServiceException e, String[] secrets) {
		Headers headers = e.headers();
		Function<String, String> header = name -> {
			List<String> values = headers.values(name);
			return values.isEmpty() ? null : values.get(0);
		};
		return ProviderErrors.fromHttp(PROVIDER, e.statusCode(), header, Secrets.scrub(errorBody(e.body()), secrets));
	}

	private static ProviderConnectionException connection(Throwable e, String[] secrets) {
		Throwable cause = e instanceof OpenAIIoException && e.getCause() != null ? e.getCause() : e;
		String detail = cause.getMessage() == null ? "" : ": " + Secrets.scrub(cause.getMessage(), secrets);
		return new ProviderConnectionException(PROVIDER,
				"transport failed (" + cause.getClass().getSimpleName() + detail + ")",
				Secrets.inCauseChain(e, secrets) ? null : e);
	}

	/**
	 * The SDK keeps the inner error object of {@code {"error": {...}}} as the body; the library reads
	 * the whole envelope, so an object with a message, type or code is put back into one.
	 */
	static String errorBody(JsonValue body) {
		JsonNode node = toNode(body);
		if (node == null || node.isMissingNode() || node.isNull()) {
			return "";
		}
		if (node.isTextual()) {
			return node.asText();
		}
		if (node.isObject() && !node.has("error")
				&& (node.has("message") || node.has("type") || node.has("code"))) {
			ObjectNode envelope = JsonNodeFactory.instance.objectNode();
			envelope.set("error", node);
			node = envelope;
		}
		try {
			return ObjectMappers.jsonMapper().writeValueAsString(node);
		}
		catch (JsonProcessingException e) {
			return node.toString();
		}
	}

	private static String errorMessage(JsonValue body) {
		JsonNode node = toNode(body);
		if (node == null || !node.isObject()) {
			return null;
		}
		JsonNode message = node.has("error") && node.get("error").isObject() ? node.get("error").get("message")
				: node.get("message");
		return message != null && message.isTextual() ? message.asText() : null;
	}

	private static JsonNode toNode(JsonValue body) {
		if (body == null || body.isMissing() || body.isNull()) {
			return null;
		}
		try {
			return body.convert(JsonNode.class);
		}
		catch (RuntimeException notConvertible) {
			// a body the SDK could not read as JSON still has its text, when it has any
			Optional<?> text = body.asString();
			return text.isPresent() ? JsonNodeFactory.instance.textNode(String.valueOf(text.get())) : null;
		}
	}
}
