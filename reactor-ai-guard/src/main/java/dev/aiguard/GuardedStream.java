package dev.aiguard;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stage.AnswerSource;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stage.Lane;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.StageList;
import dev.aiguard.stage.StageRun;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * One guarded request: the loop that runs the policy's stages. The stages admit the request in
 * order ({@link #proceed}), each is asked before a realtime attempt is sent, each hears its end in
 * reverse order, and all end once with the request; the loop subscribes each attempt through a
 * {@link StallWatch} and carries the subscriber's demand, cancel and a preemption in any phase.
 * What follows a failure is {@link RecoverySteps}'s, the books are the {@link RequestLedger}'s, and
 * the chunks go straight to the subscriber, through an {@link AnswerPath} only when something must
 * see them, so this costs nothing per token.
 *
 * <p>Control steps happen one after another for a request; a cancel and a preemption may race any
 * of them, which {@link RequestControl} settles, together with the wait before an attempt and the
 * once-only end.
 */
final class GuardedStream<T> extends RequestControl<T> implements StallWatch.Terminal<T> {

	private static final StageRun[] NO_RUNS = new StageRun[0];

	final AiGuard<T> guard;
	/** The guard's policy as this request read it when subscribed: a live change never reaches it. */
	final PolicyView<T> view;
	final GuardPolicy policy;
	/** What this request's priority reads of {@link #view}; set in {@link #start()} once the priority is known. */
	@SuppressWarnings("NullAway.Init") // start() sets it before anything reads it
	PolicyView.ForPriority settings;
	private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
	final boolean callForm;
	@Nullable
	final ChatRequest originalRequest;
	/** The request the next attempt sends: the caller's, or one a stage or a recovery step changed. */
	@Nullable
	ChatRequest request;
	int realtimeAttempts;
	/** The subscriber the chunks pass through, {@code null} when nothing must see them. */
	@Nullable
	final AnswerPath<T> path;
	/** Created with the request's first turn off the straight path (a failure, a refusal, a tail). */
	@Nullable
	RecoverySteps<T> recovery;
	/** The answer's source was announced to GuardSignals (at the first content chunk). */
	private boolean announced;

	volatile AttemptKind kind = AttemptKind.REALTIME;
	/** The runs of the policy's stages for this request, in order; set when the request starts. */
	private StageRun[] runs = NO_RUNS;
	/** How the stages reach this request; {@code null} when the policy has none. */
	@Nullable
	private StagePort<T> port;
	/** The next stage whose admission the request goes through. */
	private int admitting;
	/** The stage whose {@link StageRun#beforeAttempt} runs now, -1 outside those checks. */
	private int checking = -1;
	/** The lane the request holds once admitted, {@code null} without lanes. */
	@Nullable
	volatile Lane lane;
	/** The hop of the attempt being set up, handed to its watch by {@link #subscribe}. */
	@Nullable
	private LaneThreadCall<T> pendingHop;

	/** The stages' runs end once, before the subscriber hears of the end or when a cancel finishes the request. */
	volatile int stagesEnded;
	static final AtomicIntegerFieldUpdater<GuardedStream> STAGES_ENDED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "stagesEnded");

	GuardedStream(Function<ChatRequest, ? extends Publisher<? extends T>> upstream, @Nullable ChatRequest request,
			boolean callForm, AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		this(upstream, request, callForm, guard, guard.view(), actual);
	}

	private GuardedStream(Function<ChatRequest, ? extends Publisher<? extends T>> upstream,
			@Nullable ChatRequest request, boolean callForm, AiGuard<T> guard, PolicyView<T> view,
			CoreSubscriber<? super T> actual) {
		super(actual, new RequestLedger<>(view, actual.currentContext(), guard.inspector()));
		this.guard = guard;
		this.view = view;
		this.policy = view.policy;
		this.upstream = upstream;
		this.callForm = callForm;
		this.originalRequest = request;
		this.request = request;
		this.path = AnswerPath.of(view, callForm, actual, guard.inspector(), this::addDemand);
	}

	RecoverySteps<T> recovery() {
		RecoverySteps<T> r = recovery;
		if (r == null) {
			r = new RecoverySteps<>(this);
			recovery = r;
		}
		return r;
	}

	// ---- admission: the stages in order ----

	void start() {
		Priority p;
		try {
			p = Priority.from(actual.currentContext(), policy.defaultPriority());
		}
		catch (IllegalArgumentException badPriority) {
			Operators.error(actual, badPriority);
			finish(Outcome.REJECTED, badPriority, null);
			return;
		}
		ledger.priority = p;
		settings = view.of(p);
		ledger.observeStart();
		actual.onSubscribe(this);
		RetryBudget budget = policy.retryBudget();
		if (budget != null) {
			budget.onRequest();
		}
		StageList stages = view.stages;
		if (stages.size() > 0) {
			port = new StagePort<>(this);
			runs = stages.start(port);
			if (path != null) {
				path.startedWith(runs);
			}
		}
		proceed();
	}

	/** Admission goes on: the next stage admits the request, or, once every stage did, the first attempt starts. */
	void proceed() {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		int next = admitting;
		StagePort<T> sp = port;
		if (sp != null && next < runs.length) {
			admitting = next + 1;
			runs[next].admit(sp);
			return;
		}
		nextAttempt();
	}

	/** @return how the stages reach this request; there is one whenever a run asks for it */
	StagePort<T> port() {
		return Objects.requireNonNull(port);
	}

	/** @return the run that answers when the live model does not (the fallback ladder), or {@code null}; looked up only when needed */
	@Nullable
	AnswerSource answerSource() {
		for (StageRun run : runs) {
			AnswerSource source = run.answers();
			if (source != null) {
				return source;
			}
		}
		return null;
	}

	/** A stage refused the request or the attempt: {@link RecoverySteps} says what follows. */
	void refuse(Refusal refusal, Throwable reason) {
		// refused before an attempt was sent: the runs that let it through give back what they took for it
		int refusing = checking;
		checking = -1;
		for (int i = refusing - 1; i >= 0; i--) {
			runs[i].afterAttempt(AttemptEnd.notSent());
		}
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		recovery().refused(refusal, reason);
	}

	// ---- sending an attempt ----

	/** Sends (or, after a backoff or a stage's wait, re-sends) the request, if every stage lets it. */
	@Override
	void nextAttempt() {
		if (!mayStartAttempt()) {
			return;
		}
		StageRun[] r = runs;
		StagePort<T> sp = port;
		for (int i = 0; sp != null && i < r.length; i++) {
			checking = i;
			boolean go = r[i].beforeAttempt(sp);
			checking = -1;
			if (!go) {
				return;
			}
		}
		RecoverySteps<T> steps = recovery;
		if (steps != null) {
			steps.resending();
		}
		realtimeAttempts++;
		ledger.observeAttemptStarted(realtimeAttempts);
		ChatRequest sent = request;
		// a blocking upstream is called, not only subscribed, on the request's lane threads: after a
		// backoff this code runs on the timer
		Publisher<? extends T> source = policy.blockingUpstream() ? onLaneThread(sent) : open(sent);
		for (StageRun run : r) {
			source = run.decorate(source);
		}
		AnswerPath<T> p = path;
		ContinuationSupport.@Nullable Transcript<T> transcript = p != null && p.tap != null ? p.tap.transcript() : null;
		ContinuationSupport<T> support = view.continuationSupport();
		if (continued() && support != null && transcript != null) {
			source = support.splice(source, transcript);
		}
		CoreSubscriber<? super T> target = p != null
				? p.targetFor(AttemptKind.REALTIME, request, ledger.deliveredTokens(), continued()) : actual;
		subscribe(source, settings.stall, AttemptKind.REALTIME, target, p != null ? p.tap : null,
				p != null ? p.check() : null);
	}

	private boolean continued() {
		RecoverySteps<T> steps = recovery;
		return steps != null && steps.continuations > 0;
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

	/** @return the upstream called on the request's lane threads, if the attempt still wants it when the hop lands */
	private Publisher<T> onLaneThread(@Nullable ChatRequest sent) {
		LaneThreadCall<T> hop = new LaneThreadCall<>(this, () -> open(sent));
		pendingHop = hop;
		return Flux.defer(hop).subscribeOn(blockingScheduler());
	}

	/** Blocking work of this request (a blocking upstream, blocking fallback steps) runs on its lane's threads. */
	Scheduler blockingScheduler() {
		Lane l = lane;
		return l != null ? l.scheduler() : Schedulers.boundedElastic();
	}

	/** A fallback answer, a notice or the load's cheaper steps, delivered through the path. */
	void subscribeTail(Publisher<? extends T> source, AttemptKind next) {
		AnswerPath<T> p = path;
		subscribe(source, settings.tailStall, next, p != null ? p.targetFor(next, request, ledger.deliveredTokens(),
				continued()) : actual, p != null ? p.tap : null, null);
	}

	/** Subscribes {@code source} as the next attempt, watched by {@code spec}, delivering to {@code target}. */
	void subscribe(Publisher<? extends T> source, StallSpec spec, AttemptKind next, CoreSubscriber<? super T> target,
			@Nullable AnswerTap<T> tap, StallWatch.@Nullable ContentCheck<Object> check) {
		kind = next;
		StallWatch<T> watch = StallWatch.forAttempt(target, spec, ledger.clock.scheduler(), guard.inspector(), this, check);
		long cap = ledger.outputCap;
		if (cap > 0L && next == AttemptKind.REALTIME) {
			// the cap is on the whole answer: a continuation may deliver only what is left of it
			watch.capOutput(Math.max(1L, cap - ledger.deliveredTokens()));
		}
		if (tap != null) {
			tap.watch = watch;
		}
		LaneThreadCall<T> hop = pendingHop;
		if (hop != null) {
			// the upstream is called on a lane thread later: its deadlines start then
			pendingHop = null;
			hop.watch = watch;
			watch.awaitUpstream(LaneThreadCall.waitNanos(lane, settings.stall));
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
			// the lane went while this attempt was being set up: end it without calling the upstream
			watch.abort(taken);
			return;
		}
		source.subscribe(watch);
	}

	// ---- the end of an attempt ----

	@Override
	public boolean wantsFirstContent() {
		return ledger.signals != null && !announced;
	}

	/** The answer's first content chunk: GuardSignals hear its source, outside the chunk's delivery. */
	@Override
	public void firstContent(StallWatch<T> watch) {
		if (!announced) {
			announced = true;
			ledger.announce(ledger.source());
		}
	}

	@Override
	public void onEnd(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		if (kind != AttemptKind.REALTIME) {
			recovery().tailEnded(watch, end, error);
			return;
		}
		boolean threadWaitOver = end == StallWatch.End.STALLED && !watch.upstreamStarted();
		if (threadWaitOver) {
			// no lane thread was free in time and the upstream was never called: the model had no
			// chance to stall, so this is the lane's refusal, not a failure for the breaker
			end = StallWatch.End.ERROR;
			error = ErrorClassifier.laneThreadTimeout(ledger.priority, LaneThreadCall.waitNanos(lane, settings.stall));
		}
		AnswerPath<T> p = path;
		boolean held = p != null && p.holding();
		boolean blanks = p != null && p.holdsBlanks();
		if (end == StallWatch.End.COMPLETED && p != null) {
			// the verdict at the end of the attempt: a rejected answer makes it a failed one
			RuntimeException rejected = p.verdict(watch, request, actual.currentContext());
			if (rejected != null) {
				end = StallWatch.End.ERROR;
				error = rejected;
			}
		}
		String invalid = ErrorClassifier.rejectingValidator(error);
		if (invalid != null) {
			ledger.invalidAnswer(invalid);
		}
		Outcome outcome = ErrorClassifier.ofAttempt(end, error, policy.errorClassifier(), actual.currentContext());
		StageRun[] r = runs;
		if (r.length > 0) {
			AttemptEnd ended = ledger.ended(watch, outcome, error, request);
			// the stages hear of the end in the reverse of their order: the breaker first, the load last
			for (int i = r.length - 1; i >= 0; i--) {
				r[i].afterAttempt(ended);
			}
		}
		ledger.attemptEnded(watch, outcome, error, held || blanks);
		switch (end) {
			case COMPLETED:
				ledger.answerCompleted();
				if (held || blanks) {
					recovery().release(watch, blanks);
					break;
				}
				storeAnswer(watch.finishReason());
				complete(Outcome.SUCCESS, true, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				AnswerTap<T> tap = p != null ? p.tap : null;
				if (blanks && tap != null) {
					// before any next attempt: the demand the held chunks took goes back to the subscriber
					tap.dropBlanks();
				}
				// a failed end always carries its error (StallWatch.Terminal)
				recovery().attemptFailed(outcome, Objects.requireNonNull(error), threadWaitOver);
		}
	}

	void storeAnswer(@Nullable String finishReason) {
		if (path != null) {
			path.storeAnswer(finishReason, continued(), blockingScheduler());
		}
	}

	/** The one place the stages' runs end (the lane goes back, a reservation is returned); only the first call counts. */
	@Override
	void endStages(Outcome outcome) {
		if (STAGES_ENDED.compareAndSet(this, 0, 1)) {
			StageList.finish(runs, outcome);
		}
	}
}
