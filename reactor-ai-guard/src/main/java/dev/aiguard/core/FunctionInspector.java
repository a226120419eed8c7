package dev.aiguard.core;

import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;

/** A {@link ChunkInspector} made of four functions, with the chunk type when the caller named it. */
final class FunctionInspector<T> implements ChunkInspector<T> {

	private final Class<?> type;
	private final Predicate<? super T> content;
	private final Predicate<? super T> heartbeat;
	private final Predicate<? super T> terminal;
	private final Function<? super T, String> finishReason;

	FunctionInspector(Class<?> type, Predicate<? super T> content, Predicate<? super T> heartbeat,
			Predicate<? super T> terminal, Function<? super T, String> finishReason) {
		this.type = type;
		this.content = Objects.requireNonNull(content, "content");
		this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
		this.terminal = Objects.requireNonNull(terminal, "terminal");
		this.finishReason = Objects.requireNonNull(finishReason, "finishReason");
	}

	@Override
	public Class<?> chunkType() {
		return type;
	}

	@Override
	public boolean isContent(T chunk) {
		return content.test(chunk);
	}

	@Override
	public boolean isHeartbeat(T chunk) {
		return heartbeat.test(chunk);
	}

	@Override
	public boolean isTerminal(T chunk) {
		return terminal.test(chunk);
	}

	@Override
	public String finishReason(T chunk) {
		return finishReason.apply(chunk);
	}
}
