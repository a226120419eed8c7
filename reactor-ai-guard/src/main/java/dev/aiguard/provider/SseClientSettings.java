package dev.aiguard.provider;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.sse.SseDecoder;
import dev.aiguard.sse.SseEvent;
import io.netty.handler.codec.http.HttpHeaders;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;

/**
 * The settings every streaming client of this package is built from, whatever its provider: the
 * server, the key, the default model, the timeouts, the HTTP client, the timer and the SSE decoder.
 * Each setter checks its value; a provider's builder extends this with its own settings and builds
 * its exchange with {@link #exchange}.
 *
 * @param <B> the provider's builder, which each setter returns
 */
abstract class SseClientSettings<B extends SseClientSettings<B>> {

	final String baseUrl;
	@Nullable String apiKey;
	@Nullable String model;
	Duration connectTimeout = Duration.ofSeconds(10);
	Duration responseTimeout = Duration.ofSeconds(60);
	int maxErrorBodyBytes = 64 * 1024;
	@Nullable HttpClient httpClient;
	Scheduler timer = Schedulers.parallel();
	SseDecoder sseDecoder = SseDecoder.defaults();

	SseClientSettings(String baseUrl) {
		this.baseUrl = SseExchange.checkBaseUrl(baseUrl);
	}

	/** @return this builder as the provider's type */
	abstract B self();

	/**
	 * @param key the API key, sent as the provider's key header ({@code Authorization: Bearer} for
	 *        OpenAI-compatible servers, {@code x-api-key} for Anthropic); {@code null} for a server that
	 *        needs none (a local vLLM, Ollama, proxy or mock)
	 * @throws IllegalArgumentException when blank or containing whitespace (the value is not repeated)
	 */
	public B apiKey(String key) {
		this.apiKey = SseExchange.checkApiKey(key);
		return self();
	}

	/** @param name the model used when a {@link ChatRequest} names none; {@code null} for none */
	public B model(String name) {
		this.model = SseExchange.checkModel(name);
		return self();
	}

	/** @param timeout time allowed to open the TCP connection (default 10 s) */
	public B connectTimeout(Duration timeout) {
		this.connectTimeout = SseExchange.positive("connectTimeout", timeout);
		return self();
	}

	/**
	 * @param timeout time allowed from subscription to the response headers (default 60 s); the
	 *        body has no deadline here, the guard's stall watch covers it
	 */
	public B responseTimeout(Duration timeout) {
		this.responseTimeout = SseExchange.positive("responseTimeout", timeout);
		return self();
	}

	/** @param bytes the most of an error body read for its message (default 64 KiB) */
	public B maxErrorBodyBytes(int bytes) {
		this.maxErrorBodyBytes = SseExchange.positive("maxErrorBodyBytes", bytes);
		return self();
	}

	/** @param client a configured Reactor Netty client to share (its pool, TLS, proxy...) */
	public B httpClient(HttpClient client) {
		this.httpClient = Objects.requireNonNull(client, "httpClient");
		return self();
	}

	/** @param scheduler runs the response-header deadline (default {@link Schedulers#parallel()}) */
	public B timer(Scheduler scheduler) {
		this.timer = Objects.requireNonNull(scheduler, "timer");
		return self();
	}

	/** @param decoder the SSE decoder, for other line and event limits (default 1 MiB each) */
	public B sseDecoder(SseDecoder decoder) {
		this.sseDecoder = Objects.requireNonNull(decoder, "sseDecoder");
		return self();
	}

	/**
	 * The exchange of a client built from these settings.
	 *
	 * @param provider the name the exceptions carry
	 * @param path the endpoint below the base URL, e.g. {@code /messages}
	 * @param providerHeaders sets the provider's own headers (its key, its API version)
	 * @param codec turns the decoded events into chunks
	 * @param scrub removes secrets from text that goes into an exception message
	 */
	SseExchange exchange(String provider, String path, Consumer<HttpHeaders> providerHeaders,
			Function<Flux<SseEvent>, Flux<ChatChunk>> codec, UnaryOperator<String> scrub) {
		HttpClient http = SseExchange.httpClient(httpClient, connectTimeout, providerHeaders);
		return new SseExchange(provider, baseUrl, baseUrl + path, http, responseTimeout, timer, sseDecoder,
				maxErrorBodyBytes, codec, scrub);
	}
}
