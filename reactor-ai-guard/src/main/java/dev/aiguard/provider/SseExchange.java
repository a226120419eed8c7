package dev.aiguard.provider;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import tools.jackson.core.JacksonException;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Secrets;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.sse.SseDecoder;
import dev.aiguard.sse.SseEvent;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import org.jspecify.annotations.Nullable;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.netty.Connection;
import reactor.netty.channel.AbortedException;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.client.HttpClientResponse;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * One streaming POST whose 200 answer is server-sent events: the response-header deadline, the
 * typed error of a non-200 answer (its body read up to a limit), transport failures as
 * {@link ProviderConnectionException}, and a connection that is closed rather than pooled when the
 * body is abandoned. Also the HTTP client every streaming client starts from and the settings
 * checks their builders make. The provider's request body, headers and codec are the caller's.
 */
final class SseExchange {

	private final String provider;
	private final String baseUrl;
	private final String endpoint;
	private final HttpClient http;
	private final Duration responseTimeout;
	private final Scheduler timer;
	private final SseDecoder sseDecoder;
	private final int maxErrorBodyBytes;
	private final Function<Flux<SseEvent>, Flux<ChatChunk>> codec;
	private final UnaryOperator<String> scrub;

	/**
	 * @param provider the name the exceptions carry
	 * @param baseUrl the API root, named in connection errors
	 * @param endpoint the URL posted to
	 * @param http the client, with the provider's headers set
	 * @param codec turns the decoded events into chunks
	 * @param scrub removes secrets from text that goes into an exception message
	 */
	SseExchange(String provider, String baseUrl, String endpoint, HttpClient http, Duration responseTimeout,
			Scheduler timer, SseDecoder sseDecoder, int maxErrorBodyBytes,
			Function<Flux<SseEvent>, Flux<ChatChunk>> codec, UnaryOperator<String> scrub) {
		this.provider = provider;
		this.baseUrl = baseUrl;
		this.endpoint = endpoint;
		this.http = http;
		this.responseTimeout = responseTimeout;
		this.timer = timer;
		this.sseDecoder = sseDecoder;
		this.maxErrorBodyBytes = maxErrorBodyBytes;
		this.codec = codec;
		this.scrub = scrub;
	}

	/**
	 * A client posting JSON and accepting server-sent events, with the connect timeout set.
	 *
	 * @param shared the caller's configured client (its pool, TLS, proxy), or {@code null} for a new one
	 * @param providerHeaders sets the provider's own headers (its key, its API version)
	 */
	static HttpClient httpClient(@Nullable HttpClient shared, Duration connectTimeout,
			Consumer<HttpHeaders> providerHeaders) {
		return (shared != null ? shared : HttpClient.create())
			.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) connectTimeout.toMillis())
			.headers(h -> {
				h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
				h.set(HttpHeaderNames.ACCEPT, "text/event-stream");
				providerHeaders.accept(h);
			});
	}

	/**
	 * Nothing is written or sent before subscription, and each subscription writes and posts the
	 * request again. A request the writer refuses fails the subscription with its
	 * {@link IllegalArgumentException}, one Jackson cannot serialise with an
	 * {@link IllegalArgumentException} saying so; neither sends anything.
	 *
	 * @return the answer's chunks
	 */
	Flux<ChatChunk> post(ChatRequest request, RequestWriter writer) {
		return Flux.deferContextual(context -> {
			Object heard = context.getOrDefault(RateLimitListener.CONTEXT_KEY, null);
			RateLimitListener listener = heard instanceof RateLimitListener ? (RateLimitListener) heard : null;
			byte[] body;
			try {
				body = writer.write(request);
			}
			catch (IllegalArgumentException e) {
				return Flux.error(e);
			}
			catch (JacksonException e) {
				return Flux.error(new IllegalArgumentException("request could not be serialised: " + e.getOriginalMessage(), e));
			}
			Sinks.Empty<Void> headersArrived = Sinks.empty();
			Flux<ChatChunk> exchange = http.post()
				.uri(endpoint)
				.send(Mono.fromCallable(() -> Unpooled.wrappedBuffer(body)))
				.responseConnection((response, connection) -> {
					headersArrived.tryEmitEmpty();
					if (listener != null) {
						heardRateLimits(listener, response.responseHeaders(), context);
					}
					return response.status().code() == 200 ? body(connection) : error(response, connection);
				});
			// the deadline covers the time to response headers only; the body is the stall watch's job
			Mono<ChatChunk> headersDeadline = Mono.delay(responseTimeout, timer)
				.takeUntilOther(headersArrived.asMono())
				.flatMap(late -> Mono.error(new ProviderConnectionException(provider,
						"no response headers from " + Secrets.withoutCredentials(baseUrl) + " within " + responseTimeout.toMillis() + " ms", null)));
			return exchange.mergeWith(headersDeadline).onErrorMap(SseExchange::isTransportFailure, this::connectionFailure);
		});
	}

	/** Tells the listener what the headers said, if they said anything; what it throws is dropped. */
	private static void heardRateLimits(RateLimitListener listener, HttpHeaders headers,
			ContextView context) {
		try {
			RateLimits limits = RetryHeaders.rateLimits(headers::get, Clock.systemUTC());
			if (limits.isKnown()) {
				listener.onRateLimits(limits);
			}
		}
		catch (Throwable listenerFailure) {
			Exceptions.throwIfJvmFatal(listenerFailure);
			Operators.onErrorDropped(listenerFailure, Context.of(context));
		}
	}

	private Flux<ChatChunk> body(Connection connection) {
		return sseDecoder.decodeByteBufs(connection.inbound().receive().retain())
			.transform(codec)
			// never hand a half-read connection back to the pool
			.doOnCancel(connection::dispose)
			.doOnError(e -> connection.dispose());
	}

	private Flux<ChatChunk> error(HttpClientResponse response, Connection connection) {
		int status = response.status().code();
		HttpHeaders headers = response.responseHeaders();
		BoundedBody collected = new BoundedBody(maxErrorBodyBytes);
		return connection.inbound().receive()
			.takeUntil(collected::add)
			// the rest of an oversized body is not drained: the connection goes
			.doOnCancel(connection::dispose)
			.then(Mono.fromCallable(collected::text))
			.flatMapMany(text -> Flux.error(ProviderErrors.fromHttp(provider, status, headers::get,
					scrub.apply(text))));
	}

	private static boolean isTransportFailure(Throwable e) {
		if (e instanceof ProviderException) {
			return false;
		}
		for (Throwable c = e; c != null; c = c.getCause()) {
			if (c instanceof IOException || c instanceof AbortedException) {
				return true;
			}
		}
		return false;
	}

	private Throwable connectionFailure(Throwable e) {
		String detail = e.getMessage() == null ? "" : ": " + scrub.apply(e.getMessage());
		return new ProviderConnectionException(provider,
				"connection to " + Secrets.withoutCredentials(baseUrl) + " failed (" + e.getClass().getSimpleName() + detail + ")", e);
	}

	/** Removes {@code apiKey}, and anything shaped like a credential, from {@code text} ({@link Secrets}). */
	static String scrub(String text, @Nullable String apiKey) {
		return Secrets.scrub(text, apiKey);
	}

	// ---- settings checks ----

	/**
	 * @return the URL without trailing slashes
	 * @throws IllegalArgumentException naming the value when not an absolute http(s) URL without query
	 */
	static String checkBaseUrl(@Nullable String url) {
		if (url == null) {
			throw new IllegalArgumentException("baseUrl must be an absolute http(s) URL, was null");
		}
		try {
			URI uri = new URI(url);
			String scheme = uri.getScheme();
			if (!("http".equalsIgnoreCase(scheme) || "https".equalsIgnoreCase(scheme)) || uri.getHost() == null
					|| uri.getQuery() != null || uri.getFragment() != null) {
				throw new IllegalArgumentException("baseUrl must be an absolute http(s) URL without query, was '"
						+ url + "'");
			}
		}
		catch (URISyntaxException e) {
			throw new IllegalArgumentException("baseUrl must be an absolute http(s) URL, was '" + url + "'", e);
		}
		String u = url;
		while (u.endsWith("/")) {
			u = u.substring(0, u.length() - 1);
		}
		return u;
	}

	/** @throws IllegalArgumentException without repeating the value, when blank or containing whitespace */
	static @Nullable String checkApiKey(@Nullable String key) {
		if (key != null && (key.isBlank() || key.chars().anyMatch(Character::isWhitespace))) {
			throw new IllegalArgumentException("apiKey must not be blank or contain whitespace (value not shown)");
		}
		return key;
	}

	/** @throws IllegalArgumentException naming the field and value unless {@code 0 < value < 24 days} */
	static Duration positive(String field, @Nullable Duration value) {
		if (value == null || value.isNegative() || value.isZero() || value.toMillis() > Integer.MAX_VALUE) {
			throw new IllegalArgumentException(field + " must be > 0 and < 24 days, was " + value);
		}
		return value;
	}

	/** @throws IllegalArgumentException naming the field and value unless {@code value > 0} */
	static int positive(String field, int value) {
		if (value <= 0) {
			throw new IllegalArgumentException(field + " must be > 0, was " + value);
		}
		return value;
	}

	/** @throws IllegalArgumentException naming the value when blank ({@code null} means none) */
	static @Nullable String checkModel(@Nullable String name) {
		if (name != null && name.isBlank()) {
			throw new IllegalArgumentException("model must not be blank, was '" + name + "'");
		}
		return name;
	}

	/**
	 * @return the request's model, else the client's
	 * @throws IllegalArgumentException when neither names one
	 */
	static String modelOf(ChatRequest request, @Nullable String clientModel) {
		String model = request.model() != null ? request.model() : clientModel;
		if (model == null) {
			throw new IllegalArgumentException("model: neither the request nor the client names a model");
		}
		return model;
	}

	/** Writes a provider's request body, refusing a request the provider cannot take. */
	@FunctionalInterface
	interface RequestWriter {

		/**
		 * @return the JSON body to post
		 * @throws IllegalArgumentException naming what the provider cannot take
		 */
		byte[] write(ChatRequest request);
	}

	/** Collects an error body up to a limit; the caller stops reading once {@link #add} says full. */
	static final class BoundedBody {

		private final int limit;
		private byte[] bytes = new byte[0];
		private int length;

		BoundedBody(int limit) {
			this.limit = limit;
		}

		/** @return whether the limit is reached */
		boolean add(ByteBuf buf) {
			int n = Math.min(buf.readableBytes(), limit - length);
			if (length + n > bytes.length) {
				// grow as the body arrives: most error bodies are a few hundred bytes
				bytes = Arrays.copyOf(bytes, Math.min(limit, Math.max(length + n, bytes.length * 2)));
			}
			buf.getBytes(buf.readerIndex(), bytes, length, n);
			length += n;
			return length == limit;
		}

		String text() {
			return new String(bytes, 0, length, StandardCharsets.UTF_8);
		}
	}
}
