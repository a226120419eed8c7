package dev.aiguard;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Supplier;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stage.Lane;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageEvent;
import dev.aiguard.stage.StageList;
import dev.aiguard.stage.StageRun;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

/**
 * The mechanics of one guarded request, without its decisions: running the policy's stages
 * (admission in order, each before an attempt, their end once), subscribing each attempt through a
 * {@link StallWatch}, the subscriber's demand and cancel, preemption in any phase, the backoff
 * wait between attempts, and the once-only end. {@link GuardedStream} decides what each attempt
 * is and what follows its end.
 *
 * <p>Control steps happen one after another for a request; {@link #cancel()} and a preemption may
 * race any of them and are settled by re-checks on both sides plus the once-only {@link #finish}.
 */
abstract class AttemptLoop<T> extends RequestLedger<T>
		implements Subscription, StallWatch.Terminal<T>, RequestPort, Scannable {

	final AiGuard<T> guard;
	/** The guard's policy as this request read it when subscribed: a live change never reaches it. */
	final PolicyView<T> view;
	/** What this request's priority reads of {@link #view}; set in {@link #start()} once the priority is known. */
	PolicyView.ForPriority settings;
	final CoreSubscriber<? super T> actual;

	/**
	 * What the current attempt is: a realtime call, a fallback answer, a notice, or the ladder's
	 * cheaper steps walked first because of the load.
	 */
	volatile Stage stage = Stage.REALTIME;

	/** The runs of the policy's stages for this request, in order; set when the request starts. */
	StageRun[] runs = NO_RUNS;
	private static final StageRun[] NO_RUNS = new StageRun[0];
	/** The next stage whose admission the request goes through. */
	private int admitting;
	/** The stage whose {@link StageRun#beforeAttempt} runs now, -1 outside those checks. */
	private int checking = -1;
	/** The lane the request holds once admitted, {@code null} without lanes. */
	@Nullable
	private volatile Lane lane;
	@Nullable
	private volatile Disposable pendingRetry;

	/** The attempt running now, for cancellation and preemption. */
	volatile StallWatch<T> active;

	/** The hop of the attempt being set up, handed to its watch by {@link #subscribe}. */
	@Nullable
	private LaneThreadCall pendingHop;

	/** Set once when the lanes take the permit back; every phase of the request looks at it. */
	@Nullable
	volatile Throwable preemption;
	static final AtomicReferenceFieldUpdater<AttemptLoop, Throwable> PREEMPTION =
			AtomicReferenceFieldUpdater.newUpdater(AttemptLoop.class, Throwable.class, "preemption");

	/**
	 * {@link #WAITING} while a retry backoff is scheduled and no attempt runs; a CAS out of it
	 * decides whether the backoff starts the next attempt or a preemption ends the request.
	 */
	volatile int phase;
	static final AtomicIntegerFieldUpdater<AttemptLoop> PHASE = AtomicIntegerFieldUpdater.newUpdater(AttemptLoop.class, "phase");
	static final int RUNNING = 0;
	static final int WAITING = 1;

	volatile int cancelled;
	static final AtomicIntegerFieldUpdater<AttemptLoop> CANCELLED =
			AtomicIntegerFieldUpdater.newUpdater(AttemptLoop.class, "cancelled");

	volatile int finished;
	static final AtomicIntegerFieldUpdater<AttemptLoop> FINISHED =
			AtomicIntegerFieldUpdater.newUpdater(AttemptLoop.class, "finished");

	/** The stages' runs end once, before the subscriber hears of the end or when a cancel finishes the request. */
	volatile int stagesEnded;
	static final AtomicIntegerFieldUpdater<AttemptLoop> STAGES_ENDED =
			AtomicIntegerFieldUpdater.newUpdater(AttemptLoop.class, "stagesEnded");

	enum Stage {
		REALTIME, FALLBACK, NOTICE, PREFERRED,
		/** A realtime answer held back for validation is delivered, once it passed. */
		RELEASE
	}

	AttemptLoop(AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		this(guard, guard.view(), actual);
	}

	private AttemptLoop(AiGuard<T> guard, PolicyView<T> view, CoreSubscriber<? super T> actual) {
		super(view.policy, actual.currentContext(), view.policy.defaultPriority());
		this.guard = guard;
		this.view = view;
		this.actual = actual;
	}

	/** Sends (or, after a backoff, re-sends) the request. */
	abstract void nextAttempt();


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
		this.priority = priority;
		this.settings = view.of(priority);
		observeStart();
		actual.onSubscribe(this);
		RetryBudget budget = policy.retryBudget();
		if (budget != null) {
			budget.onRequest();
		}
		StageList stages = view.stages;
		if (stages.size() > 0) {
			runs = stages.start(this);
		}
		proceed();
	}

	/**
	 * Admission goes on: the next stage admits the request, or, once every stage did, the first
	 * attempt starts. Runs when the request starts, when a stage admitted it, or after the load
	 * governor's cheaper sources had no answer.
	 */
	@Override
	public final void proceed() {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		int next = admitting;
		if (next < runs.length) {
			admitting = next + 1;
			runs[next].admit(this);
			return;
		}
		nextAttempt();
	}

	/**
	 * Asks each stage whether the attempt may be sent now.
	 *
	 * @return true to send it; false when a stage refused it or asked for it later
	 */
	final boolean stagesAllowAttempt() {
		StageRun[] r = runs;
		for (int i = 0; i < r.length; i++) {
			checking = i;
			boolean go = r[i].beforeAttempt(this);
			checking = -1;
			if (!go) {
				return false;
			}
		}
		return true;
	}

	/**
	 * A stage refused: when it did so before an attempt was sent, the runs that let the attempt
	 * through hear that it was not, and give back what they took for it.
	 */
	final void refusedBeforeSending() {
		int refusing = checking;
		checking = -1;
		StageRun[] r = runs;
		for (int i = refusing - 1; i >= 0; i--) {
			r[i].afterAttempt(AttemptEnd.notSent());
		}
	}

	@Override
	public final void admitted(Lane held) {
		lane = held;
		observeAdmitted();
	}

	@Override
	public final void observe(StageEvent event) {
		switch (event) {
			case QUEUED -> observeQueued();
			case BREAKER_PERMITTED -> observeBreaker(true);
			case BREAKER_REFUSED -> observeBreaker(false);
		}
	}

	@Override
	public final void attemptAfter(long delayNanos) {
		waitThenAttempt(delayNanos);
	}

	@Override
	public final void attemptNow() {
		nextAttempt();
	}

	@Override
	public Context currentContext() {
		return actual.currentContext();
	}

	@Override
	public final Context context() {
		return actual.currentContext();
	}

	@Override
	public final Priority priority() {
		return priority;
	}

	@Override
	public final long nanos() {
		return clock.nanos();
	}

	@Override
	public final boolean cancelled() {
		return cancelled != 0;
	}

	/**
	 * The lanes took the permit back (they released it already). Whatever the request is doing, it
	 * stops: a running attempt, fallback answer or notice is aborted with the exception, a backoff
	 * is called off, and an attempt about to start sees {@link #preemption} and never subscribes.
	 */
	@Override
	public final void preempted(Throwable e) {
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
		// subscribe() sets `active` then reads `preemption`; we set `preemption` then read `active`
		StallWatch<T> w = active;
		if (w != null) {
			w.abort(e);
		}
	}

	/**
	 * The one place the stages' runs end (the lane permit goes back, a reservation is returned).
	 * Called before the subscriber hears of the end, so a request it starts from there finds the
	 * permit, and again by {@link #finish}; only the first call counts.
	 */
	final void endStages(Outcome outcome) {
		if (STAGES_ENDED.compareAndSet(this, 0, 1)) {
			StageList.finish(runs, outcome);
		}
	}

	/** Blocking work of this request (a blocking upstream, blocking fallback steps) runs on its lane's threads. */
	final Scheduler blockingScheduler() {
		Lane l = lane;
		return l != null ? l.scheduler() : Schedulers.boundedElastic();
	}

	/**
	 * @return {@code call} made on the request's lane threads ({@link #blockingScheduler()}), if
	 *         the attempt still wants it when the hop lands there; pass it to {@link #subscribe}
	 */
	final Publisher<T> onLaneThread(Supplier<Publisher<? extends T>> call) {
		LaneThreadCall hop = new LaneThreadCall(call);
		pendingHop = hop;
		return Flux.defer(hop).subscribeOn(blockingScheduler());
	}

	/**
	 * The longest an attempt waits for a lane thread before its upstream is called: the queue wait
	 * of the request's lane; without lanes, the first-token timeout (or no bound without one).
	 */
	final long laneThreadWaitNanos() {
		Lane l = lane;
		if (l != null) {
			return l.threadWaitNanos();
		}
		long firstToken = settings.stall.firstTokenNanos();
		return firstToken > 0L ? firstToken : Long.MAX_VALUE;
	}

	/**
	 * @return why an attempt whose wait for a lane thread ran out never called its upstream: the
	 *         lane's {@code WAIT_TIMEOUT}, like a queue wait that ran out
	 */
	final RuntimeException laneThreadTimeout() {
		return ErrorClassifier.laneThreadTimeout(priority, laneThreadWaitNanos());
	}

	/**
	 * A blocking upstream's call, made once the hop onto the lane thread lands. The attempt may
	 * have been cancelled or preempted meanwhile, its permit taken back (the lanes claim it before
	 * the request hears of the preemption), or its wait for the thread may have run out: then the
	 * upstream is never called, and the one who stopped the attempt ends it. Otherwise the
	 * attempt's deadlines start here.
	 */
	final class LaneThreadCall implements Supplier<Publisher<T>> {

		private final Supplier<Publisher<? extends T>> call;
		/** Set by {@link #subscribe} before the hop is scheduled. */
		@Nullable
		StallWatch<T> watch;

		LaneThreadCall(Supplier<Publisher<? extends T>> call) {
			this.call = call;
		}

		@Override
		@SuppressWarnings("unchecked") // a publisher of T's subtypes only ever hands out Ts
		public Publisher<T> get() {
			Lane l = lane;
			if (cancelled != 0 || preemption != null || l != null && !l.held() || !watch.startUpstream()) {
				return Flux.never();
			}
			return (Publisher<T>) call.get();
		}
	}

	// ---- attempts ----

	/** Waits {@code delayNanos} on the policy's timer, then starts the next attempt unless preempted first. */
	final void retryAfter(long delayNanos) {
		observeBackoff(delayNanos);
		waitThenAttempt(delayNanos);
	}

	/** Waits {@code delayNanos} on the policy's timer, then starts the next attempt unless cancelled or preempted first. */
	final void waitThenAttempt(long delayNanos) {
		phase = WAITING;
		Throwable taken = preemption;
		if (taken != null && PHASE.compareAndSet(this, WAITING, RUNNING)) {
			// preempted while this attempt was ending: preempted() saw no backoff to call off
			failPreempted(taken);
			return;
		}
		try {
			Disposable backoff = clock.scheduler().schedule(this::retryNow, delayNanos, TimeUnit.NANOSECONDS);
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
				endWith(Operators.onRejectedExecution(rejected, actual.currentContext()), Outcome.FAILURE);
			}
		}
	}

	private void retryNow() {
		if (PHASE.compareAndSet(this, WAITING, RUNNING)) {
			nextAttempt();
		}
	}

	/**
	 * @return whether the request may start an attempt now; when not, it has been ended (cancelled
	 *         or preempted)
	 */
	final boolean mayStartAttempt() {
		pendingRetry = null;
		if (cancelled != 0) {
			finishCancelled();
			return false;
		}
		Throwable taken = preemption;
		if (taken != null) {
			failPreempted(taken);
			return false;
		}
		return true;
	}

	/** Subscribes {@code source} as the next attempt, watched by {@code spec}, delivering to {@code target}. */
	final void subscribe(Publisher<? extends T> source, StallSpec spec, Stage next, CoreSubscriber<? super T> target,
			@Nullable AnswerTap<T> tap) {
		subscribe(source, spec, next, target, tap, null);
	}

	/** As above, with {@code check} seeing each content chunk after {@code target} received it. */
	final void subscribe(Publisher<? extends T> source, StallSpec spec, Stage next, CoreSubscriber<? super T> target,
			@Nullable AnswerTap<T> tap, StallWatch.@Nullable ContentCheck<Object> check) {
		stage = next;
		StallWatch<T> watch = StallWatch.forAttempt(target, spec, clock.scheduler(), guard.inspector(), this, check);
		long cap = outputCap;
		if (cap > 0L && next == Stage.REALTIME) {
			// the cap is on the whole answer: a continuation may deliver only what is left of it
			watch.capOutput(Math.max(1L, cap - deliveredTokens()));
		}
		if (tap != null) {
			tap.watch = watch;
		}
		LaneThreadCall hop = pendingHop;
		if (hop != null) {
			// the upstream is called on a lane thread later: its deadlines start then
			pendingHop = null;
			hop.watch = watch;
			watch.awaitUpstream(laneThreadWaitNanos());
		}
		if (target instanceof AnswerTap.Held) {
			// a held answer is read whole, whatever the subscriber asked for so far; asked before the
			// watch is handed over, while nothing else can reach it
			watch.request(Long.MAX_VALUE);
		}
		active = watch;
		handOver(watch);
		if (cancelled != 0) {
			watch.cancel();
			return;
		}
		Throwable taken = preemption;
		if (taken != null) {
			// the permit went while this attempt was being set up: end it without calling the upstream
			watch.abort(taken);
			return;
		}
		source.subscribe(watch);
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
		Disposable backoff = pendingRetry;
		if (backoff != null) {
			backoff.dispose();
		}
		StallWatch<T> w = active;
		if (w != null) {
			w.cancel();
		}
		// between attempts (waiting for admission, backing off) nothing else will end the request
		// (finishing it ends the stages: a lane wait is called off);
		// once an attempt has started, its end (ours or one that won the race) finishes the request
		if (w == null || backoff != null) {
			finishCancelled();
		}
	}

	/**
	 * An attempt delivered these chunks; its successor is asked only for the rest. A held attempt
	 * delivered nothing to the subscriber.
	 */
	@Override
	protected long consumedBy(StallWatch<T> previous) {
		return previous.scanUnsafe(Attr.ACTUAL) instanceof AnswerTap.Held ? 0L : previous.emitted();
	}

	// ---- the end ----

	/** Ends the request for a preemption; after tokens were delivered, as a partial answer. */
	final void failPreempted(Throwable e) {
		long delivered = deliveredTokens();
		endWith(delivered > 0L ? policy.midStream().failure(e, delivered) : e, Outcome.REJECTED);
	}

	/** The answer is whole: the lane is free before the subscriber hears of it. */
	final void complete(Outcome outcome, boolean realtime, @Nullable String finishReason) {
		endStages(outcome);
		actual.onComplete();
		if (realtime) {
			answered(dev.aiguard.core.Source.REALTIME);
		}
		finish(outcome, null, finishReason);
	}


	/** Ends the request with an error: the lane is free before the subscriber hears of it. */
	final void endWith(Throwable error, Outcome outcome) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		endStages(outcome);
		actual.onError(error);
		finish(outcome, error, null);
	}

	final void finishCancelled() {
		finish(Outcome.CANCELLED, null, null);
	}

	final void finish(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		if (!FINISHED.compareAndSet(this, 0, 1)) {
			return;
		}
		endStages(outcome);
		close(outcome, error, finishReason);
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
