package dev.aiguard.test.mock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.truncation.TokenCounter;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.util.annotation.Nullable;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An OpenAI-compatible {@code POST /v1/chat/completions} streaming server on Reactor Netty, bound
 * to 127.0.0.1 (a free port unless one is given), that misbehaves on request.
 *
 * <pre>{@code
 * MockModelServer mock = MockModelServer.builder()
 *     .faults(FaultProfile.defaults(Duration.ofMillis(300), Duration.ofMillis(40)))
 *     .start();
 * OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl()).model("mock-1").build();
 * mock.faults(mock.faults().withStallAfter(5));     // the next answers stop after 5 tokens
 * }</pre>
 *
 * Answers come from {@link MockAnswers}, paced by the profile, followed by a {@code stop} chunk, a
 * usage chunk and {@code [DONE]}. A request with {@code max_tokens} (or {@code max_completion_tokens})
 * below the answer's length gets that many tokens and finish reason {@code length}. A request without
 * {@code "stream": true} gets one {@code chat.completion} JSON object once the whole answer would have
 * been streamed (the profile's faults apply to it alike: a stall never answers, a drop closes the
 * connection, an omitted terminal leaves {@code finish_reason} null). The profile in force when a
 * request arrives applies to the whole of that request. Counters in {@link #stats()} record what
 * happened, including answers the client abandoned ({@code cancelled}: the connection closed before
 * the answer ended).
 */
public final class MockModelServer implements AutoCloseable {

	/** The model name the mock reports when the request names none. */
	public static final String MODEL = "mock-1";

	private static final TokenCounter COUNTER = TokenCounter.estimate();

	private final FaultProfile defaults;
	private final ObjectMapper json = new ObjectMapper();
	private final int port;
	private final DoubleSupplier random;
	private final AtomicReference<FaultProfile> faults;

	private final AtomicLong requests = new AtomicLong();
	private final AtomicLong completed = new AtomicLong();
	private final AtomicLong cancelled = new AtomicLong();
	private final AtomicLong injectedErrors = new AtomicLong();
	private final AtomicLong contextRejections = new AtomicLong();
	private final AtomicLong stalled = new AtomicLong();
	private final AtomicLong dropped = new AtomicLong();
	private final AtomicLong inProgress = new AtomicLong();

	@Nullable
	private volatile DisposableServer server;

	private MockModelServer(Builder builder) {
		this.defaults = builder.faults;
		this.random = builder.random;
		this.port = builder.port;
		this.faults = new AtomicReference<>(defaults);
	}

	/** @return a builder: no faults, no pacing, a free port, {@link Math#random()} for error draws */
	public static Builder builder() {
		return new Builder();
	}

	/** Settings of a {@link MockModelServer}; {@link #start()} builds and starts it. */
	public static final class Builder {

		private FaultProfile faults = FaultProfile.defaults(Duration.ZERO, Duration.ZERO);
		private DoubleSupplier random = Math::random;
		private int port;

		private Builder() {
		}

		/** The profile in force at start and after {@link MockModelServer#resetFaults()}. */
		public Builder faults(FaultProfile faults) {
			this.faults = Objects.requireNonNull(faults, "faults");
			return this;
		}

		/** Draws in [0, 1) that decide {@link FaultProfile#errorRate()}; a constant makes errors certain or impossible. */
		public Builder random(DoubleSupplier random) {
			this.random = Objects.requireNonNull(random, "random");
			return this;
		}

		/** The loopback port to listen on; 0 (the default) picks a free one, reported by {@link MockModelServer#port()}. */
		public Builder port(int port) {
			if (port < 0 || port > 65_535) {
				throw new IllegalArgumentException("port must be between 0 and 65535, was " + port);
			}
			this.port = port;
			return this;
		}

		/** @return a server that is not listening yet */
		public MockModelServer build() {
			return new MockModelServer(this);
		}

		/** @return a listening server */
		public MockModelServer start() {
			MockModelServer server = build();
			server.start();
			return server;
		}
	}

	/** @return the port the server listens on */
	public int port() {
		DisposableServer s = server;
		if (s == null) {
			throw new IllegalStateException("the mock model server is not running");
		}
		return s.port();
	}

	/** @return the API root for an OpenAI-compatible client, e.g. {@code http://127.0.0.1:41234/v1} */
	public String baseUrl() {
		DisposableServer s = server;
		if (s == null) {
			throw new IllegalStateException("the mock model server is not running");
		}
		return "http://127.0.0.1:" + s.port() + "/v1";
	}

	/** @return the profile new requests get */
	public FaultProfile faults() {
		return faults.get();
	}

	/** Sets the profile for requests that arrive from now on; answers already streaming keep theirs. */
	public void faults(FaultProfile profile) {
		faults.set(Objects.requireNonNull(profile, "profile"));
	}

	/** Back to the profile the server started with. */
	public FaultProfile resetFaults() {
		faults.set(defaults);
		return defaults;
	}

	/** @return the profile {@link #resetFaults()} restores */
	public FaultProfile defaultFaults() {
		return defaults;
	}

	/** @return what the server has done so far */
	public Stats stats() {
		return new Stats(requests.get(), completed.get(), cancelled.get(), injectedErrors.get(),
				contextRejections.get(), stalled.get(), dropped.get(), inProgress.get());
	}

	/**
	 * Counters since start.
	 *
	 * @param requests chat requests received
	 * @param completed answers sent to the end (with or without the terminal marker)
	 * @param cancelled answers the client abandoned: the connection closed before the end
	 * @param injectedErrors requests answered with the profile's error status
	 * @param contextRejections requests refused for exceeding the context limit
	 * @param stalled answers that stopped sending on purpose
	 * @param dropped connections closed on purpose mid-answer
	 * @param inProgress requests whose response has not ended yet, however it ends (a request the client
	 *        has left must not stay here: that would be an upstream call nobody closed)
	 */
	public record Stats(long requests, long completed, long cancelled, long injectedErrors, long contextRejections,
			long stalled, long dropped, long inProgress) {
	}

	/** Binds the server; does nothing when it is running already. */
	public synchronized void start() {
		if (server == null) {
			server = HttpServer.create()
				.host("127.0.0.1")
				.port(port)
				.route(routes -> routes.post("/v1/chat/completions", this::chat))
				.bindNow(Duration.ofSeconds(10));
		}
	}

	/** Closes the server and every connection it holds; does nothing when it is not running. */
	public synchronized void stop() {
		DisposableServer s = server;
		server = null;
		if (s != null) {
			s.disposeNow(Duration.ofSeconds(5));
		}
	}

	/** @return whether the server is listening */
	public boolean isRunning() {
		return server != null;
	}

	/** Same as {@link #stop()}. */
	@Override
	public void close() {
		stop();
	}

	private Publisher<Void> chat(HttpServerRequest request, HttpServerResponse response) {
		FaultProfile profile = faults.get();
		long number = requests.incrementAndGet();
		return request.receive().aggregate().asString(StandardCharsets.UTF_8).defaultIfEmpty("")
			.flatMap(body -> answer(number, body, profile, response))
			.doOnSubscribe(s -> inProgress.incrementAndGet())
			.doFinally(signal -> inProgress.decrementAndGet());
	}

	private Mono<Void> answer(long number, String body, FaultProfile profile, HttpServerResponse response) {
		List<ChatMessage> messages;
		String model;
		boolean stream;
		int maxTokens;
		try {
			JsonNode root = json.readTree(body);
			messages = messages(root.path("messages"));
			model = root.path("model").asText(MODEL);
			stream = root.path("stream").asBoolean(false);
			maxTokens = maxTokens(root);
		}
		catch (JsonProcessingException | IllegalArgumentException e) {
			return error(response, 400, errorBody("invalid_request_error", null, "Invalid request: " + e.getMessage()), 0);
		}
		if (profile.errorRate() > 0 && random.getAsDouble() < profile.errorRate()) {
			injectedErrors.incrementAndGet();
			return injectedError(response, profile);
		}
		int promptTokens = COUNTER.count(messages);
		if (profile.contextLimitTokens() != null) {
			if (promptTokens > profile.contextLimitTokens()) {
				contextRejections.incrementAndGet();
				return error(response, 400, errorBody("invalid_request_error", "context_length_exceeded",
						"This model's maximum context length is " + profile.contextLimitTokens()
								+ " tokens. However, your messages resulted in " + promptTokens
								+ " tokens. Please reduce the length of the messages."), 0);
			}
		}
		String prompt = lastUserText(messages);
		String id = "chatcmpl-mock-" + number;
		long created = System.currentTimeMillis() / 1000;
		List<String> tokens = MockAnswers.tokens(prompt);
		String finishReason = "stop";
		if (maxTokens > 0 && maxTokens < tokens.size()) {
			tokens = tokens.subList(0, maxTokens);
			finishReason = "length";
		}
		if (!stream) {
			return completion(response, id, created, model, tokens, finishReason, promptTokens, profile);
		}
		return response.status(HttpResponseStatus.OK)
			.header(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
			.header(HttpHeaderNames.CACHE_CONTROL, "no-cache")
			// flush every event as it is written, like a model server does (and so a drop cuts after it)
			.send(events(response, id, created, model, tokens, finishReason, promptTokens, profile)
				.map(event -> ByteBufUtil.writeUtf8(response.alloc(), event)), buffer -> true)
			.then();
	}

	/** @return the request's output limit ({@code max_completion_tokens}, else {@code max_tokens}), 0 for none */
	private static int maxTokens(JsonNode root) {
		JsonNode limit = root.path("max_completion_tokens");
		if (!limit.canConvertToInt()) {
			limit = root.path("max_tokens");
		}
		return limit.canConvertToInt() ? Math.max(0, limit.asInt()) : 0;
	}

	private static boolean stalls(FaultProfile profile, int size) {
		return profile.stallAfterTokens() != null && profile.stallAfterTokens() < size;
	}

	private static boolean drops(FaultProfile profile, int size) {
		return profile.dropAfterTokens() != null && profile.dropAfterTokens() < size;
	}

	/** The answer as one {@code chat.completion} object, sent when streaming it would have ended. */
	private Mono<Void> completion(HttpServerResponse response, String id, long created, String model, List<String> tokens,
			String finishReason, int promptTokens, FaultProfile profile) {
		boolean stall = stalls(profile, tokens.size());
		boolean drop = !stall && drops(profile, tokens.size());
		int cut = stall ? profile.stallAfterTokens() : drop ? profile.dropAfterTokens() : tokens.size();
		Duration generation = Duration.ofMillis(profile.firstTokenDelayMs()
				+ profile.tokenIntervalMs() * Math.max(0, cut - 1));
		Mono<Void> answer;
		if (stall) {
			answer = Mono.<Void>never().doOnSubscribe(s -> stalled.incrementAndGet());
		}
		else if (drop) {
			answer = Mono.defer(() -> {
				dropped.incrementAndGet();
				response.withConnection(connection -> connection.channel().close());
				return Mono.<Void>never();
			});
		}
		else {
			ObjectNode root = json.createObjectNode()
				.put("id", id)
				.put("object", "chat.completion")
				.put("created", created)
				.put("model", model);
			ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
			choice.putObject("message").put("role", "assistant").put("content", String.join("", tokens))
				.putNull("refusal");
			choice.put("finish_reason", profile.omitTerminal() ? null : finishReason);
			choice.putNull("logprobs");
			root.set("usage", usage(promptTokens, tokens.size()));
			String body = write(root);
			answer = response.status(HttpResponseStatus.OK)
				.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
				.sendString(Mono.just(body), StandardCharsets.UTF_8)
				.then()
				.doOnSuccess(done -> completed.incrementAndGet());
		}
		return Mono.delay(generation).then(answer).doOnCancel(drop ? () -> { } : cancelled::incrementAndGet);
	}

	private ObjectNode usage(int promptTokens, int completionTokens) {
		return json.createObjectNode()
			.put("prompt_tokens", promptTokens)
			.put("completion_tokens", completionTokens)
			.put("total_tokens", promptTokens + completionTokens);
	}

	private Flux<String> events(HttpServerResponse response, String id, long created, String model, List<String> tokens,
			String finishReason, int promptTokens, FaultProfile profile) {
		boolean stall = stalls(profile, tokens.size());
		boolean drop = !stall && drops(profile, tokens.size());
		int cut = stall ? profile.stallAfterTokens() : drop ? profile.dropAfterTokens() : tokens.size();
		Duration first = Duration.ofMillis(profile.firstTokenDelayMs());
		Duration interval = Duration.ofMillis(profile.tokenIntervalMs());
		Flux<String> content = Flux.range(0, cut)
			.concatMap(i -> Mono.delay(i == 0 ? first : interval)
				.thenReturn(event(chunk(id, created, model, null, tokens.get(i), null))));
		Flux<String> ending;
		if (stall) {
			ending = Flux.<String>never().doOnSubscribe(s -> stalled.incrementAndGet());
		}
		else if (drop) {
			// close the socket under the pending body: the client sees a premature close
			ending = Flux.defer(() -> {
				dropped.incrementAndGet();
				response.withConnection(connection -> connection.channel().close());
				return Flux.never();
			});
		}
		else if (profile.omitTerminal()) {
			ending = Flux.empty();
		}
		else {
			ObjectNode usageChunk = chunk(id, created, model, null, null, null);
			usageChunk.putArray("choices");
			usageChunk.set("usage", usage(promptTokens, tokens.size()));
			ending = Flux.just(event(chunk(id, created, model, null, null, finishReason)), event(usageChunk),
					"data: [DONE]\n\n");
		}
		return Flux.concat(Mono.just(event(chunk(id, created, model, "assistant", "", null))), content, ending)
			.doOnComplete(completed::incrementAndGet)
			.doOnCancel(drop ? () -> { } : cancelled::incrementAndGet);
	}

	private ObjectNode chunk(String id, long created, String model, @Nullable String role, @Nullable String content,
			@Nullable String finishReason) {
		ObjectNode chunk = json.createObjectNode()
			.put("id", id)
			.put("object", "chat.completion.chunk")
			.put("created", created)
			.put("model", model);
		if (content != null || finishReason != null || role != null) {
			ObjectNode choice = chunk.putArray("choices").addObject().put("index", 0);
			ObjectNode delta = choice.putObject("delta");
			if (role != null) {
				delta.put("role", role);
			}
			if (content != null) {
				delta.put("content", content);
			}
			choice.put("finish_reason", finishReason);
		}
		return chunk;
	}

	private String event(JsonNode node) {
		return "data: " + write(node) + "\n\n";
	}

	private String write(JsonNode node) {
		try {
			return json.writeValueAsString(node);
		}
		catch (JsonProcessingException e) {
			throw new IllegalStateException("a tree built in memory could not be written", e);
		}
	}

	private Mono<Void> injectedError(HttpServerResponse response, FaultProfile profile) {
		String body = switch (profile.errorStatus()) {
			case 429 -> errorBody("requests", "rate_limit_exceeded", "Rate limit reached for requests");
			case 529 -> errorBody("overloaded_error", null, "Overloaded");
			default -> errorBody("server_error", null, "The server had an error while processing your request.");
		};
		return error(response, profile.errorStatus(), body, profile.retryAfterSeconds());
	}

	private String errorBody(String type, @Nullable String code, String message) {
		ObjectNode root = json.createObjectNode();
		root.putObject("error").put("message", message).put("type", type).putNull("param").put("code", code);
		return write(root);
	}

	private static Mono<Void> error(HttpServerResponse response, int status, String body, int retryAfterSeconds) {
		HttpServerResponse r = response.status(status).header(HttpHeaderNames.CONTENT_TYPE, "application/json");
		if (retryAfterSeconds > 0) {
			r = r.header(HttpHeaderNames.RETRY_AFTER, Integer.toString(retryAfterSeconds));
		}
		return r.sendString(Mono.just(body), StandardCharsets.UTF_8).then();
	}

	private static List<ChatMessage> messages(JsonNode array) {
		if (!array.isArray() || array.isEmpty()) {
			throw new IllegalArgumentException("messages must be a non-empty array");
		}
		List<ChatMessage> messages = new ArrayList<>(array.size());
		for (JsonNode m : array) {
			ChatMessage.Role role = ChatMessage.Role.parse(m.path("role").asText(""));
			String content = m.path("content").asText("");
			messages.add(role == ChatMessage.Role.TOOL
					? ChatMessage.tool(m.path("tool_call_id").asText("call"), content)
					: new ChatMessage(role, content, List.of(), null));
		}
		return messages;
	}

	private static String lastUserText(List<ChatMessage> messages) {
		for (int i = messages.size() - 1; i >= 0; i--) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				return messages.get(i).content();
			}
		}
		return messages.get(messages.size() - 1).content();
	}
}
