package dev.aiguard.stall;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.ChunkInspector;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.annotation.Nullable;
import reactor.util.context.Context;

/**
 * The subscriber that watches one attempt of a token stream: first-token, idle and max-duration
 * deadlines, and the terminal-marker check. Shared by {@link Stall#detect} and {@code AiGuard};
 * applications use those and never create one directly.
 *
 * <h2>Cost per chunk</h2>
 * One uncontended CAS, a release store, and a few plain counter updates. No timer is scheduled
 * and no clock is read per chunk (except once, for the first token). A single re-armed one-shot
 * task per subscription watches all three deadlines: it wakes at the first-token deadline, every
 * {@code idleTimeout / idleChecks} once idle watching applies, and at the max-duration deadline,
 * and on each wake-up compares the content counter with the one it saw last. An idle stall is
 * therefore signalled between {@code idleTimeout} and {@code idleTimeout + idleTimeout/idleChecks}
 * after the last content chunk, never earlier.
 *
 * <h2>Serialisation</h2>
 * {@link #state} is an even sequence number while idle, odd while {@code onNext} is delivering,
 * and {@link #DONE} once a terminal signal won. {@code onNext} moves it even→odd with a CAS and
 * back to the next even value with a release store; the deadline task ends the stream only by a
 * CAS from the even value it inspected, so it can never signal while a chunk is being delivered,
 * and never after a chunk arrived that it did not see.
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
	}

	static final long DONE = -1L;

	private static final Disposable CANCELLED_TIMER = () -> {
	};

	final CoreSubscriber<? super T> actual;
	private final ChunkInspector<T> inspector;
	private final Terminal<T> terminal;
	private final Scheduler timer;
	private final boolean standalone;
	private final boolean requireTerminal;
	private final boolean heartbeatsExtendIdle;
	private final long firstTokenTimeoutNanos;
	private final long idleTimeoutNanos;
	private final long idleTickNanos;
	private final int idleChecks;
	private final long maxDurationNanos;

	volatile long state;
	static final AtomicLongFieldUpdater<StallWatch> STATE = AtomicLongFieldUpdater.newUpdater(StallWatch.class, "state");

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
	static final java.util.concurrent.atomic.AtomicIntegerFieldUpdater<StallWatch> ENDED =
			java.util.concurrent.atomic.AtomicIntegerFieldUpdater.newUpdater(StallWatch.class, "ended");

	// Written by onNext before the release store of state; read by the deadline task after reading state.
	long tokens;
	long activity;
	long emitted;
	boolean completeSeen;
	String finishReason;
	long firstTokenAt = -1L;

	// Touched only by the deadline task (one at a time: each run schedules at most the next one).
	private long seenActivity;
	private int silentChecks;
	private boolean idleStarted;
	private long firstTokenDeadline;

	long startNanos;
	long endNanos;

	StallWatch(CoreSubscriber<? super T> actual, StallSpec spec, Scheduler timer, ChunkInspector<T> inspector,
			Terminal<T> terminal, boolean standalone) {
		this.actual = actual;
		this.inspector = inspector;
		this.terminal = terminal;
		this.timer = timer;
		this.standalone = standalone;
		this.requireTerminal = spec.requireTerminal();
		this.heartbeatsExtendIdle = spec.heartbeatsExtendIdle();
		this.firstTokenTimeoutNanos = nanos(spec.firstTokenTimeout());
		this.idleTimeoutNanos = nanos(spec.idleTimeout());
		this.idleChecks = spec.idleChecks();
		this.idleTickNanos = idleTimeoutNanos > 0 ? Math.max(1L, idleTimeoutNanos / idleChecks) : 0L;
		this.maxDurationNanos = nanos(spec.maxDuration());
	}

	/**
	 * Creates a watch for an attempt whose subscription is managed by a coordinator (the guard):
	 * it does not pass {@code onSubscribe} downstream and reports every end to {@code terminal}
	 * without signalling {@code actual}'s terminal methods.
	 */
	public static <T> StallWatch<T> forAttempt(CoreSubscriber<? super T> actual, StallSpec spec, Scheduler timer,
			ChunkInspector<T> inspector, Terminal<T> terminal) {
		return new StallWatch<>(actual, spec, timer, inspector, terminal, false);
	}

	private static long nanos(@Nullable Duration d) {
		return d == null ? 0L : d.toNanos();
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
		startNanos = timer.now(TimeUnit.NANOSECONDS);
		firstTokenDeadline = firstTokenTimeoutNanos > 0 ? startNanos + firstTokenTimeoutNanos : 0L;
		upstream = s;
		if (standalone) {
			actual.onSubscribe(this);
		}
		armNext(startNanos);
		long p = PENDING_REQUEST.getAndSet(this, 0L);
		if (p > 0L) {
			s.request(p);
		}
	}

	@Override
	public void onNext(T t) {
		long s = state;
		if (s < 0L || (s & 1L) != 0L || !STATE.compareAndSet(this, s, s + 1L)) {
			Operators.onNextDropped(t, actual.currentContext());
			return;
		}
		emitted++;
		ChunkInspector<T> in = inspector;
		if (in.isContent(t)) {
			if (tokens++ == 0L) {
				firstTokenAt = timer.now(TimeUnit.NANOSECONDS);
			}
			activity++;
		}
		else if (heartbeatsExtendIdle && in.isHeartbeat(t)) {
			activity++;
		}
		String reason = in.finishReason(t);
		if (reason != null) {
			finishReason = reason;
			completeSeen = true;
		}
		if (in.isTerminal(t)) {
			completeSeen = true;
		}
		actual.onNext(t);
		STATE.lazySet(this, s + 2L);
	}

	@Override
	public void onError(Throwable t) {
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
		if (completeSeen || !requireTerminal) {
			end(End.COMPLETED, null);
		}
		else {
			end(End.INCOMPLETE, new IncompleteStreamException(tokens));
		}
	}

	/** Upstream terminal signals are serial with onNext; only the deadline task can race them. */
	private boolean win() {
		for (;;) {
			long s = state;
			if (s < 0L) {
				return false;
			}
			if (STATE.compareAndSet(this, s, DONE)) {
				return true;
			}
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
		if (ENDED.get(this) != 0) {
			return;
		}
		Subscription s = upstream;
		if (s != null) {
			s.cancel();
		}
		end(End.CANCELLED, null);
	}

	/** The deadline task: re-evaluates, then re-arms itself or ends the stream. */
	@Override
	public void run() {
		for (;;) {
			long s = state;
			if (s < 0L || ended != 0) {
				return;
			}
			long now = timer.now(TimeUnit.NANOSECONDS);
			if ((s & 1L) != 0L) {
				// a chunk is being delivered right now: that is activity, look again later
				armNext(now);
				return;
			}
			StallPhase phase = evaluate(now);
			if (phase == null) {
				armNext(now);
				return;
			}
			if (STATE.compareAndSet(this, s, DONE)) {
				Subscription up = upstream;
				if (up != null) {
					up.cancel();
				}
				end(End.STALLED, new StreamStalledException(phase, tokens, Duration.ofNanos(now - startNanos)));
				return;
			}
			// a chunk or a terminal signal won meanwhile: decide again on fresh state
		}
	}

	/** @return the deadline passed, or {@code null}; updates the idle bookkeeping. */
	@Nullable
	private StallPhase evaluate(long now) {
		if (maxDurationNanos > 0L && now - startNanos >= maxDurationNanos) {
			return StallPhase.MAX_DURATION;
		}
		boolean demand = hasDemand();
		if (tokens == 0L && firstTokenDeadline != 0L) {
			if (now - firstTokenDeadline >= 0L) {
				if (!demand) {
					// nothing was asked for: the upstream cannot be late yet
					firstTokenDeadline = now + firstTokenTimeoutNanos;
					return null;
				}
				return StallPhase.FIRST_TOKEN;
			}
			return null;
		}
		if (idleTickNanos == 0L) {
			return null;
		}
		if (!idleStarted) {
			idleStarted = true;
			seenActivity = activity;
			silentChecks = 0;
			return null;
		}
		long a = activity;
		if (a != seenActivity || !demand) {
			seenActivity = a;
			silentChecks = 0;
			return null;
		}
		if (++silentChecks >= idleChecks) {
			return StallPhase.IDLE;
		}
		return null;
	}

	private boolean hasDemand() {
		long r = requested;
		return r == Long.MAX_VALUE || r - emitted > 0L;
	}

	/** Schedules the next wake-up of the deadline task, if any deadline remains. */
	private void armNext(long now) {
		long delay = Long.MAX_VALUE;
		if (maxDurationNanos > 0L) {
			delay = Math.max(0L, startNanos + maxDurationNanos - now);
		}
		if (tokens == 0L && firstTokenDeadline != 0L) {
			delay = Math.min(delay, Math.max(0L, firstTokenDeadline - now));
			if (idleTickNanos > 0L && delay > idleTickNanos) {
				// a first token may come early; keep idle watching close behind it
				delay = idleTickNanos;
			}
		}
		else if (idleTickNanos > 0L) {
			delay = Math.min(delay, idleTickNanos);
		}
		if (delay == Long.MAX_VALUE) {
			return;
		}
		Disposable next;
		try {
			next = timer.schedule(this, delay, TimeUnit.NANOSECONDS);
		}
		catch (Throwable rejected) {
			if (STATE.getAndSet(this, DONE) >= 0L) {
				Subscription up = upstream;
				if (up != null) {
					up.cancel();
				}
				end(End.ERROR, Operators.onRejectedExecution(rejected, actual.currentContext()));
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
		Disposable t = TASK.getAndSet(this, CANCELLED_TIMER);
		if (t != null) {
			t.dispose();
		}
		endNanos = timer.now(TimeUnit.NANOSECONDS);
		terminal.onEnd(this, end, error);
	}

	/** @return content chunks received so far (final once ended) */
	public long tokens() {
		return tokens;
	}

	/** @return chunks of any kind passed downstream */
	public long emitted() {
		return emitted;
	}

	/** @return nanoseconds from subscription to the first content chunk, or -1 when none arrived */
	public long timeToFirstTokenNanos() {
		long f = firstTokenAt;
		return f < 0L ? -1L : f - startNanos;
	}

	/** @return the timer's clock reading at subscription, in nanoseconds */
	public long startNanos() {
		return startNanos;
	}

	/** @return nanoseconds from subscription to the end (valid once ended) */
	public long durationNanos() {
		return endNanos - startNanos;
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
			return state < 0L;
		}
		if (key == Attr.CANCELLED) {
			return ended != 0 && state >= 0L;
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
