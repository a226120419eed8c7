package dev.aiguard.load;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The governor as an operator; see {@link LoadGovernor#admit(Priority)}. At subscription it counts
 * the arrival and asks for the priority's action: a shed priority gets the governor's refusal at
 * once and the source is never subscribed; otherwise the source passes through and one CAS on
 * {@code state} decides whether completion, error or cancellation ends it, which is the outcome
 * recorded.
 */
final class FluxLoadAdmit<T> extends FluxOperator<T, T> {

	final LoadGovernor governor;
	final Priority whenAbsent;

	FluxLoadAdmit(Flux<? extends T> source, LoadGovernor governor, Priority whenAbsent) {
		super(source);
		this.governor = governor;
		this.whenAbsent = whenAbsent;
	}

	@Override
	public void subscribe(CoreSubscriber<? super T> actual) {
		Priority priority;
		try {
			priority = Priority.from(actual.currentContext(), whenAbsent);
		}
		catch (IllegalArgumentException e) {
			Operators.error(actual, e);
			return;
		}
		governor.arrived(priority);
		LoadAction action = governor.action(priority);
		if (action == LoadAction.SHED || action == LoadAction.STATIC_OR_SHED) {
			Operators.error(actual, governor.shed(priority));
			return;
		}
		source.subscribe(new LoadAdmitSubscriber<>(actual, governor, governor.nanos()));
	}

	@Override
	public @Nullable Object scanUnsafe(Attr key) {
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.SYNC;
		}
		return super.scanUnsafe(key);
	}

	static final class LoadAdmitSubscriber<T> implements CoreSubscriber<T>, Subscription, Scannable {

		static final int ACTIVE = 0;
		static final int TERMINATED = 1;
		static final int CANCELLED = 2;

		final CoreSubscriber<? super T> actual;
		final LoadGovernor governor;
		final long startNanos;

		@Nullable
		Subscription s;
		/** Written by onNext only (signals are serial). */
		boolean firstSeen;

		volatile int state;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<LoadAdmitSubscriber> STATE =
				AtomicIntegerFieldUpdater.newUpdater(LoadAdmitSubscriber.class, "state");

		LoadAdmitSubscriber(CoreSubscriber<? super T> actual, LoadGovernor governor, long startNanos) {
			this.actual = actual;
			this.governor = governor;
			this.startNanos = startNanos;
		}

		@Override
		public Context currentContext() {
			return actual.currentContext();
		}

		@Override
		public void onSubscribe(Subscription s) {
			if (Operators.validate(this.s, s)) {
				this.s = s;
				actual.onSubscribe(this);
			}
		}

		@Override
		public void onNext(T t) {
			int st = state;
			if (st != ACTIVE) {
				if (st == TERMINATED) {
					Operators.onNextDropped(t, actual.currentContext());
				}
				else {
					Operators.onDiscard(t, actual.currentContext());
				}
				return;
			}
			if (!firstSeen) {
				firstSeen = true;
				governor.firstToken(governor.nanos() - startNanos);
			}
			actual.onNext(t);
		}

		@Override
		public void onError(Throwable t) {
			if (!STATE.compareAndSet(this, ACTIVE, TERMINATED)) {
				Operators.onErrorDropped(t, actual.currentContext());
				return;
			}
			// a refusal further down the chain is not the service's failure
			governor.ended(t instanceof AdmissionRejectedException ? Outcome.REJECTED : Outcome.FAILURE);
			actual.onError(t);
		}

		@Override
		public void onComplete() {
			if (!STATE.compareAndSet(this, ACTIVE, TERMINATED)) {
				return;
			}
			governor.ended(Outcome.SUCCESS);
			actual.onComplete();
		}

		@Override
		public void request(long n) {
			Subscription upstream = s;
			if (upstream != null) {
				upstream.request(n);
			}
		}

		@Override
		public void cancel() {
			if (STATE.compareAndSet(this, ACTIVE, CANCELLED)) {
				governor.ended(Outcome.CANCELLED);
			}
			Subscription upstream = s;
			if (upstream != null) {
				upstream.cancel();
			}
		}

		@Override
		public @Nullable Object scanUnsafe(Attr key) {
			if (key == Attr.PARENT) {
				return s;
			}
			if (key == Attr.ACTUAL) {
				return actual;
			}
			if (key == Attr.TERMINATED) {
				return state == TERMINATED;
			}
			if (key == Attr.CANCELLED) {
				return state == CANCELLED;
			}
			if (key == Attr.RUN_STYLE) {
				return Attr.RunStyle.SYNC;
			}
			return null;
		}
	}
}
