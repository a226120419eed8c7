package dev.aiguard.truncation;

import java.util.OptionalInt;
import org.jspecify.annotations.Nullable;

/**
 * The prompt cannot be made to fit: even after dropping and shortening everything a
 * {@link PromptTruncator} may touch (the system prompt and the final user message stay), it is
 * larger than the budget, or the allowed truncation attempts ran out. Not retryable.
 *
 * <pre>{@code
 * catch (PromptTooLargeException e) {
 *     return "Your message is too long: " + e.smallestSize() + " tokens, the limit is "
 *             + e.limit().orElse(-1) + ".";
 * }
 * }</pre>
 *
 * Sizes are in the {@link TokenCounter}'s tokens, for the prompt alone (the output tokens reserved
 * by {@link TruncationSpec} are already taken off the limit).
 */
public class PromptTooLargeException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final int limit;
	private final int smallestSize;

	/**
	 * @param limit the prompt token budget that had to be met, or -1 when unknown
	 * @param smallestSize the smallest prompt size reached, in tokens
	 */
	public PromptTooLargeException(int limit, int smallestSize) {
		this(limit, smallestSize, null);
	}

	/**
	 * @param limit the prompt token budget that had to be met, or -1 when unknown
	 * @param smallestSize the smallest prompt size reached, in tokens
	 * @param cause the provider's context-length error, or {@code null}
	 */
	public PromptTooLargeException(int limit, int smallestSize, @Nullable Throwable cause) {
		super("prompt too large: the smallest size reached is " + smallestSize + " tokens, the limit is "
				+ (limit < 0 ? "unknown" : limit + " tokens"), cause, true, false);
		this.limit = limit;
		this.smallestSize = smallestSize;
	}

	/** @return the prompt token budget that had to be met, when known */
	public OptionalInt limit() {
		return limit < 0 ? OptionalInt.empty() : OptionalInt.of(limit);
	}

	/** @return the smallest prompt size reached, in tokens */
	public int smallestSize() {
		return smallestSize;
	}
}
