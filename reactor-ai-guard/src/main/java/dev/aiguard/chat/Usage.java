package dev.aiguard.chat;

/**
 * Token usage a provider reports for one answer.
 *
 * @param promptTokens tokens of the request, or -1 when unknown
 * @param completionTokens tokens of the answer, or -1 when unknown
 */
public record Usage(int promptTokens, int completionTokens) {

	/** @return prompt plus completion tokens, counting unknown parts as zero. */
	public int totalTokens() {
		return Math.max(promptTokens, 0) + Math.max(completionTokens, 0);
	}
}
