package dev.aiguard;

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
 */
public record GuardReport(String policy, Priority priority, Outcome outcome, Source source, List<Attempt> attempts,
		long tokens, @Nullable Duration timeToFirstToken, Duration duration, @Nullable String finishReason,
		boolean outputTruncated, @Nullable Throwable error) {

	public GuardReport {
		Objects.requireNonNull(policy, "policy");
		Objects.requireNonNull(priority, "priority");
		Objects.requireNonNull(outcome, "outcome");
		Objects.requireNonNull(source, "source");
		attempts = List.copyOf(attempts);
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
