package dev.aiguard.stall.watch;

import java.util.concurrent.atomic.AtomicLongFieldUpdater;

import dev.aiguard.core.ChunkInspector;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link StallWatch} has seen of its attempt, and the accessors a coordinator reads once
 * the attempt ended. The chunk path writes the plain fields on the delivering thread before its
 * release store of {@link EndOnce#seq}; the deadline task reads them after reading it.
 *
 * @param <T> the chunk type
 */
abstract class AttemptFacts<T> {

	volatile long requested;
	@SuppressWarnings("rawtypes")
	static final AtomicLongFieldUpdater<AttemptFacts> REQUESTED =
			AtomicLongFieldUpdater.newUpdater(AttemptFacts.class, "requested");

	/**
	 * When the upstream was called: the origin of every deadline and of the attempt's times. Set in
	 * {@code onSubscribe}, or for a watch that awaits its upstream by
	 * {@link DeadlineTimer#startUpstream()}; {@link #NOT_STARTED} until then, {@link #WAIT_OVER}
	 * once the wait's bound passed first. One CAS out of {@link #NOT_STARTED} decides between the two.
	 */
	volatile long upstreamAt = NOT_STARTED;
	@SuppressWarnings("rawtypes")
	static final AtomicLongFieldUpdater<AttemptFacts> UPSTREAM_AT =
			AtomicLongFieldUpdater.newUpdater(AttemptFacts.class, "upstreamAt");
	static final long NOT_STARTED = -1L;
	static final long WAIT_OVER = Long.MIN_VALUE;

	/** Content chunks delivered. */
	long tokens;
	/** Heartbeats received; they count as activity only when the spec says heartbeats extend idle. */
	long heartbeats;
	/** The flags of every chunk that was not plain content, or'ed together. */
	int seenFlags;
	@Nullable
	String finishReason;
	long firstTokenAt = -1L;
	/** The flags of the chunk being delivered, for a tap between the watch and the subscriber. */
	int lastFlags;
	/** The last chunk flagged {@link ChunkInspector#USAGE}; its usage is read once, after the end. */
	@Nullable
	T usageChunk;
	/** Whether the output cap ended the attempt. */
	volatile boolean capped;

	/** When the watch was subscribed, on the timer's clock. */
	long startNanos;
	long endNanos;

	/** @return when the deadlines started: the upstream's call, else (still waiting for it) the subscription */
	final long origin() {
		long at = upstreamAt;
		return at >= 0L ? at : startNanos;
	}

	/**
	 * @return the {@link ChunkInspector#flags} of the chunk being passed on; valid inside the
	 * subscriber's {@code onNext}, so a tap between the watch and the subscriber need not ask the
	 * inspector again
	 */
	public int chunkFlags() {
		return lastFlags;
	}

	/** @return whether the upstream was called: false only for an awaiting watch that it never reached */
	public boolean upstreamStarted() {
		return upstreamAt >= 0L;
	}

	/** @return whether the output cap ({@link StallWatch#capOutput}) ended the attempt */
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

	/** @return nanoseconds from the upstream's subscription to the first content chunk, or -1 when none arrived */
	public long timeToFirstTokenNanos() {
		long f = firstTokenAt;
		return f < 0L ? -1L : f - origin();
	}

	/**
	 * @return the timer's clock reading when the upstream was subscribed (for an awaiting watch whose
	 *         upstream was never called: when the watch was), in nanoseconds
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
}
