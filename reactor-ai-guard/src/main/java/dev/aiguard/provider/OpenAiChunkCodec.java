package dev.aiguard.provider;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.sse.SseEvent;
import reactor.core.publisher.Flux;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;

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

	/**
	 * The OpenAI rules for one event, read in one pass of a streaming parser. The fields of the
	 * choice being read are held here (one decoder per subscription, one event at a time) and
	 * kept once the choice turns out to be the first; the event count is the base's.
	 */
	static final class Decoder extends ChunkDecoder implements EventJson.ObjectReader<ChatChunk> {

		private @Nullable String text;
		private @Nullable String refusal;
		private @Nullable String role;
		private @Nullable String finishReason;
		private List<ToolCallDelta> toolCalls = List.of();
		private boolean reasoning;

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
			return EventJson.read(PROVIDER, event, position, this);
		}

		/** Reads the root object the parser has entered; an error object fails once the whole object is read. */
		@Override
		public @Nullable ChatChunk readObject(JsonParser parser, String data, long dataStart) {
			clear();
			boolean chosen = false;
			Usage usage = null;
			ErrorBodies.Parsed error = null;
			String name;
			while ((name = EventJson.nextProperty(parser)) != null) {
				switch (name) {
					case "choices" -> chosen = choices(parser) || chosen;
					case "usage" -> usage = usage(parser);
					case "error" -> error = parser.currentToken() == JsonToken.VALUE_NULL ? null
							: ErrorBodies.read(parser, data, dataStart);
					default -> parser.skipChildren();
				}
			}
			if (error != null) {
				throw ProviderErrors.inBand(PROVIDER, error.type(), error.code(), error.message());
			}
			if (!chosen) {
				clear();
			}
			String content = text != null ? text : refusal != null ? refusal : "";
			if (content.isEmpty() && role == null && finishReason == null && toolCalls.isEmpty() && usage == null) {
				return reasoning ? ChatChunk.keepAlive() : null;
			}
			return new ChatChunk(content, role, finishReason, usage, toolCalls, false, false);
		}

		private void clear() {
			text = null;
			refusal = null;
			role = null;
			finishReason = null;
			toolCalls = List.of();
			reasoning = false;
		}

		/**
		 * Reads the choices, keeping the fields of the first with index 0 (or none); an element that
		 * is not an object counts as that choice, with nothing in it.
		 *
		 * @return whether a choice was kept
		 */
		private boolean choices(JsonParser parser) {
			if (parser.currentToken() != JsonToken.START_ARRAY) {
				parser.skipChildren();
				return false;
			}
			boolean chosen = false;
			while (parser.nextToken() != JsonToken.END_ARRAY) {
				if (chosen || parser.currentToken() != JsonToken.START_OBJECT) {
					parser.skipChildren();
					chosen = true;
					continue;
				}
				chosen = choice(parser);
				if (!chosen) {
					clear();
				}
			}
			return chosen;
		}

		/** @return whether this choice is the first one: index 0 or none */
		private boolean choice(JsonParser parser) {
			int index = 0;
			String name;
			while ((name = EventJson.nextProperty(parser)) != null) {
				switch (name) {
					case "index" -> index = EventJson.asInt(parser, -1);
					case "delta" -> delta(parser);
					case "finish_reason" -> finishReason = EventJson.text(parser);
					default -> parser.skipChildren();
				}
			}
			return index == 0;
		}

		private void delta(JsonParser parser) {
			if (!EventJson.enterObject(parser)) {
				return;
			}
			String name;
			while ((name = EventJson.nextProperty(parser)) != null) {
				switch (name) {
					case "content" -> text = EventJson.text(parser);
					case "refusal" -> refusal = EventJson.text(parser);
					case "role" -> role = EventJson.text(parser);
					case "tool_calls" -> toolCalls = toolCalls(parser);
					case "reasoning_content", "reasoning" -> reasoning = EventJson.present(parser) || reasoning;
					default -> parser.skipChildren();
				}
			}
		}

		private static List<ToolCallDelta> toolCalls(JsonParser parser) {
			if (parser.currentToken() != JsonToken.START_ARRAY) {
				parser.skipChildren();
				return List.of();
			}
			List<ToolCallDelta> out = null;
			int position = 0;
			while (parser.nextToken() != JsonToken.END_ARRAY) {
				if (out == null) {
					out = new ArrayList<>(2);
				}
				out.add(toolCall(parser, position++));
			}
			return out == null ? List.of() : List.copyOf(out);
		}

		/** @param position the call's place in the array, its index when it names none */
		private static ToolCallDelta toolCall(JsonParser parser, int position) {
			int index = position;
			String id = null;
			String functionName = null;
			String arguments = null;
			if (EventJson.enterObject(parser)) {
				String name;
				while ((name = EventJson.nextProperty(parser)) != null) {
					switch (name) {
						case "index" -> index = EventJson.intOr(parser, position);
						case "id" -> id = EventJson.text(parser);
						case "function" -> {
							if (EventJson.enterObject(parser)) {
								String field;
								while ((field = EventJson.nextProperty(parser)) != null) {
									switch (field) {
										case "name" -> functionName = EventJson.text(parser);
										case "arguments" -> arguments = EventJson.text(parser);
										default -> parser.skipChildren();
									}
								}
							}
						}
						default -> parser.skipChildren();
					}
				}
			}
			return new ToolCallDelta(index, id, functionName, arguments == null ? "" : arguments);
		}

		private static @Nullable Usage usage(JsonParser parser) {
			if (!EventJson.enterObject(parser)) {
				return null;
			}
			int prompt = -1;
			int completion = -1;
			String name;
			while ((name = EventJson.nextProperty(parser)) != null) {
				switch (name) {
					case "prompt_tokens" -> prompt = EventJson.count(parser);
					case "completion_tokens" -> completion = EventJson.count(parser);
					default -> parser.skipChildren();
				}
			}
			return new Usage(prompt, completion);
		}
	}
}
