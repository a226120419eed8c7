package dev.aiguard.core;

import org.jspecify.annotations.Nullable;

/**
 * Tells the guard what a chunk of type {@code T} means. Called on the per-token path, so an
 * implementation must be cheap, allocation-free and side-effect free.
 *
 * <p>A chunk may be content and carry a finish reason at once (the last OpenAI content chunk
 * does). A stream counts as complete when a terminal chunk <em>or</em> a finish reason was seen.
 *
 * <pre>{@code
 * record Delta(String text, String finishReason, boolean ping) { }
 *
 * ChunkInspector<Delta> deltas = ChunkInspector.of(Delta.class,
 *     d -> !d.text().isEmpty(),      // content
 *     Delta::ping,                   // heartbeat
 *     d -> false,                    // no terminal marker of its own:
 *     Delta::finishReason);          // the finish reason ends the answer
 * }</pre>
 *
 * Spring AI's responses have theirs in {@code dev.aiguard.springai.SpringAiChunks}.
 *
 * @param <T> the chunk type
 */
public interface ChunkInspector<T> {

	/** Bit of {@link #flags}: the chunk is content. */
	int CONTENT = 1;
	/** Bit of {@link #flags}: the chunk is a heartbeat. */
	int HEARTBEAT = 2;
	/** Bit of {@link #flags}: the chunk is terminal. */
	int TERMINAL = 4;
	/** Bit of {@link #flags}: the chunk carries a finish reason. */
	int FINISH = 8;
	/**
	 * Bit of {@link #flags}: the chunk carries the provider's token usage ({@link #promptTokens},
	 * {@link #completionTokens}). The guard remembers the last such chunk of an attempt and reads
	 * its usage once, when the attempt ends, for budgets and cost.
	 */
	int USAGE = 16;

	/**
	 * @return the class of the chunks this inspector reads, when known ({@code Object.class} when
	 *         not); the guard checks that its policy's fallback chain and mid-stream policy fit it
	 */
	default Class<?> chunkType() {
		return Object.class;
	}

	/** @return whether the chunk carries content the user sees (a token, a tool-call delta). */
	boolean isContent(T chunk);

	/** @return whether the chunk is a keep-alive (ping, SSE comment) rather than content. */
	boolean isHeartbeat(T chunk);

	/** @return whether the chunk is the stream's terminal marker ({@code [DONE]}, {@code message_stop}). */
	boolean isTerminal(T chunk);

	/** @return the finish reason the chunk carries, or {@code null}. */
	@Nullable
	String finishReason(T chunk);

	/**
	 * All four answers at once, as bits {@link #CONTENT}, {@link #HEARTBEAT}, {@link #TERMINAL} and
	 * {@link #FINISH}. The guard calls only this on the per-token path; override it when the
	 * answers can be precomputed (as the library's {@code ChatChunk} does).
	 */
	default int flags(T chunk) {
		int f = 0;
		if (isContent(chunk)) {
			f |= CONTENT;
		}
		else if (isHeartbeat(chunk)) {
			f |= HEARTBEAT;
		}
		if (isTerminal(chunk)) {
			f |= TERMINAL;
		}
		if (finishReason(chunk) != null) {
			f |= FINISH;
		}
		return f;
	}

	/**
	 * @return the prompt tokens the provider reports in a chunk flagged {@link #USAGE}, or {@code -1}
	 *         when it reports none (the default); read once per attempt, never per token
	 */
	default int promptTokens(T chunk) {
		return -1;
	}

	/**
	 * @return the completion tokens the provider reports in a chunk flagged {@link #USAGE}, or
	 *         {@code -1} when it reports none (the default); read once per attempt, never per token
	 */
	default int completionTokens(T chunk) {
		return -1;
	}

	/**
	 * Builds an inspector from four functions, for chunks of {@code type}.
	 *
	 * @param type the chunk class, which the guard checks its policy's components against
	 * @param content whether a chunk is content
	 * @param heartbeat whether a chunk is a heartbeat
	 * @param terminal whether a chunk is terminal
	 * @param finishReason the finish reason of a chunk, or {@code null}
	 */
	static <T> ChunkInspector<T> of(Class<T> type, java.util.function.Predicate<? super T> content,
			java.util.function.Predicate<? super T> heartbeat,
			java.util.function.Predicate<? super T> terminal,
			java.util.function.Function<? super T, String> finishReason) {
		return new FunctionInspector<>(java.util.Objects.requireNonNull(type, "type"), content, heartbeat, terminal,
				finishReason);
	}

	/**
	 * As {@link #of(Class, java.util.function.Predicate, java.util.function.Predicate,
	 * java.util.function.Predicate, java.util.function.Function)} without naming the chunk type, so
	 * the guard cannot check its policy's components against it.
	 */
	static <T> ChunkInspector<T> of(java.util.function.Predicate<? super T> content,
			java.util.function.Predicate<? super T> heartbeat,
			java.util.function.Predicate<? super T> terminal,
			java.util.function.Function<? super T, String> finishReason) {
		return new FunctionInspector<>(Object.class, content, heartbeat, terminal, finishReason);
	}
}
