package dev.aiguard.chat;

import java.util.List;

import dev.aiguard.ChunkInspector;

/**
 * One piece of a streamed answer, provider-neutral. Codecs in {@code dev.aiguard.provider} turn
 * OpenAI and Anthropic events into these.
 *
 * <pre>{@code
 * Flux<ChatChunk> answer = Flux.just(ChatChunk.token("Hel"), ChatChunk.token("lo"),
 *     ChatChunk.finish("stop"), ChatChunk.done());
 * }</pre>
 *
 * @param text the text delta ({@code ""} when the chunk carries none)
 * @param role the role announced by the chunk, or {@code null}
 * @param finishReason why generation stopped ({@code stop}, {@code length}, {@code end_turn}...), or {@code null}
 * @param usage token usage, or {@code null}
 * @param toolCalls tool-call deltas (empty when none)
 * @param heartbeat whether this is a keep-alive (ping, comment) and not content
 * @param terminal whether this is the stream's terminal marker
 */
public record ChatChunk(String text, String role, String finishReason, Usage usage, List<ToolCallDelta> toolCalls,
		boolean heartbeat, boolean terminal) {

	private static final ChatChunk HEARTBEAT = new ChatChunk("", null, null, null, List.of(), true, false);
	private static final ChatChunk DONE = new ChatChunk("", null, null, null, List.of(), false, true);

	/** Inspector for {@link ChatChunk}; see {@link ChunkInspector#chatChunks()}. */
	public static final ChunkInspector<ChatChunk> INSPECTOR = new ChunkInspector<>() {
		@Override
		public boolean isContent(ChatChunk chunk) {
			return chunk.hasContent();
		}

		@Override
		public boolean isHeartbeat(ChatChunk chunk) {
			return chunk.heartbeat;
		}

		@Override
		public boolean isTerminal(ChatChunk chunk) {
			return chunk.terminal;
		}

		@Override
		public String finishReason(ChatChunk chunk) {
			return chunk.finishReason;
		}
	};

	public ChatChunk {
		text = text == null ? "" : text;
		toolCalls = toolCalls == null ? List.of() : toolCalls;
	}

	/** A content chunk with a text delta. */
	public static ChatChunk token(String text) {
		return new ChatChunk(text, null, null, null, List.of(), false, false);
	}

	/** A chunk that only says why generation stopped. */
	public static ChatChunk finish(String finishReason) {
		return new ChatChunk("", null, finishReason, null, List.of(), false, false);
	}

	/** A chunk carrying only usage. */
	public static ChatChunk usage(Usage usage) {
		return new ChatChunk("", null, null, usage, List.of(), false, false);
	}

	/** A keep-alive (ping, SSE comment): not content. */
	public static ChatChunk keepAlive() {
		return HEARTBEAT;
	}

	/** The terminal marker. */
	public static ChatChunk done() {
		return DONE;
	}

	/** @return whether the user sees something from this chunk: text or a tool-call delta. */
	public boolean hasContent() {
		return !text.isEmpty() || !toolCalls.isEmpty();
	}
}
