package dev.aiguard.provider;

import java.time.Duration;
import java.util.Objects;

import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ResponseFormat;
import dev.aiguard.chat.ToolCall;
import io.netty.handler.codec.http.HttpHeaderNames;
import reactor.core.publisher.Flux;

import org.jspecify.annotations.Nullable;

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

	private final String baseUrl;
	private final @Nullable String apiKey;
	private final @Nullable String model;
	private final Duration responseTimeout;
	private final boolean includeUsage;
	private final SseExchange exchange;

	private OpenAiCompatibleClient(Builder b) {
		this.baseUrl = b.baseUrl;
		this.apiKey = b.apiKey;
		this.model = b.model;
		this.responseTimeout = b.responseTimeout;
		this.includeUsage = b.includeUsage;
		String key = b.apiKey;
		this.exchange = b.exchange(OpenAiChunkCodec.PROVIDER, "/chat/completions", h -> {
			if (key != null) {
				h.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + key);
			}
		}, OpenAiChunkCodec::decode, this::scrub);
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
		return exchange.post(request, this::requestBody);
	}

	/** Removes the key, and anything shaped like a key, from text that goes into a message. */
	String scrub(String text) {
		return SseExchange.scrub(text, apiKey);
	}

	byte[] requestBody(ChatRequest request) {
		ObjectNode root = Json.MAPPER.createObjectNode();
		root.put("model", SseExchange.modelOf(request, model));
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
		ResponseFormat format = request.responseFormat();
		if (format != null) {
			ObjectNode jsonSchema = root.putObject("response_format").put("type", "json_schema").putObject("json_schema");
			jsonSchema.put("name", format.name());
			jsonSchema.put("strict", format.strict());
			jsonSchema.set("schema", Json.MAPPER.readTree(format.schema()));
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
	public static final class Builder extends SseClientSettings<Builder> {

		private boolean includeUsage = true;

		private Builder(String baseUrl) {
			super(baseUrl);
		}

		@Override
		Builder self() {
			return this;
		}

		/** @param include whether to ask for the usage chunk ({@code stream_options}); some old servers reject it */
		public Builder includeUsage(boolean include) {
			this.includeUsage = include;
			return this;
		}

		/** @return a client with these settings; the builder can go on to build others */
		public OpenAiCompatibleClient build() {
			return new OpenAiCompatibleClient(this);
		}
	}
}
