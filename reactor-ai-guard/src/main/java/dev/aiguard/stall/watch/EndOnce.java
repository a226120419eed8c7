package dev.aiguard.stall.watch;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.core.CallbackException;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Operators;

/**
 * The part of a {@link StallWatch} that ends its attempt exactly once, whoever gets there first:
 * the upstream's terminal signals, a chunk the watch rejects, the output cap, the deadline task, an
 * abort from outside, or the subscriber's cancel.
 *
 * <h2>Serialisation without a per-chunk CAS</h2>
 * {@code onNext} marks {@link #seq} odd before delivering and even after, and reads
 * {@link #gate}. The deadline task that decides a stall first closes the gate (a volatile write),
 * then waits {@link StallWatch#CONFIRM_DELAY_NANOS} before confirming: every chunk that starts
 * after the gate closed takes the slow path, which claims {@link #state} with a CAS, so the task's
 * own CAS on {@link #state} excludes it; a chunk that started before can only be missed if its
 * first store stayed invisible for the whole confirmation delay, a million times longer than a
 * store buffer takes to drain. Upstream terminal signals are serial with {@code onNext} and win or
 * lose against the task by a CAS on {@link #state} ({@link #win()}): never two terminal signals.
 * {@link #ended} then lets exactly one end through to the {@link StallWatch.Terminal}.
 *
 * @param <T> the chunk type
 */
abstract class EndOnce<T> extends AttemptFacts<T> {

	/** {@link #state} once a terminal signal won; otherwise even (idle) or odd (slow-path delivery). */
	static final int DONE = -1;

	static final int GATE_STALL = 1;
	static final int GATE_ABORT = 2;
	static final int GATE_END = 4;

	static final VarHandle SEQ;
	static final VarHandle GATE;

	static {
		try {
			MethodHandles.Lookup lookup = MethodHandles.lookup();
			SEQ = lookup.findVarHandle(EndOnce.class, "seq", long.class);
			GATE = lookup.findVarHandle(EndOnce.class, "gate", int.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	/**
	 * Changed only from inside its own {@code onNext} ({@link StallWatch#passOnTo}), so chunks read it
	 * on the delivering thread; other threads read only its context, the same for every value it takes.
	 */
	CoreSubscriber<? super T> actual;
	/** Where a deadline's cancel of the upstream runs; read only when a deadline ends the stream. */
	final StallSpec spec;
	/** The timer's clock; its scheduler runs the deadline task. */
	final TimeSource clock;
	final StallWatch.Terminal<T> terminal;

	@Nullable
	volatile Subscription upstream;

	/** Twice the chunks started, plus one while a chunk is being delivered. Written by onNext only. */
	volatile long seq;

	/** Non-zero (bits {@link #GATE_STALL}, {@link #GATE_ABORT}, {@link #GATE_END}): chunks take the slow path. */
	volatile int gate;

	/**
	 * {@link #DONE} once a terminal signal won; else a version number, odd while a slow-path chunk is
	 * being delivered. The version moves on with every slow-path chunk, so a CAS from a value read
	 * earlier fails if a chunk slipped in between.
	 */
	volatile int state;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<EndOnce> STATE = AtomicIntegerFieldUpdater.newUpdater(EndOnce.class, "state");

	volatile int ended;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<EndOnce> ENDED = AtomicIntegerFieldUpdater.newUpdater(EndOnce.class, "ended");

	/** Set once by an abort from outside; the attempt then ends with it unless something ends it first. */
	@Nullable
	volatile Throwable abortCause;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<EndOnce, Throwable> ABORT_CAUSE =
			AtomicReferenceFieldUpdater.newUpdater(EndOnce.class, Throwable.class, "abortCause");

	EndOnce(CoreSubscriber<? super T> actual, StallSpec spec, TimeSource clock, StallWatch.Terminal<T> terminal) {
		this.actual = actual;
		this.spec = spec;
		this.clock = clock;
		this.terminal = terminal;
	}

	/** Stops the deadline task and any abort confirmation; called once, after {@link #ended} was set. */
	abstract void stopTimers();

	/** Upstream terminal signals are serial with onNext; only the deadline task can race them. */
	final boolean win() {
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

	final void end(StallWatch.End end, @Nullable Throwable error) {
		if (!ENDED.compareAndSet(this, 0, 1)) {
			if (error != null && end != StallWatch.End.CANCELLED) {
				Operators.onErrorDropped(error, actual.currentContext());
			}
			return;
		}
		if (end == StallWatch.End.CANCELLED) {
			// the upstream may still send a few chunks, from its own thread: they take the slow path and are dropped
			GATE.getAndBitwiseOr(this, GATE_END);
		}
		else {
			// a terminal signal or a deadline ended it; a chunk after an upstream's terminal signal would
			// come from that same thread, so an ordered store is enough. Other writers only add bits or
			// clear GATE_STALL, so the gate stays non-zero either way.
			GATE.setRelease(this, (int) GATE.getVolatile(this) | GATE_END);
		}
		stopTimers();
		endNanos = clock.nanos();
		// StallWatch is the only subclass
		terminal.onEnd((StallWatch<T>) this, end, error);
	}

	/**
	 * The inspector threw, or the chunk was null: the attempt fails with that error. Runs on the
	 * upstream's thread, serial with its other signals, so the upstream is cancelled right here.
	 */
	final void chunkRejected(Throwable e, @Nullable T t) {
		Exceptions.throwIfJvmFatal(e);
		fail(t == null ? e
				: Operators.onOperatorError(null, CallbackException.threw("ChunkInspector", e), t, actual.currentContext()));
	}

	/**
	 * The subscriber (or a tap before it) threw from {@code onNext}: the chunk counts as delivered,
	 * the attempt fails with what was thrown, and deadlines keep working meanwhile.
	 */
	final void downstreamFailed(Throwable e) {
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
		end(StallWatch.End.ERROR, e);
	}

	/**
	 * The output cap was reached with the chunk just delivered: the answer ends here as complete,
	 * finish reason {@code length}, and the upstream is cancelled. Runs on the upstream's thread,
	 * serial with its other signals, like {@link #fail}.
	 */
	final void reachedCap() {
		if (!win()) {
			return;
		}
		GATE.getAndBitwiseOr(this, GATE_END);
		capped = true;
		finishReason = StallWatch.OUTPUT_CAP_REASON;
		Subscription up = upstream;
		if (up != null) {
			up.cancel();
		}
		end(StallWatch.End.COMPLETED, null);
	}

	/**
	 * A deadline ended the stream on the timer thread: the subscriber has been told, now the
	 * upstream is cancelled on the spec's cancel scheduler, because some clients block in their
	 * cancel (closing an HTTP response) and the timer serves every other stream's deadlines.
	 */
	final void cancelUpstreamOffTimer() {
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

	/** @return chunks of any kind passed downstream (final once ended) */
	public long emitted() {
		return ((long) SEQ.getVolatile(this) + 1L) >>> 1;
	}
}
