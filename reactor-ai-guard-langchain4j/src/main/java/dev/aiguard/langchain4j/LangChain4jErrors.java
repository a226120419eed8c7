package dev.aiguard.langchain4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;

import com.fasterxml.jackson.databind.JsonNode;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.langchain4j.exception.HttpException;
import dev.langchain4j.exception.TimeoutException;
import dev.langchain4j.exception.UnresolvedModelServerException;
import org.jspecify.annotations.Nullable;

/**
 * LangChain4j's errors to the library's typed provider errors, so the guard's retry, breaker and
 * truncation read them like the errors of its own clients, and with every provider text scrubbed
 * ({@link Secrets#scrub}) of the configured secrets and of anything shaped like a credential.
 *
 * <ul>
 * <li>An {@link HttpException} anywhere in the chain (LangChain4j's {@code RateLimitException},
 * {@code InternalServerException}, {@code InvalidRequestException}... wrap one) becomes
 * {@link ProviderErrors#fromHttp}: status, scrubbed body, and the headers the
 * {@link AbortableExchange} saw, so a 429 keeps its {@code Retry-After}.</li>
 * <li>An error event inside a {@code 200} stream becomes {@link ProviderErrors#inBand}, as in the
 * library's own codec: LangChain4j hands a {@code data: {"error":...}} event over unmapped
 * ({@link #inBand(JsonNode)}), and an {@code event: error} as a bare {@link RuntimeException} whose
 * message is the event's data.</li>
 * <li>No response in time ({@link TimeoutException}, {@link HttpTimeoutException}), an I/O error
 * (refused, reset, closed mid-stream) or an unresolvable host becomes a
 * {@link ProviderConnectionException} whose cause is the original, unless a message in the
 * original's chain holds a secret: then the scrubbed message stands alone.</li>
 * <li>Anything else passes through unchanged.</li>
 * </ul>
 * One instance per {@link LangChain4jStreams}: it holds only the provider's name and the secrets.
 */
final class LangChain4jErrors {

	private static final int MAX_DEPTH = 8;

	private final String provider;
	private final String[] secrets;

	LangChain4jErrors(String provider, String[] secrets) {
		this.provider = provider;
		this.secrets = secrets;
	}

	/** @return the provider name the typed errors carry */
	String provider() {
		return provider;
	}

	Throwable translate(Throwable error, AbortableExchange exchange) {
		HttpException http = find(error, HttpException.class);
		if (http != null) {
			int status = http.statusCode();
			return ProviderErrors.fromHttp(provider, status, exchange.headers(status), scrub(http.getMessage()));
		}
		ProviderException event = errorEvent(error);
		if (event != null) {
			return event;
		}
		if (find(error, TimeoutException.class) != null || find(error, HttpTimeoutException.class) != null) {
			return connection("no response in time: " + error.getMessage(), error);
		}
		if (find(error, UnresolvedModelServerException.class) != null
				|| find(error, UnresolvedAddressException.class) != null) {
			return connection("the model server's address did not resolve", error);
		}
		Throwable io = find(error, IOException.class);
		if (io == null) {
			io = find(error, UncheckedIOException.class);
		}
		if (io != null) {
			return connection("the connection failed: " + io, error);
		}
		return error;
	}

	/**
	 * @param root an event LangChain4j did not map, parsed ({@link RawEvents#object})
	 * @return the typed error when the event is an error object, else {@code null}
	 */
	@Nullable
	ProviderException inBand(JsonNode root) {
		JsonNode error = root.get("error");
		if (error == null || error.isNull()) {
			return null;
		}
		if (error.isTextual()) {
			return ProviderErrors.inBand(provider, null, null, scrub(error.asText()));
		}
		String message = RawEvents.text(error.get("message"));
		return ProviderErrors.inBand(provider, RawEvents.text(error.get("type")), RawEvents.text(error.get("code")),
				message == null ? null : scrub(message));
	}

	/** @return {@code text} without the configured secrets and anything shaped like a credential */
	String scrub(@Nullable String text) {
		return Secrets.scrub(text, secrets);
	}

	/**
	 * LangChain4j's OpenAI client reports an {@code event: error} as {@code new RuntimeException(data)}:
	 * a bare runtime exception without cause whose message is a JSON error object.
	 */
	@Nullable
	private ProviderException errorEvent(Throwable error) {
		if (error.getClass() != RuntimeException.class || error.getCause() != null) {
			return null;
		}
		JsonNode root = RawEvents.object(error.getMessage());
		return root == null ? null : inBand(root);
	}

	private ProviderConnectionException connection(String message, Throwable error) {
		// a cause whose chain holds a secret is not handed on: getCause() would reach it
		return new ProviderConnectionException(provider, scrub(message),
				Secrets.inCauseChain(error, secrets) ? null : error);
	}

	@Nullable
	private static <E extends Throwable> E find(Throwable error, Class<E> type) {
		Throwable t = error;
		for (int depth = 0; t != null && depth < MAX_DEPTH; depth++) {
			if (type.isInstance(t)) {
				return type.cast(t);
			}
			t = t.getCause() == t ? null : t.getCause();
		}
		return null;
	}
}
