package dev.aiguard.truncation;

import java.util.Objects;
import java.util.OptionalInt;

import dev.aiguard.core.CallbackException;
import dev.aiguard.chat.ChatRequest;
import reactor.core.Exceptions;

/**
 * How the guard's call form shrinks a prompt after a context-length error. Immutable and
 * copy-on-write: every setter returns a new spec.
 *
 * <pre>{@code
 * TruncationSpec truncation = TruncationSpec.defaults()
 *     .maxTruncations(2)
 *     .reservedOutputTokens(1024)
 *     .truncator(PromptTruncator.tokenBudget())
 *     .counter(TokenCounter.jtokkit("o200k_base"));
 *
 * // on ContextLengthExceededException e, with truncations made so far < maxTruncations():
 * TruncationSpec.Result r = truncation.shrink(request, e.limit(), e.actual());
 * send(r.request());                       // strictly smaller than request, fits r.budget()
 * }</pre>
 *
 * <h2>The budget</h2>
 * With the provider's limit known, the prompt may take {@code limit - reserved} tokens, where
 * {@code reserved} is the request's {@code maxTokens}, else {@link #reservedOutputTokens()}.
 * When the provider also said how many tokens it counted ({@code actual}), the budget is scaled
 * by {@code currentSize / actual}, translating the provider's tokens into the counter's, so even
 * the rough {@link TokenCounter#estimate()} lands under the limit in one step. Without a limit
 * the prompt shrinks to {@code currentSize * shrinkFactor}. Either way every attempt is strictly
 * smaller than the one before.
 */
public final class TruncationSpec {

	private static final TruncationSpec DEFAULTS = new TruncationSpec(2, 1024, 0.75d, PromptTruncator.tokenBudget(),
			TokenCounter.estimate());

	private final int maxTruncations;
	private final int reservedOutputTokens;
	private final double shrinkFactor;
	private final PromptTruncator truncator;
	private final TokenCounter counter;

	private TruncationSpec(int maxTruncations, int reservedOutputTokens, double shrinkFactor, PromptTruncator truncator,
			TokenCounter counter) {
		this.maxTruncations = maxTruncations;
		this.reservedOutputTokens = reservedOutputTokens;
		this.shrinkFactor = shrinkFactor;
		this.truncator = truncator;
		this.counter = counter;
	}

	/**
	 * @return 2 truncations at most, 1024 output tokens reserved, shrink factor 0.75,
	 * {@link PromptTruncator#tokenBudget()}, {@link TokenCounter#estimate()}
	 */
	public static TruncationSpec defaults() {
		return DEFAULTS;
	}

	/**
	 * @param truncations shrink-and-retry rounds per request, 0 (off) to 10
	 * @throws IllegalArgumentException when out of range
	 */
	public TruncationSpec maxTruncations(int truncations) {
		if (truncations < 0 || truncations > 10) {
			throw new IllegalArgumentException("maxTruncations must be between 0 and 10, was " + truncations);
		}
		return new TruncationSpec(truncations, reservedOutputTokens, shrinkFactor, truncator, counter);
	}

	/**
	 * @param tokens output tokens kept free when the request has no {@code maxTokens}, {@code >= 0}
	 * @throws IllegalArgumentException when negative
	 */
	public TruncationSpec reservedOutputTokens(int tokens) {
		if (tokens < 0) {
			throw new IllegalArgumentException("reservedOutputTokens must be >= 0, was " + tokens);
		}
		return new TruncationSpec(maxTruncations, tokens, shrinkFactor, truncator, counter);
	}

	/**
	 * @param factor what a prompt shrinks to when the limit is unknown, strictly between 0 and 1
	 * @throws IllegalArgumentException when out of range
	 */
	public TruncationSpec shrinkFactor(double factor) {
		if (!(factor > 0.0d && factor < 1.0d)) {
			throw new IllegalArgumentException("shrinkFactor must be > 0 and < 1, was " + factor);
		}
		return new TruncationSpec(maxTruncations, reservedOutputTokens, factor, truncator, counter);
	}

	/**
	 * @param promptTruncator what to drop or shorten
	 * @throws IllegalArgumentException when {@code null}
	 */
	public TruncationSpec truncator(PromptTruncator promptTruncator) {
		if (promptTruncator == null) {
			throw new IllegalArgumentException("truncator must not be null, was null");
		}
		return new TruncationSpec(maxTruncations, reservedOutputTokens, shrinkFactor, promptTruncator, counter);
	}

	/**
	 * @param tokenCounter how prompts are measured
	 * @throws IllegalArgumentException when {@code null}
	 */
	public TruncationSpec counter(TokenCounter tokenCounter) {
		if (tokenCounter == null) {
			throw new IllegalArgumentException("counter must not be null, was null");
		}
		return new TruncationSpec(maxTruncations, reservedOutputTokens, shrinkFactor, truncator, tokenCounter);
	}

	public int maxTruncations() {
		return maxTruncations;
	}

	public int reservedOutputTokens() {
		return reservedOutputTokens;
	}

	public double shrinkFactor() {
		return shrinkFactor;
	}

	public PromptTruncator truncator() {
		return truncator;
	}

	public TokenCounter counter() {
		return counter;
	}

	/** @return output tokens to keep free for {@code request}: its {@code maxTokens}, else the configured reserve */
	public int reservedFor(ChatRequest request) {
		Integer max = request.maxTokens();
		return max != null ? max : reservedOutputTokens;
	}

	/**
	 * The prompt budget for the next attempt. Pure.
	 *
	 * @param request the request that was refused (for its {@code maxTokens})
	 * @param limit the context window the provider reported, if it did
	 * @param actual the request size the provider reported, if it did
	 * @param currentSize the refused request's size in the counter's tokens, {@code > 0}
	 * @return a budget strictly below {@code currentSize} and above 0
	 * @throws PromptTooLargeException when no positive budget is left (the limit does not even
	 * cover the reserved output, or the prompt cannot shrink further)
	 * @throws IllegalArgumentException when {@code currentSize <= 0}
	 */
	public int nextBudget(ChatRequest request, OptionalInt limit, OptionalInt actual, int currentSize) {
		Objects.requireNonNull(request, "request");
		if (currentSize <= 0) {
			throw new IllegalArgumentException("currentSize must be > 0, was " + currentSize);
		}
		long budget;
		if (limit != null && limit.isPresent()) {
			long room = (long) limit.getAsInt() - reservedFor(request);
			if (room <= 0L) {
				throw new PromptTooLargeException((int) Math.max(0L, room), currentSize);
			}
			budget = room;
			if (actual != null && actual.isPresent() && actual.getAsInt() > 0) {
				// the provider's tokens -> the counter's tokens
				budget = room * currentSize / actual.getAsInt();
			}
			if (budget >= currentSize) {
				// the counter thinks it fits, the provider did not: the counts disagree, so just shrink
				budget = shrunk(currentSize);
			}
		}
		else {
			budget = shrunk(currentSize);
		}
		if (budget <= 0L) {
			throw new PromptTooLargeException(limit != null && limit.isPresent() ? limit.getAsInt() : -1, currentSize);
		}
		return (int) budget;
	}

	/**
	 * One truncation step: measures {@code request}, computes {@link #nextBudget}, applies the
	 * truncator and checks that the result is strictly smaller and within the budget.
	 *
	 * @return the smaller request and its sizes
	 * @throws PromptTooLargeException when the prompt cannot be made to fit
	 */
	public Result shrink(ChatRequest request, OptionalInt limit, OptionalInt actual) {
		Objects.requireNonNull(request, "request");
		int before = count(request);
		int budget = nextBudget(request, limit, actual, Math.max(1, before));
		ChatRequest smaller;
		try {
			// the truncator counts with a counter that names itself when it throws
			smaller = truncator.truncate(request, budget, new NamedCounter(counter));
		}
		catch (PromptTooLargeException | CallbackException e) {
			throw e;
		}
		catch (Throwable e) {
			Exceptions.throwIfJvmFatal(e);
			throw CallbackException.threw("PromptTruncator", e);
		}
		if (smaller == null) {
			// the contract is a smaller request or PromptTooLargeException, never null
			throw CallbackException.returnedNull("PromptTruncator");
		}
		int after = count(smaller);
		if (after >= before || after > budget) {
			throw new PromptTooLargeException(budget, Math.min(before, after));
		}
		return new Result(smaller, before, after, budget);
	}

	/**
	 * Counts the request's prompt with the configured counter.
	 *
	 * @throws CallbackException naming {@code TokenCounter} when the counter throws
	 */
	public int count(ChatRequest request) {
		try {
			return counter.count(request.messages());
		}
		catch (Throwable e) {
			throw counterFailed(e);
		}
	}

	private static CallbackException counterFailed(Throwable e) {
		Exceptions.throwIfJvmFatal(e);
		return CallbackException.threw("TokenCounter", e);
	}

	/** The configured counter, each call wrapped so a throw is a {@code CallbackException} naming {@code TokenCounter}. */
	private static final class NamedCounter implements TokenCounter {

		private final TokenCounter counter;

		NamedCounter(TokenCounter counter) {
			this.counter = counter;
		}

		@Override
		public int count(String text) {
			try {
				return counter.count(text);
			}
			catch (Throwable e) {
				throw counterFailed(e);
			}
		}

		@Override
		public int messageOverhead() {
			return counter.messageOverhead();
		}

		@Override
		public int requestOverhead() {
			return counter.requestOverhead();
		}

		@Override
		public int count(dev.aiguard.chat.ChatMessage message) {
			try {
				return counter.count(message);
			}
			catch (Throwable e) {
				throw counterFailed(e);
			}
		}

		@Override
		public int count(java.util.List<dev.aiguard.chat.ChatMessage> messages) {
			try {
				return counter.count(messages);
			}
			catch (Throwable e) {
				throw counterFailed(e);
			}
		}
	}

	private long shrunk(int currentSize) {
		return (long) Math.floor(currentSize * shrinkFactor);
	}

	@Override
	public String toString() {
		return "TruncationSpec{maxTruncations=" + maxTruncations + ", reservedOutputTokens=" + reservedOutputTokens
				+ ", shrinkFactor=" + shrinkFactor + ", truncator=" + truncator + ", counter=" + counter + '}';
	}

	/**
	 * What one {@link #shrink} did.
	 *
	 * @param request the smaller request to send
	 * @param tokensBefore the refused request's size
	 * @param tokensAfter the new request's size
	 * @param budget the budget it had to meet
	 */
	public record Result(ChatRequest request, int tokensBefore, int tokensAfter, int budget) {

		/** @return tokens removed (for the {@code promptTruncated} metric) */
		public int tokensDropped() {
			return tokensBefore - tokensAfter;
		}
	}
}
