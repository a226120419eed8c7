package dev.aiguard.admission;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Function;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.concurrent.Queues;

/**
 * One bounded lane per {@link Priority}: a number of permits (streams in flight), a bounded
 * FIFO wait queue with a deadline, and a bounded Scheduler for blocking work. Built once and
 * shared by every guarded call.
 *
 * <pre>{@code
 * PriorityLanes lanes = PriorityLanes.builder()
 *     .name("chat")
 *     .lane(Priority.P0, LaneSpec.of(4).maxQueueWait(Duration.ofSeconds(2)))
 *     .lane(Priority.P1, LaneSpec.of(4))
 *     .lane(Priority.P2, LaneSpec.of(8).maxQueueSize(1_000).agingAfter(Duration.ofSeconds(30)))
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .build();
 *
 * // by hand: the permit must be released exactly once (extra calls are ignored)
 * lanes.acquire(Priority.P0)
 *      .flatMapMany(permit -> client.stream(request).doFinally(s -> permit.release()));
 *
 * // or as an operator, priority taken from the Reactor Context
 * client.stream(request)
 *       .transform(lanes.admit())
 *       .contextWrite(Priority.P0.asContext());
 * }</pre>
 *
 * <p>Admission never blocks a thread. A request takes a free permit of its own lane, else an idle
 * permit of a less urgent lane ({@link LaneSpec#borrowFromLower(boolean)}), else (when that lane
 * lends) an idle permit of a more urgent lane ({@link LaneSpec#lendToLower(double)}); otherwise
 * it may preempt a stream on a lent permit ({@link LaneSpec#preemptBorrowers(boolean)}), or it
 * parks in its lane's queue. When a permit frees, the most urgent waiter allowed to use it gets it
 * (aging counted), earliest arrival first among equals. Refusals are immediate and typed:
 * {@link AdmissionRejectedException} with {@link Reason#QUEUE_FULL}, {@link Reason#WAIT_TIMEOUT}
 * or {@link Reason#DISPOSED}.
 *
 * <p>When a request's own lane has a free permit and nobody waits, admission and release are one
 * CAS each on the lane's free count. Everything else (queues, borrowing, lending, preemption,
 * deadlines) runs in a drain loop (the reactor-core "work-in-progress" pattern): the thread that
 * finds the loop idle runs it, any other thread leaves its request in a lock-free queue for it and
 * returns. A waiter's permit is therefore handed over on the thread that released the previous
 * one.
 */
public final class PriorityLanes implements Disposable {

	static final Priority[] PRIORITIES = Priority.values();

	private final String name;
	private final Scheduler timer;
	private final GuardMetrics metrics;
	private final Lane[] lanes;
	private final Queue<LaneTicket> commands = Queues.<LaneTicket>unboundedMultiproducer().get();

	private volatile int wip;
	private static final AtomicIntegerFieldUpdater<PriorityLanes> WIP =
			AtomicIntegerFieldUpdater.newUpdater(PriorityLanes.class, "wip");

	private volatile int disposed;
	private static final AtomicIntegerFieldUpdater<PriorityLanes> DISPOSED =
			AtomicIntegerFieldUpdater.newUpdater(PriorityLanes.class, "disposed");

	// ---- owned by the drain loop ----
	private long sequence;
	private boolean waitersFailed;

	/** Waiters in all queues; written by the drain loop, read by the fast paths. */
	private volatile int totalQueued;

	private PriorityLanes(Builder builder) {
		this.name = builder.name;
		this.timer = builder.timer;
		this.metrics = GuardMetrics.isolated(builder.metrics);
		this.lanes = new Lane[PRIORITIES.length];
		for (Priority p : PRIORITIES) {
			lanes[p.ordinal()] = new Lane(p, builder.specs.get(p));
		}
		metrics.lanesCreated(name, this::inFlight, this::borrowedInFlight, this::queued);
		metrics.laneCapacity(name, this::concurrency);
	}

	/** @return a builder; every lane must be given a {@link LaneSpec}. */
	public static Builder builder() {
		return new Builder();
	}

	/**
	 * Asks for a permit for a request of {@code priority}. Lazy: nothing happens until the Mono is
	 * subscribed and requested. Emits the permit at once when one may be used, else when one frees;
	 * fails with {@link AdmissionRejectedException} when the queue is full, the wait exceeds the
	 * lane's {@link LaneSpec#maxQueueWait()}, or the lanes are disposed. Cancelling while queued
	 * leaves the queue and consumes nothing; a permit granted concurrently with the cancel is
	 * released.
	 *
	 * @param priority the request's priority
	 * @return a Mono of exactly one permit, to be {@link LanePermit#release() released} once
	 */
	public Mono<LanePermit> acquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		return new MonoAcquire(this, priority);
	}

	/**
	 * Takes a permit at once if the request's own lane has one free and no request of any priority
	 * is waiting (it never jumps a queue, never borrows and never preempts); otherwise returns
	 * {@code null} and the caller uses {@link #acquire(Priority)}, which queues, borrows and
	 * preempts as configured. The permit is the same as one {@code acquire} grants: release it
	 * once. A zero queue wait is recorded, as for an immediate grant through {@code acquire}.
	 *
	 * <pre>{@code
	 * LanePermit permit = lanes.tryAcquire(priority);
	 * Mono<LanePermit> admission = permit != null ? Mono.just(permit) : lanes.acquire(priority);
	 * }</pre>
	 *
	 * @param priority the request's priority
	 * @return a permit, or {@code null} when the request would have to wait, borrow or be refused
	 */
	@Nullable
	public LanePermit tryAcquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		Lane own = takeOwnAtOnce(priority);
		if (own == null) {
			return null;
		}
		LaneTicket t = LaneTicket.grantedNow(this, own);
		metrics.admissionWaited(name, priority, 0L);
		return t;
	}

	/**
	 * An operator that runs each subscription of a Flux under a permit: the priority is read from
	 * the subscriber's Context ({@link Priority#CONTEXT_KEY}, {@link Priority#P1} when absent), the
	 * permit is released exactly once when the stream completes, fails or is cancelled, and a
	 * preempted stream has its upstream cancelled and fails with {@link PreemptedException}.
	 *
	 * <pre>{@code
	 * Flux<ChatChunk> answer = client.stream(request).transform(lanes.admit());
	 * }</pre>
	 */
	public <T> Function<Flux<T>, Flux<T>> admit() {
		return admit(Priority.P1);
	}

	/**
	 * {@link #admit()} with the priority used when the Context carries none.
	 *
	 * @param whenAbsent priority of subscriptions whose Context has no priority
	 */
	public <T> Function<Flux<T>, Flux<T>> admit(Priority whenAbsent) {
		Objects.requireNonNull(whenAbsent, "whenAbsent");
		return flux -> new FluxAdmit<>(flux, this, whenAbsent, false);
	}

	/**
	 * {@link #admit(Priority)} for an upstream that blocks (a blocking SDK, an iterator over a
	 * socket): once admitted, the upstream is subscribed on the request's lane
	 * {@link #scheduler(Priority) Scheduler}, so blocking batch work never takes an interactive
	 * thread.
	 *
	 * <pre>{@code
	 * Flux.fromIterable(blockingSdk.stream(request)).transform(lanes.admitOnLane(Priority.P2));
	 * }</pre>
	 */
	public <T> Function<Flux<T>, Flux<T>> admitOnLane(Priority whenAbsent) {
		Objects.requireNonNull(whenAbsent, "whenAbsent");
		return flux -> new FluxAdmit<>(flux, this, whenAbsent, true);
	}

	/**
	 * @return the bounded Scheduler of {@code lane} ({@code aiguard-p0}, ...): where blocking
	 *         upstreams and fallback work of that priority run
	 */
	public Scheduler scheduler(Priority lane) {
		return lanes[lane.ordinal()].scheduler;
	}

	/** @return streams of {@code priority} running on their own lane's permits */
	public int inFlight(Priority priority) {
		return lanes[priority.ordinal()].ownInFlight();
	}

	/** @return streams of {@code priority} running on permits borrowed from other lanes */
	public int borrowedInFlight(Priority priority) {
		return lanes[priority.ordinal()].borrowedInFlight;
	}

	/** @return requests of {@code priority} waiting in its queue */
	public int queued(Priority priority) {
		return lanes[priority.ordinal()].queued;
	}

	/**
	 * @return the spec {@code lane} was built with; its {@link LaneSpec#concurrency()} is the
	 *         built size even after a {@link #resize(Priority, int)}
	 */
	public LaneSpec spec(Priority lane) {
		return lanes[lane.ordinal()].spec;
	}

	/**
	 * @return the permits {@code lane} has now: its built concurrency, or the last
	 *         {@link #resize(Priority, int) resize} once the lanes applied it
	 */
	public int concurrency(Priority lane) {
		return lanes[lane.ordinal()].limit;
	}

	/**
	 * Changes how many permits {@code lane} has, while requests are running. Streams already
	 * admitted keep their permits: a smaller lane admits nobody of its own until enough of them
	 * have finished to bring it under the new size, and lends and lets borrow only what the new
	 * size allows; a larger lane hands its new permits to waiters at once. The lane's queue, wait
	 * deadline, reservations and lending ratio stay as built (a reservation larger than the new
	 * size reserves the whole lane). Never blocks: the change is applied by the lanes' drain loop,
	 * by this thread when the loop is idle; of several concurrent resizes of one lane, the last
	 * applied wins.
	 *
	 * <pre>{@code
	 * lanes.resize(Priority.P2, lanes.spec(Priority.P2).concurrency() / 2); // halve batch work
	 * }</pre>
	 *
	 * @param lane the lane to resize
	 * @param concurrency its new number of permits; 0 leaves it only what it may borrow
	 * @throws IllegalArgumentException when {@code concurrency} is negative
	 */
	public void resize(Priority lane, int concurrency) {
		Objects.requireNonNull(lane, "lane");
		if (concurrency < 0) {
			throw new IllegalArgumentException("lane " + lane + ": concurrency must be >= 0, was " + concurrency);
		}
		Lane l = lanes[lane.ordinal()];
		Lane.RESIZE_TO.set(l, concurrency);
		drain();
	}

	/** @return the name used in metrics and messages */
	public String name() {
		return name;
	}

	/**
	 * Fails every waiter with {@link Reason#DISPOSED}, refuses later requests the same way, and
	 * disposes the lanes' Schedulers. Permits already granted may still be released.
	 */
	@Override
	public void dispose() {
		if (DISPOSED.compareAndSet(this, 0, 1)) {
			drain();
			for (Lane lane : lanes) {
				lane.scheduler.dispose();
			}
		}
	}

	@Override
	public boolean isDisposed() {
		return disposed == 1;
	}

	@Override
	public String toString() {
		StringBuilder sb = new StringBuilder("PriorityLanes{name=").append(name);
		for (Lane lane : lanes) {
			sb.append(", ").append(lane.priority).append("={own=").append(lane.ownInFlight()).append(", borrowed=")
					.append(lane.borrowedInFlight).append(", queued=").append(lane.queued).append('}');
		}
		return sb.append('}').toString();
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
		t.lane = own;
		t.grantedLane = own.priority; // before DELIVERED, like grant()
		if (!LaneTicket.STATE.compareAndSet(t, LaneTicket.NEW, LaneTicket.DELIVERED)) {
			// cancelled before it could be granted: nobody saw the permit
			own.giveBack();
			if (totalQueued != 0 || disposed == 1) {
				drain();
			}
			return true;
		}
		metrics.admissionWaited(name, t.priority, 0L);
		deliver(t);
		return true;
	}

	/**
	 * @return the priority's own lane with one of its free permits taken, or {@code null} when
	 *         someone waits, the lanes are disposed or the lane has none free
	 */
	@Nullable
	private Lane takeOwnAtOnce(Priority priority) {
		// 'totalQueued' first, then 'available': the order the drain loop relies on (see drain)
		if (disposed != 0 || totalQueued != 0) {
			return null;
		}
		Lane own = lanes[priority.ordinal()];
		return own.tryTake() ? own : null;
	}

	/** Called once per ticket when it is first requested. */
	void submit(LaneTicket t) {
		if (disposed == 0) {
			Lane own = lanes[t.priority.ordinal()];
			if (totalQueued == 0) {
				if (own.tryTake()) {
					if (!grant(t, own, 0L)) {
						own.giveBack();
						if (totalQueued != 0) {
							drain();
						}
					}
					return;
				}
			}
			else if (own.queued >= own.spec.maxQueueSize() && own.spec.maxQueueSize() > 0) {
				// refused without queueing work for the drain loop, so a flood stays cheap
				reject(t, Reason.QUEUE_FULL);
				return;
			}
		}
		signal(t, LaneTicket.OP_SUBMIT);
	}

	/** The holder of {@code t} handed it back (exactly once, see {@link LaneTicket#release()}). */
	void released(LaneTicket t) {
		Lane lane = t.lane;
		if (lane.priority == t.priority) {
			lane.giveBack();
			if (totalQueued != 0 || disposed == 1) {
				drain();
			}
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
					free(t, true);
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

	/** Applies the sizes {@link #resize(Priority, int)} asked for since the last pass (drain loop only). */
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
			reject(t, Reason.DISPOSED);
			return;
		}
		if (waitersAtOrAbove(t.priority.ordinal()) && own.queueSize < own.spec.maxQueueSize()) {
			// someone at least as urgent is already waiting: a permit the fast path just gave back is
			// theirs, so the newcomer queues behind them and dispatch() hands out what is free
			park(t, own);
			return;
		}
		Lane free = takeFree(t.priority);
		if (free != null) {
			if (!grant(t, free, 0L)) {
				free.giveBack(); // cancelled meanwhile
			}
			return;
		}
		if (preempt(t)) {
			return;
		}
		if (own.queueSize >= own.spec.maxQueueSize()) {
			reject(t, Reason.QUEUE_FULL);
			return;
		}
		park(t, own);
	}

	/** @return whether a request of priority ordinal {@code p} or more urgent is queued (drain loop only) */
	private boolean waitersAtOrAbove(int p) {
		for (int l = 0; l <= p; l++) {
			if (lanes[l].queueSize > 0) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Takes a permit for priority {@code p}: own lane first, then idle permits of less urgent
	 * lanes, then lent permits of more urgent ones, nearest first.
	 */
	private Lane takeFree(Priority p) {
		int i = p.ordinal();
		Lane own = lanes[i];
		if (own.tryTake()) {
			return own;
		}
		if (own.spec.borrowFromLower()) {
			for (int l = i + 1; l < lanes.length; l++) {
				if (mayUse(i, lanes[l]) && lanes[l].tryTake()) {
					return lanes[l];
				}
			}
		}
		for (int l = i - 1; l >= 0; l--) {
			if (mayUse(i, lanes[l]) && lanes[l].tryTake()) {
				return lanes[l];
			}
		}
		return null;
	}

	/** Whether a request of priority ordinal {@code p} may take a free permit of {@code lane}. */
	private boolean mayUse(int p, Lane lane) {
		int l = lane.priority.ordinal();
		if (p == l) {
			return true;
		}
		if (p < l) {
			return lanes[p].spec.borrowFromLower() && lane.lentDown < lane.borrowable;
		}
		// work-conserving lending: only while the lane has nobody of its own waiting
		return lane.lentUp < lane.lendCap && lane.queueSize == 0;
	}

	/**
	 * Takes back a lent permit for an arrival that found nothing free: first one of its own lane,
	 * then one of a less urgent lane it may borrow from. Only lanes with
	 * {@link LaneSpec#preemptBorrowers(boolean)} give permits back this way.
	 */
	private boolean preempt(LaneTicket t) {
		int p = t.priority.ordinal();
		for (int l = p; l < lanes.length; l++) {
			Lane lane = lanes[l];
			if (lane.spec.preemptBorrowers() && lane.lentTail != null && (l == p || mayUse(p, lane))) {
				preempt(t, lane);
				return true;
			}
		}
		return false;
	}

	private void preempt(LaneTicket t, Lane lane) {
		LaneTicket victim = null;
		for (LaneTicket c = lane.lentTail; c != null; c = c.prev) {
			if (victim == null || c.priority.ordinal() > victim.priority.ordinal()) {
				victim = c; // least urgent first, most recently admitted among those
			}
		}
		boolean taken = victim.claimForPreemption();
		free(victim, false); // the permit passes straight to the arrival
		if (!grant(t, lane, 0L)) {
			lane.giveBack(); // the arrival was cancelled meanwhile; dispatch hands the permit on
		}
		if (taken) {
			// otherwise the holder was releasing it already: it finished, nothing to stop
			victim.firePreempted(new PreemptedException(victim.priority, lane.priority));
			metrics.preempted(name, victim.priority);
		}
	}

	private void park(LaneTicket t, Lane lane) {
		t.seq = sequence++;
		Scheduler clock = timer();
		t.enqueuedAtNanos = clock.now(TimeUnit.NANOSECONDS);
		t.prev = lane.queueTail;
		t.next = null;
		if (lane.queueTail == null) {
			lane.queueHead = t;
		}
		else {
			lane.queueTail.next = t;
		}
		lane.queueTail = t;
		t.linked = true;
		lane.queueSize++;
		lane.queued = lane.queueSize;
		totalQueued = totalQueued + 1; // single writer: the drain loop
		try {
			t.timeout = clock.schedule(t, lane.maxWaitNanos, TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException e) {
			// the timer is gone, so the wait could never end: refuse rather than hang
			unlinkWaiter(t);
			reject(t, Reason.DISPOSED);
		}
	}

	/** The ticket was cancelled or its deadline passed: take it out of its queue. */
	private void leaveQueue(LaneTicket t) {
		if (!t.linked) {
			return;
		}
		unlinkWaiter(t);
		if (LaneTicket.STATE.compareAndSet(t, LaneTicket.PENDING, LaneTicket.REJECTED)) {
			deliverError(t, Reason.WAIT_TIMEOUT);
		}
	}

	private void unlinkWaiter(LaneTicket t) {
		Lane lane = lanes[t.priority.ordinal()];
		if (t.prev == null) {
			lane.queueHead = t.next;
		}
		else {
			t.prev.next = t.next;
		}
		if (t.next == null) {
			lane.queueTail = t.prev;
		}
		else {
			t.next.prev = t.prev;
		}
		t.prev = null;
		t.next = null;
		t.linked = false;
		lane.queueSize--;
		lane.queued = lane.queueSize;
		totalQueued = totalQueued - 1;
		Disposable d = t.timeout;
		if (d != null) {
			t.timeout = null;
			d.dispose();
		}
	}

	/** Hands free permits to the most urgent waiters allowed to use them. */
	private void dispatch() {
		if (totalQueued == 0) {
			return;
		}
		long now = Long.MIN_VALUE;
		for (Lane lane : lanes) {
			while (lane.available > 0 && totalQueued > 0) {
				LaneTicket best = null;
				int bestRank = Integer.MAX_VALUE;
				for (Lane candidate : lanes) {
					LaneTicket head = candidate.queueHead;
					if (head == null || !mayUse(candidate.priority.ordinal(), lane)) {
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
				unlinkWaiter(best);
				if (now == Long.MIN_VALUE) {
					now = timer().now(TimeUnit.NANOSECONDS);
				}
				if (!grant(best, lane, Math.max(0L, now - enqueuedAt))) {
					lane.giveBack(); // cancelled meanwhile: offer the permit to the next waiter
				}
			}
		}
	}

	/**
	 * Gives {@code t} a permit of {@code lane} already taken from the lane's free count.
	 *
	 * @return false when the ticket was cancelled meanwhile: the caller gives the permit back
	 */
	private boolean grant(LaneTicket t, Lane lane, long waitedNanos) {
		t.lane = lane;
		t.grantedLane = lane.priority; // before GRANTED: a racing cancel() releases by it
		if (!LaneTicket.STATE.compareAndSet(t, LaneTicket.PENDING, LaneTicket.GRANTED)) {
			return false;
		}
		int p = t.priority.ordinal();
		int l = lane.priority.ordinal();
		if (p != l) {
			// borrowed permits are only ever granted and freed by the drain loop
			Lane own = lanes[p];
			own.borrowedInFlight = own.borrowedInFlight + 1;
			if (p < l) {
				lane.lentDown = lane.lentDown + 1;
			}
			else {
				lane.lentUp = lane.lentUp + 1;
				linkLent(lane, t);
			}
		}
		metrics.admissionWaited(name, t.priority, waitedNanos);
		if (LaneTicket.STATE.compareAndSet(t, LaneTicket.GRANTED, LaneTicket.DELIVERED)) {
			deliver(t);
		}
		// else cancel() won between the two CASes and releases the permit itself
		return true;
	}

	/** Hands a DELIVERED ticket's permit to its subscriber. */
	private static void deliver(LaneTicket t) {
		try {
			t.actual.onNext(t);
			t.actual.onComplete();
		}
		catch (Throwable e) {
			// a subscriber that throws cannot be trusted to release: take the permit back
			Callbacks.dropped(e);
			t.release();
		}
	}

	/**
	 * Bookkeeping for a borrowed or lent permit handed back (release or preemption); idempotent.
	 *
	 * @param returnPermit whether the permit goes back to the lane's free count (not when it
	 *        passes straight to a preempting arrival)
	 */
	private void free(LaneTicket t, boolean returnPermit) {
		Lane lane = t.lane;
		if (lane == null || t.freed) {
			return;
		}
		t.freed = true;
		Lane own = lanes[t.priority.ordinal()];
		int p = t.priority.ordinal();
		int l = lane.priority.ordinal();
		own.borrowedInFlight = own.borrowedInFlight - 1;
		if (p < l) {
			lane.lentDown = lane.lentDown - 1;
		}
		else {
			lane.lentUp = lane.lentUp - 1;
			unlinkLent(lane, t);
		}
		if (returnPermit) {
			lane.giveBack();
		}
	}

	private static void linkLent(Lane lane, LaneTicket t) {
		t.prev = lane.lentTail;
		t.next = null;
		if (lane.lentTail == null) {
			lane.lentHead = t;
		}
		else {
			lane.lentTail.next = t;
		}
		lane.lentTail = t;
	}

	private static void unlinkLent(Lane lane, LaneTicket t) {
		if (t.prev == null) {
			lane.lentHead = t.next;
		}
		else {
			t.prev.next = t.next;
		}
		if (t.next == null) {
			lane.lentTail = t.prev;
		}
		else {
			t.next.prev = t.prev;
		}
		t.prev = null;
		t.next = null;
	}

	private void reject(LaneTicket t, Reason reason) {
		if (LaneTicket.STATE.compareAndSet(t, LaneTicket.PENDING, LaneTicket.REJECTED)) {
			deliverError(t, reason);
		}
	}

	private void deliverError(LaneTicket t, Reason reason) {
		metrics.admissionRejected(name, t.priority, reason.name());
		try {
			t.actual.onError(new AdmissionRejectedException(t.priority, reason, message(t.priority, reason)));
		}
		catch (Throwable e) {
			Callbacks.dropped(e);
		}
	}

	private String message(Priority p, Reason reason) {
		LaneSpec spec = lanes[p.ordinal()].spec;
		switch (reason) {
			case QUEUE_FULL:
				return "lanes '" + name + "': " + p + " queue full (maxQueueSize=" + spec.maxQueueSize() + ")";
			case WAIT_TIMEOUT:
				return "lanes '" + name + "': " + p + " waited longer than maxQueueWait=" + spec.maxQueueWait();
			case DISPOSED:
				return "lanes '" + name + "' are disposed";
			default:
				return "lanes '" + name + "': " + p + " refused (" + reason + ")";
		}
	}

	private void failAllWaiters() {
		for (Lane lane : lanes) {
			LaneTicket t;
			while ((t = lane.queueHead) != null) {
				unlinkWaiter(t);
				reject(t, Reason.DISPOSED);
			}
		}
	}

	private Scheduler timer() {
		// resolved at use, so StepVerifier.withVirtualTime replaces the default
		return timer != null ? timer : Schedulers.parallel();
	}

	/**
	 * One priority's capacity and queue. {@code available} is shared with the fast paths (CAS);
	 * everything else is written only by the drain loop.
	 */
	static final class Lane {

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
		static final AtomicIntegerFieldUpdater<Lane> RESIZE_TO =
				AtomicIntegerFieldUpdater.newUpdater(Lane.class, "resizeTo");

		/**
		 * Free permits of this lane; negative after a shrink while more streams hold its permits
		 * than it now has, so nobody takes one until enough are given back.
		 */
		volatile int available;
		static final AtomicIntegerFieldUpdater<Lane> AVAILABLE =
				AtomicIntegerFieldUpdater.newUpdater(Lane.class, "available");

		// written by the drain loop only; volatile so that gauges may read them
		volatile int lentDown; // permits used by more urgent requests
		volatile int lentUp; // permits used by less urgent requests (work-conserving lending)
		volatile int borrowedInFlight; // this priority's streams on other lanes' permits
		volatile int queued;

		// drain-only
		int queueSize;
		LaneTicket queueHead;
		LaneTicket queueTail;
		LaneTicket lentHead;
		LaneTicket lentTail;

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
	}

	/** The Mono returned by {@link #acquire(Priority)}. */
	static final class MonoAcquire extends Mono<LanePermit> {

		final PriorityLanes lanes;
		final Priority priority;

		MonoAcquire(PriorityLanes lanes, Priority priority) {
			this.lanes = lanes;
			this.priority = priority;
		}

		@Override
		public void subscribe(CoreSubscriber<? super LanePermit> actual) {
			actual.onSubscribe(new LaneTicket(lanes, priority, actual));
		}
	}

	/**
	 * Builds {@link PriorityLanes}. Every priority needs a lane.
	 *
	 * <pre>{@code
	 * PriorityLanes lanes = PriorityLanes.builder()
	 *     .name("chat")
	 *     .lane(Priority.P0, LaneSpec.of(4))
	 *     .lane(Priority.P1, LaneSpec.of(4))
	 *     .lane(Priority.P2, LaneSpec.of(8))
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder {

		private String name = "lanes";
		private final Map<Priority, LaneSpec> specs = new EnumMap<>(Priority.class);
		private Scheduler timer;
		private GuardMetrics metrics = GuardMetrics.noop();

		private Builder() {
		}

		/**
		 * @param name used in metric tags and messages (default {@code lanes})
		 * @throws IllegalArgumentException when blank
		 */
		public Builder name(String name) {
			if (name == null || name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
			return this;
		}

		/** Sets (or replaces) the lane of {@code priority}. */
		public Builder lane(Priority priority, LaneSpec spec) {
			Objects.requireNonNull(priority, "priority");
			Objects.requireNonNull(spec, "spec");
			specs.put(priority, spec);
			return this;
		}

		/**
		 * The Scheduler that runs queue-wait deadlines and gives the time for waits and aging.
		 * Default: {@link Schedulers#parallel()}, looked up at each use so that
		 * {@code StepVerifier.withVirtualTime} replaces it.
		 */
		public Builder timer(Scheduler timer) {
			this.timer = Objects.requireNonNull(timer, "timer");
			return this;
		}

		/** Where queue waits, rejections, preemptions and the lane gauges are reported. */
		public Builder metrics(GuardMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * @throws IllegalArgumentException when a lane is missing, no lane has any permit, a
		 *         reservation exceeds its lane's concurrency, or preemption is on without lending
		 */
		public PriorityLanes build() {
			int total = 0;
			for (Priority p : PRIORITIES) {
				LaneSpec spec = specs.get(p);
				if (spec == null) {
					throw new IllegalArgumentException("lane " + p + " is not configured: call lane(Priority." + p
							+ ", LaneSpec.of(n))");
				}
				if (spec.reservedForOwn() > spec.concurrency()) {
					throw new IllegalArgumentException("lane " + p + ": reservedForOwn must be <= concurrency ("
							+ spec.concurrency() + "), was " + spec.reservedForOwn());
				}
				if (spec.preemptBorrowers() && spec.lendToLower() == 0.0) {
					throw new IllegalArgumentException("lane " + p
							+ ": preemptBorrowers needs lendToLower > 0 (nothing is lent that could be taken back), was "
							+ spec.lendToLower());
				}
				total += spec.concurrency();
			}
			if (total < 1) {
				throw new IllegalArgumentException("concurrency of all lanes together must be >= 1, was " + total);
			}
			return new PriorityLanes(this);
		}
	}
}
