package dev.aiguard.provider;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import tools.jackson.databind.JsonNode;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.sse.SseEvent;
import reactor.core.publisher.Flux;

import org.jspecify.annotations.Nullable;

/**
 * OpenAI chat-completions stream events (also vLLM, Ollama's {@code /v1}, LM Studio, llama.cpp
 * server...) to {@link ChatChunk}s.
 *
 * <pre>{@code
 * Flux<ChatChunk> chunks = SseDecoder.defaults().decode(bytes).transform(OpenAiChunkCodec::decode);
 * Flux<ChatChunk> guarded = chunks.transform(AiGuard.of(policy, OpenAiChunkCodec.inspector()));
 * }</pre>
 *
 * <ul>
 * <li>{@code choices[0].delta}: {@code content} (and {@code refusal}) becomes the text,
 * {@code role} the role, {@code tool_calls} tool-call deltas (index, id, name, argument piece);
 * {@code finish_reason} the finish reason. Other choices than index 0 are ignored.</li>
 * <li>{@code usage} (the last chunk with {@code stream_options.include_usage}) becomes usage.</li>
 * <li>{@code data: [DONE]} becomes the terminal chunk {@link ChatChunk#done()}.</li>
 * <li>SSE comments and reasoning deltas ({@code reasoning_content}, {@code reasoning}) become
 * keep-alives: signs of life, not content.</li>
 * <li>{@code {"error":{...}}} fails the stream with the typed exception
 * ({@link ProviderErrors#inBand}); data that is not a JSON object fails it with
 * {@link ProviderFormatException} naming the event.</li>
 * <li>Unknown fields, and chunks that carry nothing of the above (e.g. Azure's
 * {@code prompt_filter_results}), are skipped.</li>
 * </ul>
 */
public final class OpenAiChunkCodec {

	/** The provider name the exceptions carry. */
	public static final String PROVIDER = "openai";

	private OpenAiChunkCodec() {
	}

	/** @return the events decoded to chunks; one decoding state per subscription */
	public static Flux<ChatChunk> decode(Flux<SseEvent> events) {
		return ChunkDecoder.decode(events, Decoder::new);
	}

	/**
	 * The inspector for what this codec produces. Both codecs produce {@link ChatChunk}, so this is
	 * {@link dev.aiguard.chat.ChatChunk#inspector()}: content = text or tool-call delta, heartbeat = keep-alive,
	 * terminal = {@code [DONE]}, finish reason = {@code finish_reason}.
	 */
	public static ChunkInspector<ChatChunk> inspector() {
		return ChatChunk.inspector();
	}

	/** The OpenAI rules for one event; the per-subscription event count is the base's. */
	static final class Decoder extends ChunkDecoder {

		@Override
		@Nullable ChatChunk decodeEvent(SseEvent event) {
			// an event that is not a comment always has data
			String data = Objects.requireNonNull(event.data(), "data");
			if (data.equals("[DONE]")) {
				return ChatChunk.done();
			}
			if (data.isBlank()) {
				return ChatChunk.keepAlive();
			}
			JsonNode root = EventJson.object(PROVIDER, event, position);
			JsonNode error = root.get("error");
			if (error != null && !error.isNull()) {
				throw EventJson.inBandError(PROVIDER, error);
			}
			String text = "";
			String role = null;
			String finishReason = null;
			List<ToolCallDelta> toolCalls = List.of();
			boolean reasoning = false;
			JsonNode choice = firstChoice(root.get("choices"));
			if (choice != null) {
				JsonNode delta = choice.path("delta");
				String content = EventJson.text(delta.get("content"));
				String refusal = EventJson.text(delta.get("refusal"));
				text = content != null ? content : refusal != null ? refusal : "";
				role = EventJson.text(delta.get("role"));
				toolCalls = toolCalls(delta.get("tool_calls"));
				finishReason = EventJson.text(choice.get("finish_reason"));
				reasoning = EventJson.text(delta.get("reasoning_content")) != null
						|| EventJson.text(delta.get("reasoning")) != null;
			}
			Usage usage = usage(root.get("usage"));
			if (text.isEmpty() && role == null && finishReason == null && toolCalls.isEmpty() && usage == null) {
				return reasoning ? ChatChunk.keepAlive() : null;
			}
			return new ChatChunk(text, role, finishReason, usage, toolCalls, false, false);
		}

		private static @Nullable JsonNode firstChoice(JsonNode choices) {
			if (choices == null || !choices.isArray()) {
				return null;
			}
			for (JsonNode c : choices) {
				JsonNode index = c.get("index");
				if (index == null || index.asInt(-1) == 0) {
					return c;
				}
			}
			return null;
		}

		private static List<ToolCallDelta> toolCalls(JsonNode calls) {
			if (calls == null || !calls.isArray() || calls.isEmpty()) {
				return List.of();
			}
			List<ToolCallDelta> out = new ArrayList<>(calls.size());
			int i = 0;
			for (JsonNode call : calls) {
				JsonNode index = call.get("index");
				JsonNode function = call.path("function");
				String arguments = EventJson.text(function.get("arguments"));
				out.add(new ToolCallDelta(index != null && index.isInt() ? index.intValue() : i, EventJson.text(call.get("id")),
						EventJson.text(function.get("name")), arguments == null ? "" : arguments));
				i++;
			}
			return List.copyOf(out);
		}

		private static @Nullable Usage usage(JsonNode usage) {
			if (usage == null || !usage.isObject()) {
				return null;
			}
			return new Usage(EventJson.count(usage.get("prompt_tokens")), EventJson.count(usage.get("completion_tokens")));
		}
	}
}
