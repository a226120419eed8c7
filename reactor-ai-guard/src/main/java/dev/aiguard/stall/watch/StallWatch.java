package dev.aiguard.stall.watch;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.core.CallbackException;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.Stall;

/**
 * The subscriber that watches one attempt of a token stream: first-token, idle and max-duration
 * deadlines, and the terminal-marker check. Shared by {@link Stall#detect} and {@code AiGuard};
 * applications use those and never create one directly.
 *
 * <h2>Cost per chunk</h2>
 * Two ordered stores and one ordered load of this object's own fields, one call to
 * {@link ChunkInspector#flags}, one counter increment and one plain store of the chunk's flags
 * (plus the {@link ContentCheck}, when one is given):
 * no atomic read-modify-write instruction,
 * no timer and no clock read (except once, for the first token). A single re-armed one-shot task
 * per subscription watches all three deadlines: it wakes at the first-token deadline, every
 * {@code idleTimeout / idleChecks} once idle watching applies, and at the max-duration deadline,
 * and compares the content counter with the one it saw last. The idle deadline counts from the
 * check that last saw content, and the last check is armed for exactly that deadline, so a late
 * timer wake-up delays the decision once instead of adding up over the checks. An idle stall is
 * therefore signalled between {@code idleTimeout} and {@code idleTimeout + idleTimeout/idleChecks}
 * after the last content chunk (plus the timer's lateness), never earlier; every stall is
 * confirmed {@link #CONFIRM_DELAY_NANOS} after it is decided.
 *
 * <h2>User callbacks never hold a deadline</h2>
 * The {@link ChunkInspector} runs before a chunk is marked as being delivered, so a deadline
 * never waits for it: an inspector that blocks is overtaken by the deadline (its chunk is then
 * dropped), and one that throws, like a {@code null} chunk (Reactive Streams rule 2.13), fails
 * the attempt with that error and cancels the upstream. A subscriber whose {@code onNext} throws
 * fails the attempt too, and the mark is cleared first. Only the subscriber's own {@code onNext}
 * is waited for, as Reactive Streams requires signals to be serial. When a deadline ends the
 * stream, the subscriber is told first and the upstream is cancelled afterwards on
 * {@link StallSpec#cancelScheduler()}, never on the timer thread.
 *
 * <h2>Serialisation without a per-chunk CAS</h2>
 * {@code onNext} marks {@link #seq} odd before delivering and even after, and reads
 * {@link #gate}. The deadline task that decides a stall first closes the gate (a volatile write),
 * then waits {@link #CONFIRM_DELAY_NANOS} before confirming: every chunk that starts after the
 * gate closed takes the slow path, which claims {@link #state} with a CAS, so the task's own CAS
 * on {@link #state} excludes it; a chunk that started before can only be missed if its first
 * store stayed invisible for the whole confirmation delay, a million times longer than a store
 * buffer takes to drain. The confirmation gives up if content arrived meanwhile, and waits while
 * a chunk is being delivered. Upstream terminal signals are serial with {@code onNext} and win
 * or lose against the task by a CAS on {@link #state}: never two terminal signals.
 *
 * @param <T> the chunk type
 */
public final class StallWatch<T> implements CoreSubscriber<T>, Subscription, Scannable, Runnable {

	/** How an attempt ended, as seen by the watch. */
	public enum End {
		/** Completed with a terminal marker or finish reason (or none was required). */
		COMPLETED,
		/** Completed without a terminal marker while one was required. */
		INCOMPLETE,
		/** A deadline passed; the upstream was cancelled. */
		STALLED,
		/** The upstream signalled an error. */
		ERROR,
		/** The subscriber cancelled. */
		CANCELLED
	}

	/** Receives the end of the attempt, exactly once, before anything else is signalled. */
	public interface Terminal<T> {

		/**
		 * @param watch the ended watch, whose statistics are final
		 * @param end how it ended
		 * @param error the failure for INCOMPLETE, STALLED and ERROR, else {@code null}
		 */
		void onEnd(StallWatch<T> watch, End end, @Nullable Throwable error);

		/** @return whether {@link #firstContent} is wanted; asked once, when the watch is created */
		default boolean wantsFirstContent() {
			return false;
		}

		/**
		 * The attempt's first content chunk is about to be delivered. Called before the chunk is
		 * marked as being delivered, so code run here never holds a deadline.
		 */
		default void firstContent(StallWatch<T> watch) {
		}
	}

	/**
	 * Sees each content chunk right after the subscriber received it, still inside its delivery, so
	 * that a guard can judge an answer while it streams without a subscriber of its own between the
	 * watch and the user. Runs on the per-token path: it must be O(1), allocation-free and
	 * non-blocking. What it throws ends the attempt like a throw from the subscriber's
	 * {@code onNext}: the chunk counts as delivered and the attempt ends with the error.
	 */
	public interface ContentCheck<T> {

		/** @param chunk a chunk the inspector called content, just passed on */
		void afterContent(T chunk);
	}

	/** The terminal of a standalone watch ({@code Stall.detect}): the end goes straight to the subscriber. */
	private static final Terminal<Object> TO_SUBSCRIBER = (watch, end, error) -> {
		switch (end) {
			case COMPLETED:
				watch.actual.onComplete();
				break;
			case CANCELLED:
				break;
			default:
				watch.actual.onError(error);
		}
	};

	/** @return the terminal that signals the watch's own subscriber, for a watch used on its own */
	@SuppressWarnings("unchecked")
	public static <T> Terminal<T> toSubscriber() {
		return (Terminal<T>) (Terminal<?>) TO_SUBSCRIBER;
	}

	/** How long a decided stall waits for a chunk that was already on its way (1 ms). */
	public static final long CONFIRM_DELAY_NANOS = 1_000_000L;

	/** {@link #state} once a terminal signal won; otherwise even (idle) or odd (slow-path delivery). */
	static final int DONE = -1;

	private static final Disposable CANCELLED_TIMER = () -> {
	};

	private static final VarHandle SEQ;
	private static final VarHandle GATE;

	static {
		try {
			MethodHandles.Lookup lookup = MethodHandles.lookup();
			SEQ = lookup.findVarHandle(StallWatch.class, "seq", long.class);
			GATE = lookup.findVarHandle(StallWatch.class, "gate", int.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	/** The finish reason of an answer the output cap ended. */
	public static final String OUTPUT_CAP_REASON = "length";

	/**
	 * Changed only from inside its own {@code onNext} ({@link #passOnTo}), so chunks read it on the
	 * delivering thread; other threads read only its context, the same for every value it takes.
	 */
	CoreSubscriber<? super T> actual;
	private final ChunkInspector<T> inspector;
	private final Terminal<T> terminal;
	/** The timer's clock; its scheduler runs the deadline task. */
	private final TimeSource clock;
	private final boolean standalone;
	private final boolean announceFirstContent;
	/** Judges content chunks as they pass, or {@code null}. */
	@Nullable
	private final ContentCheck<? super T> check;
	/** Where a deadline's cancel of the upstream runs; read only when a deadline ends the stream. */
	private final StallSpec spec;

	/** Twice the chunks started, plus one while a chunk is being delivered. Written by onNext only. */
	volatile long seq;

	/** Non-zero (bits {@link #GATE_STALL}, {@link #GATE_ABORT}, {@link #GATE_END}): chunks take the slow path. */
	volatile int gate;

	static final int GATE_STALL = 1;
	static final int GATE_ABORT = 2;
	static final int GATE_END = 4;

	volatile Throwable abortCause;
	static final AtomicReferenceFieldUpdater<StallWatch, Throwable> ABORT_CAUSE =
			AtomicReferenceFieldUpdater.newUpdater(StallWatch.class, Throwable.class, "abortCause");

	volatile Disposable abortTask;
	static final AtomicReferenceFieldUpdater<StallWatch, Disposable> ABORT_TASK =
			AtomicReferenceFieldUpdater.newUpdater(StallWatch.class, Disposable.class, "abortTask");

	/**
	 * {@link #DONE} once a terminal signal won; else a version number, odd while a slow-path chunk is
	 * being delivered. The version moves on with every slow-path chunk, so a CAS from a value read
	 * earlier fails if a chunk slipped in between.
	 */
	volatile int state;
	static final AtomicIntegerFieldUpdater<StallWatch> STATE =
			AtomicIntegerFieldUpdater.newUpdater(StallWatch.class, "state");

	volatile long requested;
	static final AtomicLongFieldUpdater<StallWatch> REQUESTED =
			AtomicLongFieldUpdater.newUpdater(StallWatch.class, "requested");

	volatile long pendingRequest;
	static final AtomicLongFieldUpdater<StallWatch> PENDING_REQUEST =
			AtomicLongFieldUpdater.newUpdater(StallWatch.class, "pendingRequest");

	volatile Subscription upstream;

	volatile Disposable task;
	static final AtomicReferenceFieldUpdater<StallWatch, Disposable> TASK =
			AtomicReferenceFieldUpdater.newUpdater(StallWatch.class, Disposable.class, "task");

	volatile int ended;
	static final AtomicIntegerFieldUpdater<StallWatch> ENDED =
			AtomicIntegerFieldUpdater.newUpdater(StallWatch.class, "ended");

	/**
	 * When the upstream was called: the origin of every deadline and of the attempt's times. Set in
	 * {@code onSubscribe}, or for a watch given {@link #awaitUpstream} by {@link #startUpstream()};
	 * {@link #NOT_STARTED} until then, {@link #WAIT_OVER} once the wait's bound passed first. One
	 * CAS out of {@link #NOT_STARTED} decides between the two.
	 */
	volatile long upstreamAt = NOT_STARTED;
	static final AtomicLongFieldUpdater<StallWatch> UPSTREAM_AT =
			AtomicLongFieldUpdater.newUpdater(StallWatch.class, "upstreamAt");
	static final long NOT_STARTED = -1L;
	static final long WAIT_OVER = Long.MIN_VALUE;

	// Written by onNext before its release store of seq; read by the deadline task after reading seq.
	long tokens;
	/** Heartbeats received; they count as activity only when {@link StallSpec#heartbeatsExtendIdle()}. */
	long heartbeats;
	/** The flags of every chunk that was not plain content, or'ed together. */
	int seenFlags;
	String finishReason;
	long firstTokenAt = -1L;
	/** The flags of the chunk being delivered, for a tap between the watch and the subscriber. */
	int lastFlags;
	/** The last chunk flagged {@link ChunkInspector#USAGE}; its usage is read once, after the end. */
	@Nullable
	T usageChunk;
	/** Content chunks after which the attempt ends as complete ({@link #capOutput}); set before subscription. */
	private long outputCap = Long.MAX_VALUE;
	/** Whether {@link #outputCap} ended the attempt. */
	private volatile boolean capped;
	/** The bound on the wait for {@link #startUpstream()}; 0 when the upstream is called at subscription. */
	private long upstreamWaitNanos;

	// Touched only by the deadline task (one run at a time: each run schedules at most the next).
	private long seenActivity;
	/** When a check last saw activity (or a reason to wait): the idle deadline counts from here. */
	private long quietSince;
	private boolean idleStarted;
	private long firstTokenDeadline;
	private StallPhase pendingPhase;
	private long pendingActivity;
	private long decidedAt;
	/** The watch waits for {@link #startUpstream()}: no deadline runs yet, only the wait's bound. */
	private boolean awaitingUpstream;

	long startNanos;
	long endNanos;

	public StallWatch(CoreSubscriber<? super T> actual, StallSpec spec, Scheduler timer, ChunkInspector<T> inspector,
			Terminal<T> terminal, boolean standalone) {
		this(actual, spec, TimeSource.shared(timer), inspector, terminal, standalone);
	}

	public StallWatch(CoreSubscriber<? super T> actual, StallSpec spec, TimeSource clock, ChunkInspector<T> inspector,
			Terminal<T> terminal, boolean standalone) {
		this(actual, spec, clock, inspector, terminal, standalone, null);
	}

	private StallWatch(CoreSubscriber<? super T> actual, StallSpec spec, TimeSource clock, ChunkInspector<T> inspector,
			Terminal<T> terminal, boolean standalone, @Nullable ContentCheck<? super T> check) {
		this.actual = actual;
		this.check = check;
		this.clock = clock;
		this.inspector = inspector;
		this.terminal = terminal;
		this.standalone = standalone;
		this.spec = spec;
		this.announceFirstContent = terminal.wantsFirstContent();
	}

	/**
	 * Creates a watch for an attempt whose subscription is managed by a coordinator (the guard):
	 * it does not pass {@code onSubscribe} downstream and reports every end to {@code terminal}
	 * without signalling {@code actual}'s terminal methods.
	 */
	public static <T> StallWatch<T> forAttempt(CoreSubscriber<? super T> actual, StallSpec spec, Scheduler timer,
			ChunkInspector<T> inspector, Terminal<T> terminal) {
		return forAttempt(actual, spec, timer, inspector, terminal, null);
	}

	/**
	 * As {@link #forAttempt(CoreSubscriber, StallSpec, Scheduler, ChunkInspector, Terminal)}, with
	 * {@code check} seeing each content chunk after {@code actual} received it.
	 */
	public static <T> StallWatch<T> forAttempt(CoreSubscriber<? super T> actual, StallSpec spec, Scheduler timer,
			ChunkInspector<T> inspector, Terminal<T> terminal, @Nullable ContentCheck<? super T> check) {
		return new StallWatch<>(actual, spec, TimeSource.shared(timer), inspector, terminal, false, check);
	}

	@Override
	public Context currentContext() {
		return actual.currentContext();
	}

	@Override
	public void onSubscribe(Subscription s) {
		if (!Operators.validate(upstream, s)) {
			return;
		}
		startNanos = clock.nanos();
		if (upstreamWaitNanos == 0L) {
			upstreamAt = startNanos;
			firstTokenDeadline = spec.firstTokenNanos() > 0 ? startNanos + spec.firstTokenNanos() : 0L;
		}
		else {
			// the deadline task adopts the start once the upstream is called (startUpstream)
			awaitingUpstream = true;
		}
		upstream = s;
		if (ended != 0) {
			// cancelled before the upstream arrived: cancel() may not have seen it
			s.cancel();
			return;
		}
		if (standalone) {
			actual.onSubscribe(this);
		}
		long p = PENDING_REQUEST.getAndSet(this, 0L);
		if (p > 0L) {
			s.request(p);
		}
		// armed after the first request: a stream that completed while being subscribed (a replayed
		// or cached answer) never touches the timer; deadlines still count from their start
		if (ended == 0) {
			armNext(clock.nanos());
		}
	}

	@Override
	public void onNext(T t) {
		// the inspector is a user callback: it runs before the chunk is marked as being delivered, so
		// no deadline ever waits for it to return, and a throw from it ends the stream
		if (t == null) {
			// rule 2.13: end the attempt (so the stream terminates), then throw to the caller
			NullPointerException npe = new NullPointerException(
					"the upstream signalled onNext(null) (Reactive Streams rule 2.13)");
			chunkRejected(npe, null);
			throw npe;
		}
		int f;
		String reason = null;
		try {
			f = inspector.flags(t);
			if (f != ChunkInspector.CONTENT && (f & ChunkInspector.FINISH) != 0) {
				reason = inspector.finishReason(t);
			}
		}
		catch (Throwable e) {
			chunkRejected(e, t);
			return;
		}
		if (announceFirstContent && tokens == 0L && (f & ChunkInspector.CONTENT) != 0) {
			terminal.firstContent(this);
		}
		long s = (long) SEQ.get(this);
		SEQ.setOpaque(this, s + 1L);
		if ((int) GATE.getOpaque(this) != 0) {
			slowNext(t, f, reason, s);
			return;
		}
		try {
			deliver(t, f, reason);
		}
		catch (Throwable e) {
			SEQ.setRelease(this, s + 2L);
			downstreamFailed(e);
			return;
		}
		SEQ.setRelease(this, s + 2L);
		if (tokens >= outputCap) {
			reachedCap();
		}
	}

	/**
	 * Notes what the chunk is and passes it on. Everything here stays inline in the caller's loop:
	 * the JIT keeps a loop that contains a call (even one taken once per stream, like a terminal
	 * chunk's) measurably slower, so the rare kinds are handled by a few stores, not a method.
	 */
	private void deliver(T t, int f, @Nullable String reason) {
		if ((f & ChunkInspector.CONTENT) != 0 && tokens++ == 0L) {
			firstTokenAt = clock.nanos();
		}
		if (f != ChunkInspector.CONTENT) {
			seenFlags |= f;
			if ((f & (ChunkInspector.CONTENT | ChunkInspector.HEARTBEAT)) == ChunkInspector.HEARTBEAT) {
				heartbeats++;
			}
			if (reason != null) {
				finishReason = reason;
			}
			if ((f & ChunkInspector.USAGE) != 0) {
				usageChunk = t;
			}
		}
		lastFlags = f;
		actual.onNext(t);
		ContentCheck<? super T> c = check;
		if (c != null && (f & ChunkInspector.CONTENT) != 0) {
			c.afterContent(t);
		}
	}

	/** The gate is closed: a stall is being confirmed, or the stream has ended. */
	private void slowNext(T t, int f, @Nullable String reason, long s) {
		int v = state;
		if (ended != 0 || v < 0 || (v & 1) != 0 || !STATE.compareAndSet(this, v, v + 1)) {
			// back to s, not on to s + 2: a dropped chunk was not emitted, and emitted() tells the next
			// attempt how much of the subscriber's demand is already served
			SEQ.setRelease(this, s);
			Operators.onNextDropped(t, actual.currentContext());
			return;
		}
		try {
			deliver(t, f, reason);
		}
		catch (Throwable e) {
			STATE.set(this, v + 2 < 0 ? 0 : v + 2);
			SEQ.setRelease(this, s + 2L);
			downstreamFailed(e);
			return;
		}
		STATE.set(this, v + 2 < 0 ? 0 : v + 2);
		SEQ.setRelease(this, s + 2L);
		if (tokens >= outputCap) {
			reachedCap();
		}
	}

	/**
	 * The inspector threw, or the chunk was null: the attempt fails with that error. Runs on the
	 * upstream's thread, serial with its other signals, so the upstream is cancelled right here.
	 */
	private void chunkRejected(Throwable e, @Nullable T t) {
		Exceptions.throwIfJvmFatal(e);
		fail(t == null ? e
				: Operators.onOperatorError(null, CallbackException.threw("ChunkInspector", e), t, actual.currentContext()));
	}

	/**
	 * The subscriber (or a tap before it) threw from {@code onNext}: the chunk counts as delivered,
	 * the attempt fails with what was thrown, and deadlines keep working meanwhile.
	 */
	private void downstreamFailed(Throwable e) {
		Exceptions.throwIfJvmFatal(e);
		fail(e);
	}

	/** Ends the attempt with {@code error} from the upstream's own thread, which cancels it right here. */
	private void fail(Throwable e) {
		if (!win()) {
			Operators.onErrorDropped(e, actual.currentContext());
			return;
		}
		GATE.getAndBitwiseOr(this, GATE_END);
		Subscription up = upstream;
		if (up != null) {
			up.cancel();
		}
		end(End.ERROR, e);
	}

	/**
	 * The output cap was reached with the chunk just delivered: the answer ends here as complete,
	 * finish reason {@code length}, and the upstream is cancelled. Runs on the upstream's thread,
	 * serial with its other signals, like {@link #fail}.
	 */
	private void reachedCap() {
		if (!win()) {
			return;
		}
		GATE.getAndBitwiseOr(this, GATE_END);
		capped = true;
		finishReason = OUTPUT_CAP_REASON;
		Subscription up = upstream;
		if (up != null) {
			up.cancel();
		}
		end(End.COMPLETED, null);
	}

	/** Upstream terminal signals are serial with onNext; only the deadline task can race them. */
	private boolean win() {
		for (;;) {
			int v = state;
			if (v < 0) {
				return false;
			}
			if (STATE.compareAndSet(this, v, DONE)) {
				return true;
			}
		}
	}

	@Override
	public void onError(Throwable t) {
		if (t == null) {
			// rule 2.13: end the attempt with a real error (so the stream terminates), then throw
			NullPointerException npe = new NullPointerException(
					"the upstream signalled onError(null) (Reactive Streams rule 2.13)");
			onError(npe);
			throw npe;
		}
		if (!win()) {
			Operators.onErrorDropped(t, actual.currentContext());
			return;
		}
		end(End.ERROR, t);
	}

	@Override
	public void onComplete() {
		if (!win()) {
			return;
		}
		if (ended != 0) {
			// the subscriber cancelled first: the attempt is over, and a missing terminal marker now
			// is the cancel's doing, not an error worth reporting
			return;
		}
		if ((seenFlags & (ChunkInspector.TERMINAL | ChunkInspector.FINISH)) != 0 || !spec.requireTerminal()) {
			end(End.COMPLETED, null);
		}
		else {
			end(End.INCOMPLETE, new IncompleteStreamException(tokens));
		}
	}

	@Override
	public void request(long n) {
		if (!Operators.validate(n)) {
			return;
		}
		Operators.addCap(REQUESTED, this, n);
		Subscription s = upstream;
		if (s != null) {
			s.request(n);
			return;
		}
		Operators.addCap(PENDING_REQUEST, this, n);
		s = upstream;
		if (s != null) {
			long p = PENDING_REQUEST.getAndSet(this, 0L);
			if (p > 0L) {
				s.request(p);
			}
		}
	}

	@Override
	public void cancel() {
		if (ended != 0) {
			return;
		}
		// end first, then look for the upstream: onSubscribe sets the upstream, then looks at ended,
		// so one of the two always cancels it
		end(End.CANCELLED, null);
		Subscription s = upstream;
		if (s != null) {
			s.cancel();
		}
	}

	/** The deadline task: decides a stall, confirms it, or re-arms itself. */
	@Override
	public void run() {
		if (state == DONE || ended != 0) {
			return;
		}
		long now = clock.nanos();
		if (pendingPhase != null) {
			confirm(now);
			return;
		}
		StallPhase phase = evaluate(now);
		if (phase == null) {
			armNext(now);
			return;
		}
		GATE.getAndBitwiseOr(this, GATE_STALL);
		pendingPhase = phase;
		decidedAt = now;
		pendingActivity = activitySeen();
		schedule(CONFIRM_DELAY_NANOS);
	}

	private void confirm(long now) {
		int v = state;
		if (v < 0) {
			return;
		}
		long s = (long) SEQ.getVolatile(this);
		if ((v & 1) != 0 || (s & 1L) != 0L) {
			// a chunk is being delivered: look again once it is through
			schedule(CONFIRM_DELAY_NANOS);
			return;
		}
		StallPhase phase = pendingPhase;
		if (phase != StallPhase.MAX_DURATION && activitySeen() != pendingActivity) {
			// content arrived after all: not a stall
			pendingPhase = null;
			seenActivity = activitySeen();
			quietSince = now;
			GATE.getAndBitwiseAnd(this, ~GATE_STALL);
			if (state == DONE || ended != 0) {
				return;
			}
			armNext(now);
			return;
		}
		if (!STATE.compareAndSet(this, v, DONE)) {
			if (state >= 0) {
				// a chunk slipped in since we looked: decide again on fresh state
				schedule(0L);
			}
			return;
		}
		end(End.STALLED, new StreamStalledException(phase, tokens, Duration.ofNanos(decidedAt - origin())));
		cancelUpstreamOffTimer();
	}

	/**
	 * A deadline ended the stream on the timer thread: the subscriber has been told, now the
	 * upstream is cancelled on the spec's cancel scheduler, because some clients block in their
	 * cancel (closing an HTTP response) and the timer serves every other stream's deadlines.
	 */
	private void cancelUpstreamOffTimer() {
		Subscription up = upstream;
		if (up == null) {
			return;
		}
		try {
			spec.cancelScheduler().schedule(up::cancel);
		}
		catch (Throwable rejected) {
			// the cancel scheduler is shut down: cancelling here is better than leaking the upstream
			up.cancel();
		}
	}

	/**
	 * Ends the attempt from outside (the guard uses it when a lane permit is preempted): cancels the
	 * upstream and fails with {@code cause}, serialised with chunk delivery like a stall, so it
	 * reaches the subscriber within about {@link #CONFIRM_DELAY_NANOS}. Only the first call counts;
	 * does nothing once the attempt has ended.
	 */
	public void abort(Throwable cause) {
		if (ended != 0 || state < 0 || !ABORT_CAUSE.compareAndSet(this, null, cause)) {
			return;
		}
		if (ended != 0) {
			// looked again after publishing the cause: end() looks at the cause after setting ended,
			// so either it disposes our confirmation or we never schedule one
			return;
		}
		GATE.getAndBitwiseOr(this, GATE_ABORT);
		scheduleAbortConfirmation(CONFIRM_DELAY_NANOS);
	}

	void confirmAbort() {
		int v = state;
		if (v < 0 || ended != 0) {
			return;
		}
		long s = (long) SEQ.getVolatile(this);
		if ((v & 1) != 0 || (s & 1L) != 0L) {
			scheduleAbortConfirmation(CONFIRM_DELAY_NANOS);
			return;
		}
		if (!STATE.compareAndSet(this, v, DONE)) {
			if (state >= 0) {
				scheduleAbortConfirmation(0L);
			}
			return;
		}
		end(End.ERROR, abortCause);
		cancelUpstreamOffTimer();
	}

	private void scheduleAbortConfirmation(long delayNanos) {
		Disposable next;
		try {
			next = clock.scheduler().schedule(this::confirmAbort, delayNanos, TimeUnit.NANOSECONDS);
		}
		catch (Throwable rejected) {
			if (win()) {
				end(End.ERROR, abortCause);
				cancelUpstreamOffTimer();
			}
			return;
		}
		for (;;) {
			Disposable current = abortTask;
			if (current == CANCELLED_TIMER) {
				next.dispose();
				return;
			}
			if (ABORT_TASK.compareAndSet(this, current, next)) {
				return;
			}
		}
	}

	/** Content chunks, plus heartbeats when they extend the idle deadline; read after reading seq. */
	private long activitySeen() {
		return spec.heartbeatsExtendIdle() ? tokens + heartbeats : tokens;
	}

	/** @return the deadline passed, or {@code null}; updates the idle bookkeeping. */
	@Nullable
	private StallPhase evaluate(long now) {
		if (awaitingUpstream) {
			long at = upstreamAt;
			if (at < 0L) {
				// the upstream was not called yet, so the model cannot be late: only the wait is bounded,
				// and a wait that runs out ends the attempt before it can be called
				if (now - startNanos >= upstreamWaitNanos && UPSTREAM_AT.compareAndSet(this, NOT_STARTED, WAIT_OVER)) {
					return StallPhase.FIRST_TOKEN;
				}
				return null;
			}
			awaitingUpstream = false;
			firstTokenDeadline = spec.firstTokenNanos() > 0 ? at + spec.firstTokenNanos() : 0L;
		}
		if (spec.maxDurationNanos() > 0L && now - origin() >= spec.maxDurationNanos()) {
			return StallPhase.MAX_DURATION;
		}
		long s = (long) SEQ.getVolatile(this);
		boolean demand = hasDemand(s);
		long activity = activitySeen();
		if (tokens == 0L && firstTokenDeadline != 0L) {
			if (now - firstTokenDeadline >= 0L) {
				if (!demand) {
					// nothing was asked for: the upstream cannot be late yet
					firstTokenDeadline = now + spec.firstTokenNanos();
					return null;
				}
				return StallPhase.FIRST_TOKEN;
			}
			return null;
		}
		if (spec.idleTickNanos() == 0L) {
			return null;
		}
		if (!idleStarted) {
			idleStarted = true;
			seenActivity = activity;
			quietSince = now;
			return null;
		}
		if (activity != seenActivity || !demand || (s & 1L) != 0L) {
			seenActivity = activity;
			quietSince = now;
			return null;
		}
		// measured from the check that last saw activity, not counted in checks: a late timer wake-up
		// then delays the decision once, instead of adding its lateness to every check
		return now - quietSince >= spec.idleNanos() ? StallPhase.IDLE : null;
	}

	private boolean hasDemand(long s) {
		long r = requested;
		return r == Long.MAX_VALUE || r - (s >>> 1) > 0L;
	}

	/** Schedules the next wake-up of the deadline task, if any deadline remains. */
	private void armNext(long now) {
		if (awaitingUpstream) {
			armWhileAwaiting(now);
			return;
		}
		long delay = Long.MAX_VALUE;
		if (spec.maxDurationNanos() > 0L) {
			delay = Math.max(0L, origin() + spec.maxDurationNanos() - now);
		}
		if (tokens == 0L && firstTokenDeadline != 0L) {
			delay = Math.min(delay, Math.max(0L, firstTokenDeadline - now));
			if (spec.idleTickNanos() > 0L && delay > spec.idleTickNanos()) {
				// a first token may come early; keep idle watching close behind it
				delay = spec.idleTickNanos();
			}
		}
		else if (spec.idleTickNanos() > 0L) {
			delay = Math.min(delay, spec.idleTickNanos());
			if (idleStarted) {
				// the last check lands exactly on the idle deadline
				delay = Math.min(delay, Math.max(0L, quietSince + spec.idleNanos() - now));
			}
		}
		if (delay != Long.MAX_VALUE) {
			schedule(delay);
		}
	}

	/**
	 * While the upstream is not called: wakes when the wait's bound passes, and every shortest
	 * deadline span meanwhile. A deadline counts from a start later than the last wake-up that did
	 * not see it, so waking one span after that wake-up is never late for it.
	 */
	private void armWhileAwaiting(long now) {
		long delay = Math.max(0L, upstreamWaitNanos - Math.max(0L, now - startNanos));
		delay = Math.min(delay, shortestSpan(spec.firstTokenNanos(), shortestSpan(spec.idleTickNanos(),
				shortestSpan(spec.maxDurationNanos(), Long.MAX_VALUE))));
		if (delay != Long.MAX_VALUE) {
			schedule(delay);
		}
	}

	private static long shortestSpan(long span, long other) {
		return span > 0L ? Math.min(span, other) : other;
	}

	/** @return when the deadlines started: the upstream's call, else (still waiting for it) the subscription */
	private long origin() {
		long at = upstreamAt;
		return at >= 0L ? at : startNanos;
	}

	private void schedule(long delayNanos) {
		Disposable next;
		try {
			next = clock.scheduler().schedule(this, delayNanos, TimeUnit.NANOSECONDS);
		}
		catch (Throwable rejected) {
			GATE.getAndBitwiseOr(this, GATE_END);
			if (win()) {
				end(End.ERROR, Operators.onRejectedExecution(rejected, actual.currentContext()));
				cancelUpstreamOffTimer();
			}
			return;
		}
		for (;;) {
			Disposable current = task;
			if (current == CANCELLED_TIMER) {
				next.dispose();
				return;
			}
			if (TASK.compareAndSet(this, current, next)) {
				if (ended != 0) {
					// end() may have found no task to dispose (it does not swap in the marker then): do it here
					disposeTask();
				}
				return;
			}
		}
	}

	private void end(End end, @Nullable Throwable error) {
		if (!ENDED.compareAndSet(this, 0, 1)) {
			if (error != null && end != End.CANCELLED) {
				Operators.onErrorDropped(error, actual.currentContext());
			}
			return;
		}
		if (end == End.CANCELLED) {
			// the upstream may still send a few chunks, from its own thread: they take the slow path and are dropped
			GATE.getAndBitwiseOr(this, GATE_END);
		}
		else {
			// a terminal signal or a deadline ended it; a chunk after an upstream's terminal signal would
			// come from that same thread, so an ordered store is enough. Other writers only add bits or
			// clear GATE_STALL, so the gate stays non-zero either way.
			GATE.setRelease(this, (int) GATE.getVolatile(this) | GATE_END);
		}
		// a stream that ended while being subscribed (a replayed answer) never armed its timer: no swap for it.
		// schedule() installs a task and then looks at ended, we set ended and then look at the task, so one
		// of the two sees the other and disposes it
		if (task != null) {
			disposeTask();
		}
		// abort() sets abortCause and then looks at ended, we set ended and then look at abortCause:
		// one of the two sees the other, so an abort confirmation is either never scheduled or disposed
		if (abortCause != null) {
			Disposable a = ABORT_TASK.getAndSet(this, CANCELLED_TIMER);
			if (a != null) {
				a.dispose();
			}
		}
		endNanos = clock.nanos();
		terminal.onEnd(this, end, error);
	}

	private void disposeTask() {
		Disposable t = TASK.getAndSet(this, CANCELLED_TIMER);
		if (t != null && t != CANCELLED_TIMER) {
			t.dispose();
		}
	}

	/**
	 * @return the {@link ChunkInspector#flags} of the chunk being passed on; valid inside the
	 * subscriber's {@code onNext}, so a tap between the watch and the subscriber need not ask the
	 * inspector again
	 */
	public int chunkFlags() {
		return lastFlags;
	}

	/**
	 * From the next chunk on, chunks go to {@code next} instead of the current subscriber: a
	 * subscriber that only had to see an attempt's first chunks steps out of the per-chunk path.
	 * Call it only from inside the current subscriber's {@code onNext}, on the delivering thread;
	 * the next chunk is delivered after it, like any two chunks. The {@link ContentCheck} stays.
	 *
	 * @param next receives the following chunks; shares the current subscriber's context
	 */
	public void passOnTo(CoreSubscriber<? super T> next) {
		actual = next;
	}

	/**
	 * Ends the attempt as complete, with finish reason {@code length} and its upstream cancelled,
	 * once it has delivered {@code contentChunks} content chunks. Call before subscribing it; the
	 * per-chunk cost is one comparison.
	 *
	 * @param contentChunks {@code >= 1}
	 * @return this watch
	 */
	public StallWatch<T> capOutput(long contentChunks) {
		if (contentChunks < 1L) {
			throw new IllegalArgumentException("contentChunks must be >= 1, was " + contentChunks);
		}
		outputCap = contentChunks;
		return this;
	}

	/**
	 * The upstream is called later than this watch is subscribed, on another thread (a blocking
	 * client, after a hop onto its own Scheduler): no deadline runs until {@link #startUpstream()}
	 * says it is called, and then each counts from there. The wait is bounded by
	 * {@code maxWaitNanos}; when it passes first, the attempt ends {@link End#STALLED} with
	 * {@link #upstreamStarted()} false, which a coordinator reads as "the upstream never saw it".
	 * Call before subscribing the watch.
	 *
	 * @param maxWaitNanos {@code > 0}; {@link Long#MAX_VALUE} for no bound
	 * @return this watch
	 */
	public StallWatch<T> awaitUpstream(long maxWaitNanos) {
		if (maxWaitNanos <= 0L) {
			throw new IllegalArgumentException("maxWaitNanos must be > 0, was " + maxWaitNanos);
		}
		upstreamWaitNanos = maxWaitNanos;
		return this;
	}

	/**
	 * For a watch given {@link #awaitUpstream}: the upstream is about to be called, and its
	 * deadlines start now. Call it on the thread that calls the upstream, right before.
	 *
	 * @return false when the attempt no longer wants its upstream — it ended, is being aborted, or
	 *         its wait's bound passed — and the upstream must not be called; whoever stopped the
	 *         attempt ends it
	 */
	public boolean startUpstream() {
		if (ended != 0 || abortCause != null) {
			return false;
		}
		return UPSTREAM_AT.compareAndSet(this, NOT_STARTED, clock.nanos());
	}

	/** @return whether the upstream was called: false only for an {@link #awaitUpstream} watch that it never reached */
	public boolean upstreamStarted() {
		return upstreamAt >= 0L;
	}

	/** @return whether the output cap ({@link #capOutput}) ended the attempt */
	public boolean capped() {
		return capped;
	}

	/**
	 * @return the last chunk of the attempt flagged {@link ChunkInspector#USAGE}, or {@code null};
	 *         read it after the end
	 */
	@Nullable
	public T usageChunk() {
		return usageChunk;
	}

	/** @return content chunks received so far (final once ended) */
	public long tokens() {
		return tokens;
	}

	/** @return the demand asked of this attempt so far, {@code Long.MAX_VALUE} when unbounded */
	public long requested() {
		return requested;
	}

	/** @return chunks of any kind passed downstream (final once ended) */
	public long emitted() {
		return ((long) SEQ.getVolatile(this) + 1L) >>> 1;
	}

	/** @return nanoseconds from the upstream's subscription to the first content chunk, or -1 when none arrived */
	public long timeToFirstTokenNanos() {
		long f = firstTokenAt;
		return f < 0L ? -1L : f - origin();
	}

	/**
	 * @return the timer's clock reading when the upstream was subscribed (for an
	 *         {@link #awaitUpstream} watch whose upstream was never called: when the watch was), in nanoseconds
	 */
	public long startNanos() {
		return origin();
	}

	/** @return nanoseconds from {@link #startNanos()} to the end (valid once ended) */
	public long durationNanos() {
		return endNanos - origin();
	}

	/** @return the last finish reason seen, or {@code null} */
	@Nullable
	public String finishReason() {
		return finishReason;
	}

	@Override
	@Nullable
	public Object scanUnsafe(Attr key) {
		if (key == Attr.PARENT) {
			return upstream;
		}
		if (key == Attr.ACTUAL) {
			return actual;
		}
		if (key == Attr.TERMINATED) {
			return state == DONE;
		}
		if (key == Attr.CANCELLED) {
			// an abort in progress counts: the upstream is about to be cancelled, and a source that
			// starts work in steps (a fallback ladder) reads this to start none
			return ended != 0 && state != DONE || abortCause != null;
		}
		if (key == Attr.REQUESTED_FROM_DOWNSTREAM) {
			return requested;
		}
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.SYNC;
		}
		return null;
	}
}
