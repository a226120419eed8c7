package dev.aiguard.provider;

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
 * Anthropic Messages stream events to {@link ChatChunk}s.
 *
 * <pre>{@code
 * Flux<ChatChunk> chunks = SseDecoder.defaults().decode(bytes).transform(AnthropicChunkCodec::decode);
 * Flux<ChatChunk> guarded = chunks.transform(AiGuard.of(policy, AnthropicChunkCodec.inspector()));
 * }</pre>
 *
 * <table>
 * <caption>Event to chunk</caption>
 * <tr><th>event</th><th>chunk</th></tr>
 * <tr><td>{@code message_start}</td><td>the role; its input tokens are kept for the final usage</td></tr>
 * <tr><td>{@code content_block_start} text / tool_use</td><td>its text / a tool-call delta with id and name</td></tr>
 * <tr><td>{@code content_block_delta} text_delta / input_json_delta</td><td>a token / a tool-call argument piece</td></tr>
 * <tr><td>{@code thinking_delta}, {@code signature_delta}, thinking block start, {@code ping}, SSE comment</td><td>keep-alive</td></tr>
 * <tr><td>{@code message_delta}</td><td>finish reason ({@code stop_reason}) and usage (input tokens from
 * {@code message_start} unless repeated, output tokens)</td></tr>
 * <tr><td>{@code message_stop}</td><td>{@link ChatChunk#done()}, the terminal marker</td></tr>
 * <tr><td>{@code error}</td><td>fails with the typed exception; {@code overloaded_error} is a retryable
 * {@link ProviderOverloadedException}</td></tr>
 * <tr><td>{@code content_block_stop}, unknown events and delta types</td><td>skipped</td></tr>
 * </table>
 *
 * Tool-call deltas use the content block index as their index. Data that is not a JSON object
 * fails the stream with {@link ProviderFormatException} naming the event.
 */
public final class AnthropicChunkCodec {

	/** The provider name the exceptions carry. */
	public static final String PROVIDER = "anthropic";

	private AnthropicChunkCodec() {
	}

	/** @return the events decoded to chunks; one decoding state per subscription */
	public static Flux<ChatChunk> decode(Flux<SseEvent> events) {
		return ChunkDecoder.decode(events, Decoder::new);
	}

	/**
	 * The inspector for what this codec produces. Both codecs produce {@link ChatChunk}, so this is
	 * {@link dev.aiguard.chat.ChatChunk#inspector()}: content = text or tool-call delta, heartbeat = ping or
	 * thinking, terminal = {@code message_stop}, finish reason = {@code stop_reason}.
	 */
	public static ChunkInspector<ChatChunk> inspector() {
		return ChatChunk.inspector();
	}

	/**
	 * Per-subscription state: the input tokens of {@code message_start} (the event count is the
	 * base's), and the fields of the event being read. Fields come in any order, so one pass of the
	 * streaming parser collects those the rules below need and the event's type picks the chunk.
	 */
	static final class Decoder extends ChunkDecoder implements EventJson.ObjectReader<Void> {

		private static final String[] TYPES = { "content_block_delta", "content_block_start", "message_start",
				"message_delta", "message_stop", "content_block_stop", "ping", "error" };
		private static final String[] DELTA_TYPES = { "text_delta", "input_json_delta", "thinking_delta",
				"signature_delta" };
		private static final String[] BLOCK_TYPES = { "text", "tool_use", "thinking", "redacted_thinking" };

		private int inputTokens = -1;

		private @Nullable String payloadType;
		private int index;
		private @Nullable String deltaKind;
		private @Nullable String deltaText;
		private @Nullable String blockKind;
		private @Nullable String blockText;
		private @Nullable String partialJson;
		private @Nullable String stopReason;
		private @Nullable String id;
		private @Nullable String name;
		private @Nullable String role;
		private int messageInputTokens;
		private @Nullable Usage usage;
		private boolean hasError;
		private ErrorBodies.@Nullable Parsed error;
		private @Nullable String message;
		private @Nullable String code;

		@Override
		@Nullable ChatChunk decodeEvent(SseEvent event) {
			// an event that is not a comment always has a type and data
			String type = Objects.requireNonNull(event.event(), "event");
			if (type.equals("ping")) {
				return ChatChunk.keepAlive();
			}
			EventJson.read(PROVIDER, event, position, this);
			if (type.equals(SseEvent.DEFAULT_TYPE)) {
				// no event: line; the payload names its type too
				type = payloadType != null ? payloadType : type;
			}
			switch (type) {
				case "content_block_delta":
					return delta();
				case "content_block_start":
					return blockStart();
				case "message_start":
					inputTokens = messageInputTokens;
					return role == null ? null : new ChatChunk("", role, null, null, List.of(), false, false);
				case "message_delta":
					return stopReason == null && usage == null ? null
							: new ChatChunk("", null, stopReason, usage, List.of(), false, false);
				case "message_stop":
					return ChatChunk.done();
				case "ping":
					return ChatChunk.keepAlive();
				case "error": {
					ErrorBodies.Parsed p = hasError ? Objects.requireNonNull(error)
							: new ErrorBodies.Parsed(message != null ? message : Objects.requireNonNull(event.data(), "data"), payloadType,
									code);
					throw ProviderErrors.inBand(PROVIDER, p.type(), p.code(), p.message());
				}
				default:
					return null; // content_block_stop and events added after this was written
			}
		}

		/** Reads the root object the parser has entered into the fields. */
		@Override
		public @Nullable Void readObject(JsonParser parser, String data, long dataStart) {
			payloadType = null;
			index = 0;
			deltaKind = null;
			deltaText = null;
			blockKind = null;
			blockText = null;
			partialJson = null;
			stopReason = null;
			id = null;
			name = null;
			role = null;
			messageInputTokens = -1;
			usage = null;
			hasError = false;
			error = null;
			message = null;
			code = null;
			String field;
			while ((field = EventJson.nextProperty(parser)) != null) {
				switch (field) {
					case "type" -> payloadType = EventJson.oneOf(parser, TYPES);
					case "index" -> index = EventJson.asInt(parser, 0);
					case "delta" -> delta(parser);
					case "content_block" -> block(parser);
					case "message" -> message(parser);
					case "usage" -> usage = usage(parser);
					case "error" -> {
						hasError = true;
						error = ErrorBodies.read(parser, data, dataStart);
					}
					case "code" -> code = EventJson.text(parser);
					default -> parser.skipChildren();
				}
			}
			return null;
		}

		private void delta(JsonParser parser) {
			if (!EventJson.enterObject(parser)) {
				return;
			}
			String field;
			while ((field = EventJson.nextProperty(parser)) != null) {
				switch (field) {
					case "type" -> deltaKind = EventJson.oneOf(parser, DELTA_TYPES);
					case "text" -> deltaText = EventJson.text(parser);
					case "partial_json" -> partialJson = EventJson.text(parser);
					case "stop_reason" -> stopReason = EventJson.text(parser);
					default -> parser.skipChildren();
				}
			}
		}

		private void block(JsonParser parser) {
			if (!EventJson.enterObject(parser)) {
				return;
			}
			String field;
			while ((field = EventJson.nextProperty(parser)) != null) {
				switch (field) {
					case "type" -> blockKind = EventJson.oneOf(parser, BLOCK_TYPES);
					case "text" -> blockText = EventJson.text(parser);
					case "id" -> id = EventJson.text(parser);
					case "name" -> name = EventJson.text(parser);
					default -> parser.skipChildren();
				}
			}
		}

		/** {@code message_start}'s message object; a string there is an error event's message. */
		private void message(JsonParser parser) {
			if (parser.currentToken() != JsonToken.START_OBJECT) {
				message = EventJson.text(parser);
				return;
			}
			String field;
			while ((field = EventJson.nextProperty(parser)) != null) {
				switch (field) {
					case "role" -> role = EventJson.text(parser);
					case "usage" -> {
						if (EventJson.enterObject(parser)) {
							String u;
							while ((u = EventJson.nextProperty(parser)) != null) {
								if (u.equals("input_tokens")) {
									messageInputTokens = EventJson.count(parser);
								}
								else {
									parser.skipChildren();
								}
							}
						}
					}
					default -> parser.skipChildren();
				}
			}
		}

		private @Nullable Usage usage(JsonParser parser) {
			if (!EventJson.enterObject(parser)) {
				return null;
			}
			int input = -1;
			int output = -1;
			String field;
			while ((field = EventJson.nextProperty(parser)) != null) {
				switch (field) {
					case "input_tokens" -> input = EventJson.count(parser);
					case "output_tokens" -> output = EventJson.count(parser);
					default -> parser.skipChildren();
				}
			}
			return new Usage(input >= 0 ? input : inputTokens, output);
		}

		private @Nullable ChatChunk delta() {
			if (deltaKind == null) {
				return null;
			}
			switch (deltaKind) {
				case "text_delta":
					return deltaText == null || deltaText.isEmpty() ? null : ChatChunk.token(deltaText);
				case "input_json_delta":
					return new ChatChunk("", null, null, null,
							List.of(new ToolCallDelta(index, null, null, partialJson == null ? "" : partialJson)), false, false);
				case "thinking_delta":
				case "signature_delta":
					return ChatChunk.keepAlive();
				default:
					return null;
			}
		}

		private @Nullable ChatChunk blockStart() {
			if (blockKind == null) {
				return null;
			}
			switch (blockKind) {
				case "text":
					return blockText == null || blockText.isEmpty() ? null : ChatChunk.token(blockText);
				case "tool_use":
					return new ChatChunk("", null, null, null, List.of(new ToolCallDelta(index, id, name, "")), false, false);
				case "thinking":
				case "redacted_thinking":
					return ChatChunk.keepAlive();
				default:
					return null;
			}
		}
	}
}
