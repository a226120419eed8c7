package dev.aiguard;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;

import dev.aiguard.admission.LaneAdmission;
import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.internal.DemandHandOver;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.retry.ContinuationRefusedException;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.TruncationSpec;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.annotation.Nullable;
import reactor.util.context.Context;

/**
 * One guarded request, read in one direction: admission, then attempts — each subscribed through
 * a {@link StallWatch}, ended once, and followed by what {@link Recovery} decides (retry,
 * truncate, continue, notice, fallback or fail) — then the end, which releases the lane in one
 * place and closes the {@link RequestLedger}. Chunks go from each attempt straight to the
 * subscriber (through an {@link AnswerTap} only when something must see them); this object sees
 * demand, attempt ends and cancellation, so it costs nothing per token.
 *
 * <p>Control steps happen one after another for a request; {@link #cancel()} and a preemption may
 * race any of them and are settled by re-checks on both sides plus the once-only {@link #finish}.
 */
final class GuardedStream<T> extends DemandHandOver<StallWatch<T>>
		implements Subscription, StallWatch.Terminal<T>, LaneAdmission.Owner, Scannable {

	private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
	private final boolean callForm;
	private final AiGuard<T> guard;
	private final GuardPolicy policy;
	private final CoreSubscriber<? super T> actual;
	/** The policy's timer and its clock: deadlines, backoff waits and every duration in the report. */
	private final TimeSource clock;
	@Nullable
	private final RetryBudget retryBudget;
	@Nullable
	private final CircuitBreaker breaker;
	private final RequestLedger ledger;

	@Nullable
	private final ChatRequest originalRequest;
	/** What continuations build on: the caller's request, or the truncated one that fit. */
	@Nullable
	private ChatRequest continuationBase;
	@Nullable
	private ChatRequest request;

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

	/** What the current attempt is: a realtime call, a fallback answer, or a notice. */
	private volatile Stage stage = Stage.REALTIME;
	@Nullable
	private BreakerPermit attemptPermit;
	@Nullable
	private AnswerTap<T> tap;

	@Nullable
	private volatile LanePermit lanePermit;
	@Nullable
	private volatile Disposable admission;
	@Nullable
	private volatile Disposable pendingRetry;

	/** The attempt running now, for cancellation and preemption. */
	volatile StallWatch<T> active;

	/** Set once when the lanes take the permit back; every phase of the request looks at it. */
	@Nullable
	volatile PreemptedException preemption;
	static final AtomicReferenceFieldUpdater<GuardedStream, PreemptedException> PREEMPTION =
			AtomicReferenceFieldUpdater.newUpdater(GuardedStream.class, PreemptedException.class, "preemption");

	/**
	 * {@link #WAITING} while a retry backoff is scheduled and no attempt runs; a CAS out of it
	 * decides whether the backoff starts the next attempt or a preemption ends the request.
	 */
	volatile int phase;
	static final AtomicIntegerFieldUpdater<GuardedStream> PHASE =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "phase");
	static final int RUNNING = 0;
	static final int WAITING = 1;

	volatile int cancelled;
	static final AtomicIntegerFieldUpdater<GuardedStream> CANCELLED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "cancelled");

	volatile int finished;
	static final AtomicIntegerFieldUpdater<GuardedStream> FINISHED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "finished");

	enum Stage {
		REALTIME, FALLBACK, NOTICE
	}

	GuardedStream(Function<ChatRequest, ? extends Publisher<? extends T>> upstream, @Nullable ChatRequest request,
			boolean callForm, AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		this.upstream = upstream;
		this.callForm = callForm;
		this.originalRequest = request;
		this.continuationBase = request;
		this.request = request;
		this.guard = guard;
		this.policy = guard.policy();
		this.actual = actual;
		this.clock = policy.clock();
		this.retryBudget = policy.retryBudget();
		this.breaker = policy.breaker();
		this.ledger = new RequestLedger(policy, actual.currentContext(), policy.defaultPriority());
	}

	void start() {
		Priority priority;
		try {
			priority = Priority.from(actual.currentContext(), policy.defaultPriority());
		}
		catch (IllegalArgumentException badPriority) {
			Operators.error(actual, badPriority);
			finish(Outcome.REJECTED, badPriority, null);
			return;
		}
		ledger.priority = priority;
		actual.onSubscribe(this);
		if (retryBudget != null) {
			retryBudget.onRequest();
		}
		PriorityLanes lanes = policy.lanes();
		if (lanes == null) {
			nextAttempt();
			return;
		}
		// a free permit on the request's own lane is taken at once; waiting, borrowing and
		// preempting go through the acquire Mono
		LanePermit now = lanes.tryAcquire(priority);
		if (now != null) {
			admitted(now);
			return;
		}
		LaneAdmission waiting = LaneAdmission.await(lanes, priority, this);
		admission = waiting;
		if (cancelled != 0) {
			waiting.dispose();
		}
	}

	// ---- admission ----

	@Override
	public void admitted(LanePermit permit) {
		lanePermit = permit;
		if (cancelled != 0) {
			// a cancel racing the grant may have finished the request before it could see the permit
			permit.release();
			finishCancelled();
			return;
		}
		permit.onPreempted(this::preempted);
		nextAttempt();
	}

	@Override
	public void refused(Throwable rejection) {
		lastError = rejection;
		lastOutcome = Outcome.REJECTED;
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		fallbackOrFail(FallbackTrigger.REJECTED, rejection, Outcome.REJECTED);
	}

	@Override
	public Context currentContext() {
		return actual.currentContext();
	}

	/**
	 * The lanes took the permit back (they released it already). Whatever the request is doing, it
	 * stops: a running attempt, fallback answer or notice is aborted with the exception, a backoff
	 * is called off, and an attempt about to start sees {@link #preemption} and never subscribes.
	 */
	private void preempted(PreemptedException e) {
		if (!PREEMPTION.compareAndSet(this, null, e)) {
			return;
		}
		if (PHASE.compareAndSet(this, WAITING, RUNNING)) {
			// backing off: the retry will not start, so the request ends here
			Disposable backoff = pendingRetry;
			if (backoff != null) {
				backoff.dispose();
			}
			failPreempted(e);
			return;
		}
		// nextAttempt() sets `active` then reads `preemption`; we set `preemption` then read `active`
		StallWatch<T> w = active;
		if (w != null) {
			w.abort(e);
		}
	}

	/** Ends the request for a preemption; after tokens were delivered, as a partial answer. */
	private void failPreempted(PreemptedException e) {
		long delivered = ledger.deliveredTokens();
		failWith(delivered > 0L ? policy.midStream().failure(e, delivered) : e, Outcome.REJECTED);
	}

	// ---- attempts ----

	/** The retry backoff is over: start the next attempt unless a preemption ended the request first. */
	private void retryNow() {
		if (PHASE.compareAndSet(this, WAITING, RUNNING)) {
			nextAttempt();
		}
	}

	private void nextAttempt() {
		pendingRetry = null;
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		PreemptedException taken = preemption;
		if (taken != null) {
			failPreempted(taken);
			return;
		}
		if (breaker != null) {
			BreakerPermit permit = breaker.tryAcquire();
			if (permit == null) {
				breakerRefused();
				return;
			}
			attemptPermit = permit;
		}
		String reason = retryReason;
		if (reason != null) {
			retryReason = null;
			ledger.retried(reason);
		}
		if (continuing) {
			continuing = false;
			ledger.continued();
		}
		realtimeAttempts++;
		Publisher<? extends T> source;
		try {
			source = upstream.apply(request);
			if (source == null) {
				source = Flux.error(CallbackException.returnedNull("the upstream function"));
			}
		}
		catch (Throwable t) {
			// a client may throw what it would otherwise signal (a refused connection): it stays the
			// upstream's failure, classified and retried like one
			source = Flux.error(Exceptions.unwrap(t));
		}
		if (continuations > 0) {
			source = guard.continuationSupport().splice(source, tap.transcript());
		}
		if (policy.blockingUpstream()) {
			source = Flux.from(source).subscribeOn(blockingScheduler());
		}
		subscribe(source, policy.stall(), Stage.REALTIME);
	}

	/** The breaker refused a retry or a continuation: the last real error stands. */
	private void breakerRefused() {
		BreakerOpenException refused = new BreakerOpenException(breaker.name(), breaker.state());
		Throwable cause = lastError != null ? lastError : refused;
		long delivered = ledger.deliveredTokens();
		if (delivered > 0L) {
			// a continuation was refused: the partial answer stands, failed as fail() says (no further try)
			failWith(policy.midStream().failure(cause, delivered), lastOutcome != null ? lastOutcome : Outcome.FAILURE);
			return;
		}
		fallbackOrFail(FallbackTrigger.BREAKER_OPEN, cause, lastOutcome != null ? lastOutcome : Outcome.REJECTED);
	}

	private void subscribe(Publisher<? extends T> source, StallSpec spec, Stage next) {
		stage = next;
		CoreSubscriber<? super T> target = tapFor(next);
		StallWatch<T> watch = StallWatch.forAttempt(target, spec, clock, guard.inspector(), this);
		if (target == tap) {
			tap.watch = watch;
		}
		active = watch;
		handOver(watch);
		if (cancelled != 0) {
			watch.cancel();
			return;
		}
		PreemptedException taken = preemption;
		if (taken != null) {
			// the permit went while this attempt was being set up: end it without calling the upstream
			watch.abort(taken);
			return;
		}
		source.subscribe(watch);
	}

	/** The subscriber chunks go to: the actual one, or a tap when something must see them. */
	private CoreSubscriber<? super T> tapFor(Stage next) {
		ResponseCache<T> cache = callForm ? guard.responseCache() : null;
		ContinuationSupport<T> continuation = callForm ? guard.continuationSupport() : null;
		boolean record = next == Stage.REALTIME && cache != null;
		boolean transcribe = next == Stage.REALTIME && continuation != null;
		if (!record && !transcribe && ledger.signals == null) {
			return actual;
		}
		if (tap == null) {
			tap = new AnswerTap<>(actual, ledger, cache, continuation);
		}
		else if (record && continuations == 0) {
			tap.restartRecording();
		}
		tap.recording = record;
		tap.transcribing = transcribe;
		return tap;
	}

	// ---- Subscription, as seen by the subscriber ----

	@Override
	public void request(long n) {
		if (Operators.validate(n)) {
			addDemand(n);
		}
	}

	@Override
	public void cancel() {
		if (!CANCELLED.compareAndSet(this, 0, 1)) {
			return;
		}
		Disposable waiting = admission;
		if (waiting != null) {
			waiting.dispose();
		}
		Disposable backoff = pendingRetry;
		if (backoff != null) {
			backoff.dispose();
		}
		StallWatch<T> w = active;
		if (w != null) {
			w.cancel();
		}
		// between attempts (waiting for admission, backing off) nothing else will end the request;
		// once an attempt has started, its end (ours or one that won the race) finishes the request
		if (w == null || backoff != null) {
			finishCancelled();
		}
	}

	/** An attempt delivered these chunks; its successor is asked only for the rest. */
	@Override
	protected long consumedBy(StallWatch<T> previous) {
		return previous.emitted();
	}

	// ---- attempt ends ----

	@Override
	public void onEnd(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		if (stage != Stage.REALTIME) {
			tailEnded(watch, end, error);
			return;
		}
		Outcome outcome = outcomeOf(end, error);
		BreakerPermit permit = attemptPermit;
		attemptPermit = null;
		if (permit != null) {
			permit.record(outcome, watch.timeToFirstTokenNanos());
		}
		ledger.attemptEnded(watch, outcome, error);
		switch (end) {
			case COMPLETED:
				ledger.answerCompleted();
				storeAnswer(watch);
				complete(Outcome.SUCCESS, Source.REALTIME, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				lastError = error;
				lastOutcome = outcome;
				attemptFailed(outcome, error);
		}
	}

	/** Gathers the facts of a failed attempt, asks {@link Recovery}, and carries its step out. */
	private void attemptFailed(Outcome outcome, Throwable error) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		TruncationSpec truncation = policy.truncation();
		Recovery.Facts facts = new Recovery.Facts(outcome, error instanceof PreemptedException,
				error instanceof ContextLengthExceededException && request != null, policy.retry().isRetryable(error),
				policy.retry().isRetryable(error) || error instanceof StreamStalledException
						|| error instanceof IncompleteStreamException,
				error instanceof StreamStalledException && ((StreamStalledException) error).phase() != StallPhase.MAX_DURATION,
				ledger.deliveredTokens(), realtimeAttempts, truncations, continuations,
				tap != null && tap.continuable());
		Recovery.Step step = Recovery.decide(facts, guard.rules(callForm), this::takeRetryGrant);
		if (step.budgetRefused()) {
			ledger.retryBudgetExhausted();
		}
		switch (step.action()) {
			case RETRY:
				scheduleRetry(error);
				return;
			case TRUNCATE:
				truncate(truncation, (ContextLengthExceededException) error);
				return;
			case PROMPT_TOO_LARGE:
				promptTooLarge(truncation, (ContextLengthExceededException) error);
				return;
			case CONTINUE:
				if (!continueAnswer()) {
					failWith(policy.midStream().failure(error, ledger.deliveredTokens()), outcome);
				}
				return;
			case NOTICE:
				@SuppressWarnings("unchecked")
				T notice = (T) policy.midStream().noticeFor(error);
				if (notice != null) {
					subscribe(Flux.just(notice), policy.tailStall(), Stage.NOTICE);
					return;
				}
				failWith(policy.midStream().failure(error, ledger.deliveredTokens()), outcome);
				return;
			case FALLBACK:
				fallback(step.trigger(), error, outcome);
				return;
			case FAIL_PARTIAL:
				if (error instanceof PreemptedException) {
					failPreempted((PreemptedException) error);
					return;
				}
				failWith(policy.midStream().failure(error, ledger.deliveredTokens()), outcome);
				return;
			default:
				failWith(error, outcome);
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
			failWith(tooLarge.getCause() != null ? tooLarge
					: new PromptTooLargeException(tooLarge.limit().orElse(-1), tooLarge.smallestSize(), e),
					Outcome.CLIENT_ERROR);
			return;
		}
		catch (Throwable truncatorFailure) {
			failWith(CallbackException.threw("PromptTruncator", truncatorFailure), Outcome.CLIENT_ERROR);
			return;
		}
		truncations++;
		request = shrunk.request();
		// truncation only happens before the first token, so no continuation was built on the old prompt
		continuationBase = request;
		ledger.promptTruncated(shrunk.tokensDropped());
		nextAttempt();
	}

	private void promptTooLarge(TruncationSpec spec, ContextLengthExceededException e) {
		int size;
		try {
			size = spec.count(request);
		}
		catch (Throwable counterFailure) {
			failWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
			return;
		}
		failWith(new PromptTooLargeException(e.limit().orElse(-1), size, e), Outcome.CLIENT_ERROR);
	}

	private void scheduleRetry(Throwable error) {
		Duration delay = policy.retry().delayBefore(realtimeAttempts, error);
		retryReason = error.getClass().getSimpleName();
		phase = WAITING;
		PreemptedException taken = preemption;
		if (taken != null && PHASE.compareAndSet(this, WAITING, RUNNING)) {
			// preempted while this attempt was ending: preempted() saw no backoff to call off
			failPreempted(taken);
			return;
		}
		try {
			Disposable backoff = clock.scheduler().schedule(this::retryNow, delay.toNanos(), TimeUnit.NANOSECONDS);
			pendingRetry = backoff;
			// a preemption that claims the wait before this store finds no backoff to dispose: the
			// backoff then runs, fails to claim the wait and does nothing
			if (cancelled != 0) {
				backoff.dispose();
				finishCancelled();
			}
		}
		catch (Throwable rejected) {
			if (PHASE.compareAndSet(this, WAITING, RUNNING)) {
				failWith(Operators.onRejectedExecution(rejected, actual.currentContext()), Outcome.FAILURE);
			}
		}
	}

	/** @return whether a continuation request is on its way */
	private boolean continueAnswer() {
		MidStreamPolicy<?> mid = policy.midStream();
		ChatRequest next;
		try {
			next = mid.continuation().continuation(continuationBase, tap.transcript().text(), !tap.continuable());
		}
		catch (ContinuationRefusedException refused) {
			return false;
		}
		// a continuation is one more upstream request: it draws on the shared budget like a retry, so a
		// provider that cuts every stream short cannot multiply the load by maxContinuations
		if (!takeRetryGrant()) {
			ledger.retryBudgetExhausted();
			return false;
		}
		continuations++;
		request = next;
		tap.discardRecording();
		continuing = true;
		nextAttempt();
		return true;
	}

	private void fallbackOrFail(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		FallbackChain<T> chain = guard.fallback();
		if (chain == null || !chain.isEnteredBy(trigger)) {
			failWith(cause, outcome);
			return;
		}
		fallback(trigger, cause, outcome);
	}

	private void fallback(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		// the request's outcome if the ladder fails too (REJECTED when no attempt was made)
		lastOutcome = outcome;
		// keyed by what the caller asked, so a truncated retry and a later identical request share a key
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, trigger, ledger.priority, key);
		Flux<T> answer = guard.fallback().answer(fallbackRequest, blockingScheduler(), ledger::sourceChosen,
				policy.metrics(), policy.name());
		subscribe(answer, policy.tailStall(), Stage.FALLBACK);
	}

	private void tailEnded(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		ledger.tailEnded(watch);
		switch (end) {
			case COMPLETED:
				// a notice ends the answer, but the attempt still failed (its error is in the attempts)
				complete(stage == Stage.FALLBACK ? Outcome.SUCCESS : lastOutcome != null ? lastOutcome : Outcome.FAILURE,
						null, watch.finishReason());
				break;
			case CANCELLED:
				finish(Outcome.CANCELLED, null, watch.finishReason());
				break;
			default:
				if (error instanceof PreemptedException) {
					// a fallback answer or notice was running on the permit the lanes took back
					failPreempted((PreemptedException) error);
					return;
				}
				failWith(error, lastOutcome != null ? lastOutcome : Outcome.FAILURE);
		}
	}

	// ---- the end ----

	/** The answer is whole: the lane is free before the subscriber hears of it. */
	private void complete(Outcome outcome, @Nullable Source answered, @Nullable String finishReason) {
		releaseLane();
		actual.onComplete();
		if (answered != null) {
			ledger.answered(answered);
		}
		finish(outcome, null, finishReason);
	}

	private void failWith(Throwable error, Outcome outcome) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		releaseLane();
		actual.onError(error);
		finish(outcome, error, null);
	}

	/**
	 * The one place the lane permit is given back. Called before the subscriber hears of the end,
	 * so a request it starts from there finds the permit, and again by {@link #finish}; the permit
	 * counts only the first release.
	 */
	private void releaseLane() {
		LanePermit lp = lanePermit;
		if (lp != null) {
			lp.release();
		}
	}

	private void finishCancelled() {
		BreakerPermit permit = attemptPermit;
		if (permit != null) {
			// only in the window between taking a permission and subscribing: settling is idempotent
			attemptPermit = null;
			permit.record(Outcome.CANCELLED, -1L);
		}
		finish(Outcome.CANCELLED, null, null);
	}

	private void finish(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		if (!FINISHED.compareAndSet(this, 0, 1)) {
			return;
		}
		releaseLane();
		ledger.close(outcome, error, finishReason);
	}

	// ---- helpers ----

	/** Blocking work of this request (a blocking upstream, blocking fallback steps) runs on its lane's threads. */
	private Scheduler blockingScheduler() {
		LanePermit lp = lanePermit;
		return lp != null ? lp.scheduler() : Schedulers.boundedElastic();
	}

	private void storeAnswer(StallWatch<T> watch) {
		AnswerTap<T> t = tap;
		ResponseCache<T> cache = guard.responseCache();
		if (t == null || t.recorder() == null || cache == null || continuations > 0) {
			return;
		}
		t.recorder().storeIfComplete(cache, CacheKeys.keyOf(policy.cacheKey(), originalRequest), Outcome.SUCCESS,
				OutputLimits.isTruncation(watch.finishReason()), blockingScheduler());
	}

	private Outcome outcomeOf(StallWatch.End end, @Nullable Throwable error) {
		switch (end) {
			case COMPLETED:
				return Outcome.SUCCESS;
			case CANCELLED:
				return Outcome.CANCELLED;
			case STALLED:
				return Outcome.STALLED;
			case INCOMPLETE:
				return Outcome.INCOMPLETE;
			default:
				if (error instanceof PreemptedException) {
					// the lanes took the permit back: not the upstream's fault, not a call for the breaker
					return Outcome.REJECTED;
				}
				try {
					Outcome o = policy.errorClassifier().apply(error);
					return o != null ? o : Outcome.FAILURE;
				}
				catch (Throwable classifierFailure) {
					Operators.onErrorDropped(classifierFailure, actual.currentContext());
					return Outcome.FAILURE;
				}
		}
	}

	@Override
	@Nullable
	public Object scanUnsafe(Attr key) {
		if (key == Attr.ACTUAL) {
			return actual;
		}
		if (key == Attr.PARENT) {
			return active;
		}
		if (key == Attr.CANCELLED) {
			return cancelled != 0;
		}
		if (key == Attr.TERMINATED) {
			return finished != 0;
		}
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.SYNC;
		}
		return null;
	}
}
