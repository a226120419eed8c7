package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;
import java.util.function.Function;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.AnswerRecorder;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.core.Source;
import dev.aiguard.internal.DemandHandOver;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.retry.ContinuationRefusedException;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StallWatch;
import dev.aiguard.stall.StreamStalledException;
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
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.CallbackException;

/**
 * One guarded request: the {@link Subscription} its subscriber holds, and the coordinator of its
 * admission, attempts, retries, continuations and fallback. Chunks go from each attempt's
 * {@link StallWatch} straight to the subscriber (through a small tap only when something must see
 * them: signals, a response cache, continuation); this object sees demand, attempt ends and
 * cancellation, so it costs nothing per token.
 *
 * <p>Control steps (admission, attempt ends, backoff timers) happen one after another for a
 * request; {@link #cancel()} may race any of them and is settled by {@link #cancelled} checks on
 * both sides plus the once-only {@link #finish}.
 */
final class GuardedStream<T> extends DemandHandOver<StallWatch<T>>
		implements Subscription, StallWatch.Terminal<T>, Scannable {


	private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
	private final boolean callForm;
	private final AiGuard<T> guard;
	private final GuardPolicy policy;
	private final GuardMetrics metrics;
	private final CoreSubscriber<? super T> actual;
	/** The policy's timer and its clock: deadlines, backoff waits and every duration in the report. */
	private final TimeSource clock;
	/** Created at the first attempt a report will read; copy-on-write because cancel may race a read. */
	@Nullable
	private volatile List<GuardReport.Attempt> attempts;
	private final RetryRules retry;
	@Nullable
	private final RetryBudget retryBudget;
	@Nullable
	private final CircuitBreaker breaker;

	@Nullable
	private final ChatRequest originalRequest;
	/** What continuations build on: the caller's request, or the truncated one that fit. */
	@Nullable
	private ChatRequest continuationBase;
	@Nullable
	private ChatRequest request;

	private Priority priority;
	@Nullable
	private GuardSignals signals;
	private long requestStart;
	private volatile long deliveredTokens;
	private volatile long firstTokenAt = -1L;
	private long wastedTokens;
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
	private volatile Source source = Source.REALTIME;
	@Nullable
	private BreakerPermit attemptPermit;
	@Nullable
	private Tap<T> tap;

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
		this.metrics = policy.metrics();
		this.actual = actual;
		this.clock = policy.clock();
		this.retry = policy.retry();
		this.retryBudget = policy.retryBudget();
		this.breaker = policy.breaker();
	}

	void start() {
		requestStart = clock.nanos();
		signals = GuardSignals.from(actual.currentContext());
		try {
			priority = Priority.from(actual.currentContext(), policy.defaultPriority());
		}
		catch (IllegalArgumentException badPriority) {
			priority = policy.defaultPriority();
			Operators.error(actual, badPriority);
			finish(Outcome.REJECTED, badPriority, null);
			return;
		}
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
		Admission waiting = new Admission(this);
		admission = waiting;
		lanes.acquire(priority).subscribe(waiting);
		if (cancelled != 0) {
			waiting.dispose();
		}
	}

	// ---- admission ----

	private void admitted(LanePermit permit) {
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

	private void notAdmitted(Throwable rejection) {
		lastError = rejection;
		lastOutcome = Outcome.REJECTED;
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		fallbackOrFail(FallbackTrigger.REJECTED, rejection, Outcome.REJECTED);
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
		failWith(deliveredTokens > 0L ? policy.midStream().failure(e, deliveredTokens) : e, Outcome.REJECTED);
	}

	/** The retry backoff is over: start the next attempt unless a preemption ended the request first. */
	private void retryNow() {
		if (PHASE.compareAndSet(this, WAITING, RUNNING)) {
			nextAttempt();
		}
	}

	// ---- attempts ----

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
				BreakerOpenException refused = new BreakerOpenException(breaker.name(), breaker.state());
				if (deliveredTokens > 0L) {
					// a continuation was refused: the partial answer stands, failed as fail() says (no further try)
					failWith(policy.midStream().failure(lastError != null ? lastError : refused, deliveredTokens),
							lastOutcome != null ? lastOutcome : Outcome.FAILURE);
				}
				else {
					Throwable cause = lastError != null ? lastError : refused;
					fallbackOrFail(FallbackTrigger.BREAKER_OPEN, cause,
							lastOutcome != null ? lastOutcome : Outcome.REJECTED);
				}
				return;
			}
			attemptPermit = permit;
		}
		String reason = retryReason;
		if (reason != null) {
			retryReason = null;
			safely(() -> metrics.retried(policy.name(), priority, reason));
		}
		if (continuing) {
			continuing = false;
			safely(() -> metrics.continued(policy.name(), priority));
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
			source = splice(source);
		}
		if (policy.blockingUpstream()) {
			LanePermit lp = lanePermit;
			source = Flux.from(source).subscribeOn(lp != null ? lp.scheduler() : Schedulers.boundedElastic());
		}
		subscribe(source, policy.stall(), Stage.REALTIME);
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
		boolean record = next == Stage.REALTIME && callForm && policy.responseCache() != null;
		boolean text = next == Stage.REALTIME && isContinuable();
		if (!record && !text && signals == null) {
			return actual;
		}
		if (tap == null) {
			tap = new Tap<>(actual, this);
		}
		else if (record && continuations == 0) {
			tap.restartRecording();
		}
		tap.recording = record;
		tap.collectingText = text;
		return tap;
	}

	private boolean isContinuable() {
		return callForm && policy.midStream().mode() == MidStreamPolicy.Mode.CONTINUE
				&& guard.inspector() == ChatChunk.INSPECTOR;
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
		recordAttempt(watch, outcome, error);
		switch (end) {
			case COMPLETED:
				// a continued answer keeps every token its failed attempts delivered: none was wasted
				wastedTokens = 0L;
				storeAnswer(watch);
				releaseLane();
				actual.onComplete();
				answered(Source.REALTIME);
				finish(outcome, null, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				lastError = error;
				lastOutcome = outcome;
				attemptFailed(watch, outcome, error);
		}
	}

	private void attemptFailed(StallWatch<T> watch, Outcome outcome, Throwable error) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		if (error instanceof PreemptedException) {
			// the lane took its permit back: no retry, continuation, notice or fallback may run on it
			failPreempted((PreemptedException) error);
			return;
		}
		if (deliveredTokens > 0L) {
			midStreamFailure(error, outcome);
			return;
		}
		if (error instanceof ContextLengthExceededException && truncate((ContextLengthExceededException) error)) {
			return;
		}
		if (retry.isRetryable(error) && retry.canRetry(realtimeAttempts)) {
			if (retryBudget == null || retryBudget.tryAcquireRetry()) {
				scheduleRetry(error);
				return;
			}
			safely(() -> metrics.retryBudgetExhausted(policy.name(), priority));
		}
		FallbackTrigger trigger;
		if (outcome == Outcome.CLIENT_ERROR) {
			trigger = FallbackTrigger.CLIENT_ERROR;
		}
		else if (error instanceof StreamStalledException
				&& ((StreamStalledException) error).phase() != StallPhase.MAX_DURATION) {
			trigger = FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN;
		}
		else {
			trigger = FallbackTrigger.RETRIES_EXHAUSTED;
		}
		fallbackOrFail(trigger, error, outcome);
	}

	/** @return whether a smaller request is on its way */
	private boolean truncate(ContextLengthExceededException e) {
		TruncationSpec spec = policy.truncation();
		if (!callForm || spec == null || request == null || spec.maxTruncations() == 0) {
			return false;
		}
		if (realtimeAttempts >= policy.maxAnswerAttempts()) {
			// maxAttempts caps the calls made for the answer's start, a truncated one included
			return false;
		}
		if (truncations >= spec.maxTruncations()) {
			int size;
			try {
				size = spec.count(request);
			}
			catch (Throwable counterFailure) {
				failWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
				return true;
			}
			failWith(new PromptTooLargeException(e.limit().orElse(-1), size, e), Outcome.CLIENT_ERROR);
			return true;
		}
		TruncationSpec.Result shrunk;
		try {
			shrunk = spec.shrink(request, e.limit(), e.actual());
		}
		catch (PromptTooLargeException tooLarge) {
			failWith(tooLarge.getCause() != null ? tooLarge
					: new PromptTooLargeException(tooLarge.limit().orElse(-1), tooLarge.smallestSize(), e),
					Outcome.CLIENT_ERROR);
			return true;
		}
		catch (Throwable truncatorFailure) {
			failWith(CallbackException.threw("PromptTruncator", truncatorFailure), Outcome.CLIENT_ERROR);
			return true;
		}
		truncations++;
		request = shrunk.request();
		// truncation only happens before the first token, so no continuation was built on the old prompt
		continuationBase = request;
		safely(() -> metrics.promptTruncated(policy.name(), priority, shrunk.tokensDropped()));
		nextAttempt();
		return true;
	}

	private void scheduleRetry(Throwable error) {
		Duration delay = retry.delayBefore(realtimeAttempts, error);
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

	/** Tokens already reached the subscriber: never a plain resubscribe. */
	private void midStreamFailure(Throwable error, @Nullable Outcome outcome) {
		Outcome o = outcome != null ? outcome : Outcome.FAILURE;
		MidStreamPolicy<?> mid = policy.midStream();
		switch (mid.mode()) {
			case CONTINUE:
				if (continueAnswer(error, mid)) {
					return;
				}
				break;
			case NOTICE:
				@SuppressWarnings("unchecked")
				T notice = (T) mid.noticeFor(error);
				if (notice != null) {
					subscribe(Flux.just(notice), policy.tailStall(), Stage.NOTICE);
					return;
				}
				break;
			default:
				break;
		}
		failWith(mid.failure(error, deliveredTokens), o);
	}

	/** @return whether a continuation request is on its way */
	private boolean continueAnswer(Throwable error, MidStreamPolicy<?> mid) {
		Tap<T> t = tap;
		if (!isContinuable() || t == null || request == null || continuations >= mid.maxContinuations()
				|| error instanceof PreemptedException || !(retry.isRetryable(error)
						|| error instanceof StreamStalledException
						|| error instanceof dev.aiguard.stall.IncompleteStreamException)) {
			return false;
		}
		ChatRequest next;
		try {
			next = mid.continuation().continuation(continuationBase, t.text.toString(), t.toolCalls);
		}
		catch (ContinuationRefusedException refused) {
			return false;
		}
		// a continuation is one more upstream request: it draws on the shared budget like a retry, so a
		// provider that cuts every stream short cannot multiply the load by maxContinuations
		if (retryBudget != null && !retryBudget.tryAcquireRetry()) {
			safely(() -> metrics.retryBudgetExhausted(policy.name(), priority));
			return false;
		}
		continuations++;
		request = next;
		t.discardRecording();
		continuing = true;
		nextAttempt();
		return true;
	}

	/** A continuation's text, with what the user already saw removed from its start. */
	@SuppressWarnings("unchecked")
	private Publisher<? extends T> splice(Publisher<? extends T> continuation) {
		Tap<T> t = tap;
		String delivered = t == null ? "" : t.text.toString();
		Flux<ChatChunk> chunks = (Flux<ChatChunk>) (Flux<?>) Flux.from(continuation);
		return (Publisher<? extends T>) Flux.defer(() -> {
			dev.aiguard.retry.OverlapSplicer splicer = dev.aiguard.retry.OverlapSplicer.of(delivered);
			return chunks.handle((chunk, sink) -> {
				boolean closing = chunk.finishReason() != null || chunk.terminal();
				String text = chunk.text().isEmpty() ? "" : splicer.accept(chunk.text());
				if (closing) {
					text = text + splicer.finish();
				}
				if (text.equals(chunk.text())) {
					sink.next(chunk);
				}
				else if (!text.isEmpty() || !chunk.toolCalls().isEmpty() || closing || chunk.usage() != null
						|| chunk.heartbeat()) {
					sink.next(new ChatChunk(text, chunk.role(), chunk.finishReason(), chunk.usage(), chunk.toolCalls(),
							chunk.heartbeat(), chunk.terminal()));
				}
			});
		});
	}

	private void fallbackOrFail(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		@SuppressWarnings("unchecked")
		FallbackChain<T> chain = (FallbackChain<T>) policy.fallback();
		if (chain == null || !chain.isEnteredBy(trigger)) {
			failWith(cause, outcome);
			return;
		}
		// the request's outcome if the ladder fails too (REJECTED when no attempt was made)
		lastOutcome = outcome;
		// keyed by what the caller asked, so a truncated retry and a later identical request share a key
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, trigger, priority, key);
		LanePermit lp = lanePermit;
		Scheduler blocking = lp != null ? lp.scheduler() : Schedulers.boundedElastic();
		Flux<T> answer = chain.answer(fallbackRequest, blocking, this::source, metrics, policy.name());
		subscribe(answer, policy.tailStall(), Stage.FALLBACK);
	}

	private void tailEnded(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		deliveredTokens += watch.tokens();
		if (watch.tokens() > 0L && firstTokenAt < 0L) {
			firstTokenAt = watch.startNanos() + watch.timeToFirstTokenNanos() - requestStart;
		}
		switch (end) {
			case COMPLETED:
				releaseLane();
				actual.onComplete();
				if (stage == Stage.FALLBACK) {
					finish(Outcome.SUCCESS, null, watch.finishReason());
				}
				else {
					// a notice ends the answer, but the attempt still failed (its error is in the attempts)
					finish(lastOutcome != null ? lastOutcome : Outcome.FAILURE, null, watch.finishReason());
				}
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
				releaseLane();
				actual.onError(error);
				finish(lastOutcome != null ? lastOutcome : Outcome.FAILURE, error, watch.finishReason());
		}
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

	/** Frees the lane before the subscriber hears of the end, so a request it starts from there finds the permit. */
	private void releaseLane() {
		LanePermit lp = lanePermit;
		if (lp != null) {
			lp.release();
		}
	}

	private void source(Source chosen) {
		source = chosen;
		GuardSignals sig = signals;
		if (sig != null) {
			signalSource(sig, chosen);
		}
	}

	/** Whoever listens to the signals is user code: a throw from it never reaches the stream. */
	void signalSource(GuardSignals sig, Source chosen) {
		try {
			sig.sourceChosen(chosen);
		}
		catch (Throwable listenerFailure) {
			Operators.onErrorDropped(listenerFailure, actual.currentContext());
		}
	}

	private void answered(Source from) {
		try {
			metrics.answered(policy.name(), priority, from);
		}
		catch (Throwable metricsFailure) {
			metricsFailed(metricsFailure);
		}
	}

	private void storeAnswer(StallWatch<T> watch) {
		Tap<T> t = tap;
		@SuppressWarnings("unchecked")
		ResponseCache<T> cache = (ResponseCache<T>) policy.responseCache();
		if (t == null || t.recorder == null || cache == null || continuations > 0) {
			return;
		}
		LanePermit lp = lanePermit;
		t.recorder.storeIfComplete(cache, CacheKeys.keyOf(policy.cacheKey(), originalRequest), Outcome.SUCCESS,
				OutputLimits.isTruncation(watch.finishReason()),
				lp != null ? lp.scheduler() : Schedulers.boundedElastic());
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

	private void recordAttempt(StallWatch<T> watch, Outcome outcome, @Nullable Throwable error) {
		long tokens = watch.tokens();
		long ttft = watch.timeToFirstTokenNanos();
		if (tokens > 0L && firstTokenAt < 0L) {
			firstTokenAt = watch.startNanos() + ttft - requestStart;
		}
		deliveredTokens += tokens;
		if (outcome != Outcome.SUCCESS) {
			wastedTokens += tokens;
		}
		if (signals != null || !policy.reportListeners().isEmpty()) {
			// only a report reads these
			List<GuardReport.Attempt> list = attempts;
			if (list == null) {
				list = new CopyOnWriteArrayList<>();
				attempts = list;
			}
			list.add(new GuardReport.Attempt(list.size() + 1, outcome, tokens,
					ttft < 0L ? null : Duration.ofNanos(ttft), Duration.ofNanos(watch.durationNanos()),
					watch.finishReason(), error));
		}
		// try/catch rather than safely(..): no capturing lambda on the once-per-attempt path
		try {
			metrics.streamEnded(policy.name(), priority, outcome, watch.durationNanos(), ttft, tokens);
			if (error instanceof StreamStalledException) {
				metrics.stalled(policy.name(), priority, ((StreamStalledException) error).phase());
			}
		}
		catch (Throwable metricsFailure) {
			metricsFailed(metricsFailure);
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
		LanePermit lp = lanePermit;
		if (lp != null) {
			lp.release();
		}
		boolean truncated = OutputLimits.isTruncation(finishReason);
		if (truncated) {
			safely(() -> metrics.outputTruncated(policy.name(), priority));
		}
		long wasted = wastedTokens;
		if (wasted > 0L && outcome != Outcome.CANCELLED) {
			safely(() -> metrics.tokensWasted(policy.name(), priority, wasted));
		}
		List<Consumer<? super GuardReport>> listeners = policy.reportListeners();
		if (listeners.isEmpty() && signals == null) {
			return;
		}
		long now = clock.nanos();
		long first = firstTokenAt;
		List<GuardReport.Attempt> made = attempts;
		GuardReport report = new GuardReport(policy.name(), priority, outcome, source, made == null ? List.of() : made, deliveredTokens,
				first < 0L ? null : Duration.ofNanos(first), Duration.ofNanos(now - requestStart), finishReason,
				truncated, error);
		if (signals != null) {
			try {
				signals.ended(report);
			}
			catch (Throwable listenerFailure) {
				Operators.onErrorDropped(listenerFailure, actual.currentContext());
			}
		}
		if (listeners.isEmpty()) {
			return;
		}
		Scheduler reportScheduler = policy.reportScheduler();
		if (reportScheduler == null) {
			deliver(listeners, report);
		}
		else {
			try {
				reportScheduler.schedule(() -> deliver(listeners, report));
			}
			catch (Throwable rejected) {
				Operators.onErrorDropped(rejected, actual.currentContext());
			}
		}
	}

	private void deliver(List<Consumer<? super GuardReport>> listeners, GuardReport report) {
		for (Consumer<? super GuardReport> listener : listeners) {
			try {
				listener.accept(report);
			}
			catch (Throwable listenerFailure) {
				Operators.onErrorDropped(listenerFailure, actual.currentContext());
			}
		}
	}

	/** Metrics never break a stream. */
	private void safely(Runnable recording) {
		try {
			recording.run();
		}
		catch (Throwable metricsFailure) {
			metricsFailed(metricsFailure);
		}
	}

	private void metricsFailed(Throwable metricsFailure) {
		Operators.onErrorDropped(metricsFailure, actual.currentContext());
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

	/**
	 * Waits for the lane permit. Unlike a lambda subscriber it hands over a permit that arrives after
	 * it was disposed (a cancel racing the grant), so the request can release it instead of dropping it.
	 */
	static final class Admission implements CoreSubscriber<LanePermit>, Disposable {

		final GuardedStream<?> parent;

		volatile Subscription s;
		static final AtomicReferenceFieldUpdater<Admission, Subscription> S =
				AtomicReferenceFieldUpdater.newUpdater(Admission.class, Subscription.class, "s");

		Admission(GuardedStream<?> parent) {
			this.parent = parent;
		}

		@Override
		public Context currentContext() {
			return parent.actual.currentContext();
		}

		@Override
		public void onSubscribe(Subscription subscription) {
			if (Operators.setOnce(S, this, subscription)) {
				subscription.request(Long.MAX_VALUE);
			}
		}

		@Override
		public void onNext(LanePermit permit) {
			parent.admitted(permit);
		}

		@Override
		public void onError(Throwable rejection) {
			parent.notAdmitted(rejection);
		}

		@Override
		public void onComplete() {
			// the permit, if any, was handed over in onNext
		}

		@Override
		public void dispose() {
			Operators.terminate(S, this);
		}

		@Override
		public boolean isDisposed() {
			return s == Operators.cancelledSubscription();
		}
	}

	/**
	 * Sits between an attempt and the subscriber when something must see the chunks: it announces
	 * the answer's source at the first chunk, records a realtime answer for the response cache, and
	 * keeps the delivered text for a continuation. One per request, reused across attempts.
	 */
	static final class Tap<T> implements CoreSubscriber<T> {

		final CoreSubscriber<? super T> actual;
		final GuardedStream<T> parent;
		@Nullable
		final ResponseCache<T> cache;
		@Nullable
		AnswerRecorder<T> recorder;
		final StringBuilder text = new StringBuilder();
		boolean recording;
		boolean collectingText;
		boolean toolCalls;
		boolean announced;
		/** The attempt whose chunks pass now; set before it is subscribed. */
		StallWatch<T> watch;

		@SuppressWarnings("unchecked")
		Tap(CoreSubscriber<? super T> actual, GuardedStream<T> parent) {
			this.actual = actual;
			this.parent = parent;
			this.cache = parent.callForm ? (ResponseCache<T>) parent.policy.responseCache() : null;
			this.recorder = cache != null ? AnswerRecorder.forCache(cache) : null;
		}

		/** A retry starts: what a failed attempt sent before its first token is not part of the answer. */
		void restartRecording() {
			AnswerRecorder<T> r = recorder;
			if (cache != null && r != null && (r.size() > 0 || r.overflowed())) {
				recorder = AnswerRecorder.forCache(cache);
			}
		}

		void discardRecording() {
			if (recorder != null) {
				recorder.discard();
			}
		}

		@Override
		public Context currentContext() {
			return actual.currentContext();
		}

		@Override
		public void onSubscribe(Subscription s) {
			// attempts never pass their subscription on: the coordinator is the subscriber's subscription
		}

		@Override
		public void onNext(T t) {
			// the watch already asked the inspector: reuse its answer rather than call user code while
			// the chunk is marked as being delivered
			int f = watch.chunkFlags();
			if (!announced && (f & ChunkInspector.CONTENT) != 0) {
				announced = true;
				GuardSignals sig = parent.signals;
				if (sig != null) {
					parent.signalSource(sig, parent.source);
				}
			}
			if (recording && recorder != null && (f & (ChunkInspector.CONTENT | ChunkInspector.HEARTBEAT))
					!= ChunkInspector.HEARTBEAT) {
				recorder.record(t);
			}
			if (collectingText && t instanceof ChatChunk) {
				ChatChunk c = (ChatChunk) t;
				text.append(c.text());
				if (!c.toolCalls().isEmpty()) {
					toolCalls = true;
				}
			}
			actual.onNext(t);
		}

		@Override
		public void onError(Throwable t) {
			actual.onError(t);
		}

		@Override
		public void onComplete() {
			actual.onComplete();
		}
	}
}
