package dev.aiguard.load;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.LongConsumer;

import dev.aiguard.internal.Callbacks;
import dev.aiguard.internal.TimeSource;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * When the governor decides: its clock, the periodic task between {@link #start} and
 * {@link #dispose}, and the serialisation of decisions and of the work queued between them (a hold
 * or its release), in reactor-core's "work-in-progress" pattern: a call that finds the loop busy
 * leaves its work to that thread and returns at once. What a decision is stays with its
 * {@link Decision}.
 */
final class DecisionLoop {

	/** One decision, serialised with every other. */
	@FunctionalInterface
	interface Decision {

		/**
		 * @param now the clock's time
		 * @param elapsedNanos time since the previous decision (or since the start); one interval
		 *        for the first decision of a loop never started, or when the clock did not advance
		 */
		void decide(long now, long elapsedNanos);
	}

	private static final long UNSET = Long.MIN_VALUE;

	@Nullable
	private final Scheduler clock;
	private final long intervalNanos;
	private final Decision decision;
	/** Work queued between decisions, run with the clock's time before each decision and at the end of each turn. */
	private final LongConsumer between;

	// ---- owned by the decision in progress ----
	private long lastDecisionNanos = UNSET;

	@Nullable
	private volatile TimeSource time;
	@Nullable
	private volatile Disposable task;

	private volatile int wip;
	private static final AtomicIntegerFieldUpdater<DecisionLoop> WIP =
			AtomicIntegerFieldUpdater.newUpdater(DecisionLoop.class, "wip");

	/** Decisions asked for and not yet made: the loop makes each one. */
	private volatile int asked;
	private static final AtomicIntegerFieldUpdater<DecisionLoop> ASKED =
			AtomicIntegerFieldUpdater.newUpdater(DecisionLoop.class, "asked");

	/** 0 new, 1 started, 2 disposed. */
	private volatile int lifecycle;
	private static final AtomicIntegerFieldUpdater<DecisionLoop> LIFECYCLE =
			AtomicIntegerFieldUpdater.newUpdater(DecisionLoop.class, "lifecycle");

	DecisionLoop(@Nullable Scheduler clock, long intervalNanos, Decision decision, LongConsumer between) {
		this.clock = clock;
		this.intervalNanos = intervalNanos;
		this.decision = decision;
		this.between = between;
	}

	/**
	 * Resolves the clock and decides every interval on it; does nothing when started or disposed
	 * before.
	 *
	 * @param atStart runs with the start time, serialised like a decision (unless one is running)
	 * @param beforeFirstTick runs once {@code atStart} did, before the periodic task is scheduled
	 */
	void start(LongConsumer atStart, Runnable beforeFirstTick) {
		if (!LIFECYCLE.compareAndSet(this, 0, 1)) {
			return;
		}
		Scheduler scheduler = clock != null ? clock : Schedulers.parallel();
		TimeSource t = TimeSource.of(scheduler);
		this.time = t;
		long now = t.nanos();
		if (WIP.getAndIncrement(this) == 0) {
			// the decision loop's fields: taken like a decision, so a concurrent decide() waits its turn
			lastDecisionNanos = now;
			atStart.accept(now);
			// and whatever was asked for meanwhile
			loop();
		}
		beforeFirstTick.run();
		Disposable scheduled = scheduler.schedulePeriodically(this::decide, intervalNanos, intervalNanos,
				TimeUnit.NANOSECONDS);
		this.task = scheduled;
		if (lifecycle == 2) {
			scheduled.dispose(); // disposed while starting
		}
	}

	void dispose() {
		if (LIFECYCLE.getAndSet(this, 2) != 2) {
			Disposable t = task;
			if (t != null) {
				t.dispose();
			}
		}
	}

	boolean isDisposed() {
		return lifecycle == 2;
	}

	/** The clock in nanoseconds; resolved on first use when {@link #start} was not called. */
	long nanos() {
		TimeSource t = time;
		if (t == null) {
			t = TimeSource.of(clock != null ? clock : Schedulers.parallel());
			time = t;
		}
		return t.nanos();
	}

	/** Makes one decision now, or leaves it to the thread in the loop; what a decision throws is dropped. */
	void decide() {
		ASKED.incrementAndGet(this);
		drain();
	}

	/**
	 * Runs the work queued between decisions now, or leaves it to the thread in the loop, which runs
	 * it before its next decision or at the end of its turn; what it throws is dropped.
	 */
	void drain() {
		if (WIP.getAndIncrement(this) == 0) {
			loop();
		}
	}

	/** The turn of the thread that took the loop: until no work is left. */
	private void loop() {
		int missed = 1;
		do {
			for (int n = ASKED.getAndSet(this, 0); n > 0; n--) {
				runBetween();
				try {
					long now = nanos();
					long last = lastDecisionNanos;
					long elapsed = last == UNSET || now - last <= 0 ? intervalNanos : now - last;
					lastDecisionNanos = now;
					decision.decide(now, elapsed);
				}
				catch (Throwable failure) {
					Callbacks.dropped(failure);
				}
			}
			runBetween();
			missed = WIP.addAndGet(this, -missed);
		}
		while (missed != 0);
	}

	private void runBetween() {
		try {
			between.accept(nanos());
		}
		catch (Throwable failure) {
			Callbacks.dropped(failure);
		}
	}
}
