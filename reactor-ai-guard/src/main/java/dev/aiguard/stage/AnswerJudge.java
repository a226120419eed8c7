package dev.aiguard.stage;

import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;
import reactor.util.context.Context;

/**
 * A stage that judges each realtime answer (output validation): it sees every content chunk of the
 * attempt as the attempt's watch delivers it, may hold the answer back until it passed, and gives
 * the verdict when the attempt completes. The request reaches it through
 * {@link StageRun#judge()}.
 */
public interface AnswerJudge {

	/** A realtime attempt starts: what the previous one streamed is forgotten. */
	void startAttempt();

	/** @return whether the answer to {@code request} is held back, not delivered, until it passed */
	boolean holds(@Nullable ChatRequest request);

	/** @return whether an attempt's leading whitespace-only chunks are held while a retry is still possible */
	boolean holdsLeadingWhitespace();

	/**
	 * A content chunk of the attempt went to its target.
	 *
	 * @throws RuntimeException the rejection that cuts the attempt (the chunk counted as delivered)
	 */
	void afterContent(Object chunk);

	/** @return the rejection of the completed attempt's answer, or {@code null} when it stands */
	@Nullable
	RuntimeException verdict(@Nullable String finishReason, @Nullable ChatRequest request, Context context);

	/** @return the request a retry after the last rejection sends: {@code request}, or what its judge makes of it */
	ChatRequest retryRequest(ChatRequest request, Context context);
}
