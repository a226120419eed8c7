package dev.aiguard;

import java.util.Objects;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.retry.ContinuationRefusedException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stage.AnswerSource;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.Shortfall;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.TruncationSpec;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * What follows when a request does not simply succeed: a failed attempt's facts go to
 * {@link Recovery}, whose step (retry, truncate, continue, notice, fallback, fail) is carried out
 * here; a stage's refusal becomes the ladder or the request's error; and the tails (a fallback
 * answer, a notice, the load's cheaper steps, a released answer) end here. Created with the
 * request's first such turn, so a request that succeeds at once never makes one.
 */
final class RecoverySteps<T> {

	private final GuardedStream<T> s;
	/** What continuations build on: the caller's request, or the shortened one that fit. */
	@Nullable
	private ChatRequest continuationBase;
	private int truncations;
	int continuations;
	@Nullable
	private Throwable lastError;
	@Nullable
	private Outcome lastOutcome;
	/** Why the scheduled retry is made; counted when it starts, not when it is scheduled. */
	@Nullable
	private String retryReason;
	/** A continuation request is about to be sent; counted once the stages let it through. */
	private boolean continuing;
	/** Set while only the static steps are walked because the load sheds the request otherwise. */
	@Nullable
	private Throwable shedOtherwise;

	RecoverySteps(GuardedStream<T> stream) {
		this.s = stream;
		// nothing but a stage's shortening changed the request before the first recovery
		this.continuationBase = stream.request;
	}

	/** A stage shortened the prompt before the first attempt: continuations build on what fits. */
	void rebase(ChatRequest shorter) {
		continuationBase = shorter;
	}

	/** The next realtime attempt starts: the retry or continuation it is gets counted now. */
	void resending() {
		String reason = retryReason;
		if (reason != null) {
			retryReason = null;
			s.ledger.retried(reason);
		}
		if (continuing) {
			continuing = false;
			s.ledger.continued();
		}
	}

	// ---- a stage refused ----

	void refused(Refusal kind, Throwable reason) {
		switch (kind) {
			case REJECTED -> {
				s.ledger.observeRefused(reason);
				lastError = reason;
				lastOutcome = Outcome.REJECTED;
				s.endWith(reason, Outcome.REJECTED);
			}
			case BAD_REQUEST -> s.endWith(reason, Outcome.CLIENT_ERROR);
			case NO_CAPACITY -> {
				s.ledger.observeRefused(reason);
				notAdmitted(reason, Shortfall.REJECTED);
			}
			case OVER_BUDGET -> {
				s.ledger.observeRefused(reason);
				notAdmitted(reason, Shortfall.BUDGET);
			}
			case ATTEMPT -> attemptRefused(reason);
		}
	}

	/** A stage refused a retry or a continuation (breaker open, no room in the provider key): the last real error stands. */
	private void attemptRefused(Throwable refused) {
		Throwable cause = lastError != null ? lastError : refused;
		long delivered = s.ledger.deliveredTokens();
		if (delivered > 0L) {
			// a continuation was refused: the partial answer stands, failed as fail() says (no further try)
			s.endWith(s.policy.midStream().failure(cause, delivered), lastOutcome != null ? lastOutcome : Outcome.FAILURE);
			return;
		}
		fallbackOrFail(Shortfall.BREAKER_OPEN, cause, lastOutcome != null ? lastOutcome : Outcome.REJECTED);
	}

	/** The request was not admitted: the ladder for {@code why}, or the refusal. */
	private void notAdmitted(Throwable rejection, Shortfall why) {
		lastError = rejection;
		lastOutcome = Outcome.REJECTED;
		fallbackOrFail(why, rejection, Outcome.REJECTED);
	}

	// ---- a realtime attempt failed ----

	/**
	 * @param threadWaitOver no lane thread was free in time for a blocking upstream, which was never
	 *        called: like a queue wait that ran out
	 */
	void attemptFailed(Outcome outcome, Throwable error, boolean threadWaitOver) {
		lastError = error;
		lastOutcome = outcome;
		if (threadWaitOver && s.ledger.deliveredTokens() == 0L) {
			// the ladder's REJECTED step, not a retry on the same busy lane
			notAdmitted(error, Shortfall.REJECTED);
			return;
		}
		if (s.cancelled != 0) {
			s.finishCancelled();
			return;
		}
		PolicyView.ForPriority settings = s.settings;
		boolean retryable = settings.retry.isRetryable(error);
		Recovery.Facts facts = new Recovery.Facts(outcome, ErrorClassifier.isPreemption(error),
				error instanceof ContextLengthExceededException && s.request != null, retryable,
				retryable || error instanceof StreamStalledException || error instanceof IncompleteStreamException,
				error instanceof StreamStalledException && ((StreamStalledException) error).phase() != StallPhase.MAX_DURATION,
				s.ledger.deliveredTokens(), s.realtimeAttempts, truncations, continuations,
				s.path != null && s.path.continuable());
		Recovery.Step step = Recovery.decide(facts, settings.rules(s.callForm), this::takeRetryGrant);
		if (step.budgetRefused()) {
			s.ledger.retryBudgetExhausted();
		}
		switch (step.action()) {
			case RETRY:
				retryReason = error.getClass().getSimpleName();
				if (ErrorClassifier.rejectingValidator(error) != null && s.request != null && s.path != null) {
					// a rejected answer may be corrected by what its validator adds to the prompt
					s.request = s.path.retryRequest(s.request, s.actual.currentContext());
				}
				s.retryAfter(settings.retry.delayBefore(s.realtimeAttempts, error).toNanos());
				return;
			case TRUNCATE:
				truncate(need(s.policy.truncation()), (ContextLengthExceededException) error);
				return;
			case PROMPT_TOO_LARGE:
				promptTooLarge(need(s.policy.truncation()), (ContextLengthExceededException) error);
				return;
			case CONTINUE:
				if (!continueAnswer(error, outcome)) {
					s.endWith(s.policy.midStream().failure(error, s.ledger.deliveredTokens()), outcome);
				}
				return;
			case NOTICE:
				@SuppressWarnings("unchecked")
				T notice = (T) s.policy.midStream().noticeFor(error);
				if (notice != null) {
					s.subscribeTail(Flux.just(notice), AttemptKind.NOTICE);
					return;
				}
				s.endWith(s.policy.midStream().failure(error, s.ledger.deliveredTokens()), outcome);
				return;
			case FALLBACK:
				fallback(step.shortfall(), error, outcome);
				return;
			case FAIL_PARTIAL:
				// a preemption lands here too: its outcome is already REJECTED
				s.endWith(s.policy.midStream().failure(error, s.ledger.deliveredTokens()), outcome);
				return;
			default:
				s.endWith(error, outcome);
		}
	}

	private boolean takeRetryGrant() {
		RetryBudget budget = s.policy.retryBudget();
		return budget == null || budget.tryAcquireRetry();
	}

	private void truncate(TruncationSpec spec, ContextLengthExceededException e) {
		TruncationSpec.Result shrunk;
		try {
			shrunk = spec.shrink(need(s.request), e.limit(), e.actual());
		}
		catch (PromptTooLargeException tooLarge) {
			s.endWith(tooLarge.getCause() != null ? tooLarge
					: new PromptTooLargeException(tooLarge.limit().orElse(-1), tooLarge.smallestSize(), e),
					Outcome.CLIENT_ERROR);
			return;
		}
		catch (Throwable truncatorFailure) {
			s.endWith(CallbackException.threw("PromptTruncator", truncatorFailure), Outcome.CLIENT_ERROR);
			return;
		}
		truncations++;
		s.request = shrunk.request();
		// truncation only happens before the first token, so no continuation was built on the old prompt
		continuationBase = s.request;
		s.ledger.promptTruncated(shrunk.tokensDropped());
		s.nextAttempt();
	}

	private void promptTooLarge(TruncationSpec spec, ContextLengthExceededException e) {
		int size;
		try {
			size = spec.count(need(s.request));
		}
		catch (Throwable counterFailure) {
			s.endWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
			return;
		}
		s.endWith(new PromptTooLargeException(e.limit().orElse(-1), size, e), Outcome.CLIENT_ERROR);
	}

	/** @return whether a continuation request is on its way; false when the strategy refused */
	private boolean continueAnswer(Throwable error, Outcome outcome) {
		// Recovery continues only an answer whose transcript is readable (AnswerPath.continuable)
		AnswerTap<T> tap = need(need(s.path).tap);
		ChatRequest next;
		try {
			next = need(s.policy.midStream().continuation()).continuation(need(continuationBase),
					need(tap.transcript()).text(), false);
			if (next == null) {
				throw CallbackException.returnedNull("ContinuationStrategy");
			}
		}
		catch (ContinuationRefusedException refused) {
			return false;
		}
		catch (Throwable strategyFailure) {
			s.endWith(s.policy.midStream().failure(CallbackException.threw("ContinuationStrategy", strategyFailure),
					s.ledger.deliveredTokens()), outcome);
			return true;
		}
		// a continuation is one more upstream request: it draws on the shared budget like a retry, so a
		// provider that cuts every stream short cannot multiply the load by maxContinuations
		if (!takeRetryGrant()) {
			s.ledger.retryBudgetExhausted();
			return false;
		}
		continuations++;
		s.request = next;
		tap.discardRecording();
		continuing = true;
		s.nextAttempt();
		return true;
	}

	// ---- the fallback ladder (a stage's other source) ----

	private void fallbackOrFail(Shortfall why, Throwable cause, Outcome outcome) {
		AnswerSource others = s.answerSource();
		if (others == null || !others.answers(why)) {
			s.endWith(cause, outcome);
			return;
		}
		fallback(why, cause, outcome);
	}

	private void fallback(Shortfall why, Throwable cause, Outcome outcome) {
		// the request's outcome if the ladder fails too (REJECTED when no attempt was made)
		lastOutcome = outcome;
		s.subscribeTail(chunks(need(s.answerSource()).answer(why, cause, s.port())), AttemptKind.FALLBACK);
	}

	/**
	 * Walks the sources for {@code degradation} before the live model (or, with
	 * {@code shedOtherwise}, instead of it): no lane permit is taken for it.
	 */
	void walkFirst(Degradation degradation, Throwable cause, @Nullable Throwable shedOtherwise) {
		this.shedOtherwise = shedOtherwise;
		s.subscribeTail(chunks(need(s.answerSource()).answerFirst(degradation, cause, s.port())), AttemptKind.PREFERRED);
	}

	/** @return another source's answer as the guard's chunks (the policy's chunk type was checked when the guard was made) */
	@SuppressWarnings("unchecked")
	private Publisher<? extends T> chunks(Publisher<?> answer) {
		return (Publisher<? extends T>) answer;
	}

	/** The cheaper steps had no answer and delivered nothing: the live model is asked after all. */
	private void preferredFailed() {
		Throwable shed = shedOtherwise;
		if (shed != null) {
			s.endWith(shed, Outcome.REJECTED);
			return;
		}
		s.ledger.backToRealtime();
		// cancel() finishes the request itself only while no attempt is active: clear the ended walk
		// first, then re-check, so that one of the two sides always sees the other
		s.active = null;
		s.proceed();
	}

	// ---- the tails ----

	/** A fallback answer, a notice, the load's cheaper steps or a released answer ended. */
	void tailEnded(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		s.ledger.tailEnded(watch);
		AttemptKind kind = s.kind;
		if (kind == AttemptKind.PREFERRED && end != StallWatch.End.COMPLETED && end != StallWatch.End.CANCELLED
				&& watch.tokens() == 0L && !ErrorClassifier.isPreemption(error)) {
			preferredFailed();
			return;
		}
		switch (end) {
			case COMPLETED:
				if (kind == AttemptKind.RELEASE) {
					String reason = need(s.path).releasedReason;
					s.storeAnswer(reason);
					s.complete(Outcome.SUCCESS, true, reason);
					break;
				}
				// a notice ends the answer, but the attempt still failed (its error is in the attempts)
				s.complete(kind == AttemptKind.FALLBACK || kind == AttemptKind.PREFERRED ? Outcome.SUCCESS
						: lastOutcome != null ? lastOutcome : Outcome.FAILURE, false, watch.finishReason());
				break;
			case CANCELLED:
				s.finish(Outcome.CANCELLED, null, watch.finishReason());
				break;
			default:
				if (ErrorClassifier.isPreemption(error)) {
					// a fallback answer or notice was running on the permit the lanes took back
					s.failPreempted(need(error));
					return;
				}
				s.endWith(need(error), lastOutcome != null ? lastOutcome : Outcome.FAILURE);
		}
	}

	/**
	 * The held answer stands (it passed its validators, or the output cap ended it): it goes to the
	 * subscriber now, with the subscriber's demand. Held leading whitespace goes through the tap, so
	 * that the answer is recorded and transcribed as delivered; the attempt's finish reason stays the
	 * answer's.
	 */
	void release(StallWatch<T> attempt, boolean blanks) {
		AnswerPath<T> path = need(s.path);
		AnswerTap<T> t = need(path.tap);
		path.releasedReason = attempt.finishReason();
		if (!blanks) {
			t.holding = false;
			s.subscribe(Flux.fromIterable(t.takeHeld()), s.settings.tailStall, AttemptKind.RELEASE, s.actual, null, null);
			return;
		}
		s.subscribe(Flux.fromIterable(t.takeBlanks()), s.settings.tailStall, AttemptKind.RELEASE, t, t, null);
	}

	/**
	 * @return {@code value}, which the step at hand always has: Recovery picks a step only when the
	 *         policy and the request have what it needs (a failed end carries its error)
	 */
	private static <V> V need(@Nullable V value) {
		return Objects.requireNonNull(value);
	}
}
