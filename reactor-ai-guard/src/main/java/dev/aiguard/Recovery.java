package dev.aiguard;

import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.stage.Shortfall;

import org.jspecify.annotations.Nullable;

/**
 * What a guarded request does after an attempt failed: a pure function of how the attempt ended,
 * what the request has delivered and spent so far, and the policy's rules. No Reactor type, no
 * clock, no I/O: the coordinator gathers the {@link Facts}, asks {@link #decide}, and carries the
 * {@link Step} out. The one effect it may cause is taking a grant from the retry budget, through
 * the supplier it is given, and only when it answers {@link Action#RETRY}.
 *
 * <p>The order of the rules is the guard's contract:
 * <ol>
 * <li>a preempted request ends ({@link Action#FAIL}, partial when tokens were delivered);</li>
 * <li>after the first delivered token there is never a plain retry: the mid-stream policy decides
 * (continue, notice, or fail partial), and an answer a validator rejected is never continued;</li>
 * <li>a context-length error in the call form is truncated while the caps allow;</li>
 * <li>a retryable error is retried while attempts remain and the budget grants it;</li>
 * <li>otherwise the fallback ladder, when it is entered by the trigger ({@link FallbackTrigger#INVALID_OUTPUT}
 * for a rejected answer); otherwise fail.</li>
 * </ol>
 */
final class Recovery {

	private Recovery() {
	}

	/** The next step of a request after a failed attempt. */
	enum Action {
		/** End the request with the attempt's error. */
		FAIL,
		/** End the request with the attempt's error marked partial: tokens were delivered. */
		FAIL_PARTIAL,
		/** Send the request again after a backoff. */
		RETRY,
		/** Send a smaller prompt at once. */
		TRUNCATE,
		/** The truncation rounds are used up: end with {@code PromptTooLargeException}. */
		PROMPT_TOO_LARGE,
		/** Send a continuation of the delivered text at once. */
		CONTINUE,
		/** Append the mid-stream policy's notice and complete. */
		NOTICE,
		/** Walk the fallback ladder. */
		FALLBACK
	}

	/**
	 * @param action what to do
	 * @param trigger why the ladder is entered ({@link Action#FALLBACK} only)
	 * @param budgetRefused whether a retry was wanted but the retry budget refused it
	 */
	record Step(Action action, @Nullable FallbackTrigger trigger, boolean budgetRefused) {

		static Step of(Action action) {
			return new Step(action, null, false);
		}

		/** @return the trigger in the stage contract's words, for the run that answers instead ({@link Action#FALLBACK} only) */
		Shortfall shortfall() {
			FallbackTrigger t = java.util.Objects.requireNonNull(trigger);
			return switch (t) {
				case CLIENT_ERROR -> Shortfall.CLIENT_ERROR;
				case INVALID_OUTPUT -> Shortfall.INVALID_OUTPUT;
				case STALLED_BEFORE_FIRST_TOKEN -> Shortfall.STALLED_BEFORE_FIRST_TOKEN;
				case RETRIES_EXHAUSTED -> Shortfall.RETRIES_EXHAUSTED;
				case BREAKER_OPEN -> Shortfall.BREAKER_OPEN;
				case REJECTED -> Shortfall.REJECTED;
				case BUDGET -> Shortfall.BUDGET;
				// decide() enters the ladder after a failed attempt only, never for the load
				case LOAD -> throw new IllegalStateException("the load's degradations are walked before an attempt");
			};
		}
	}

	/**
	 * How the attempt ended and where the request stands.
	 *
	 * @param outcome the attempt's outcome
	 * @param preempted the lanes took the permit back
	 * @param contextLength the provider refused the prompt as too long
	 * @param retryable the retry rules call the error transient
	 * @param continuable the error is one a continuation may repair (transient, stalled, incomplete)
	 * @param stalledBeforeMaxDuration a first-token or idle deadline passed (not the max duration)
	 * @param deliveredTokens content chunks that reached the subscriber so far
	 * @param attemptsMade upstream calls made for the answer's start, this one included
	 * @param truncationsMade truncated requests sent so far
	 * @param continuationsMade continuation requests sent so far
	 * @param transcriptContinuable what was delivered can be continued (text, no tool call)
	 */
	record Facts(Outcome outcome, boolean preempted, boolean contextLength, boolean retryable, boolean continuable,
			boolean stalledBeforeMaxDuration, long deliveredTokens, int attemptsMade, int truncationsMade,
			int continuationsMade, boolean transcriptContinuable) {
	}

	/**
	 * The policy, as the decision reads it.
	 *
	 * @param callForm the guard owns the request (truncation and continuation need it)
	 * @param maxAttempts attempts the retry rules allow
	 * @param maxAnswerAttempts upstream calls for the answer's start, truncated ones included
	 * @param maxTruncations truncation rounds allowed ({@code 0}: none)
	 * @param midStream what happens after the first token
	 * @param canContinue the mid-stream policy continues answers of this chunk type
	 * @param fallbackEnteredBy whether the fallback ladder is entered by a trigger ({@code false} without a ladder)
	 */
	record Rules(boolean callForm, int maxAttempts, int maxAnswerAttempts, int maxTruncations,
			MidStreamPolicy.Mode midStream, int maxContinuations, boolean canContinue,
			Predicate<FallbackTrigger> fallbackEnteredBy) {
	}

	static Step decide(Facts f, Rules r, BooleanSupplier retryBudget) {
		if (f.preempted()) {
			return Step.of(f.deliveredTokens() > 0L ? Action.FAIL_PARTIAL : Action.FAIL);
		}
		if (f.deliveredTokens() > 0L) {
			return afterFirstToken(f, r);
		}
		if (f.contextLength() && r.callForm() && r.maxTruncations() > 0 && f.attemptsMade() < r.maxAnswerAttempts()) {
			return Step.of(f.truncationsMade() < r.maxTruncations() ? Action.TRUNCATE : Action.PROMPT_TOO_LARGE);
		}
		boolean refused = false;
		if (f.retryable() && f.attemptsMade() < r.maxAttempts()) {
			if (retryBudget.getAsBoolean()) {
				return Step.of(Action.RETRY);
			}
			refused = true;
		}
		FallbackTrigger trigger = f.outcome() == Outcome.CLIENT_ERROR ? FallbackTrigger.CLIENT_ERROR
				: f.outcome() == Outcome.INVALID ? FallbackTrigger.INVALID_OUTPUT
				: f.stalledBeforeMaxDuration() ? FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN
				: FallbackTrigger.RETRIES_EXHAUSTED;
		if (r.fallbackEnteredBy().test(trigger)) {
			return new Step(Action.FALLBACK, trigger, refused);
		}
		return new Step(Action.FAIL, null, refused);
	}

	/** Tokens already reached the subscriber: never a plain resubscribe. */
	private static Step afterFirstToken(Facts f, Rules r) {
		switch (r.midStream()) {
			case CONTINUE:
				// continuing a rejected answer would only extend it
				if (f.outcome() != Outcome.INVALID && r.callForm() && r.canContinue() && f.transcriptContinuable() && f.continuable()
						&& f.continuationsMade() < r.maxContinuations()) {
					return Step.of(Action.CONTINUE);
				}
				return Step.of(Action.FAIL_PARTIAL);
			case NOTICE:
				return Step.of(Action.NOTICE);
			default:
				return Step.of(Action.FAIL_PARTIAL);
		}
	}
}
