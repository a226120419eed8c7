package dev.aiguard.stall.watch;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.core.StallPhase;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import org.jspecify.annotations.Nullable;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Operators;

/**
 * The deadline task of a {@link StallWatch}: a single re-armed one-shot task per subscription
 * watches all three deadlines. It wakes at the first-token deadline, every
 * {@code idleTimeout / idleChecks} once idle watching applies, and at the max-duration deadline,
 * and compares the content counter with the one it saw last. The idle deadline counts from the
 * check that last saw content, and the last check is armed for exactly that deadline, so a late
 * timer wake-up delays the decision once instead of adding up over the checks. An idle stall is
 * therefore signalled between {@code idleTimeout} and {@code idleTimeout + idleTimeout/idleChecks}
 * after the last content chunk (plus the timer's lateness), never earlier.
 *
 * <p>A decided stall closes the gate and is confirmed {@link StallWatch#CONFIRM_DELAY_NANOS}
 * later (see {@link EndOnce}); the confirmation gives up if content arrived meanwhile, and waits
 * while a chunk is being delivered. An abort from outside is confirmed the same way.
 *
 * @param <T> the chunk type
 */
abstract class DeadlineTimer<T> extends EndOnce<T> implements Runnable {

	private static final Disposable CANCELLED_TIMER = () -> {
	};

	@Nullable
	volatile Disposable task;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<DeadlineTimer, Disposable> TASK =
			AtomicReferenceFieldUpdater.newUpdater(DeadlineTimer.class, Disposable.class, "task");

	@Nullable
	volatile Disposable abortTask;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<DeadlineTimer, Disposable> ABORT_TASK =
			AtomicReferenceFieldUpdater.newUpdater(DeadlineTimer.class, Disposable.class, "abortTask");

	/** The bound on the wait for {@link #startUpstream()}; 0 when the upstream is called at subscription. */
	long upstreamWaitNanos;

	// Touched only by the deadline task (one run at a time: each run schedules at most the next),
	// and before it is first armed by onSubscribe.
	private long seenActivity;
	/** When a check last saw activity (or a reason to wait): the idle deadline counts from here. */
	private long quietSince;
	private boolean idleStarted;
	private long firstTokenDeadline;
	@Nullable
	private StallPhase pendingPhase;
	private long pendingActivity;
	private long decidedAt;
	/** The watch waits for {@link #startUpstream()}: no deadline runs yet, only the wait's bound. */
	private boolean awaitingUpstream;

	DeadlineTimer(CoreSubscriber<? super T> actual, StallSpec spec, TimeSource clock, StallWatch.Terminal<T> terminal) {
		super(actual, spec, clock, terminal);
	}

	/**
	 * At subscription, before the task is first armed: the deadlines count from now, or, for a watch
	 * that awaits its upstream, from {@link #startUpstream()}.
	 */
	final void startClock() {
		startNanos = clock.nanos();
		if (upstreamWaitNanos == 0L) {
			upstreamAt = startNanos;
			firstTokenDeadline = spec.firstTokenNanos() > 0 ? startNanos + spec.firstTokenNanos() : 0L;
		}
		else {
			// the deadline task adopts the start once the upstream is called (startUpstream)
			awaitingUpstream = true;
		}
	}

	/**
	 * For a watch given {@link StallWatch#awaitUpstream}: the upstream is about to be called, and its
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

	/** The deadline task: decides a stall, confirms it, or re-arms itself. */
	@Override
	public void run() {
		if (state == DONE || ended != 0) {
			return;
		}
		long now = clock.nanos();
		StallPhase pending = pendingPhase;
		if (pending != null) {
			confirm(pending, now);
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
		schedule(StallWatch.CONFIRM_DELAY_NANOS);
	}

	/** @param phase the stall decided one confirm delay ago ({@code pendingPhase}) */
	private void confirm(StallPhase phase, long now) {
		int v = state;
		if (v < 0) {
			return;
		}
		long s = (long) SEQ.getVolatile(this);
		if ((v & 1) != 0 || (s & 1L) != 0L) {
			// a chunk is being delivered: look again once it is through
			schedule(StallWatch.CONFIRM_DELAY_NANOS);
			return;
		}
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
		end(StallWatch.End.STALLED, new StreamStalledException(phase, tokens, Duration.ofNanos(decidedAt - origin())));
		cancelUpstreamOffTimer();
	}

	/**
	 * Ends the attempt from outside (the guard uses it when a lane permit is preempted): cancels the
	 * upstream and fails with {@code cause}, serialised with chunk delivery like a stall, so it
	 * reaches the subscriber within about {@link StallWatch#CONFIRM_DELAY_NANOS}. Only the first call
	 * counts; does nothing once the attempt has ended.
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
		scheduleAbortConfirmation(StallWatch.CONFIRM_DELAY_NANOS);
	}

	void confirmAbort() {
		int v = state;
		if (v < 0 || ended != 0) {
			return;
		}
		long s = (long) SEQ.getVolatile(this);
		if ((v & 1) != 0 || (s & 1L) != 0L) {
			scheduleAbortConfirmation(StallWatch.CONFIRM_DELAY_NANOS);
			return;
		}
		if (!STATE.compareAndSet(this, v, DONE)) {
			if (state >= 0) {
				scheduleAbortConfirmation(0L);
			}
			return;
		}
		end(StallWatch.End.ERROR, abortCause);
		cancelUpstreamOffTimer();
	}

	private void scheduleAbortConfirmation(long delayNanos) {
		Disposable next;
		try {
			next = clock.scheduler().schedule(this::confirmAbort, delayNanos, TimeUnit.NANOSECONDS);
		}
		catch (Throwable rejected) {
			if (win()) {
				end(StallWatch.End.ERROR, abortCause);
				cancelUpstreamOffTimer();
			}
			return;
		}
		install(ABORT_TASK, next);
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
	final void armNext(long now) {
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

	private void schedule(long delayNanos) {
		Disposable next;
		try {
			next = clock.scheduler().schedule(this, delayNanos, TimeUnit.NANOSECONDS);
		}
		catch (Throwable rejected) {
			GATE.getAndBitwiseOr(this, GATE_END);
			if (win()) {
				end(StallWatch.End.ERROR, Operators.onRejectedExecution(rejected, actual.currentContext()));
				cancelUpstreamOffTimer();
			}
			return;
		}
		if (install(TASK, next) && ended != 0) {
			// end() may have found no task to dispose (it does not swap in the marker then): do it here
			disposeTask();
		}
	}

	/** @return whether {@code next} was installed; false when the timers were stopped, and then it is disposed */
	@SuppressWarnings("rawtypes")
	private boolean install(AtomicReferenceFieldUpdater<DeadlineTimer, Disposable> slot, Disposable next) {
		for (;;) {
			Disposable current = slot.get(this);
			if (current == CANCELLED_TIMER) {
				next.dispose();
				return false;
			}
			if (slot.compareAndSet(this, current, next)) {
				return true;
			}
		}
	}

	@Override
	final void stopTimers() {
		// a stream that ended while being subscribed (a replayed answer) never armed its timer: no swap for it.
		// schedule() installs a task and then looks at ended, end() sets ended and then looks at the task, so
		// one of the two sees the other and disposes it
		if (task != null) {
			disposeTask();
		}
		// abort() sets abortCause and then looks at ended, end() sets ended and then looks at abortCause:
		// one of the two sees the other, so an abort confirmation is either never scheduled or disposed
		if (abortCause != null) {
			Disposable a = ABORT_TASK.getAndSet(this, CANCELLED_TIMER);
			if (a != null) {
				a.dispose();
			}
		}
	}

	private void disposeTask() {
		Disposable t = TASK.getAndSet(this, CANCELLED_TIMER);
		if (t != null && t != CANCELLED_TIMER) {
			t.dispose();
		}
	}
}
