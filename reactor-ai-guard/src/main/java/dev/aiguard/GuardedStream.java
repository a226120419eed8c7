package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;

import dev.aiguard.fallback.Source;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.stall.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.annotation.Nullable;

/**
 * One guarded request: the {@link Subscription} its subscriber holds, and the coordinator of its
 * attempts. Chunks go from each attempt's {@link StallWatch} straight to the subscriber; this
 * object only sees demand, attempt ends and cancellation, so it costs nothing per token.
 */
final class GuardedStream<T> implements Subscription, StallWatch.Terminal<T>, Scannable {

	private final Publisher<? extends T> source;
	private final AiGuard<T> guard;
	private final GuardPolicy policy;
	private final GuardMetrics metrics;
	private final CoreSubscriber<? super T> actual;
	private final Scheduler timer;
	private final List<GuardReport.Attempt> attempts = new ArrayList<>(2);

	private Priority priority;
	private long requestStart;
	private long deliveredTokens;
	private long firstTokenAt = -1L;

	// demand hand-over between attempts, serialised by the drain loop
	volatile int wip;
	static final AtomicIntegerFieldUpdater<GuardedStream> WIP =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "wip");
	volatile long missedRequested;
	static final AtomicLongFieldUpdater<GuardedStream> MISSED_REQUESTED =
			AtomicLongFieldUpdater.newUpdater(GuardedStream.class, "missedRequested");
	volatile StallWatch<T> missedWatch;
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<GuardedStream, StallWatch> MISSED_WATCH =
			AtomicReferenceFieldUpdater.newUpdater(GuardedStream.class, StallWatch.class, "missedWatch");
	private StallWatch<T> drainWatch;
	private long outstanding;

	/** The attempt running now, for cancellation. */
	volatile StallWatch<T> active;

	volatile int cancelled;
	static final AtomicIntegerFieldUpdater<GuardedStream> CANCELLED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "cancelled");

	volatile int finished;
	static final AtomicIntegerFieldUpdater<GuardedStream> FINISHED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "finished");

	GuardedStream(Publisher<? extends T> source, AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		this.source = source;
		this.guard = guard;
		this.policy = guard.policy();
		this.metrics = policy.metrics();
		this.actual = actual;
		this.timer = policy.timer();
	}

	void start() {
		requestStart = timer.now(TimeUnit.NANOSECONDS);
		try {
			priority = Priority.from(actual.currentContext(), policy.defaultPriority());
		}
		catch (IllegalArgumentException badPriority) {
			priority = policy.defaultPriority();
			Operators.error(actual, badPriority);
			finish(Outcome.REJECTED, badPriority, null);
			return;
		}
		actual.onSubscribe(this);
		subscribeAttempt();
	}

	private void subscribeAttempt() {
		StallWatch<T> watch = StallWatch.forAttempt(actual, policy.stall(), timer, guard.inspector(), this);
		active = watch;
		handOver(watch);
		if (cancelled != 0) {
			watch.cancel();
			return;
		}
		source.subscribe(watch);
	}

	// ---- Subscription, as seen by the subscriber ----

	@Override
	public void request(long n) {
		if (Operators.validate(n)) {
			Operators.addCap(MISSED_REQUESTED, this, n);
			drain();
		}
	}

	@Override
	public void cancel() {
		if (!CANCELLED.compareAndSet(this, 0, 1)) {
			return;
		}
		StallWatch<T> w = active;
		if (w != null) {
			w.cancel();
		}
	}

	private void handOver(StallWatch<T> watch) {
		missedWatch = watch;
		drain();
	}

	/** Serialises demand from the subscriber with the switch to a new attempt. */
	@SuppressWarnings("unchecked")
	private void drain() {
		if (WIP.getAndIncrement(this) != 0) {
			return;
		}
		int missed = 1;
		for (;;) {
			StallWatch<T> next = (StallWatch<T>) MISSED_WATCH.getAndSet(this, null);
			if (next != null) {
				StallWatch<T> previous = drainWatch;
				if (previous != null && outstanding != Long.MAX_VALUE) {
					outstanding -= previous.emitted();
				}
				drainWatch = next;
				if (outstanding > 0L) {
					next.request(outstanding);
				}
			}
			long r = MISSED_REQUESTED.getAndSet(this, 0L);
			if (r != 0L) {
				outstanding = Operators.addCap(outstanding, r);
				StallWatch<T> w = drainWatch;
				if (w != null) {
					w.request(r);
				}
			}
			missed = WIP.addAndGet(this, -missed);
			if (missed == 0) {
				return;
			}
		}
	}

	// ---- attempt ends ----

	@Override
	public void onEnd(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		Outcome outcome = outcomeOf(end, error);
		recordAttempt(watch, outcome, error);
		switch (end) {
			case COMPLETED:
				actual.onComplete();
				finish(outcome, null, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				actual.onError(error);
				finish(outcome, error, watch.finishReason());
		}
	}

	private Outcome outcomeOf(StallWatch.End end, @Nullable Throwable error) {
		switch (end) {
			case COMPLETED:
				return Outcome.SUCCESS;
			case CANCELLED:
				return Outcome.CANCELLED;
			case STALLED:
				return Outcome.STALLED;
			case INCOMPLETE:
				return Outcome.INCOMPLETE;
			default:
				try {
					Outcome o = policy.errorClassifier().apply(error);
					return o != null ? o : Outcome.FAILURE;
				}
				catch (Throwable classifierFailure) {
					Operators.onErrorDropped(classifierFailure, actual.currentContext());
					return Outcome.FAILURE;
				}
		}
	}

	private void recordAttempt(StallWatch<T> watch, Outcome outcome, @Nullable Throwable error) {
		long tokens = watch.tokens();
		long ttft = watch.timeToFirstTokenNanos();
		if (tokens > 0L && firstTokenAt < 0L) {
			firstTokenAt = watch.startNanos() + ttft - requestStart;
		}
		deliveredTokens += tokens;
		attempts.add(new GuardReport.Attempt(attempts.size() + 1, outcome, tokens,
				ttft < 0L ? null : Duration.ofNanos(ttft), Duration.ofNanos(watch.durationNanos()),
				watch.finishReason(), error));
		try {
			metrics.streamEnded(policy.name(), priority, outcome, watch.durationNanos(), ttft, tokens);
			if (error instanceof StreamStalledException) {
				metrics.stalled(policy.name(), priority, ((StreamStalledException) error).phase());
			}
		}
		catch (Throwable metricsFailure) {
			Operators.onErrorDropped(metricsFailure, actual.currentContext());
		}
	}

	private void finish(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		if (!FINISHED.compareAndSet(this, 0, 1)) {
			return;
		}
		List<Consumer<? super GuardReport>> listeners = policy.reportListeners();
		boolean truncated = OutputLimits.isTruncation(finishReason);
		if (truncated) {
			try {
				metrics.outputTruncated(policy.name(), priority);
			}
			catch (Throwable metricsFailure) {
				Operators.onErrorDropped(metricsFailure, actual.currentContext());
			}
		}
		if (listeners.isEmpty()) {
			return;
		}
		long now = timer.now(TimeUnit.NANOSECONDS);
		GuardReport report = new GuardReport(policy.name(), priority, outcome, Source.REALTIME, attempts,
				deliveredTokens, firstTokenAt < 0L ? null : Duration.ofNanos(firstTokenAt),
				Duration.ofNanos(now - requestStart), finishReason, truncated, error);
		Scheduler reportScheduler = policy.reportScheduler();
		if (reportScheduler == null) {
			deliver(listeners, report);
		}
		else {
			try {
				reportScheduler.schedule(() -> deliver(listeners, report));
			}
			catch (Throwable rejected) {
				Operators.onErrorDropped(rejected, actual.currentContext());
			}
		}
	}

	private void deliver(List<Consumer<? super GuardReport>> listeners, GuardReport report) {
		for (Consumer<? super GuardReport> listener : listeners) {
			try {
				listener.accept(report);
			}
			catch (Throwable listenerFailure) {
				Operators.onErrorDropped(listenerFailure, actual.currentContext());
			}
		}
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
		if (key == Attr.TERMINATED) {
			return finished != 0;
		}
		if (key == Attr.RUN_STYLE) {
			return Attr.RunStyle.SYNC;
		}
		return null;
	}
}
