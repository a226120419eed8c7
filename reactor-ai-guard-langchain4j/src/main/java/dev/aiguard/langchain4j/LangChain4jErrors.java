package dev.aiguard.langchain4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;

import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.langchain4j.exception.HttpException;
import dev.langchain4j.exception.TimeoutException;
import dev.langchain4j.exception.UnresolvedModelServerException;
import org.jspecify.annotations.Nullable;

/**
 * LangChain4j's errors to the library's typed provider errors, so the guard's retry, breaker and
 * truncation read them like the errors of its own clients.
 *
 * <ul>
 * <li>An {@link HttpException} anywhere in the chain (LangChain4j's {@code RateLimitException},
 * {@code InternalServerException}, {@code InvalidRequestException}... wrap one) becomes
 * {@link ProviderErrors#fromHttp}: status, body, and the headers the {@link AbortableExchange}
 * saw, so a 429 keeps its {@code Retry-After}.</li>
 * <li>No response in time ({@link TimeoutException}, {@link HttpTimeoutException}), an I/O error
 * (refused, reset, closed mid-stream) or an unresolvable host becomes a
 * {@link ProviderConnectionException} whose cause is the original.</li>
 * <li>Anything else passes through unchanged.</li>
 * </ul>
 * A connection error keeps the original as its cause; an HTTP error carries everything
 * LangChain4j's had (status, the provider's message, type and code) and the headers it had not.
 */
final class LangChain4jErrors {

	private static final int MAX_DEPTH = 8;

	private LangChain4jErrors() {
	}

	static Throwable translate(Throwable error, String provider, AbortableExchange exchange) {
		HttpException http = find(error, HttpException.class);
		if (http != null) {
			int status = http.statusCode();
			return ProviderErrors.fromHttp(provider, status, exchange.headers(status), http.getMessage());
		}
		if (find(error, TimeoutException.class) != null || find(error, HttpTimeoutException.class) != null) {
			return new ProviderConnectionException(provider, "no response in time: " + error.getMessage(), error);
		}
		if (find(error, UnresolvedModelServerException.class) != null
				|| find(error, UnresolvedAddressException.class) != null) {
			return new ProviderConnectionException(provider, "the model server's address did not resolve", error);
		}
		Throwable io = find(error, IOException.class);
		if (io == null) {
			io = find(error, UncheckedIOException.class);
		}
		if (io != null) {
			return new ProviderConnectionException(provider, "the connection failed: " + io, error);
		}
		return error;
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
