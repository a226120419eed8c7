package dev.aiguard.internal;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import org.reactivestreams.Subscription;
import reactor.core.publisher.Operators;

import org.jspecify.annotations.Nullable;

/**
 * Carries a subscriber's demand from one inner subscription to the next, for operators that
 * subscribe sources one after another on behalf of one subscriber (the guard's attempts, the
 * fallback ladder's steps). Demand from the subscriber and the switch to a new inner
 * subscription are serialised by one drain loop; the new one is asked for what the subscriber
 * requested minus what the previous ones {@linkplain #consumedBy delivered}.
 *
 * <pre>{@code
 * final class Ladder extends DemandHandOver<Step> implements Subscription {
 *     public void request(long n) { if (Operators.validate(n)) addDemand(n); }
 *     protected long consumedBy(Step previous) { return previous.delivered(); }
 * }
 * }</pre>
 *
 * @param <S> the inner subscription type
 */
public abstract class DemandHandOver<S extends Subscription> {

	volatile int wip;
	@SuppressWarnings("rawtypes")
	static final AtomicIntegerFieldUpdater<DemandHandOver> WIP =
			AtomicIntegerFieldUpdater.newUpdater(DemandHandOver.class, "wip");

	volatile long missedRequested;
	@SuppressWarnings("rawtypes")
	static final AtomicLongFieldUpdater<DemandHandOver> MISSED_REQUESTED =
			AtomicLongFieldUpdater.newUpdater(DemandHandOver.class, "missedRequested");

	volatile @Nullable Subscription missedNext;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<DemandHandOver, Subscription> MISSED_NEXT =
			AtomicReferenceFieldUpdater.newUpdater(DemandHandOver.class, Subscription.class, "missedNext");

	// touched only inside the drain loop
	private @Nullable S current;
	private long outstanding;

	/** @return how many items {@code previous} delivered, which the next one must not be asked for again */
	protected abstract long consumedBy(S previous);

	/** Adds the subscriber's demand ({@code n} already validated) and passes it to the current one. */
	protected final void addDemand(long n) {
		if (wip == 0 && WIP.compareAndSet(this, 0, 1)) {
			// nobody else is in the loop: serve the demand directly, without parking it in missedRequested
			outstanding = Operators.addCap(outstanding, n);
			S s = current;
			if (s != null) {
				s.request(n);
			}
			if (WIP.decrementAndGet(this) != 0) {
				drainLoop();
			}
			return;
		}
		Operators.addCap(MISSED_REQUESTED, this, n);
		if (WIP.getAndIncrement(this) == 0) {
			drainLoop();
		}
	}

	/** Makes {@code next} the inner subscription; it is asked for the demand still outstanding. */
	protected final void handOver(S next) {
		if (wip == 0 && WIP.compareAndSet(this, 0, 1)) {
			switchTo(next);
			if (WIP.decrementAndGet(this) != 0) {
				drainLoop();
			}
			return;
		}
		missedNext = next;
		if (WIP.getAndIncrement(this) == 0) {
			drainLoop();
		}
	}

	/** @return the demand not yet served, as last seen by the drain loop */
	protected final long outstandingDemand() {
		return outstanding;
	}

	private void switchTo(S next) {
		S previous = current;
		if (previous != null && outstanding != Long.MAX_VALUE) {
			outstanding -= consumedBy(previous);
		}
		current = next;
		if (outstanding > 0L) {
			next.request(outstanding);
		}
	}

	/** Entered with the loop owned (wip was 0); serves what others parked until nothing is left. */
	@SuppressWarnings("unchecked")
	private void drainLoop() {
		int missed = 1;
		for (;;) {
			// plain reads first: a swap is only paid when there is something to take
			S next = missedNext == null ? null : (S) MISSED_NEXT.getAndSet(this, null);
			if (next != null) {
				switchTo(next);
			}
			long r = missedRequested == 0L ? 0L : MISSED_REQUESTED.getAndSet(this, 0L);
			if (r != 0L) {
				outstanding = Operators.addCap(outstanding, r);
				S s = current;
				if (s != null) {
					s.request(r);
				}
			}
			missed = WIP.addAndGet(this, -missed);
			if (missed == 0) {
				return;
			}
		}
	}
}
