package dev.aiguard.retry;

import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.retry.splice.OverlapSplicer;

/**
 * Builds the request that continues an answer which failed midway. Give it the
 * <em>original</em> request and <em>all</em> the text delivered so far (also on a second
 * continuation), never a previous continuation request.
 *
 * <ul>
 * <li>{@link #ASSISTANT_PREFILL}: the original messages plus an assistant message holding the
 * partial text, which the model continues (Anthropic, and servers with
 * {@code continue_final_message}). Trailing whitespace is removed from the prefill, as
 * Anthropic requires; the {@link OverlapSplicer} absorbs the whitespace the model then repeats.</li>
 * <li>{@link #USER_CONTINUE}: the original messages, the partial answer as an assistant
 * message, and a user message asking to continue exactly where it stopped without repeating
 * (for models that reject a final assistant message, such as OpenAI's).</li>
 * <li>{@link #byModel(Function)}: chooses one of them per model name.</li>
 * </ul>
 *
 * <pre>{@code
 * ContinuationStrategy strategy = ContinuationStrategy.byModel(model ->
 *         model != null && model.startsWith("claude") ? ContinuationStrategy.ASSISTANT_PREFILL
 *                                                     : ContinuationStrategy.USER_CONTINUE);
 * ChatRequest next = strategy.continuation(original, deliveredText, sawToolCalls);
 * }</pre>
 */
@FunctionalInterface
public interface ContinuationStrategy {

	/** The instruction {@link #USER_CONTINUE} sends. */
	String DEFAULT_INSTRUCTION = "Your previous answer was cut off. Continue it exactly where it stopped, "
			+ "mid-sentence if need be. Do not repeat any text you already wrote and do not add any preamble.";

	/** Continue with the partial answer as the final (prefilled) assistant message. */
	ContinuationStrategy ASSISTANT_PREFILL = new AssistantPrefill();

	/** Continue with the partial answer as an assistant message and a user request to go on. */
	ContinuationStrategy USER_CONTINUE = new UserContinue(DEFAULT_INSTRUCTION);

	/**
	 * Builds the continuation request. Implementations may assume the checks of
	 * {@link #continuation(ChatRequest, String, boolean)} passed.
	 *
	 * @param original the request whose answer failed
	 * @param partialText everything delivered to the subscriber so far
	 */
	ChatRequest continuation(ChatRequest original, String partialText);

	/**
	 * The entry point the guard calls: refuses what cannot be continued, then builds the request.
	 *
	 * @param partialHasToolCalls whether any delivered chunk carried a tool-call delta
	 * @throws ContinuationRefusedException when the partial answer has tool calls or no text
	 */
	default ChatRequest continuation(ChatRequest original, String partialText, boolean partialHasToolCalls) {
		Objects.requireNonNull(original, "original");
		if (partialHasToolCalls) {
			throw new ContinuationRefusedException(
					"the partial answer contains tool calls, which cannot be resumed; not continuing");
		}
		if (partialText == null || partialText.isBlank()) {
			throw new ContinuationRefusedException("the partial answer has no text to continue from");
		}
		return continuation(original, partialText);
	}

	/**
	 * @param instruction the user message that asks the model to continue
	 * @return a {@link #USER_CONTINUE} strategy with another wording
	 * @throws IllegalArgumentException when blank
	 */
	static ContinuationStrategy userContinue(String instruction) {
		if (instruction == null || instruction.isBlank()) {
			throw new IllegalArgumentException("instruction must not be blank, was "
					+ (instruction == null ? "null" : "\"" + instruction + "\""));
		}
		return new UserContinue(instruction);
	}

	/**
	 * @param chooser picks the strategy for the original request's model name (which may be
	 * {@code null}); a {@code null} answer means {@link #USER_CONTINUE}, which every chat model
	 * accepts
	 * @return a strategy that asks {@code chooser} on each continuation
	 * @throws IllegalArgumentException when {@code null}
	 */
	static ContinuationStrategy byModel(Function<String, ContinuationStrategy> chooser) {
		if (chooser == null) {
			throw new IllegalArgumentException("chooser must not be null, was null");
		}
		return new ByModel(chooser);
	}
}
