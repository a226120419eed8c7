package dev.aiguard.provider;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.sse.SseDecoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.Connection;
import reactor.netty.channel.AbortedException;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.client.HttpClientResponse;

/**
 * Streams chat completions from any OpenAI-compatible server (OpenAI, vLLM, Ollama's {@code /v1},
 * LM Studio, the demo's mock) on Reactor Netty.
 *
 * <pre>{@code
 * OpenAiCompatibleClient client = OpenAiCompatibleClient.builder("https://api.openai.com/v1")
 *     .apiKey(System.getenv("OPENAI_API_KEY"))
 *     .model("gpt-4o-mini")
 *     .build();
 *
 * Flux<ChatChunk> answer = client.stream(ChatRequest.of(null, List.of(ChatMessage.user("Hello"))))
 *     .transform(AiGuard.of(policy));
 *
 * // a local server needs no key
 * OpenAiCompatibleClient local = OpenAiCompatibleClient.builder("http://127.0.0.1:11434/v1").model("llama3.2").build();
 * }</pre>
 *
 * <ul>
 * <li>POSTs {@code {baseUrl}/chat/completions} with {@code stream: true} and
 * {@code stream_options.include_usage: true} (switch off with {@link Builder#includeUsage}),
 * messages with tool calls and tool results.</li>
 * <li>A non-200 answer: the body is read (at most {@link Builder#maxErrorBodyBytes}) and the stream
 * fails with the typed exception of {@link ProviderErrors#fromHttp}. Transport failures (refused,
 * reset, premature close, no response headers within {@link Builder#responseTimeout}) fail it
 * with {@link ProviderConnectionException}.</li>
 * <li>The chunks are what {@link OpenAiChunkCodec} makes of the events; the client itself sets
 * no deadline on the body: put a stall watch (the guard) after it.</li>
 * <li>Cancelling the subscription, or an error mid-body, closes the connection: a half-read
 * connection is never returned to the pool.</li>
 * <li>The API key goes into the {@code Authorization} header only; it is never logged, never in
 * {@link #toString()}, and scrubbed from error messages that echo it.</li>
 * </ul>
 */
public final class OpenAiCompatibleClient {

	private static final Pattern KEY_LIKE = Pattern.compile("\\b(sk-[A-Za-z0-9_*.\\-]{3,})");

	private final String endpoint;
	private final String baseUrl;
	private final String apiKey;
	private final String model;
	private final Duration responseTimeout;
	private final int maxErrorBodyBytes;
	private final boolean includeUsage;
	private final Scheduler timer;
	private final SseDecoder sseDecoder;
	private final HttpClient http;

	private OpenAiCompatibleClient(Builder b) {
		this.baseUrl = b.baseUrl;
		this.endpoint = b.baseUrl + "/chat/completions";
		this.apiKey = b.apiKey;
		this.model = b.model;
		this.responseTimeout = b.responseTimeout;
		this.maxErrorBodyBytes = b.maxErrorBodyBytes;
		this.includeUsage = b.includeUsage;
		this.timer = b.timer;
		this.sseDecoder = b.sseDecoder;
		String key = b.apiKey;
		this.http = (b.httpClient != null ? b.httpClient : HttpClient.create())
			.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) b.connectTimeout.toMillis())
			.headers(h -> {
				h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
				h.set(HttpHeaderNames.ACCEPT, "text/event-stream");
				if (key != null) {
					h.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + key);
				}
			});
	}

	/**
	 * @param baseUrl the API root including its version path, e.g. {@code https://api.openai.com/v1}
	 *        or {@code http://127.0.0.1:8000/v1}
	 * @throws IllegalArgumentException when not an absolute http(s) URL
	 */
	public static Builder builder(String baseUrl) {
		return new Builder(baseUrl);
	}

	/**
	 * Streams the answer to {@code request}: nothing is sent before subscription, and each
	 * subscription sends the request again.
	 *
	 * @return the answer's chunks, ending with {@link ChatChunk#done()} when the server sent {@code [DONE]}
	 */
	public Flux<ChatChunk> stream(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		return Flux.defer(() -> {
			byte[] body;
			try {
				body = requestBody(request);
			}
			catch (IllegalArgumentException e) {
				return Flux.error(e);
			}
			catch (JsonProcessingException e) {
				return Flux.error(new IllegalArgumentException("request could not be serialised: " + e.getOriginalMessage(), e));
			}
			Sinks.Empty<Void> headersArrived = Sinks.empty();
			Flux<ChatChunk> exchange = http.post()
				.uri(endpoint)
				.send(Mono.fromCallable(() -> Unpooled.wrappedBuffer(body)))
				.responseConnection((response, connection) -> {
					headersArrived.tryEmitEmpty();
					return response.status().code() == 200 ? body(connection) : error(response, connection);
				});
			// the deadline covers the time to response headers only; the body is the stall watch's job
			Mono<ChatChunk> headersDeadline = Mono.delay(responseTimeout, timer)
				.takeUntilOther(headersArrived.asMono())
				.flatMap(late -> Mono.error(new ProviderConnectionException(OpenAiChunkCodec.PROVIDER,
						"no response headers from " + baseUrl + " within " + responseTimeout.toMillis() + " ms", null)));
			return exchange.mergeWith(headersDeadline).onErrorMap(this::isTransportFailure, this::connectionFailure);
		});
	}

	private Flux<ChatChunk> body(Connection connection) {
		return sseDecoder.decodeByteBufs(connection.inbound().receive().retain())
			.transform(OpenAiChunkCodec::decode)
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
			.doOnCancel(connection::dispose)
			.then(Mono.fromCallable(collected::text))
			.flatMapMany(text -> Flux.error(ProviderErrors.fromHttp(OpenAiChunkCodec.PROVIDER, status, headers::get,
					scrub(text))));
	}

	/** Removes the key, and anything shaped like a key, from text that goes into a message. */
	String scrub(String text) {
		String t = text;
		if (apiKey != null && !apiKey.isEmpty()) {
			t = t.replace(apiKey, "[redacted]");
		}
		return KEY_LIKE.matcher(t).replaceAll("[redacted]");
	}

	private boolean isTransportFailure(Throwable e) {
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
		String detail = e.getMessage() == null ? "" : ": " + scrub(e.getMessage());
		return new ProviderConnectionException(OpenAiChunkCodec.PROVIDER,
				"connection to " + baseUrl + " failed (" + e.getClass().getSimpleName() + detail + ")", e);
	}

	byte[] requestBody(ChatRequest request) throws JsonProcessingException {
		String m = request.model() != null ? request.model() : model;
		if (m == null) {
			throw new IllegalArgumentException("model: neither the request nor the client names a model");
		}
		ObjectNode root = Json.MAPPER.createObjectNode();
		root.put("model", m);
		root.put("stream", true);
		if (includeUsage) {
			root.putObject("stream_options").put("include_usage", true);
		}
		if (request.maxTokens() != null) {
			root.put("max_tokens", request.maxTokens());
		}
		if (request.temperature() != null) {
			root.put("temperature", request.temperature());
		}
		ArrayNode messages = root.putArray("messages");
		for (ChatMessage message : request.messages()) {
			ObjectNode node = messages.addObject();
			node.put("role", message.role().wireName());
			if (message.role() == ChatMessage.Role.ASSISTANT && !message.toolCalls().isEmpty()) {
				if (message.content().isEmpty()) {
					node.putNull("content");
				}
				else {
					node.put("content", message.content());
				}
				ArrayNode calls = node.putArray("tool_calls");
				for (ToolCall call : message.toolCalls()) {
					ObjectNode c = calls.addObject();
					c.put("id", call.id());
					c.put("type", "function");
					ObjectNode function = c.putObject("function");
					function.put("name", call.name());
					function.put("arguments", call.arguments());
				}
			}
			else {
				node.put("content", message.content());
			}
			if (message.role() == ChatMessage.Role.TOOL) {
				node.put("tool_call_id", message.toolCallId());
			}
		}
		return Json.MAPPER.writeValueAsBytes(root);
	}

	@Override
	public String toString() {
		return "OpenAiCompatibleClient{baseUrl=" + baseUrl + ", model=" + model + ", apiKey="
				+ (apiKey == null ? "none" : "[set]") + ", responseTimeout=" + responseTimeout + '}';
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
				bytes = java.util.Arrays.copyOf(bytes, Math.min(limit, Math.max(length + n, bytes.length * 2)));
			}
			buf.getBytes(buf.readerIndex(), bytes, length, n);
			length += n;
			return length == limit;
		}

		String text() {
			return new String(bytes, 0, length, StandardCharsets.UTF_8);
		}
	}

	/**
	 * Configures an {@link OpenAiCompatibleClient}. Each setter checks its value.
	 *
	 * <pre>{@code
	 * OpenAiCompatibleClient client = OpenAiCompatibleClient.builder("http://127.0.0.1:8000/v1")
	 *     .model("Qwen/Qwen2.5-7B-Instruct")
	 *     .connectTimeout(Duration.ofSeconds(2))
	 *     .responseTimeout(Duration.ofSeconds(30))
	 *     .httpClient(sharedHttpClient)
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder {

		private final String baseUrl;
		private String apiKey;
		private String model;
		private Duration connectTimeout = Duration.ofSeconds(10);
		private Duration responseTimeout = Duration.ofSeconds(60);
		private int maxErrorBodyBytes = 64 * 1024;
		private boolean includeUsage = true;
		private HttpClient httpClient;
		private Scheduler timer = Schedulers.parallel();
		private SseDecoder sseDecoder = SseDecoder.defaults();

		private Builder(String baseUrl) {
			this.baseUrl = checkBaseUrl(baseUrl);
		}

		private static String checkBaseUrl(String url) {
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

		/**
		 * @param key the bearer token; {@code null} for servers that need none (a local vLLM or Ollama)
		 * @throws IllegalArgumentException when blank or containing whitespace (the value is not repeated)
		 */
		public Builder apiKey(String key) {
			if (key != null && (key.isBlank() || !key.strip().equals(key) || key.chars().anyMatch(Character::isWhitespace))) {
				throw new IllegalArgumentException("apiKey must not be blank or contain whitespace (value not shown)");
			}
			this.apiKey = key;
			return this;
		}

		/** @param name the model used when a {@link ChatRequest} names none; {@code null} for none */
		public Builder model(String name) {
			if (name != null && name.isBlank()) {
				throw new IllegalArgumentException("model must not be blank, was '" + name + "'");
			}
			this.model = name;
			return this;
		}

		/** @param timeout time allowed to open the TCP connection (default 10 s) */
		public Builder connectTimeout(Duration timeout) {
			this.connectTimeout = positive("connectTimeout", timeout);
			return this;
		}

		/**
		 * @param timeout time allowed from subscription to the response headers (default 60 s); the
		 *        body has no deadline here, the guard's stall watch covers it
		 */
		public Builder responseTimeout(Duration timeout) {
			this.responseTimeout = positive("responseTimeout", timeout);
			return this;
		}

		/** @param bytes the most of an error body read for its message (default 64 KiB) */
		public Builder maxErrorBodyBytes(int bytes) {
			if (bytes <= 0) {
				throw new IllegalArgumentException("maxErrorBodyBytes must be > 0, was " + bytes);
			}
			this.maxErrorBodyBytes = bytes;
			return this;
		}

		/** @param include whether to ask for the usage chunk ({@code stream_options}); some old servers reject it */
		public Builder includeUsage(boolean include) {
			this.includeUsage = include;
			return this;
		}

		/** @param client a configured Reactor Netty client to share (its pool, TLS, proxy...) */
		public Builder httpClient(HttpClient client) {
			this.httpClient = Objects.requireNonNull(client, "httpClient");
			return this;
		}

		/** @param scheduler runs the response-header deadline (default {@link Schedulers#parallel()}) */
		public Builder timer(Scheduler scheduler) {
			this.timer = Objects.requireNonNull(scheduler, "timer");
			return this;
		}

		/** @param decoder the SSE decoder, for other line and event limits (default 1 MiB each) */
		public Builder sseDecoder(SseDecoder decoder) {
			this.sseDecoder = Objects.requireNonNull(decoder, "sseDecoder");
			return this;
		}

		public OpenAiCompatibleClient build() {
			return new OpenAiCompatibleClient(this);
		}

		private static Duration positive(String field, Duration value) {
			if (value == null || value.isNegative() || value.isZero() || value.toMillis() > Integer.MAX_VALUE) {
				throw new IllegalArgumentException(field + " must be > 0 and < 24 days, was " + value);
			}
			return value;
		}
	}
}
