package dev.aiguard;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import dev.aiguard.core.Source;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * What happened to one guarded request, delivered once to the policy's report listeners after
 * the stream's terminal signal.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .onReport(r -> log.info("{} {} ttft={} tokens={}", r.priority(), r.outcome(),
 *         r.timeToFirstToken(), r.tokens()))
 *     .build();
 * }</pre>
 *
 * @param policy the policy's name
 * @param priority the priority the request ran at
 * @param outcome the outcome of the request as a whole (that of its last attempt)
 * @param source where the delivered answer came from
 * @param attempts every attempt, in order (empty when the request was rejected before any)
 * @param tokens content chunks delivered to the subscriber, over all attempts
 * @param timeToFirstToken from subscription of the request to its first delivered token, or {@code null}
 * @param duration from subscription of the request to its end
 * @param finishReason the finish reason of the answer, or {@code null}
 * @param outputTruncated whether the answer was cut by the output limit ({@code length}, {@code max_tokens})
 * @param error what the subscriber received as error, or {@code null}
 * @param spend the tokens the request's attempts used and what they cost ({@link Spend#NONE} without a budget)
 * @param outputCapped whether the policy's output cap ended the answer (its finish reason is then {@code length})
 */
public record GuardReport(String policy, Priority priority, Outcome outcome, Source source, List<Attempt> attempts,
		long tokens, @Nullable Duration timeToFirstToken, Duration duration, @Nullable String finishReason,
		boolean outputTruncated, @Nullable Throwable error, Spend spend, boolean outputCapped) {

	public GuardReport {
		Objects.requireNonNull(policy, "policy");
		Objects.requireNonNull(priority, "priority");
		Objects.requireNonNull(outcome, "outcome");
		Objects.requireNonNull(source, "source");
		Objects.requireNonNull(spend, "spend");
		attempts = List.copyOf(attempts);
	}

	/** A report without spend: nothing counted, no output cap. */
	public GuardReport(String policy, Priority priority, Outcome outcome, Source source, List<Attempt> attempts,
			long tokens, @Nullable Duration timeToFirstToken, Duration duration, @Nullable String finishReason,
			boolean outputTruncated, @Nullable Throwable error) {
		this(policy, priority, outcome, source, attempts, tokens, timeToFirstToken, duration, finishReason,
				outputTruncated, error, Spend.NONE, false);
	}

	/**
	 * What a request's realtime attempts used, counted when the policy has a budget: the provider's
	 * usage where it reported one, else the prompt as the guard counted it and the content chunks
	 * received.
	 *
	 * @param promptTokens prompt tokens of every attempt
	 * @param completionTokens completion tokens of every attempt
	 * @param cost what they cost by the policy's price table
	 * @param retryPromptTokens the part of {@code promptTokens} spent on attempts whose text did not
	 *        become the answer (failed, stalled, invalid, or replaced by a retry, a truncation or a continuation)
	 * @param retryCompletionTokens the same part of {@code completionTokens}
	 * @param retryCost what those attempts cost
	 * @param currency the price table's currency
	 */
	public record Spend(long promptTokens, long completionTokens, BigDecimal cost, long retryPromptTokens,
			long retryCompletionTokens, BigDecimal retryCost, String currency) {

		/** Nothing counted. */
		public static final Spend NONE = new Spend(0L, 0L, BigDecimal.ZERO, 0L, 0L, BigDecimal.ZERO, "");

		public Spend {
			Objects.requireNonNull(cost, "cost");
			Objects.requireNonNull(retryCost, "retryCost");
			Objects.requireNonNull(currency, "currency");
		}

		/** @return prompt and completion tokens together */
		public long totalTokens() {
			return promptTokens + completionTokens;
		}
	}

	/**
	 * One attempt of a request.
	 *
	 * @param number 1 for the first attempt
	 * @param outcome how it ended
	 * @param tokens content chunks it delivered
	 * @param timeToFirstToken from its subscription to its first content chunk, or {@code null}
	 * @param duration from its subscription to its end
	 * @param finishReason the finish reason it saw, or {@code null}
	 * @param error its failure, or {@code null}
	 */
	public record Attempt(int number, Outcome outcome, long tokens, @Nullable Duration timeToFirstToken,
			Duration duration, @Nullable String finishReason, @Nullable Throwable error) {
	}
}
