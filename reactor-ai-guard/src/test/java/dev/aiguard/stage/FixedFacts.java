package dev.aiguard.stage;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import reactor.util.context.Context;

/** Test support: a request as a stage reads it when it starts, nothing sent yet, its request the caller's. */
public record FixedFacts(Priority priority, @Nullable ChatRequest original) implements RequestFacts {

	@Override
	public Context context() {
		return Context.empty();
	}

	@Override
	@Nullable
	public ChatRequest request() {
		return original;
	}

	@Override
	public int attemptsStarted() {
		return 0;
	}

	@Override
	public long nanos() {
		return 0L;
	}

	@Override
	public boolean cancelled() {
		return false;
	}
}
