package dev.aiguard.admission;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Consumer;

import dev.aiguard.core.Priority;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

import org.jspecify.annotations.Nullable;

/**
 * Runs one subscription of the source under a lane permit; see {@link PriorityLanes#admit()}.
 *
 * <p>Signals reaching the subscriber: the source's, or one error from admission (rejected) or
 * from preemption. A preemption arrives on the thread of the arrival that caused it, possibly
 * while the source is emitting, so terminal signals go through a small serializer: one CAS on
 * {@code done} picks the single terminal signal, {@code wip} keeps it from overlapping an
 * {@code onNext}.
 */
final class FluxAdmit<T> extends FluxOperator<T, T> {

	final PriorityLanes lanes;
	final Priority whenAbsent;
	final boolean subscribeOnLane;

	FluxAdmit(Flux<? extends T> source, PriorityLanes lanes, Priority whenAbsent, boolean subscribeOnLane) {
		super(source);
		this.lanes = lanes;
		this.whenAbsent = whenAbsent;
		this.subscribeOnLane = subscribeOnLane;
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
		AdmitMainSubscriber<T> main = new AdmitMainSubscriber<>(actual, source, priority, subscribeOnLane);
		actual.onSubscribe(main);
		LaneAdmission waiting = LaneAdmission.await(lanes, priority, main);
		main.admission = waiting;
		if (main.cancelled == 1) {
			// cancel() may have run before the wait was stored
			waiting.dispose();
		}
	}

	static final class AdmitMainSubscriber<T> extends Operators.DeferredSubscription
			implements CoreSubscriber<T>, Consumer<PreemptedException>, LaneAdmission.Owner {

		final CoreSubscriber<? super T> actual;
		final Flux<? extends T> source;
		final Priority priority;
		final boolean subscribeOnLane;
		volatile @Nullable LaneAdmission admission;

		volatile @Nullable LanePermit permit;

		volatile int cancelled;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<AdmitMainSubscriber> CANCELLED =
				AtomicIntegerFieldUpdater.newUpdater(AdmitMainSubscriber.class, "cancelled");

		/** One terminal signal: set by whoever delivers complete or error. */
		volatile int done;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<AdmitMainSubscriber> DONE =
				AtomicIntegerFieldUpdater.newUpdater(AdmitMainSubscriber.class, "done");

		/** 1 while onNext runs; incremented by the terminal signal, which the last one out delivers. */
		volatile int wip;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<AdmitMainSubscriber> WIP =
				AtomicIntegerFieldUpdater.newUpdater(AdmitMainSubscriber.class, "wip");

		/** The terminal error, or null for completion; written before {@code wip} is raised. */
		@Nullable Throwable terminal;

		AdmitMainSubscriber(CoreSubscriber<? super T> actual, Flux<? extends T> source, Priority priority,
				boolean subscribeOnLane) {
			this.actual = actual;
			this.source = source;
			this.priority = priority;
			this.subscribeOnLane = subscribeOnLane;
		}

		@Override
		public Context currentContext() {
			return actual.currentContext();
		}

		// ---- admission ----

		@Override
		public void admitted(LanePermit granted) {
			this.permit = granted;
			if (cancelled == 1 || done == 1) {
				granted.release();
				return;
			}
			granted.onPreempted(this);
			Flux<? extends T> upstream = subscribeOnLane ? source.subscribeOn(granted.scheduler()) : source;
			upstream.subscribe(this);
		}

		@Override
		public void refused(Throwable error) {
			terminate(error);
		}

		// ---- the source ----

		@Override
		public void onSubscribe(Subscription s) {
			set(s);
		}

		@Override
		public void onNext(T t) {
			if (wip == 0 && WIP.compareAndSet(this, 0, 1)) {
				actual.onNext(t);
				if (WIP.decrementAndGet(this) != 0) {
					emitTerminal();
				}
			}
			else {
				Operators.onDiscard(t, actual.currentContext());
			}
		}

		@Override
		public void onError(Throwable t) {
			terminate(t);
		}

		@Override
		public void onComplete() {
			terminate(null);
		}

		/** Preemption: the lanes took the permit back. */
		@Override
		public void accept(PreemptedException e) {
			if (done == 1) {
				return; // the stream ended as the permit was taken back: nothing to report
			}
			super.cancel();
			terminate(e);
		}

		private void terminate(@Nullable Throwable error) {
			if (!DONE.compareAndSet(this, 0, 1)) {
				if (error != null && !(error instanceof PreemptedException)) {
					Operators.onErrorDropped(error, actual.currentContext());
				}
				return;
			}
			releasePermit();
			terminal = error;
			if (WIP.getAndIncrement(this) == 0) {
				emitTerminal();
			}
		}

		private void emitTerminal() {
			if (cancelled == 1) {
				return;
			}
			Throwable error = terminal;
			if (error == null) {
				actual.onComplete();
			}
			else {
				actual.onError(error);
			}
		}

		// ---- downstream ----

		@Override
		public void cancel() {
			if (CANCELLED.compareAndSet(this, 0, 1)) {
				super.cancel();
				LaneAdmission a = admission;
				if (a != null) {
					a.dispose();
				}
				releasePermit();
			}
		}

		private void releasePermit() {
			LanePermit p = permit;
			if (p != null) {
				p.release();
			}
		}
	}
}
