package dev.aiguard.budget;

/** What the guard does with a prompt over {@link BudgetSpec#promptCap}, before anything is sent. */
public enum PromptCapAction {
	/** Fails the request with {@code PromptTooLargeException}; nothing is sent. */
	REFUSE,
	/**
	 * Shortens the prompt to the cap with the policy's truncator ({@code TruncationSpec.truncator()},
	 * else {@code PromptTruncator.tokenBudget()}); a prompt that cannot be made to fit is refused.
	 */
	TRUNCATE
}
