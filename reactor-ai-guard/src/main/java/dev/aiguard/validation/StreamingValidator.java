package dev.aiguard.validation;

import org.jspecify.annotations.Nullable;

/**
 * Watches each chunk of an answer while it streams and can cut it: the attempt then ends at once
 * with the {@link InvalidOutputException} the watch returned, outcome
 * {@link dev.aiguard.core.Outcome#INVALID}, the chunks already delivered standing as a partial
 * answer. {@link RepetitionDetector} is the one the library ships.
 *
 * <p>{@link Watch#onText} runs on the per-token path, inside the chunk's delivery: it must be O(1)
 * and allocate nothing (except the exception it returns to cut), and must not block.
 *
 * <pre>{@code
 * GuardPolicy.builder("chat").validateStreaming(RepetitionDetector.defaults()).build();
 * }</pre>
 */
public interface StreamingValidator {

	/** @return names the validator in errors and in the invalid-answer meter's {@code validator} tag */
	String name();

	/** @return the state of one request, created once per request and {@linkplain Watch#reset() reset} per attempt */
	Watch newWatch();

	/** The per-request state of a streaming validator. Called from one thread at a time. */
	interface Watch {

		/** An attempt starts: forget what the previous one streamed. */
		void reset();

		/**
		 * @param text the non-empty text of the next content chunk
		 * @return {@code null} to let the stream go on, else the error that cuts it
		 */
		@Nullable
		InvalidOutputException onText(String text);
	}
}
