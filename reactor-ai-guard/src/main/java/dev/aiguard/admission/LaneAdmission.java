package dev.aiguard.admission;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * Waits for one lane permit on behalf of one request and hands the result to its {@link Owner}:
 * the permit, or why it was refused. Both {@link PriorityLanes#admit()} and the guard admit
 * requests through it. A permit granted while the wait is being disposed (a cancel racing the
 * grant) is still handed over, so the owner releases it instead of losing it.
 *
 * <pre>{@code
 * LaneAdmission waiting = LaneAdmission.await(lanes, Priority.P1, owner);
 * // later, when the request is cancelled:
 * waiting.dispose();
 * }</pre>
 */
public final class LaneAdmission implements CoreSubscriber<LanePermit>, Disposable {

	/** The request waiting for a permit. */
	public interface Owner {

		/** The permit was granted; the owner releases it exactly once (releasing again does nothing). */
		void admitted(LanePermit permit);

		/** The lanes refused (queue full, wait timed out, lanes disposed), or {@link #admitted} threw. */
		void refused(Throwable rejection);

		/** @return the context the wait runs with (the request's) */
		Context currentContext();
	}

	private final Owner owner;

	volatile @Nullable Subscription s;
	static final AtomicReferenceFieldUpdater<LaneAdmission, Subscription> S =
			AtomicReferenceFieldUpdater.newUpdater(LaneAdmission.class, Subscription.class, "s");

	private LaneAdmission(Owner owner) {
		this.owner = owner;
	}

	/**
	 * Starts waiting for a permit of {@code priority}; a free one may be granted before this returns.
	 *
	 * @return the wait, to dispose when the request is cancelled
	 */
	public static LaneAdmission await(PriorityLanes lanes, Priority priority, Owner owner) {
		LaneAdmission waiting = new LaneAdmission(Objects.requireNonNull(owner, "owner"));
		lanes.acquire(priority).subscribe(waiting);
		return waiting;
	}

	@Override
	public Context currentContext() {
		return owner.currentContext();
	}

	@Override
	public void onSubscribe(Subscription subscription) {
		if (Operators.setOnce(S, this, subscription)) {
			subscription.request(1);
		}
	}

	@Override
	public void onNext(LanePermit permit) {
		try {
			owner.admitted(permit);
		}
		catch (Throwable e) {
			Exceptions.throwIfJvmFatal(e);
			permit.release();
			owner.refused(Operators.onOperatorError(e, owner.currentContext()));
		}
	}

	@Override
	public void onError(Throwable rejection) {
		owner.refused(rejection);
	}

	@Override
	public void onComplete() {
		// the permit, if any, was handed over in onNext
	}

	@Override
	public void dispose() {
		Operators.terminate(S, this);
	}

	@Override
	public boolean isDisposed() {
		return s == Operators.cancelledSubscription();
	}
}
