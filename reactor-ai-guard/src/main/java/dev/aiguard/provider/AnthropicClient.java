package dev.aiguard.provider;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import reactor.core.publisher.Flux;

import org.jspecify.annotations.Nullable;

/**
 * Streams answers from the Anthropic Messages API (or a server that speaks it) on Reactor Netty.
 *
 * <pre>{@code
 * AnthropicClient client = AnthropicClient.builder("https://api.anthropic.com/v1")
 *     .apiKey(System.getenv("ANTHROPIC_API_KEY"))
 *     .model("claude-sonnet-4-5")
 *     .maxTokens(2048)
 *     .build();
 *
 * Flux<ChatChunk> answer = client.stream(ChatRequest.of(null,
 *         List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hello"))))
 *     .transform(AiGuard.of(policy));
 * }</pre>
 *
 * <ul>
 * <li>POSTs {@code {baseUrl}/messages} with {@code stream: true}, the headers {@code x-api-key} and
 * {@code anthropic-version} ({@value #DEFAULT_VERSION} unless {@link Builder#anthropicVersion} says
 * otherwise), and {@code max_tokens} from the request, else from {@link Builder#maxTokens} (Anthropic
 * requires it).</li>
 * <li>System messages, wherever they stand in the conversation, become the top-level {@code system}
 * text, joined by a blank line. An assistant message's tool calls become {@code tool_use} blocks
 * (their arguments must be a JSON object), a tool message a {@code tool_result} block in a user
 * turn; consecutive turns of one role are merged into one message, as the API expects of parallel
 * tool results.</li>
 * <li>A non-200 answer: the body is read (at most {@link Builder#maxErrorBodyBytes}) and the stream
 * fails with the typed exception of {@link ProviderErrors#fromHttp}: 429 {@link RateLimitedException}
 * with {@code retry-after}, 529 {@link ProviderOverloadedException}, 400 <i>prompt is too long</i>
 * {@link ContextLengthExceededException}. Transport failures (refused, reset, premature close, no
 * response headers within {@link Builder#responseTimeout}) fail it with
 * {@link ProviderConnectionException}.</li>
 * <li>The chunks are what {@link AnthropicChunkCodec} makes of the events: {@code ping} is a
 * keep-alive, {@code message_stop} the terminal {@link ChatChunk#done()}, the finish reason is the
 * {@code stop_reason} as sent ({@code end_turn}, {@code max_tokens}, {@code tool_use}...), an
 * {@code error} event fails the stream with its typed exception. The client sets no deadline on
 * the body: put a stall watch (the guard) after it.</li>
 * <li>Cancelling the subscription, or an error mid-body, closes the connection: a half-read
 * connection is never returned to the pool.</li>
 * <li>The API key goes into the {@code x-api-key} header only; it is never logged, never in
 * {@link #toString()}, and scrubbed from error messages that echo it.</li>
 * </ul>
 */
public final class AnthropicClient {

	/** The {@code anthropic-version} header sent unless the builder sets another. */
	public static final String DEFAULT_VERSION = "2023-06-01";

	/** The {@code max_tokens} sent when neither the request nor the builder sets one. */
	public static final int DEFAULT_MAX_TOKENS = 1024;

	private final String baseUrl;
	private final @Nullable String apiKey;
	private final @Nullable String model;
	private final int maxTokens;
	private final String version;
	private final Duration responseTimeout;
	private final SseExchange exchange;

	private AnthropicClient(Builder b) {
		this.baseUrl = b.baseUrl;
		this.apiKey = b.apiKey;
		this.model = b.model;
		this.maxTokens = b.maxTokens;
		this.version = b.version;
		this.responseTimeout = b.responseTimeout;
		String key = b.apiKey;
		String v = b.version;
		this.exchange = b.exchange(AnthropicChunkCodec.PROVIDER, "/messages", h -> {
			h.set("anthropic-version", v);
			if (key != null) {
				h.set("x-api-key", key);
			}
		}, AnthropicChunkCodec::decode, this::scrub);
	}

	/**
	 * @param baseUrl the API root including its version path, e.g. {@code https://api.anthropic.com/v1}
	 *        or {@code http://127.0.0.1:8080/v1}
	 * @throws IllegalArgumentException when not an absolute http(s) URL
	 */
	public static Builder builder(String baseUrl) {
		return new Builder(baseUrl);
	}

	/**
	 * Streams the answer to {@code request}: nothing is sent before subscription, and each
	 * subscription sends the request again. A request that cannot be expressed (no model, only
	 * system messages, tool-call arguments that are not a JSON object) fails the subscription with
	 * an {@link IllegalArgumentException} naming what is wrong, before anything is sent.
	 *
	 * @return the answer's chunks, ending with {@link ChatChunk#done()} when the server sent {@code message_stop}
	 */
	public Flux<ChatChunk> stream(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		return exchange.post(request, this::requestBody);
	}

	/** Removes the key, and anything shaped like a key, from text that goes into a message. */
	String scrub(String text) {
		return SseExchange.scrub(text, apiKey);
	}

	byte[] requestBody(ChatRequest request) {
		ObjectNode root = Json.MAPPER.createObjectNode();
		root.put("model", SseExchange.modelOf(request, model));
		root.put("max_tokens", request.maxTokens() != null ? request.maxTokens() : maxTokens);
		root.put("stream", true);
		if (request.temperature() != null) {
			root.put("temperature", request.temperature());
		}
		StringBuilder system = new StringBuilder();
		List<Turn> turns = new ArrayList<>();
		List<ChatMessage> messages = request.messages();
		for (int i = 0; i < messages.size(); i++) {
			ChatMessage message = messages.get(i);
			switch (message.role()) {
				case SYSTEM -> {
					if (!message.content().isEmpty()) {
						system.append(system.length() == 0 ? "" : "\n\n").append(message.content());
					}
				}
				case USER -> turn(turns, "user").text(message.content());
				case ASSISTANT -> {
					Turn turn = turn(turns, "assistant");
					turn.text(message.content());
					List<ToolCall> calls = message.toolCalls();
					for (int c = 0; c < calls.size(); c++) {
						ToolCall call = calls.get(c);
						turn.blocks.addObject()
							.put("type", "tool_use")
							.put("id", call.id())
							.put("name", call.name())
							.set("input", toolInput(call, i, c));
					}
				}
				case TOOL -> turn(turns, "user").blocks.addObject()
					.put("type", "tool_result")
					.put("tool_use_id", message.toolCallId())
					.put("content", message.content());
			}
		}
		if (turns.isEmpty()) {
			throw new IllegalArgumentException("messages: only system messages; Anthropic needs a user message besides the system prompt");
		}
		if (system.length() > 0) {
			root.put("system", system.toString());
		}
		ArrayNode out = root.putArray("messages");
		for (Turn turn : turns) {
			ObjectNode node = out.addObject();
			node.put("role", turn.role);
			JsonNode only = turn.blocks.size() == 1 ? turn.blocks.get(0) : null;
			if (turn.blocks.isEmpty()) {
				node.put("content", "");
			}
			else if (only != null && "text".equals(only.get("type").asString())) {
				node.put("content", only.get("text").asString());
			}
			else {
				node.set("content", turn.blocks);
			}
		}
		return Json.MAPPER.writeValueAsBytes(root);
	}

	/** @return the last turn when it has {@code role}, else a new one */
	private static Turn turn(List<Turn> turns, String role) {
		Turn last = turns.isEmpty() ? null : turns.get(turns.size() - 1);
		if (last != null && last.role.equals(role)) {
			return last;
		}
		Turn turn = new Turn(role);
		turns.add(turn);
		return turn;
	}

	/** The arguments as the JSON object {@code tool_use.input} must be; empty arguments are {@code {}}. */
	private static JsonNode toolInput(ToolCall call, int message, int index) {
		String arguments = call.arguments();
		if (arguments.isBlank()) {
			return Json.MAPPER.createObjectNode();
		}
		JsonNode input;
		try {
			input = Json.MAPPER.readTree(arguments);
		}
		catch (JacksonException e) {
			input = null;
		}
		if (input == null || !input.isObject()) {
			throw new IllegalArgumentException("messages[" + message + "].toolCalls[" + index + "].arguments (call "
					+ call.id() + ") must be a JSON object for Anthropic's tool_use input, was '"
					+ ProviderErrors.excerpt(arguments) + "'");
		}
		return input;
	}

	/** One message on the wire: a role and its content blocks. */
	private static final class Turn {

		final String role;
		final ArrayNode blocks = Json.MAPPER.createArrayNode();

		Turn(String role) {
			this.role = role;
		}

		/** Adds a text block; an empty text is left out (the API rejects empty text blocks). */
		void text(String text) {
			if (!text.isEmpty()) {
				blocks.addObject().put("type", "text").put("text", text);
			}
		}
	}

	@Override
	public String toString() {
		return "AnthropicClient{baseUrl=" + baseUrl + ", model=" + model + ", maxTokens=" + maxTokens
				+ ", anthropicVersion=" + version + ", apiKey=" + (apiKey == null ? "none" : "[set]")
				+ ", responseTimeout=" + responseTimeout + '}';
	}

	/**
	 * Configures an {@link AnthropicClient}. Each setter checks its value.
	 *
	 * <pre>{@code
	 * AnthropicClient client = AnthropicClient.builder("https://api.anthropic.com/v1")
	 *     .apiKey(System.getenv("ANTHROPIC_API_KEY"))
	 *     .model("claude-haiku-4-5")
	 *     .maxTokens(512)
	 *     .connectTimeout(Duration.ofSeconds(2))
	 *     .responseTimeout(Duration.ofSeconds(30))
	 *     .httpClient(sharedHttpClient)
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder extends SseClientSettings<Builder> {

		private int maxTokens = DEFAULT_MAX_TOKENS;
		private String version = DEFAULT_VERSION;

		private Builder(String baseUrl) {
			super(baseUrl);
		}

		@Override
		Builder self() {
			return this;
		}

		/**
		 * @param tokens the {@code max_tokens} sent when a {@link ChatRequest} sets none
		 *        (default {@value AnthropicClient#DEFAULT_MAX_TOKENS}); Anthropic requires one on every request
		 */
		public Builder maxTokens(int tokens) {
			this.maxTokens = SseExchange.positive("maxTokens", tokens);
			return this;
		}

		/** @param version the {@code anthropic-version} header (default {@value AnthropicClient#DEFAULT_VERSION}) */
		public Builder anthropicVersion(String version) {
			if (version == null || version.isBlank() || version.chars().anyMatch(Character::isWhitespace)) {
				throw new IllegalArgumentException("anthropicVersion must be a non-blank value without whitespace, was '"
						+ version + "'");
			}
			this.version = version;
			return this;
		}

		/** @return a client with these settings; the builder can go on to build others */
		public AnthropicClient build() {
			return new AnthropicClient(this);
		}
	}
}
