package dev.aiguard.truncation;

import dev.aiguard.chat.ChatRequest;

/**
 * Shrinks a request so its messages fit a token budget, when a provider said the context window
 * was exceeded. Implementations return a request whose {@code counter.count(messages)} is at most
 * {@code tokenBudget} (the request itself when it already fits), or throw
 * {@link PromptTooLargeException}. They must not change anything but the messages.
 *
 * <pre>{@code
 * PromptTruncator recent = PromptTruncator.keepSystemAndLastTurns(4);
 * PromptTruncator fit    = PromptTruncator.tokenBudget();
 * PromptTruncator custom = (request, budget, counter) ->
 *         request.withMessages(summariseOldest(request.messages(), budget, counter));
 * }</pre>
 */
@FunctionalInterface
public interface PromptTruncator {

	/** What a shortened message holds where its middle was: visible to the model and the reader. */
	String ELISION_MARKER = "\n[…]\n";

	/**
	 * @param request the request the provider refused
	 * @param tokenBudget the largest prompt allowed, in {@code counter}'s tokens, {@code > 0}
	 * @param counter how to count
	 * @return a request that fits the budget
	 * @throws PromptTooLargeException when it cannot be made to fit
	 */
	ChatRequest truncate(ChatRequest request, int tokenBudget, TokenCounter counter);

	/**
	 * Keeps every system message and the last {@code n} rounds (a round starts at a user message
	 * and holds the assistant's answers and tool calls that follow it); drops the rest, oldest
	 * first. When those rounds still exceed the budget, fewer are kept, oldest dropped first,
	 * down to the final round.
	 *
	 * @param n rounds kept at most, {@code >= 1}
	 * @throws IllegalArgumentException when {@code n < 1}
	 */
	static PromptTruncator keepSystemAndLastTurns(int n) {
		if (n < 1) {
			throw new IllegalArgumentException("n must be >= 1, was " + n);
		}
		return new LastTurnsTruncator(n);
	}

	/**
	 * Fits the budget with as little loss as it can:
	 * <ol>
	 * <li>drops the oldest messages first, except system messages and the turn in progress (the
	 * final user message and whatever follows it); an assistant message that called tools and
	 * the tool results answering it are dropped together;</li>
	 * <li>then shortens the longest remaining message (never the final user message) in the
	 * middle, keeping its beginning and end around {@link #ELISION_MARKER}; then the next
	 * longest, and so on.</li>
	 * </ol>
	 */
	static PromptTruncator tokenBudget() {
		return TokenBudgetTruncator.INSTANCE;
	}
}
