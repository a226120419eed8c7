package dev.aiguard.admission;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The waiters of all lanes: each lane's FIFO queue, the arrival order across lanes that breaks
 * ties, each waiter's deadline, and the count of waiters anywhere that the fast paths read. Owned
 * by the drain loop; only {@link #totalQueued()} is read by other threads.
 */
final class LaneQueues {

	private final Lane[] lanes;

	/** Waiters in all queues; written by the drain loop, read by the fast paths. */
	private volatile int totalQueued;

	// drain-only
	private long sequence;

	LaneQueues(Lane[] lanes) {
		this.lanes = lanes;
	}

	/** @return waiters in all queues (a volatile read; any thread) */
	int totalQueued() {
		return totalQueued;
	}

	/**
	 * Queues {@code t} at the end of {@code lane}'s queue and arms its deadline on {@code clock}.
	 *
	 * @return false when the clock refused the deadline: the ticket is out of the queue again and
	 *         the caller refuses it, since its wait could never end
	 */
	boolean park(LaneTicket t, Lane lane, Scheduler clock) {
		t.seq = sequence++;
		t.enqueuedAtNanos = clock.now(TimeUnit.NANOSECONDS);
		lane.enqueue(t);
		totalQueued = totalQueued + 1; // single writer: the drain loop
		try {
			t.timeout = clock.schedule(t, lane.maxWaitNanos, TimeUnit.NANOSECONDS);
			return true;
		}
		catch (RejectedExecutionException e) {
			unlink(t);
			return false;
		}
	}

	/** Takes a queued ticket out of its lane's queue and cancels its deadline. */
	void unlink(LaneTicket t) {
		lanes[t.priority.ordinal()].dequeue(t);
		totalQueued = totalQueued - 1;
		Disposable d = t.timeout;
		if (d != null) {
			t.timeout = null;
			d.dispose();
		}
	}

	/** @return whether a request of priority ordinal {@code p} or more urgent is queued */
	boolean waitersAtOrAbove(int p) {
		for (int l = 0; l <= p; l++) {
			if (lanes[l].queueSize > 0) {
				return true;
			}
		}
		return false;
	}

	/** @return the first waiter of the most urgent lane that has one, unlinked; null when none waits */
	@Nullable
	LaneTicket pollAny() {
		for (Lane lane : lanes) {
			LaneTicket t = lane.queue.head;
			if (t != null) {
				unlink(t);
				return t;
			}
		}
		return null;
	}
}
