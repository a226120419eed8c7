package dev.aiguard.admission;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * One priority's capacity: its free permits, the sizes a resize changes, the gauges, its FIFO
 * wait queue and the list of its permits lent to less urgent requests. {@code available} and
 * {@code resizeTo} are shared with other threads (CAS); everything else is written only by the
 * lanes' drain loop.
 */
final class Lane {

	final Priority priority;
	final LaneSpec spec;
	final Scheduler scheduler;
	final long maxWaitNanos;
	final long agingNanos;

	// written by the drain loop only (built values until a resize); volatile for the gauges
	volatile int limit;
	volatile int borrowable;
	volatile int lendCap;

	/** A size asked for by {@link PriorityLanes#resize}, not yet applied; -1 when none. */
	volatile int resizeTo = -1;
	static final AtomicIntegerFieldUpdater<Lane> RESIZE_TO = AtomicIntegerFieldUpdater.newUpdater(Lane.class,
			"resizeTo");

	/**
	 * Free permits of this lane; negative after a shrink while more streams hold its permits than
	 * it now has, so nobody takes one until enough are given back.
	 */
	volatile int available;
	static final AtomicIntegerFieldUpdater<Lane> AVAILABLE = AtomicIntegerFieldUpdater.newUpdater(Lane.class,
			"available");

	// written by the drain loop only; volatile so that gauges may read them
	volatile int lentDown; // permits used by more urgent requests
	volatile int lentUp; // permits used by less urgent requests (work-conserving lending)
	volatile int borrowedInFlight; // this priority's streams on other lanes' permits
	volatile int queued;

	// drain-only
	int queueSize;
	/** Waiters of this priority, in arrival order. */
	final Tickets queue = new Tickets();
	/** Streams of less urgent priorities on this lane's permits, in grant order. */
	final Tickets lent = new Tickets();

	Lane(Priority priority, LaneSpec spec) {
		this.priority = priority;
		this.spec = spec;
		this.limit = spec.concurrency();
		this.available = limit;
		this.borrowable = spec.concurrency() - spec.reservedForOwn();
		this.lendCap = spec.lendCap(spec.concurrency());
		this.maxWaitNanos = spec.maxQueueWait().toNanos();
		this.agingNanos = spec.agingAfter() == null ? 0L : spec.agingAfter().toNanos();
		this.scheduler = Schedulers.newBoundedElastic(spec.threadCap(), spec.queuedTaskCap(),
				"aiguard-" + priority.name().toLowerCase(Locale.ROOT), 60, true);
	}

	boolean tryTake() {
		for (;;) {
			int a = available;
			if (a <= 0) {
				return false;
			}
			if (AVAILABLE.compareAndSet(this, a, a - 1)) {
				return true;
			}
		}
	}

	void giveBack() {
		AVAILABLE.incrementAndGet(this);
	}

	/**
	 * The drain loop's half of a resize: the free count moves by the difference, so permits held
	 * now are still counted and come back as they are released.
	 */
	void setLimit(int size) {
		int delta = size - limit;
		limit = size;
		borrowable = Math.max(0, size - spec.reservedForOwn());
		lendCap = spec.lendCap(size);
		AVAILABLE.addAndGet(this, delta);
	}

	/** Streams of this priority on this lane's permits (a snapshot; exact when idle). */
	int ownInFlight() {
		return Math.max(0, limit - available - lentDown - lentUp);
	}

	/** Whether this lane is full enough that a new waiter of its own is refused. */
	boolean queueFull() {
		return queueSize >= spec.maxQueueSize();
	}

	// ---- the wait queue and the lent list (drain loop only) ----

	/** Appends a waiter to the queue. */
	void enqueue(LaneTicket t) {
		queue.append(t);
		t.linked = true;
		queueSize++;
		queued = queueSize;
	}

	/** Takes a waiter out of the queue, wherever it is. */
	void dequeue(LaneTicket t) {
		queue.remove(t);
		t.linked = false;
		queueSize--;
		queued = queueSize;
	}

	/** A doubly linked list of tickets through their own {@code prev} and {@code next}: nothing allocated per ticket. */
	static final class Tickets {

		@Nullable LaneTicket head;
		@Nullable LaneTicket tail;

		void append(LaneTicket t) {
			t.prev = tail;
			t.next = null;
			LaneTicket last = tail;
			if (last == null) {
				head = t;
			}
			else {
				last.next = t;
			}
			tail = t;
		}

		void remove(LaneTicket t) {
			LaneTicket before = t.prev;
			LaneTicket after = t.next;
			if (before == null) {
				head = after;
			}
			else {
				before.next = after;
			}
			if (after == null) {
				tail = before;
			}
			else {
				after.prev = before;
			}
			t.prev = null;
			t.next = null;
		}
	}
}
