package dev.aiguard.validation;

import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;

/**
 * Judges the answer of an attempt when it ends, once its stream completed: a 200 with a bad
 * answer becomes a failed attempt with the outcome {@link dev.aiguard.core.Outcome#INVALID}. Runs
 * on the thread that ended the attempt, once per attempt, so it must not block; a validator that
 * throws is skipped (its throw goes to {@code Hooks.onErrorDropped}) and the answer stands.
 *
 * <pre>{@code
 * OutputValidator noLinks = new OutputValidator() {
 *     public String name() { return "no-links"; }
 *     public String check(Answer answer) {
 *         return answer.text().contains("http") ? "the answer contains a link" : null;
 *     }
 * };
 * GuardPolicy.builder("chat").validate(Validators.emptyAnswer(), noLinks).build();
 * }</pre>
 *
 * Validators read {@code ChatChunk} answers: the guard assembles an {@link Answer} from them.
 */
public interface OutputValidator {

	/** @return names the validator in errors and in the invalid-answer meter's {@code validator} tag */
	String name();

	/** @return {@code null} when the answer passes, else what is wrong with it */
	@Nullable
	String check(Answer answer);

	/**
	 * @return whether {@link #check} reads {@link Answer#text()}: only then does the guard keep the
	 *         text, which costs an append per chunk (default {@code true})
	 */
	default boolean needsText() {
		return true;
	}

	/**
	 * @return whether sending the request again may bring a valid answer (default {@code false}).
	 *         The guard retries a rejected answer once per request at most, within the policy's
	 *         retry rules, and only when nothing reached the subscriber yet
	 */
	default boolean retryable() {
		return false;
	}

	/**
	 * The request a retry after this validator's rejection sends (call form only).
	 *
	 * @param request the request that was answered
	 * @param answer the rejected answer
	 * @param violation what {@link #check} said
	 * @return the request to send instead (default: {@code request} unchanged)
	 */
	default ChatRequest retryRequest(ChatRequest request, Answer answer, String violation) {
		return request;
	}

	/**
	 * @param request the request about to be answered, or {@code null} in the transform form
	 * @return whether the guard holds the answer back until this validator passed it (default
	 *         {@code false}): the subscriber then receives nothing of a rejected answer, so it can
	 *         be retried. Structured output, which a caller reads whole, is held
	 */
	default boolean holdsAnswer(@Nullable ChatRequest request) {
		return false;
	}

	/**
	 * @return whether the guard holds back an attempt's leading chunks whose text is only
	 *         whitespace, until the first chunk with a visible character or a tool call (default
	 *         {@code false}). A validator that rejects a blank answer and wants it retried asks for
	 *         this: a blank answer then ends with nothing delivered, so its rejection can be retried
	 *         or sent down the fallback ladder. An answer that says something is delivered as usual,
	 *         the held whitespace first. {@link Validators#emptyAnswer()} asks for it
	 */
	default boolean holdsLeadingWhitespace() {
		return false;
	}
}
