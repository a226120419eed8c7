package dev.aiguard.chat;

import java.util.List;
import java.util.Objects;

import dev.aiguard.core.ChunkInspector;
import org.jspecify.annotations.Nullable;

/**
 * One piece of a streamed answer, provider-neutral and immutable. Codecs in
 * {@code dev.aiguard.provider} turn OpenAI and Anthropic events into these.
 *
 * <pre>{@code
 * Flux<ChatChunk> answer = Flux.just(ChatChunk.token("Hel"), ChatChunk.token("lo"),
 *     ChatChunk.finish("stop"), ChatChunk.done());
 * }</pre>
 *
 * What the guard asks of every chunk (content? heartbeat? terminal?) is computed once here, so
 * {@link #INSPECTOR} answers with a single field read on the per-token path.
 */
public final class ChatChunk {

	/** The one empty tool-call list of every chunk without tool calls: {@link #hasToolCalls()} compares with it. */
	private static final List<ToolCallDelta> NO_TOOL_CALLS = List.of();

	private static final ChatChunk KEEP_ALIVE = new ChatChunk("", null, null, null, List.of(), true, false);
	private static final ChatChunk DONE = new ChatChunk("", null, null, null, List.of(), false, true);

	/** @return the inspector for chat chunks: {@link #INSPECTOR} */
	public static ChunkInspector<ChatChunk> inspector() {
		return INSPECTOR;
	}

	/** The inspector for chat chunks: each answer is one read of flags computed when the chunk was built. */
	public static final ChunkInspector<ChatChunk> INSPECTOR = new ChunkInspector<>() {
		@Override
		public Class<?> chunkType() {
			return ChatChunk.class;
		}

		@Override
		public boolean isContent(ChatChunk chunk) {
			return (chunk.flags & CONTENT) != 0;
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
		public @Nullable String finishReason(ChatChunk chunk) {
			return chunk.finishReason;
		}

		@Override
		public int flags(ChatChunk chunk) {
			return chunk.flags;
		}

		@Override
		public int promptTokens(ChatChunk chunk) {
			return chunk.usage == null ? -1 : chunk.usage.promptTokens();
		}

		@Override
		public int completionTokens(ChatChunk chunk) {
			return chunk.usage == null ? -1 : chunk.usage.completionTokens();
		}
	};

	private final String text;
	@Nullable
	private final String role;
	@Nullable
	private final String finishReason;
	@Nullable
	private final Usage usage;
	private final List<ToolCallDelta> toolCalls;
	private final boolean heartbeat;
	private final boolean terminal;
	private final int flags;

	/**
	 * @param text the text delta ({@code null} is read as {@code ""})
	 * @param role the role announced by the chunk, or {@code null}
	 * @param finishReason why generation stopped ({@code stop}, {@code length}, {@code end_turn}...), or {@code null}
	 * @param usage token usage, or {@code null}
	 * @param toolCalls tool-call deltas ({@code null} is read as none)
	 * @param heartbeat whether this is a keep-alive (ping, comment) and not content
	 * @param terminal whether this is the stream's terminal marker
	 */
	public ChatChunk(@Nullable String text, @Nullable String role, @Nullable String finishReason,
			@Nullable Usage usage, @Nullable List<ToolCallDelta> toolCalls, boolean heartbeat, boolean terminal) {
		this.text = text == null ? "" : text;
		this.role = role;
		this.finishReason = finishReason;
		this.usage = usage;
		this.toolCalls = toolCalls == null || toolCalls.isEmpty() ? NO_TOOL_CALLS : List.copyOf(toolCalls);
		this.heartbeat = heartbeat;
		this.terminal = terminal;
		int f = 0;
		if (!this.text.isEmpty() || !this.toolCalls.isEmpty()) {
			f |= ChunkInspector.CONTENT;
		}
		if (heartbeat) {
			f |= ChunkInspector.HEARTBEAT;
		}
		if (terminal) {
			f |= ChunkInspector.TERMINAL;
		}
		if (finishReason != null) {
			f |= ChunkInspector.FINISH;
		}
		if (usage != null) {
			f |= ChunkInspector.USAGE;
		}
		this.flags = f;
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
		return KEEP_ALIVE;
	}

	/** The terminal marker. */
	public static ChatChunk done() {
		return DONE;
	}

	/** @return the text delta, {@code ""} when none */
	public String text() {
		return text;
	}

	/** @return the role the chunk announces, or {@code null} */
	@Nullable
	public String role() {
		return role;
	}

	/** @return why generation stopped, or {@code null} */
	@Nullable
	public String finishReason() {
		return finishReason;
	}

	/** @return token usage, or {@code null} */
	@Nullable
	public Usage usage() {
		return usage;
	}

	/** @return tool-call deltas, empty when none */
	public List<ToolCallDelta> toolCalls() {
		return toolCalls;
	}

	/**
	 * @return whether the chunk carries tool-call deltas; one field comparison, without reading the
	 *         list, for code on the per-token path
	 */
	public boolean hasToolCalls() {
		return toolCalls != NO_TOOL_CALLS;
	}

	/** @return whether this is a keep-alive and not content */
	public boolean heartbeat() {
		return heartbeat;
	}

	/** @return whether this is the stream's terminal marker */
	public boolean terminal() {
		return terminal;
	}

	/** @return whether the user sees something from this chunk: text or a tool-call delta. */
	public boolean hasContent() {
		return (flags & ChunkInspector.CONTENT) != 0;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof ChatChunk)) {
			return false;
		}
		ChatChunk c = (ChatChunk) o;
		return heartbeat == c.heartbeat && terminal == c.terminal && text.equals(c.text)
				&& Objects.equals(role, c.role) && Objects.equals(finishReason, c.finishReason)
				&& Objects.equals(usage, c.usage) && toolCalls.equals(c.toolCalls);
	}

	@Override
	public int hashCode() {
		return Objects.hash(text, role, finishReason, usage, toolCalls, heartbeat, terminal);
	}

	@Override
	public String toString() {
		StringBuilder sb = new StringBuilder("ChatChunk[");
		if (terminal) {
			sb.append("DONE");
		}
		else if (heartbeat) {
			sb.append("keep-alive");
		}
		else {
			sb.append("text=\"").append(text).append('"');
		}
		if (role != null) {
			sb.append(", role=").append(role);
		}
		if (finishReason != null) {
			sb.append(", finishReason=").append(finishReason);
		}
		if (usage != null) {
			sb.append(", usage=").append(usage);
		}
		if (!toolCalls.isEmpty()) {
			sb.append(", toolCalls=").append(toolCalls);
		}
		return sb.append(']').toString();
	}
}
