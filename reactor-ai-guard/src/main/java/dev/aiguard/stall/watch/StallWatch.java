package dev.aiguard.stall.watch;

import java.util.concurrent.atomic.AtomicLongFieldUpdater;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * The subscriber that watches one attempt of a token stream: first-token, idle and max-duration
 * deadlines, and the terminal-marker check. Shared by the stall operator ({@code Stall.detect})
 * and {@code AiGuard}; applications use those and never create one directly. What it has seen is
 * kept by {@link AttemptFacts}, the one end of the attempt is decided by {@link EndOnce}, the
 * deadlines are watched by {@link DeadlineTimer}; this class is the Reactive Streams side.
 *
 * <h2>Cost per chunk</h2>
 * Two ordered stores and one ordered load of this object's own fields, one call to
 * {@link ChunkInspector#flags}, one counter increment and one plain store of the chunk's flags
 * (plus the {@link ContentCheck}, when one is given): no allocation, no atomic read-modify-write
 * instruction, no timer and no clock read (except once, for the first token). Every stall is
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
 * @param <T> the chunk type
 */
public final class StallWatch<T> extends DeadlineTimer<T> implements CoreSubscriber<T>, Subscription, Scannable {

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

	/** The finish reason of an answer the output cap ended. */
	public static final String OUTPUT_CAP_REASON = "length";

	private final ChunkInspector<T> inspector;
	private final boolean standalone;
	private final boolean announceFirstContent;
	/** Judges content chunks as they pass, or {@code null}. */
	@Nullable
	private final ContentCheck<? super T> check;
	/** Content chunks after which the attempt ends as complete ({@link #capOutput}); set before subscription. */
	private long outputCap = Long.MAX_VALUE;

	volatile long pendingRequest;
	@SuppressWarnings("rawtypes")
	static final AtomicLongFieldUpdater<StallWatch> PENDING_REQUEST =
			AtomicLongFieldUpdater.newUpdater(StallWatch.class, "pendingRequest");

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
		super(actual, spec, clock, terminal);
		this.check = check;
		this.inspector = inspector;
		this.standalone = standalone;
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
		startClock();
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
