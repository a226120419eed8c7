package dev.aiguard;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.internal.DemandHandOver;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;

/**
 * The control state of one guarded request, apart from its loop ({@link GuardedStream}): the
 * subscriber's demand and cancel, a preemption in any phase, the wait before an attempt, and the
 * once-only end. The races between them are settled here: a cancel or a preemption against the
 * attempt being set up or the backoff being scheduled, by re-checks on both sides; two ends, by
 * the once-only {@link #finish}.
 */
abstract class RequestControl<T> extends DemandHandOver<StallWatch<T>> implements Subscription, Scannable {

	final CoreSubscriber<? super T> actual;
	final RequestLedger<T> ledger;

	@Nullable
	private volatile Disposable pendingRetry;
	/** The attempt running now, for cancellation and preemption; {@code null} before the first. */
	@Nullable
	volatile StallWatch<T> active;
	/** Set once when the lane is taken back; every phase of the request looks at it. */
	@Nullable
	volatile Throwable preemption;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<RequestControl, Throwable> PREEMPTION =
			AtomicReferenceFieldUpdater.newUpdater(RequestControl.class, Throwable.class, "preemption");
	/** {@link #WAITING} while a backoff is scheduled and no attempt runs; a CAS out of it decides who goes on. */
	volatile int phase;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<RequestControl> PHASE =
			AtomicIntegerFieldUpdater.newUpdater(RequestControl.class, "phase");
	static final int RUNNING = 0;
	static final int WAITING = 1;
	volatile int cancelled;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<RequestControl> CANCELLED =
			AtomicIntegerFieldUpdater.newUpdater(RequestControl.class, "cancelled");
	volatile int finished;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<RequestControl> FINISHED =
			AtomicIntegerFieldUpdater.newUpdater(RequestControl.class, "finished");

	RequestControl(CoreSubscriber<? super T> actual, RequestLedger<T> ledger) {
		this.actual = actual;
		this.ledger = ledger;
	}

	/** Sends (or, after a backoff or a stage's wait, re-sends) the request. */
	abstract void nextAttempt();

	/** The stages' runs end; only the first call counts. */
	abstract void endStages(Outcome outcome);

	// ---- preemption and waits ----

	/**
	 * The lanes took the capacity back (they released it already). Whatever the request is doing,
	 * it stops: a running attempt, fallback answer or notice is aborted with {@code e}, a backoff is
	 * called off, and an attempt about to start sees {@link #preemption} and never subscribes.
	 */
	void preempted(Throwable e) {
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

	/** Waits {@code delayNanos} on the policy's timer, then starts the next attempt unless preempted first. */
	void retryAfter(long delayNanos) {
		ledger.observeBackoff(delayNanos);
		attemptAfter(delayNanos);
	}

	/** Waits {@code delayNanos} on the policy's timer, then starts the next attempt unless cancelled or preempted first. */
	void attemptAfter(long delayNanos) {
		phase = WAITING;
		Throwable taken = preemption;
		if (taken != null && PHASE.compareAndSet(this, WAITING, RUNNING)) {
			// preempted while this attempt was ending: preempted() saw no backoff to call off
			failPreempted(taken);
			return;
		}
		try {
			Disposable backoff = ledger.clock.scheduler().schedule(this::retryNow, delayNanos, TimeUnit.NANOSECONDS);
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

	/** @return whether the request may start an attempt now; when not, it has been ended (cancelled or preempted) */
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
		// (finishing it ends the stages: a lane wait is called off); once an attempt has started,
		// its end (ours or one that won the race) finishes the request
		if (w == null || backoff != null) {
			finishCancelled();
		}
	}

	/** An attempt delivered these chunks; its successor is asked only for the rest. A held attempt delivered nothing. */
	@Override
	protected long consumedBy(StallWatch<T> previous) {
		return previous.scanUnsafe(Attr.ACTUAL) instanceof AnswerTap.Held ? 0L : previous.emitted();
	}

	// ---- the end ----

	/** Ends the request for a preemption; after tokens were delivered, as a partial answer. */
	void failPreempted(Throwable e) {
		long delivered = ledger.deliveredTokens();
		endWith(delivered > 0L ? ledger.policy.midStream().failure(e, delivered) : e, Outcome.REJECTED);
	}

	/** The answer is whole: the stages end (the lane is free) before the subscriber hears of it. */
	void complete(Outcome outcome, boolean realtime, @Nullable String finishReason) {
		endStages(outcome);
		actual.onComplete();
		if (realtime) {
			ledger.answered(Source.REALTIME);
		}
		finish(outcome, null, finishReason);
	}

	/** Ends the request with an error: the stages end (the lane is free) before the subscriber hears of it. */
	void endWith(Throwable error, Outcome outcome) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		endStages(outcome);
		actual.onError(error);
		finish(outcome, error, null);
	}

	void finishCancelled() {
		finish(Outcome.CANCELLED, null, null);
	}

	void finish(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		if (!FINISHED.compareAndSet(this, 0, 1)) {
			return;
		}
		endStages(outcome);
		ledger.close(outcome, error, finishReason);
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
