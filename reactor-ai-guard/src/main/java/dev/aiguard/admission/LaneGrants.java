package dev.aiguard.admission;

import java.util.Objects;

import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.core.Priority;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.metrics.GuardMetrics;
import org.reactivestreams.Subscriber;

/**
 * The end of a ticket's wait: a permit handed to its subscriber, or a typed refusal. Each one is
 * decided by one CAS on the ticket's state, so a grant and a cancel (or a refusal and a cancel)
 * racing each other settle the permit exactly once.
 */
final class LaneGrants {

	private final String name;
	private final GuardMetrics metrics;
	private final Lane[] lanes;
	private final LaneBorrowing borrowing;

	LaneGrants(String name, GuardMetrics metrics, Lane[] lanes, LaneBorrowing borrowing) {
		this.name = name;
		this.metrics = metrics;
		this.lanes = lanes;
		this.borrowing = borrowing;
	}

	/**
	 * Gives {@code t} a permit of {@code lane} already taken from the lane's free count (drain
	 * loop, or an arrival's own lane before the drain loop is involved).
	 *
	 * @return false when the ticket was cancelled meanwhile: the caller gives the permit back
	 */
	boolean grant(LaneTicket t, Lane lane, long waitedNanos) {
		t.lane = lane;
		t.grantedLane = lane.priority; // before GRANTED: a racing cancel() releases by it
		if (!LaneTicket.STATE.compareAndSet(t, LaneTicket.PENDING, LaneTicket.GRANTED)) {
			return false;
		}
		borrowing.granted(t, lane);
		metrics.admissionWaited(name, t.priority, waitedNanos);
		if (LaneTicket.STATE.compareAndSet(t, LaneTicket.GRANTED, LaneTicket.DELIVERED)) {
			deliver(t);
		}
		// else cancel() won between the two CASes and releases the permit itself
		return true;
	}

	/**
	 * The fast path's grant: a permit of the ticket's own lane, taken with nobody waiting, goes
	 * from NEW straight to DELIVERED.
	 *
	 * @return false when a cancel got there first: nobody saw the permit, the caller gives it back
	 */
	boolean grantAtOnce(LaneTicket t, Lane own) {
		t.lane = own;
		t.grantedLane = own.priority; // before DELIVERED, like grant()
		if (!LaneTicket.STATE.compareAndSet(t, LaneTicket.NEW, LaneTicket.DELIVERED)) {
			return false;
		}
		metrics.admissionWaited(name, t.priority, 0L);
		deliver(t);
		return true;
	}

	/** A permit taken by {@link PriorityLanes#tryAcquire}: delivered by returning it. */
	LanePermit grantedNow(LaneArbiter arbiter, Lane own) {
		LaneTicket t = LaneTicket.grantedNow(arbiter, own);
		metrics.admissionWaited(name, own.priority, 0L);
		return t;
	}

	/** Hands a DELIVERED ticket's permit to its subscriber. */
	private static void deliver(LaneTicket t) {
		Subscriber<? super LanePermit> actual = subscriber(t);
		try {
			actual.onNext(t);
			actual.onComplete();
		}
		catch (Throwable e) {
			// a subscriber that throws cannot be trusted to release: take the permit back
			Callbacks.dropped(e);
			t.release();
		}
	}

	/** Refuses a waiting ticket, unless it was cancelled meanwhile. */
	void reject(LaneTicket t, Reason reason) {
		if (LaneTicket.STATE.compareAndSet(t, LaneTicket.PENDING, LaneTicket.REJECTED)) {
			deliverError(t, reason);
		}
	}

	private void deliverError(LaneTicket t, Reason reason) {
		metrics.admissionRejected(name, t.priority, reason.name());
		Subscriber<? super LanePermit> actual = subscriber(t);
		try {
			actual.onError(new AdmissionRejectedException(t.priority, reason, message(t.priority, reason)));
		}
		catch (Throwable e) {
			Callbacks.dropped(e);
		}
	}

	/** Only tickets of the acquire Mono wait and are delivered; a permit granted at once has no subscriber. */
	private static Subscriber<? super LanePermit> subscriber(LaneTicket t) {
		return Objects.requireNonNull(t.actual, "actual");
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

	/** Reports a lent permit taken back from {@code victim} for a more urgent request. */
	void preempted(LaneTicket victim, Lane lane) {
		victim.firePreempted(new PreemptedException(victim.priority, lane.priority));
		metrics.preempted(name, victim.priority);
	}
}
