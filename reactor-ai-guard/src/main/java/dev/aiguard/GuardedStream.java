package dev.aiguard;

import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.retry.ContinuationRefusedException;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.StageRun;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.InvalidOutputException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;

/**
 * One guarded request, read in one direction: each attempt is sent ({@link #nextAttempt}), ends
 * once ({@link #onEnd}), and what follows a failure is what {@link Recovery} decides — retry,
 * truncate, continue, notice, fallback or fail — carried out here. The mechanics (lane permit,
 * subscribing attempts, demand, cancel, preemption, backoff) are {@link AttemptLoop}'s; the books
 * are the {@link RequestLedger}'s. Chunks go from each attempt straight to the subscriber
 * (through an {@link AnswerTap} only when something must see them), so this costs nothing per token.
 */
final class GuardedStream<T> extends AttemptLoop<T> {

	private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
	private final boolean callForm;
	@Nullable
	private final RetryBudget retryBudget;

	@Nullable
	private final ChatRequest originalRequest;
	/** What continuations build on: the caller's request, or the truncated one that fit. */
	@Nullable
	private ChatRequest continuationBase;
	@Nullable
	private ChatRequest request;
	/** How the last realtime attempt ended, for the stages; created at the first end a stage hears. */
	@Nullable
	private EndedAttempt<T> ended;

	private int realtimeAttempts;
	private int truncations;
	private int continuations;
	@Nullable
	private Throwable lastError;
	@Nullable
	private Outcome lastOutcome;
	/** Why the scheduled retry is made; counted when it starts, not when it is scheduled. */
	@Nullable
	private String retryReason;
	/** A continuation request is about to be sent; counted once it has the breaker's permission. */
	private boolean continuing;
	@Nullable
	private AnswerTap<T> tap;
	/** The request's output validation, created with its first validated attempt. */
	@Nullable
	private AnswerCheck check;
	/** The finish reason of the attempt whose held answer is released: the answer's, whatever the release sees. */
	@Nullable
	private String releasedReason;
	/** The current attempt is validated (a realtime attempt of a policy with validators). */
	private boolean validating;
	/** The answer's source was announced to GuardSignals (at the first content chunk). */
	private boolean announced;
	/** Set while only the static steps are walked because the load sheds the request otherwise. */
	@Nullable
	private Throwable shedOtherwise;

	GuardedStream(Function<ChatRequest, ? extends Publisher<? extends T>> upstream, @Nullable ChatRequest request,
			boolean callForm, AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		super(guard, actual);
		this.upstream = upstream;
		this.callForm = callForm;
		this.originalRequest = request;
		this.continuationBase = request;
		this.request = request;
		this.retryBudget = policy.retryBudget();
	}

	// ---- sending an attempt ----

	@Override
	void nextAttempt() {
		if (!mayStartAttempt() || !stagesAllowAttempt()) {
			return;
		}
		String reason = retryReason;
		if (reason != null) {
			retryReason = null;
			retried(reason);
		}
		if (continuing) {
			continuing = false;
			continued();
		}
		realtimeAttempts++;
		observeAttemptStarted(realtimeAttempts);
		ChatRequest sent = request;
		// a blocking upstream is called, not only subscribed, on the request's lane threads: after a
		// backoff this code runs on the timer
		Publisher<? extends T> source = policy.blockingUpstream() ? onLaneThread(() -> open(sent)) : open(sent);
		for (StageRun run : runs) {
			source = run.decorate(source);
		}
		if (continuations > 0) {
			source = view.continuationSupport().splice(source, tap.transcript());
		}
		CoreSubscriber<? super T> target = tapFor(Stage.REALTIME);
		subscribe(source, settings.stall, Stage.REALTIME, target, tap, checkFor(target));
	}

	private Publisher<? extends T> open(@Nullable ChatRequest sent) {
		try {
			Publisher<? extends T> source = upstream.apply(sent);
			return source != null ? source : Flux.error(CallbackException.returnedNull("the upstream function"));
		}
		catch (Throwable t) {
			// a client may throw what it would otherwise signal (a refused connection): it stays the
			// upstream's failure, classified and retried like one
			return Flux.error(Exceptions.unwrap(t));
		}
	}

	// ---- what the stages ask of the request ----

	@Override
	@Nullable
	public ChatRequest request() {
		return request;
	}

	@Override
	public int attemptsStarted() {
		return realtimeAttempts;
	}

	@Override
	public void promptShortened(ChatRequest shorter, int tokensDropped) {
		request = shorter;
		continuationBase = shorter;
		promptTruncated(tokensDropped);
	}

	@Override
	public void refuse(Refusal kind, Throwable reason) {
		refusedBeforeSending();
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		switch (kind) {
			case REJECTED -> {
				observeRefused(reason);
				lastError = reason;
				lastOutcome = Outcome.REJECTED;
				endWith(reason, Outcome.REJECTED);
			}
			case BAD_REQUEST -> endWith(reason, Outcome.CLIENT_ERROR);
			case NO_CAPACITY -> {
				observeRefused(reason);
				notAdmitted(reason, FallbackTrigger.REJECTED);
			}
			case OVER_BUDGET -> {
				observeRefused(reason);
				notAdmitted(reason, FallbackTrigger.BUDGET);
			}
			case ATTEMPT -> breakerRefused(reason);
		}
	}

	/** The breaker (or the provider key's budget) refused a retry or a continuation: the last real error stands. */
	private void breakerRefused(Throwable refused) {
		Throwable cause = lastError != null ? lastError : refused;
		long delivered = deliveredTokens();
		if (delivered > 0L) {
			// a continuation was refused: the partial answer stands, failed as fail() says (no further try)
			endWith(policy.midStream().failure(cause, delivered), lastOutcome != null ? lastOutcome : Outcome.FAILURE);
			return;
		}
		fallbackOrFail(FallbackTrigger.BREAKER_OPEN, cause, lastOutcome != null ? lastOutcome : Outcome.REJECTED);
	}

	/**
	 * The subscriber chunks go to: the actual one, or a tap when something must see them, or the
	 * tap's hold when the answer is validated before anything of it is delivered. Starts the
	 * attempt's validation; {@link #checkFor} says who feeds it.
	 */
	private CoreSubscriber<? super T> tapFor(Stage next) {
		ResponseCache<T> cache = callForm ? view.responseCache() : null;
		ContinuationSupport<T> continuation = callForm ? view.continuationSupport() : null;
		boolean record = next == Stage.REALTIME && cache != null;
		boolean transcribe = next == Stage.REALTIME && continuation != null;
		boolean validate = next == Stage.REALTIME && policy.validates();
		validating = validate;
		if (validate) {
			if (check == null) {
				check = new AnswerCheck(policy.validators(), policy.streamingValidators());
			}
			check.startAttempt();
		}
		boolean hold = validate && check.holds(request);
		// leading whitespace is held only while a retry is still possible: nothing delivered yet
		boolean holdBlanks = validate && !hold && check.holdsLeadingWhitespace && deliveredTokens() == 0L
				&& guard.inspector().chunkType() == ChatChunk.class;
		boolean onlyBlanks = !record && !transcribe && !hold;
		if (onlyBlanks && !holdBlanks) {
			if (tap != null) {
				tap.holding = false;
				tap.holdLeadingWhitespace(false, false);
			}
			return actual;
		}
		if (tap == null) {
			tap = new AnswerTap<>(actual, cache, continuation, check, this::addDemand);
		}
		else if (record && continuations == 0) {
			tap.restartRecording();
		}
		tap.recording = record;
		tap.transcribing = transcribe;
		// a tap that only holds leading whitespace leaves feeding the validation to the watch: it steps
		// out of the path with the first visible chunk
		tap.validating = validate && !onlyBlanks;
		tap.holding = false;
		tap.holdLeadingWhitespace(holdBlanks, onlyBlanks);
		return hold ? tap.hold() : tap;
	}

	/**
	 * @return the check the watch calls for each content chunk of an attempt that delivers to
	 *         {@code target}: the validation when nothing sits between the watch and the subscriber
	 *         (a tap feeds it otherwise), else {@code null}
	 */
	private StallWatch.@Nullable ContentCheck<Object> checkFor(CoreSubscriber<? super T> target) {
		return validating && (target == actual || !tap.validating) ? check : null;
	}

	// ---- the end of an attempt ----

	@Override
	public boolean wantsFirstContent() {
		return signals != null && !announced;
	}

	/** The answer's first content chunk: GuardSignals hear its source, outside the chunk's delivery. */
	@Override
	public void firstContent(StallWatch<T> watch) {
		if (!announced) {
			announced = true;
			announce(source());
		}
	}

	@Override
	public void onEnd(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		if (stage != Stage.REALTIME) {
			tailEnded(watch, end, error);
			return;
		}
		boolean threadWaitOver = end == StallWatch.End.STALLED && !watch.upstreamStarted();
		if (threadWaitOver) {
			// no lane thread was free in time and the upstream was never called: the model had no
			// chance to stall, so this is the lane's refusal, not a failure for the breaker
			end = StallWatch.End.ERROR;
			error = laneThreadTimeout();
		}
		AnswerTap<T> t = tap;
		boolean held = t != null && t.holding;
		// leading whitespace still held: nothing of this attempt's content reached the subscriber
		boolean blanks = t != null && t.holdsBlanks();
		if (end == StallWatch.End.COMPLETED && validating && !watch.capped()) {
			// the verdict at the end of the attempt: a rejected answer makes it a failed one
			InvalidOutputException rejected = check.verdict(watch.finishReason(), request, actual.currentContext());
			if (rejected != null) {
				end = StallWatch.End.ERROR;
				error = rejected;
			}
		}
		if (error instanceof InvalidOutputException) {
			invalidAnswer(((InvalidOutputException) error).validator());
		}
		Outcome outcome = ErrorClassifier.ofAttempt(end, error, policy.errorClassifier(), actual.currentContext());
		StageRun[] r = runs;
		if (r.length > 0) {
			EndedAttempt<T> e = ended;
			if (e == null) {
				e = new EndedAttempt<>(guard.inspector(), actual.currentContext());
				ended = e;
			}
			e.of(watch, outcome, error, request);
			// the stages hear of the end in the reverse of their order: the breaker first, the load last
			for (int i = r.length - 1; i >= 0; i--) {
				r[i].afterAttempt(e);
			}
		}
		attemptEnded(watch, outcome, error, held || blanks);
		switch (end) {
			case COMPLETED:
				answerCompleted();
				if (held || blanks) {
					release(watch, blanks);
					break;
				}
				storeAnswer(watch.finishReason());
				complete(Outcome.SUCCESS, true, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				if (blanks) {
					// before any next attempt: the demand the held chunks took goes back to the subscriber
					t.dropBlanks();
				}
				lastError = error;
				lastOutcome = outcome;
				if (threadWaitOver && deliveredTokens() == 0L) {
					// like a queue wait that ran out: the ladder's REJECTED step, not a retry on the same busy lane
					notAdmitted(error, FallbackTrigger.REJECTED);
					break;
				}
				attemptFailed(outcome, error);
		}
	}

	/** Gathers the facts of a failed attempt, asks {@link Recovery}, and carries its step out. */
	private void attemptFailed(Outcome outcome, Throwable error) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		boolean retryable = settings.retry.isRetryable(error);
		Recovery.Facts facts = new Recovery.Facts(outcome, ErrorClassifier.isPreemption(error),
				error instanceof ContextLengthExceededException && request != null, retryable,
				retryable || error instanceof StreamStalledException || error instanceof IncompleteStreamException,
				error instanceof StreamStalledException && ((StreamStalledException) error).phase() != StallPhase.MAX_DURATION,
				deliveredTokens(), realtimeAttempts, truncations, continuations, tap != null && tap.continuable());
		Recovery.Step step = Recovery.decide(facts, settings.rules(callForm), this::takeRetryGrant);
		if (step.budgetRefused()) {
			retryBudgetExhausted();
		}
		switch (step.action()) {
			case RETRY:
				retryReason = error.getClass().getSimpleName();
				if (error instanceof InvalidOutputException && request != null && check != null) {
					// a rejected answer may be corrected by what its validator adds to the prompt
					request = check.retryRequest(request, actual.currentContext());
				}
				retryAfter(settings.retry.delayBefore(realtimeAttempts, error).toNanos());
				return;
			case TRUNCATE:
				truncate(policy.truncation(), (ContextLengthExceededException) error);
				return;
			case PROMPT_TOO_LARGE:
				promptTooLarge(policy.truncation(), (ContextLengthExceededException) error);
				return;
			case CONTINUE:
				if (!continueAnswer(error, outcome)) {
					endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				}
				return;
			case NOTICE:
				@SuppressWarnings("unchecked")
				T notice = (T) policy.midStream().noticeFor(error);
				if (notice != null) {
					subscribe(Flux.just(notice), settings.tailStall, Stage.NOTICE, tapFor(Stage.NOTICE), tap);
					return;
				}
				endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				return;
			case FALLBACK:
				fallback(step.trigger(), error, outcome);
				return;
			case FAIL_PARTIAL:
				// a preemption lands here too: its outcome is already REJECTED
				endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				return;
			default:
				endWith(error, outcome);
		}
	}

	private boolean takeRetryGrant() {
		return retryBudget == null || retryBudget.tryAcquireRetry();
	}

	private void truncate(TruncationSpec spec, ContextLengthExceededException e) {
		TruncationSpec.Result shrunk;
		try {
			shrunk = spec.shrink(request, e.limit(), e.actual());
		}
		catch (PromptTooLargeException tooLarge) {
			endWith(tooLarge.getCause() != null ? tooLarge
					: new PromptTooLargeException(tooLarge.limit().orElse(-1), tooLarge.smallestSize(), e),
					Outcome.CLIENT_ERROR);
			return;
		}
		catch (Throwable truncatorFailure) {
			endWith(CallbackException.threw("PromptTruncator", truncatorFailure), Outcome.CLIENT_ERROR);
			return;
		}
		truncations++;
		request = shrunk.request();
		// truncation only happens before the first token, so no continuation was built on the old prompt
		continuationBase = request;
		promptTruncated(shrunk.tokensDropped());
		nextAttempt();
	}

	private void promptTooLarge(TruncationSpec spec, ContextLengthExceededException e) {
		int size;
		try {
			size = spec.count(request);
		}
		catch (Throwable counterFailure) {
			endWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
			return;
		}
		endWith(new PromptTooLargeException(e.limit().orElse(-1), size, e), Outcome.CLIENT_ERROR);
	}

	/** @return whether a continuation request is on its way; false when the strategy refused */
	private boolean continueAnswer(Throwable error, Outcome outcome) {
		ChatRequest next;
		try {
			next = policy.midStream().continuation().continuation(continuationBase, tap.transcript().text(), false);
			if (next == null) {
				throw CallbackException.returnedNull("ContinuationStrategy");
			}
		}
		catch (ContinuationRefusedException refused) {
			return false;
		}
		catch (Throwable strategyFailure) {
			endWith(policy.midStream().failure(CallbackException.threw("ContinuationStrategy", strategyFailure),
					deliveredTokens()), outcome);
			return true;
		}
		// a continuation is one more upstream request: it draws on the shared budget like a retry, so a
		// provider that cuts every stream short cannot multiply the load by maxContinuations
		if (!takeRetryGrant()) {
			retryBudgetExhausted();
			return false;
		}
		continuations++;
		request = next;
		tap.discardRecording();
		continuing = true;
		nextAttempt();
		return true;
	}

	/** The request was not admitted: the ladder for {@code trigger}, or the refusal. */
	private void notAdmitted(Throwable rejection, FallbackTrigger trigger) {
		lastError = rejection;
		lastOutcome = Outcome.REJECTED;
		fallbackOrFail(trigger, rejection, Outcome.REJECTED);
	}

	private void fallbackOrFail(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		FallbackChain<T> chain = view.fallback();
		if (chain == null || !chain.isEnteredBy(trigger)) {
			endWith(cause, outcome);
			return;
		}
		fallback(trigger, cause, outcome);
	}

	private void fallback(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		// the request's outcome if the ladder fails too (REJECTED when no attempt was made)
		lastOutcome = outcome;
		// keyed by what the caller asked, so a truncated retry and a later identical request share a key
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, trigger, priority, key, policy.breakerPath());
		Flux<T> answer = view.fallback().answer(fallbackRequest, blockingScheduler(), clock.scheduler(),
				this::sourceChosen, policy.metrics(), policy.name());
		subscribe(answer, settings.tailStall, Stage.FALLBACK, tapFor(Stage.FALLBACK), tap);
	}

	// ---- the ladder's cheaper steps first (a stage asks: the load governor) ----

	@Override
	public boolean hasLadder(Degradation degradation) {
		return view.ladderFor(degradation) != null;
	}

	/**
	 * Walks the ladder's steps for {@code degradation} before the live model (or, with
	 * {@code shedOtherwise}, instead of it): no lane permit is taken for it.
	 */
	@Override
	public void walkFirst(Degradation degradation, Throwable cause, @Nullable Throwable shedOtherwise) {
		this.shedOtherwise = shedOtherwise;
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, FallbackTrigger.LOAD, priority, key,
				policy.breakerPath());
		Flux<T> answer = view.ladderFor(degradation).answer(fallbackRequest, blockingScheduler(), clock.scheduler(),
				this::sourceChosen, policy.metrics(), policy.name());
		subscribe(answer, settings.tailStall, Stage.PREFERRED, tapFor(Stage.PREFERRED), tap);
	}

	/** The cheaper steps had no answer and delivered nothing: the live model is asked after all. */
	private void preferredFailed(Throwable error) {
		Throwable shed = shedOtherwise;
		if (shed != null) {
			endWith(shed, Outcome.REJECTED);
			return;
		}
		backToRealtime();
		// cancel() finishes the request itself only while no attempt is active: clear the ended walk
		// first, then re-check, so that one of the two sides always sees the other
		active = null;
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		proceed();
	}

	/** A fallback answer or a notice ended. */
	private void tailEnded(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		tailEnded(watch);
		if (stage == Stage.PREFERRED && end != StallWatch.End.COMPLETED && end != StallWatch.End.CANCELLED
				&& watch.tokens() == 0L
				&& !ErrorClassifier.isPreemption(error)) {
			preferredFailed(error);
			return;
		}
		switch (end) {
			case COMPLETED:
				if (stage == Stage.RELEASE) {
					storeAnswer(releasedReason);
					complete(Outcome.SUCCESS, true, releasedReason);
					break;
				}
				// a notice ends the answer, but the attempt still failed (its error is in the attempts)
				complete(stage == Stage.FALLBACK || stage == Stage.PREFERRED ? Outcome.SUCCESS
						: lastOutcome != null ? lastOutcome : Outcome.FAILURE, false, watch.finishReason());
				break;
			case CANCELLED:
				finish(Outcome.CANCELLED, null, watch.finishReason());
				break;
			default:
				if (ErrorClassifier.isPreemption(error)) {
					// a fallback answer or notice was running on the permit the lanes took back
					failPreempted(error);
					return;
				}
				endWith(error, lastOutcome != null ? lastOutcome : Outcome.FAILURE);
		}
	}

	/**
	 * The held answer stands (it passed its validators, or the output cap ended it): it goes to the
	 * subscriber now, with the subscriber's demand. Held leading whitespace goes through the tap, so
	 * that the answer is recorded and transcribed as delivered; the attempt's finish reason stays the
	 * answer's.
	 */
	private void release(StallWatch<T> attempt, boolean blanks) {
		AnswerTap<T> t = tap;
		releasedReason = attempt.finishReason();
		if (!blanks) {
			t.holding = false;
			subscribe(Flux.fromIterable(t.takeHeld()), settings.tailStall, Stage.RELEASE, actual, null);
			return;
		}
		t.validating = false;
		subscribe(Flux.fromIterable(t.takeBlanks()), settings.tailStall, Stage.RELEASE, t, t);
	}

	private void storeAnswer(@Nullable String finishReason) {
		AnswerTap<T> t = tap;
		ResponseCache<T> cache = view.responseCache();
		if (t == null || t.recorder() == null || cache == null || continuations > 0) {
			return;
		}
		t.recorder().storeIfComplete(cache, CacheKeys.keyOf(policy.cacheKey(), originalRequest), Outcome.SUCCESS,
				OutputLimits.isTruncation(finishReason), blockingScheduler());
	}
}
