package dev.aiguard.provider;

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

	/** Per-subscription state: the input tokens of {@code message_start} (the event count is the base's). */
	static final class Decoder extends ChunkDecoder {

		private int inputTokens = -1;

		@Override
		@Nullable ChatChunk decodeEvent(SseEvent event) {
			// an event that is not a comment always has a type and data
			String type = Objects.requireNonNull(event.event(), "event");
			if (type.equals("ping")) {
				return ChatChunk.keepAlive();
			}
			JsonNode root = EventJson.object(PROVIDER, event, position);
			if (type.equals(SseEvent.DEFAULT_TYPE)) {
				// no event: line; the payload names its type too
				String inner = EventJson.text(root.get("type"));
				type = inner != null ? inner : type;
			}
			switch (type) {
				case "content_block_delta":
					return delta(root.path("index").asInt(0), root.path("delta"));
				case "content_block_start":
					return blockStart(root.path("index").asInt(0), root.path("content_block"));
				case "message_start": {
					JsonNode message = root.path("message");
					inputTokens = EventJson.count(message.path("usage").get("input_tokens"));
					String role = EventJson.text(message.get("role"));
					return role == null ? null : new ChatChunk("", role, null, null, List.of(), false, false);
				}
				case "message_delta": {
					String stop = EventJson.text(root.path("delta").get("stop_reason"));
					JsonNode u = root.get("usage");
					Usage usage = null;
					if (u != null && u.isObject()) {
						int input = EventJson.count(u.get("input_tokens"));
						usage = new Usage(input >= 0 ? input : inputTokens, EventJson.count(u.get("output_tokens")));
					}
					return stop == null && usage == null ? null
							: new ChatChunk("", null, stop, usage, List.of(), false, false);
				}
				case "message_stop":
					return ChatChunk.done();
				case "ping":
					return ChatChunk.keepAlive();
				case "error": {
					JsonNode error = root.get("error");
					throw EventJson.inBandError(PROVIDER, error != null ? error : root);
				}
				default:
					return null; // content_block_stop and events added after this was written
			}
		}

		private static @Nullable ChatChunk delta(int index, JsonNode delta) {
			String kind = EventJson.text(delta.get("type"));
			if (kind == null) {
				return null;
			}
			switch (kind) {
				case "text_delta": {
					String text = EventJson.text(delta.get("text"));
					return text == null || text.isEmpty() ? null : ChatChunk.token(text);
				}
				case "input_json_delta": {
					String json = EventJson.text(delta.get("partial_json"));
					return new ChatChunk("", null, null, null,
							List.of(new ToolCallDelta(index, null, null, json == null ? "" : json)), false, false);
				}
				case "thinking_delta":
				case "signature_delta":
					return ChatChunk.keepAlive();
				default:
					return null;
			}
		}

		private static @Nullable ChatChunk blockStart(int index, JsonNode block) {
			String kind = EventJson.text(block.get("type"));
			if (kind == null) {
				return null;
			}
			switch (kind) {
				case "text": {
					String text = EventJson.text(block.get("text"));
					return text == null || text.isEmpty() ? null : ChatChunk.token(text);
				}
				case "tool_use":
					return new ChatChunk("", null, null, null, List.of(new ToolCallDelta(index,
							EventJson.text(block.get("id")), EventJson.text(block.get("name")), "")), false, false);
				case "thinking":
				case "redacted_thinking":
					return ChatChunk.keepAlive();
				default:
					return null;
			}
		}
	}
}
