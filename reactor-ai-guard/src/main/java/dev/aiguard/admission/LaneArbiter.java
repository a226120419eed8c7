package dev.aiguard.admission;

import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.concurrent.Queues;

/**
 * Decides who gets the next permit of {@link PriorityLanes}: the one-CAS fast paths of an
 * uncontended own-lane admission and release, and the drain loop that runs everything else
 * (arrivals that must borrow, queue or preempt, cancels, deadlines, releases of borrowed permits,
 * resizes, disposal) and hands freed permits to the most urgent waiter allowed to use them.
 *
 * <p>The drain loop is reactor-core's "work-in-progress" pattern: the thread that finds it idle
 * runs it, any other thread leaves its ticket in a lock-free queue for it and returns. Every
 * drain-only field of the lanes, their queues and the tickets is written by it alone.
 */
final class LaneArbiter {

	private final String name;
	@Nullable
	private final Scheduler timer;
	private final GuardMetrics metrics;
	private final Lane[] lanes;
	private final LaneQueues queues;
	private final LaneBorrowing borrowing;
	private final LaneGrants grants;
	private final Queue<LaneTicket> commands = Queues.<LaneTicket>unboundedMultiproducer().get();

	private volatile int wip;
	private static final AtomicIntegerFieldUpdater<LaneArbiter> WIP =
			AtomicIntegerFieldUpdater.newUpdater(LaneArbiter.class, "wip");

	private volatile int disposed;
	private static final AtomicIntegerFieldUpdater<LaneArbiter> DISPOSED =
			AtomicIntegerFieldUpdater.newUpdater(LaneArbiter.class, "disposed");

	// ---- owned by the drain loop ----
	private boolean waitersFailed;

	LaneArbiter(String name, @Nullable Scheduler timer, GuardMetrics metrics, Lane[] lanes) {
		this.name = name;
		this.timer = timer;
		this.metrics = metrics;
		this.lanes = lanes;
		this.queues = new LaneQueues(lanes);
		this.borrowing = new LaneBorrowing(lanes);
		this.grants = new LaneGrants(name, metrics, lanes, borrowing);
	}

	Scheduler scheduler(Priority priority) {
		return lanes[priority.ordinal()].scheduler;
	}

	/** Marks the lanes disposed and fails the waiters; true for the call that did it. */
	boolean dispose() {
		if (DISPOSED.compareAndSet(this, 0, 1)) {
			drain();
			return true;
		}
		return false;
	}

	boolean isDisposed() {
		return disposed == 1;
	}

	/** Asks the drain loop to resize {@code lane}; the last size asked for before it runs wins. */
	void resize(Lane lane, int concurrency) {
		Lane.RESIZE_TO.set(lane, concurrency);
		drain();
	}

	// ---------------------------------------------------------------- fast paths

	/*
	 * The common case needs no drain loop: a request whose own lane has a free permit while nobody
	 * waits anywhere takes it with one CAS on the lane's free count, and the holder of an own-lane
	 * permit gives it back with one CAS. Everything that involves a queue, another lane's permit
	 * (borrowing, lending, preemption) or disposal goes through the drain loop.
	 *
	 * A fast release racing a waiter being parked cannot lose the waiter: the release raises
	 * 'available' then reads 'totalQueued'; parking raises 'totalQueued' then (dispatch) reads
	 * 'available'. With volatile accesses one of the two sees the other, and either the releaser
	 * runs the drain loop or the loop finds the permit.
	 */

	/** See {@link PriorityLanes#tryAcquire(Priority)}. */
	@Nullable
	LanePermit tryAcquire(Priority priority) {
		Lane own = takeOwnAtOnce(priority);
		return own == null ? null : grants.grantedNow(this, own);
	}

	/**
	 * The fast path of a first {@code request}: when the ticket's own lane has a free permit and
	 * nobody waits, the permit goes to the subscriber with one CAS on the lane's free count and one
	 * on the ticket (NEW straight to DELIVERED; a cancel that got there first wins and the permit
	 * goes back).
	 *
	 * @return whether the ticket was dealt with; {@code false} leaves it NEW for {@link #submit}
	 */
	boolean grantAtOnce(LaneTicket t) {
		Lane own = takeOwnAtOnce(t.priority);
		if (own == null) {
			return false;
		}
		if (!grants.grantAtOnce(t, own)) {
			// cancelled before it could be granted: nobody saw the permit
			giveBackOwn(own);
		}
		return true;
	}

	/**
	 * @return the priority's own lane with one of its free permits taken, or {@code null} when
	 *         someone waits, the lanes are disposed or the lane has none free
	 */
	@Nullable
	private Lane takeOwnAtOnce(Priority priority) {
		// 'totalQueued' first, then 'available': the order the drain loop relies on (see above)
		if (disposed != 0 || queues.totalQueued() != 0) {
			return null;
		}
		Lane own = lanes[priority.ordinal()];
		return own.tryTake() ? own : null;
	}

	/** Gives back an own-lane permit, and runs the drain loop when a waiter or a disposal may need it. */
	private void giveBackOwn(Lane own) {
		own.giveBack();
		if (queues.totalQueued() != 0 || disposed == 1) {
			drain();
		}
	}

	/** Called once per ticket when it is first requested. */
	void submit(LaneTicket t) {
		if (disposed == 0) {
			Lane own = lanes[t.priority.ordinal()];
			if (queues.totalQueued() == 0) {
				if (own.tryTake()) {
					if (!grants.grant(t, own, 0L)) {
						own.giveBack();
						if (queues.totalQueued() != 0) {
							drain();
						}
					}
					return;
				}
			}
			else if (own.queued >= own.spec.maxQueueSize() && own.spec.maxQueueSize() > 0) {
				// refused without queueing work for the drain loop, so a flood stays cheap
				grants.reject(t, Reason.QUEUE_FULL);
				return;
			}
		}
		signal(t, LaneTicket.OP_SUBMIT);
	}

	/** The holder of {@code t} handed it back (exactly once, see {@link LaneTicket#release()}). */
	void released(LaneTicket t) {
		Lane lane = t.lane;
		if (lane.priority == t.priority) {
			giveBackOwn(lane);
		}
		else {
			signal(t, LaneTicket.OP_RELEASE);
		}
	}

	// ---------------------------------------------------------------- drain loop

	/** Records an operation on a ticket and makes sure the drain loop sees it. */
	void signal(LaneTicket ticket, int op) {
		for (;;) {
			int cur = ticket.ops;
			if (LaneTicket.OPS.compareAndSet(ticket, cur, cur | op)) {
				if (cur == 0) {
					commands.offer(ticket);
				}
				break;
			}
		}
		drain();
	}

	private void drain() {
		if (WIP.getAndIncrement(this) != 0) {
			return;
		}
		int missed = 1;
		for (;;) {
			applyResizes();
			LaneTicket t;
			while ((t = commands.poll()) != null) {
				int ops = LaneTicket.OPS.getAndSet(t, 0);
				if ((ops & LaneTicket.OP_SUBMIT) != 0) {
					arrive(t);
				}
				if ((ops & (LaneTicket.OP_CANCEL | LaneTicket.OP_TIMEOUT)) != 0) {
					leaveQueue(t);
				}
				if ((ops & LaneTicket.OP_RELEASE) != 0) {
					borrowing.free(t, true);
				}
				dispatch();
			}
			dispatch(); // permits given back by the fast path
			if (disposed == 1 && !waitersFailed) {
				waitersFailed = true;
				failAllWaiters();
			}
			missed = WIP.addAndGet(this, -missed);
			if (missed == 0) {
				break;
			}
		}
	}

	/** Applies the sizes {@link PriorityLanes#resize(Priority, int)} asked for since the last pass. */
	private void applyResizes() {
		for (Lane lane : lanes) {
			if (lane.resizeTo < 0) {
				continue;
			}
			int size = Lane.RESIZE_TO.getAndSet(lane, -1);
			if (size >= 0 && size != lane.limit) {
				lane.setLimit(size);
				metrics.laneResized(name, lane.priority, size);
			}
		}
	}

	private void arrive(LaneTicket t) {
		if (t.state != LaneTicket.PENDING) {
			return; // cancelled before the drain saw it
		}
		Lane own = lanes[t.priority.ordinal()];
		if (disposed == 1) {
			grants.reject(t, Reason.DISPOSED);
			return;
		}
		if (queues.waitersAtOrAbove(t.priority.ordinal()) && !own.queueFull()) {
			// someone at least as urgent is already waiting: a permit the fast path just gave back is
			// theirs, so the newcomer queues behind them and dispatch() hands out what is free
			park(t, own);
			return;
		}
		Lane free = borrowing.takeFree(t.priority.ordinal());
		if (free != null) {
			if (!grants.grant(t, free, 0L)) {
				free.giveBack(); // cancelled meanwhile
			}
			return;
		}
		Lane lender = borrowing.preemptible(t.priority.ordinal());
		if (lender != null) {
			preempt(t, lender);
			return;
		}
		if (own.queueFull()) {
			grants.reject(t, Reason.QUEUE_FULL);
			return;
		}
		park(t, own);
	}

	/** Takes a lent permit of {@code lane} back from its least urgent borrower for arrival {@code t}. */
	private void preempt(LaneTicket t, Lane lane) {
		LaneTicket victim = LaneBorrowing.victim(lane);
		boolean taken = victim.claimForPreemption();
		borrowing.free(victim, false); // the permit passes straight to the arrival
		if (!grants.grant(t, lane, 0L)) {
			lane.giveBack(); // the arrival was cancelled meanwhile; dispatch hands the permit on
		}
		if (taken) {
			// otherwise the holder was releasing it already: it finished, nothing to stop
			grants.preempted(victim, lane);
		}
	}

	private void park(LaneTicket t, Lane lane) {
		if (!queues.park(t, lane, timer())) {
			// the timer is gone, so the wait could never end: refuse rather than hang
			grants.reject(t, Reason.DISPOSED);
		}
	}

	/** The ticket was cancelled or its deadline passed: take it out of its queue. */
	private void leaveQueue(LaneTicket t) {
		if (!t.linked) {
			return;
		}
		queues.unlink(t);
		grants.reject(t, Reason.WAIT_TIMEOUT);
	}

	/** Hands free permits to the most urgent waiters allowed to use them. */
	private void dispatch() {
		if (queues.totalQueued() == 0) {
			return;
		}
		long now = Long.MIN_VALUE;
		for (Lane lane : lanes) {
			while (lane.available > 0 && queues.totalQueued() > 0) {
				LaneTicket best = null;
				int bestRank = Integer.MAX_VALUE;
				for (Lane candidate : lanes) {
					LaneTicket head = candidate.queue.head;
					if (head == null || !borrowing.mayUse(candidate.priority.ordinal(), lane)) {
						continue;
					}
					int rank = candidate.priority.ordinal();
					if (candidate.agingNanos > 0) {
						if (now == Long.MIN_VALUE) {
							now = timer().now(TimeUnit.NANOSECONDS);
						}
						long steps = (now - head.enqueuedAtNanos) / candidate.agingNanos;
						rank = (int) Math.max(0, rank - Math.min(steps, rank));
					}
					if (best == null || rank < bestRank || (rank == bestRank && head.seq < best.seq)) {
						best = head;
						bestRank = rank;
					}
				}
				if (best == null || !lane.tryTake()) {
					break;
				}
				long enqueuedAt = best.enqueuedAtNanos;
				queues.unlink(best);
				if (now == Long.MIN_VALUE) {
					now = timer().now(TimeUnit.NANOSECONDS);
				}
				if (!grants.grant(best, lane, Math.max(0L, now - enqueuedAt))) {
					lane.giveBack(); // cancelled meanwhile: offer the permit to the next waiter
				}
			}
		}
	}

	private void failAllWaiters() {
		LaneTicket t;
		while ((t = queues.pollAny()) != null) {
			grants.reject(t, Reason.DISPOSED);
		}
	}

	private Scheduler timer() {
		// resolved at use, so StepVerifier.withVirtualTime replaces the default
		return timer != null ? timer : Schedulers.parallel();
	}
}
