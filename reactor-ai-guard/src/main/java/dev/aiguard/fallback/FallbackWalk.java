package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;

import dev.aiguard.internal.DemandHandOver;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.Exceptions;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;
import dev.aiguard.core.Source;

/**
 * One walk down a {@link FallbackChain}, per subscription. Each step gets its own
 * {@link StepSubscriber}; a CAS on that subscriber's state decides whether the step commits (its
 * first element) or ends without answering (error, empty, timeout, cancel), so a late signal from
 * an abandoned step is dropped, never delivered.
 */
final class FallbackWalk<T> extends Flux<T> {

	final FallbackChain<T> chain;
	final FallbackRequest request;
	final Scheduler blockingScheduler;
	final Consumer<? super Source> onSourceChosen;
	final GuardMetrics metrics;
	final String policy;

	final Scheduler timer;

	FallbackWalk(FallbackChain<T> chain, FallbackRequest request, Scheduler blockingScheduler, Scheduler timer,
			Consumer<? super Source> onSourceChosen, GuardMetrics metrics, String policy) {
		this.chain = chain;
		this.request = request;
		this.blockingScheduler = blockingScheduler;
		this.timer = timer;
		this.onSourceChosen = onSourceChosen;
		// the one rule for meters that throw (a no-op when the guard's already isolated them)
		this.metrics = GuardMetrics.isolated(metrics);
		this.policy = policy;
	}

	@Override
	public void subscribe(CoreSubscriber<? super T> actual) {
		new WalkSubscription<>(this, actual).start();
	}

	/** The subscriber's subscription: demand hand-over between steps, and the walk itself. */
	static final class WalkSubscription<T> extends DemandHandOver<StepSubscriber<T>> implements Subscription, Scannable {

		final CoreSubscriber<? super T> actual;
		final FallbackWalk<T> walk;
		final List<Fallback<T>> steps;
		final Scheduler timer;
		final long timeoutNanos;
		@Nullable
		final Duration timeout;

		// advanced by one thread at a time: a step's end is decided by one CAS, and only the
		// winner advances; the volatile write of `active` publishes these to the next step's thread
		int nextIndex;
		@Nullable
		List<Throwable> failures;

		volatile @Nullable StepSubscriber<T> active;

		volatile int cancelled;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<WalkSubscription> CANCELLED =
				AtomicIntegerFieldUpdater.newUpdater(WalkSubscription.class, "cancelled");


		WalkSubscription(FallbackWalk<T> walk, CoreSubscriber<? super T> actual) {
			this.walk = walk;
			this.actual = actual;
			this.steps = walk.chain.steps();
			this.timer = walk.timer;
			this.timeout = walk.chain.timeout().orElse(null);
			this.timeoutNanos = timeout == null ? -1L : timeout.toNanos();
		}

		void start() {
			actual.onSubscribe(this);
			advance();
		}

		/** Subscribes the next step, or ends the walk when none is left. */
		void advance() {
			if (stopped()) {
				return;
			}
			int index = nextIndex;
			if (index == steps.size()) {
				exhausted();
				return;
			}
			nextIndex = index + 1;
			Fallback<T> step = steps.get(index);
			StepSubscriber<T> s = new StepSubscriber<>(this, step, index, timer.now(TimeUnit.NANOSECONDS));
			active = s;
			// cancel() sets `cancelled` then reads `active`: one of the two sides sees the other
			if (cancelled != 0) {
				s.abandon();
				return;
			}
			handOver(s);
			if (timeoutNanos > 0L && step.source() != Source.STATIC) {
				try {
					s.armTimeout(timer.schedule(s, timeoutNanos, TimeUnit.NANOSECONDS));
				}
				catch (RejectedExecutionException timerRejected) {
					s.onError(timerRejected);
					return;
				}
			}
			if (step.mayBlock()) {
				// the hop may land after the subscriber stopped wanting the answer: the step then never starts
				Flux.defer(() -> stopped() ? Flux.<T>never() : step.answer(walk.request))
						.subscribeOn(walk.blockingScheduler)
						.subscribe(s);
				return;
			}
			Publisher<T> answer;
			try {
				answer = Objects.requireNonNull(step.answer(walk.request), "the step's answer() returned null");
			}
			catch (Throwable stepFailure) {
				Exceptions.throwIfJvmFatal(stepFailure);
				Operators.error(s, stepFailure);
				return;
			}
			answer.subscribe(s);
		}

		/**
		 * @return whether no step may start: the walk was cancelled, or its subscriber scans as
		 *         cancelled — a guard's attempt being aborted (a preempted request) says so before it
		 *         cancels the walk, and cancels it soon after
		 */
		boolean stopped() {
			return cancelled != 0 || Boolean.TRUE.equals(Scannable.from(actual).scanUnsafe(Attr.CANCELLED));
		}

		// ---- step ends (each called by the winner of the step's state CAS) ----

		void committed(StepSubscriber<T> s) {
			Source source = s.step.source();
			try {
				walk.onSourceChosen.accept(source);
			}
			catch (Throwable listenerFailure) {
				Operators.onErrorDropped(listenerFailure, actual.currentContext());
			}
			if (source == Source.CACHE && walk.request.cacheKey() != null) {
				walk.metrics.cacheLookup(walk.policy, true);
			}
		}

		void answered(StepSubscriber<T> s) {
			Source source = s.step.source();
			walk.metrics.fallbackStepTime(walk.policy, walk.request.priority(), source, elapsed(s));
			walk.metrics.answered(walk.policy, walk.request.priority(), source);
		}

		void failedAfterCommit(StepSubscriber<T> s) {
			recordFailure(s, false);
		}

		void failed(StepSubscriber<T> s, Throwable error) {
			if (active != s) {
				// cannot happen: only the active step can end undecided; keep the walk sane anyway
				Operators.onErrorDropped(error, actual.currentContext());
				return;
			}
			recordFailure(s, true);
			if (failures == null) {
				failures = new ArrayList<>(steps.size());
			}
			failures.add(error);
			advance();
		}

		private void recordFailure(StepSubscriber<T> s, boolean beforeCommit) {
			Source source = s.step.source();
			walk.metrics.fallbackStepTime(walk.policy, walk.request.priority(), source, elapsed(s));
			walk.metrics.fallbackStepFailed(walk.policy, walk.request.priority(), source);
			if (beforeCommit && source == Source.CACHE && walk.request.cacheKey() != null) {
				walk.metrics.cacheLookup(walk.policy, false);
			}
		}

		private long elapsed(StepSubscriber<T> s) {
			return Math.max(0L, timer.now(TimeUnit.NANOSECONDS) - s.startNanos);
		}

		/** Every step failed: the last error, carrying the cause and the earlier ones. */
		private void exhausted() {
			List<Throwable> all = Objects.requireNonNull(failures, "failures");
			// a chain has at least one step, so at least one failure was recorded
			Throwable last = all.get(all.size() - 1);
			Throwable error = Exceptions.addSuppressed(last, walk.request.cause());
			for (int i = 0; i < all.size() - 1; i++) {
				error = Exceptions.addSuppressed(error, all.get(i));
			}
			actual.onError(error);
		}

		// ---- Subscription ----

		@Override
		public void request(long n) {
			if (Operators.validate(n)) {
				addDemand(n);
			}
		}

		@Override
		public void cancel() {
			if (!CANCELLED.compareAndSet(this, 0, 1)) {
				return;
			}
			StepSubscriber<T> s = active;
			if (s != null) {
				s.abandon();
			}
		}

		/** Before a step commits it has delivered nothing, so its successor inherits all demand. */
		@Override
		protected long consumedBy(StepSubscriber<T> previous) {
			return 0L;
		}

		@Override
		@Nullable
		public Object scanUnsafe(Attr key) {
			if (key == Attr.ACTUAL) {
				return actual;
			}
			if (key == Attr.PARENT) {
				return active;
			}
			if (key == Attr.CANCELLED) {
				return cancelled != 0;
			}
			if (key == Attr.REQUESTED_FROM_DOWNSTREAM) {
				return outstandingDemand();
			}
			if (key == Attr.RUN_STYLE) {
				return Attr.RunStyle.SYNC;
			}
			return null;
		}
	}

	/**
	 * Subscribes to one step. Its state moves once from PENDING to COMMITTED (first element) or to
	 * ENDED (failed, timed out, cancelled), and once from COMMITTED to ENDED; each move is a CAS,
	 * and only its winner signals or records anything.
	 */
	static final class StepSubscriber<T> extends Operators.DeferredSubscription
			implements CoreSubscriber<T>, Runnable {

		static final int PENDING = 0;
		static final int COMMITTED = 1;
		static final int ENDED = 2;

		static final Disposable DISARMED = Disposables.disposed();

		final WalkSubscription<T> parent;
		final Fallback<T> step;
		final int index;
		final long startNanos;

		volatile int state;
		@SuppressWarnings("rawtypes")
		static final AtomicIntegerFieldUpdater<StepSubscriber> STATE =
				AtomicIntegerFieldUpdater.newUpdater(StepSubscriber.class, "state");

		volatile @Nullable Disposable timeoutTask;
		@SuppressWarnings("rawtypes")
		static final AtomicReferenceFieldUpdater<StepSubscriber, Disposable> TIMEOUT_TASK =
				AtomicReferenceFieldUpdater.newUpdater(StepSubscriber.class, Disposable.class, "timeoutTask");

		// onNext, onError and onComplete are serial: a plain field suffices once committed
		boolean committed;

		StepSubscriber(WalkSubscription<T> parent, Fallback<T> step, int index, long startNanos) {
			this.parent = parent;
			this.step = step;
			this.index = index;
			this.startNanos = startNanos;
		}

		@Override
		public Context currentContext() {
			return parent.actual.currentContext();
		}

		@Override
		public void onSubscribe(Subscription s) {
			set(s);
		}

		@Override
		public void onNext(T t) {
			if (committed) {
				parent.actual.onNext(t);
				return;
			}
			if (STATE.compareAndSet(this, PENDING, COMMITTED)) {
				committed = true;
				disarm();
				parent.committed(this);
				parent.actual.onNext(t);
			}
			else {
				Operators.onNextDropped(t, currentContext());
			}
		}

		@Override
		public void onError(Throwable t) {
			if (committed) {
				if (STATE.compareAndSet(this, COMMITTED, ENDED)) {
					parent.failedAfterCommit(this);
					parent.actual.onError(t);
				}
				else {
					Operators.onErrorDropped(t, currentContext());
				}
				return;
			}
			if (STATE.compareAndSet(this, PENDING, ENDED)) {
				disarm();
				parent.failed(this, t);
			}
			else {
				Operators.onErrorDropped(t, currentContext());
			}
		}

		@Override
		public void onComplete() {
			if (committed) {
				if (STATE.compareAndSet(this, COMMITTED, ENDED)) {
					parent.answered(this);
					parent.actual.onComplete();
				}
				return;
			}
			if (STATE.compareAndSet(this, PENDING, ENDED)) {
				disarm();
				parent.failed(this, new EmptyStepException(index, step.source()));
			}
		}

		/**
		 * The step timeout: fires only while no element has arrived. The walk moves on first; the
		 * step is cancelled afterwards on the blocking scheduler, since a step may be a client whose
		 * cancel blocks (closing an HTTP response) and this runs on the shared timer.
		 */
		@Override
		public void run() {
			if (STATE.compareAndSet(this, PENDING, ENDED)) {
				parent.failed(this, new TimeoutException("fallback step " + index + " (" + step.source()
						+ ") gave no answer within " + parent.timeout));
				try {
					parent.walk.blockingScheduler.schedule(this::cancelStep);
				}
				catch (Throwable rejected) {
					cancelStep();
				}
			}
		}

		private void cancelStep() {
			super.cancel();
		}

		/** The subscriber cancelled: end this step quietly, whatever its state. */
		void abandon() {
			for (;;) {
				int s = state;
				if (s == ENDED || STATE.compareAndSet(this, s, ENDED)) {
					break;
				}
			}
			disarm();
			super.cancel();
		}

		void armTimeout(Disposable task) {
			if (!TIMEOUT_TASK.compareAndSet(this, null, task)) {
				task.dispose();
			}
		}

		private void disarm() {
			Disposable task = TIMEOUT_TASK.getAndSet(this, DISARMED);
			if (task != null) {
				task.dispose();
			}
		}

		@Override
		@Nullable
		public Object scanUnsafe(Attr key) {
			if (key == Attr.ACTUAL) {
				return parent;
			}
			if (key == Attr.TERMINATED) {
				return state == ENDED;
			}
			if (key == Attr.NAME) {
				return "fallback step " + index + " (" + step.source() + ")";
			}
			return super.scanUnsafe(key);
		}
	}

	/** A step completed without an element. Cheap: no stack trace, as misses are routine. */
	static final class EmptyStepException extends NoSuchElementException {

		private static final long serialVersionUID = 1L;

		EmptyStepException(int index, Source source) {
			super("fallback step " + index + " (" + source + ") completed without an answer");
		}

		@Override
		public synchronized Throwable fillInStackTrace() {
			return this;
		}
	}
}
