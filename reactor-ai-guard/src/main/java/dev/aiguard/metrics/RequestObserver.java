package dev.aiguard.metrics;

import java.time.Duration;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import org.jspecify.annotations.Nullable;

/**
 * What happens to one guarded request, in order. Every method has an empty default but
 * {@link #ended}, which is called exactly once. Methods are called one at a time (never
 * concurrently), from whichever thread drives the request at that moment.
 */
public interface RequestObserver {

	/** Ignores everything. */
	RequestObserver NOOP = (outcome, source, error) -> { };

	/** No lane permit was free: the request waits in its lane's queue. */
	default void admissionQueued() {
	}

	/** The request got its lane permit (at once or after waiting). */
	default void admitted() {
	}

	/** The lanes refused the request (queue full, wait too long, preempted before admission). */
	default void admissionRefused(Throwable reason) {
	}

	/**
	 * The breaker decided on an attempt.
	 *
	 * @param permitted whether the attempt may go
	 */
	default void breakerDecided(boolean permitted) {
	}

	/**
	 * An attempt is sent to the upstream.
	 *
	 * @param number 1 for the first attempt; retries, truncated and continuation requests count on
	 */
	default void attemptStarted(int number) {
	}

	/**
	 * An attempt ended.
	 *
	 * @param number as in {@link #attemptStarted}
	 * @param outcome how it ended
	 * @param error its failure, or {@code null}
	 */
	default void attemptEnded(int number, Outcome outcome, @Nullable Throwable error) {
	}

	/**
	 * The request waits before the next attempt.
	 *
	 * @param delay the backoff (or the provider's {@code Retry-After})
	 */
	default void backoff(Duration delay) {
	}

	/**
	 * The next attempt is a retry.
	 *
	 * @param reason why, e.g. the failure's class
	 */
	default void retried(String reason) {
	}

	/**
	 * The prompt was shrunk after a context-length error; the next attempt sends the smaller one.
	 *
	 * @param tokensDropped the tokens removed
	 */
	default void truncated(int tokensDropped) {
	}

	/** The next attempt asks the model to continue a cut-off answer. */
	default void continued() {
	}

	/** The fallback ladder picked a step to answer (the answer is realtime until then). */
	default void sourceChosen(Source source) {
	}

	/**
	 * The request ended (called once).
	 *
	 * @param outcome the request's outcome
	 * @param source where the delivered answer came from
	 * @param error what the subscriber received as error, or {@code null}
	 */
	void ended(Outcome outcome, Source source, @Nullable Throwable error);
}
