package dev.aiguard.stage;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import reactor.util.context.Context;

/** What a stage may read of the request it runs for. */
public interface RequestFacts {

	Priority priority();

	/** @return the subscriber's context (tenant, priority, dropped-error hook) */
	Context context();

	/** @return the request about to be sent (the caller's, or a shortened one); {@code null} in the transform form */
	@Nullable
	ChatRequest request();

	/** @return the request as the caller made it, before a stage or a recovery step changed it; {@code null} in the transform form */
	@Nullable
	ChatRequest original();

	/** @return the realtime attempts started so far */
	int attemptsStarted();

	/** @return the request's clock, in nanoseconds (the policy's timer) */
	long nanos();

	/** @return whether the subscriber cancelled */
	boolean cancelled();
}
