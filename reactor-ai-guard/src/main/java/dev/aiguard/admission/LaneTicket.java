package dev.aiguard.admission;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * One subscription to {@link PriorityLanes#acquire(Priority)}: first a request waiting for
 * capacity, then, once granted, the {@link LanePermit} itself (one object for both, so an
 * admission allocates nothing else).
 *
 * <p>Threads never touch the lanes' bookkeeping directly: they flip an operation bit here and
 * queue the ticket for the lanes' drain loop ({@link LaneArbiter}), which owns every drain-only
 * field below.
 */
final class LaneTicket implements Subscription, LanePermit, Runnable {

	// lifecycle
	static final int NEW = 0; // subscribed, nothing requested yet
	static final int PENDING = 1; // handed to the drain: arriving or queued
	static final int GRANTED = 2; // a permit is assigned, not yet delivered
	static final int DELIVERED = 3; // onNext(permit) was called: the subscriber owns it
	static final int CANCELLED = 4; // cancelled before delivery
	static final int REJECTED = 5; // refused with an AdmissionRejectedException

	// operations waiting for the drain loop
	static final int OP_SUBMIT = 1;
	static final int OP_CANCEL = 2;
	static final int OP_TIMEOUT = 4;
	static final int OP_RELEASE = 8;

	private static final Object RELEASED_MARK = new Object();
	private static final Object PREEMPTED_MARK = new Object();

	final LaneArbiter arbiter;
	final Priority priority;
	/** The acquire Mono's subscriber; {@code null} for a permit {@linkplain #grantedNow granted at once}. */
	@Nullable
	final CoreSubscriber<? super LanePermit> actual;

	volatile int state;
	static final AtomicIntegerFieldUpdater<LaneTicket> STATE =
			AtomicIntegerFieldUpdater.newUpdater(LaneTicket.class, "state");

	volatile int ops;
	static final AtomicIntegerFieldUpdater<LaneTicket> OPS = AtomicIntegerFieldUpdater.newUpdater(LaneTicket.class,
			"ops");

	/** 1 once the permit was handed back, by {@link #release()} or by preemption: whoever sets it frees it. */
	volatile int released;
	static final AtomicIntegerFieldUpdater<LaneTicket> RELEASED =
			AtomicIntegerFieldUpdater.newUpdater(LaneTicket.class, "released");

	/** null, one Consumer, a Consumer[], or a mark once released or preempted. */
	volatile @Nullable Object hooks;
	static final AtomicReferenceFieldUpdater<LaneTicket, Object> HOOKS =
			AtomicReferenceFieldUpdater.newUpdater(LaneTicket.class, Object.class, "hooks");

	/** Written before the PREEMPTED mark is published; read only after seeing that mark. */
	@SuppressWarnings("NullAway.Init")
	PreemptedException preemption;

	/** The lane whose permit was granted; written before the state moves to DELIVERED. */
	@SuppressWarnings("NullAway.Init")
	Priority grantedLane;

	/** The granted lane's state; written before GRANTED like {@link #grantedLane}. */
	@SuppressWarnings("NullAway.Init")
	Lane lane;

	// ---- owned by the drain loop ----
	boolean linked;
	boolean freed;
	@Nullable LaneTicket prev;
	@Nullable LaneTicket next;
	long seq;
	long enqueuedAtNanos;
	@Nullable Disposable timeout;

	LaneTicket(LaneArbiter arbiter, Priority priority, @Nullable CoreSubscriber<? super LanePermit> actual) {
		this.arbiter = arbiter;
		this.priority = priority;
		this.actual = actual;
	}

	/** A permit of {@code lane}'s own priority, taken by {@link PriorityLanes#tryAcquire}: already delivered. */
	static LaneTicket grantedNow(LaneArbiter arbiter, Lane lane) {
		LaneTicket t = new LaneTicket(arbiter, lane.priority, null);
		t.lane = lane;
		t.grantedLane = lane.priority;
		t.state = DELIVERED;
		return t;
	}

	// ---- Subscription (the acquire Mono) ----

	@Override
	public void request(long n) {
		// a ticket that is not NEW was requested before: the state only moves on from NEW
		if (Operators.validate(n) && state == NEW && !arbiter.grantAtOnce(this)
				&& STATE.compareAndSet(this, NEW, PENDING)) {
			arbiter.submit(this);
		}
	}

	@Override
	public void cancel() {
		for (;;) {
			int s = state;
			if (s == NEW) {
				if (STATE.compareAndSet(this, NEW, CANCELLED)) {
					return;
				}
			}
			else if (s == PENDING) {
				if (STATE.compareAndSet(this, PENDING, CANCELLED)) {
					arbiter.signal(this, OP_CANCEL);
					return;
				}
			}
			else if (s == GRANTED) {
				// granted but not delivered: nobody else will ever see this permit, hand it back
				if (STATE.compareAndSet(this, GRANTED, CANCELLED)) {
					release();
					return;
				}
			}
			else {
				return;
			}
		}
	}

	// ---- Runnable: the queue-wait deadline ----

	@Override
	public void run() {
		arbiter.signal(this, OP_TIMEOUT);
	}

	// ---- LanePermit ----

	@Override
	public Priority priority() {
		return priority;
	}

	@Override
	public Priority lane() {
		return grantedLane;
	}

	@Override
	public Scheduler scheduler() {
		return arbiter.scheduler(priority);
	}

	@Override
	public void release() {
		if (RELEASED.compareAndSet(this, 0, 1)) {
			// a plain ordered store is enough: preemption can no longer claim this permit, so a hook
			// that a racing onPreempted manages to add first would never run anyway
			HOOKS.lazySet(this, RELEASED_MARK);
			arbiter.released(this);
		}
	}

	@Override
	public boolean held() {
		return released == 0;
	}

	@Override
	public void onPreempted(Consumer<PreemptedException> action) {
		if (action == null) {
			throw new NullPointerException("action");
		}
		for (;;) {
			Object h = hooks;
			if (h == PREEMPTED_MARK) {
				runHook(action, preemption);
				return;
			}
			if (h == RELEASED_MARK) {
				return;
			}
			Object next;
			if (h == null) {
				next = action;
			}
			else if (h instanceof Consumer) {
				next = new Object[] { h, action };
			}
			else {
				Object[] old = (Object[]) h;
				Object[] grown = new Object[old.length + 1];
				System.arraycopy(old, 0, grown, 0, old.length);
				grown[old.length] = action;
				next = grown;
			}
			if (HOOKS.compareAndSet(this, h, next)) {
				return;
			}
		}
	}

	/** Takes the permit back for preemption; false when the holder is already releasing it. */
	boolean claimForPreemption() {
		return RELEASED.compareAndSet(this, 0, 1);
	}

	/** Runs the preemption actions; called once, after {@link #claimForPreemption()} succeeded. */
	void firePreempted(PreemptedException error) {
		this.preemption = error;
		Object h = HOOKS.getAndSet(this, PREEMPTED_MARK);
		if (h instanceof Consumer) {
			runHook(h, error);
		}
		else if (h instanceof Object[]) {
			for (Object each : (Object[]) h) {
				runHook(each, error);
			}
		}
	}

	@SuppressWarnings("unchecked")
	private void runHook(Object hook, PreemptedException error) {
		try {
			((Consumer<PreemptedException>) hook).accept(error);
		}
		catch (Throwable t) {
			Operators.onErrorDropped(t, actual != null ? actual.currentContext() : Context.empty());
		}
	}

	@Override
	public String toString() {
		return "LanePermit{priority=" + priority + ", lane=" + grantedLane + ", state=" + state + ", released="
				+ (released == 1) + '}';
	}
}
