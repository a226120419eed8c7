package dev.aiguard.breaker;

import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.internal.Callbacks;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/**
 * The states of a {@link CircuitBreaker} and the moves between them: the phase swapped by one CAS per
 * transition, the judgements that trip a CLOSED stay and decide a HALF_OPEN one, the open waits, the
 * operator's moves, and the events every transition reports. It decides from what it is told;
 * {@link BreakerSettlement} tells it the calls' outcomes and {@link BreakerAdmission} hands out the
 * permits.
 */
abstract class BreakerStateMachine {

	static final BreakerListener[] NO_LISTENERS = {};

	private static final AtomicReferenceFieldUpdater<BreakerStateMachine, BreakerPhase> PHASE =
			AtomicReferenceFieldUpdater.newUpdater(BreakerStateMachine.class, BreakerPhase.class, "phase");
	private static final AtomicReferenceFieldUpdater<BreakerStateMachine, Settings> SETTINGS =
			AtomicReferenceFieldUpdater.newUpdater(BreakerStateMachine.class, Settings.class, "settings");
	private static final AtomicReferenceFieldUpdater<BreakerStateMachine, BreakerListener[]> LISTENERS =
			AtomicReferenceFieldUpdater.newUpdater(BreakerStateMachine.class, BreakerListener[].class, "listeners");
	static final AtomicIntegerFieldUpdater<BreakerStateMachine> CONSECUTIVE = AtomicIntegerFieldUpdater
			.newUpdater(BreakerStateMachine.class, "consecutiveFailures");

	final String name;
	final BreakerClock clock;
	final Clock wallClock;
	final GuardMetrics metrics;
	private final long jitterSeed;
	/** The breaker clock when the breaker was built: the warm-up counts from here. */
	final long createdAt;

	volatile Settings settings;
	volatile BreakerPhase phase;
	volatile BreakerListener[] listeners;
	/** Failures in a row recorded while CLOSED; a success (or a re-close) sets it back to 0. */
	volatile int consecutiveFailures;

	BreakerStateMachine(String name, BreakerConfig config, BreakerWiring<?> wiring) {
		this.name = name;
		this.clock = wiring.clock;
		this.wallClock = wiring.wallClock;
		this.metrics = GuardMetrics.isolated(wiring.metrics);
		this.jitterSeed = ThreadLocalRandom.current().nextLong();
		long now = clock.nanoTime();
		this.createdAt = now;
		this.settings = new Settings(config, SlidingWindow.of(config, now), config.tripPolicy().newEvaluator(), null,
				clock);
		this.listeners = wiring.listeners.isEmpty() ? NO_LISTENERS : wiring.listeners.toArray(NO_LISTENERS);
		this.phase = BreakerPhase.closed(0, now, now, 0, 0, 0);
	}

	/**
	 * Brings what the settlement holds back (batched successes) into the window of {@code s}, before
	 * the window is read or reset.
	 */
	abstract void handOverWaiting(Settings s, long now);

	void judgeClosed(BreakerPhase p, Settings s, long now) {
		double pressure;
		try {
			pressure = s.evaluator.pressure(s.window, s.config, now);
		}
		catch (Throwable t) {
			Callbacks.dropped(t);
			return;
		}
		BreakerConfig c = s.config;
		double limit = tripLimit(c, now);
		if (pressure < limit) {
			long since = p.aboveSince;
			if (since != BreakerPhase.NEVER) {
				BreakerPhase.ABOVE.compareAndSet(p, since, BreakerPhase.NEVER); // the spike is over before the delay
			}
			return;
		}
		if (c.tripDelayNanos > 0) {
			long since = p.aboveSince;
			if (since == BreakerPhase.NEVER) {
				BreakerPhase.ABOVE.compareAndSet(p, BreakerPhase.NEVER, now);
				return;
			}
			if (now - since < c.tripDelayNanos) {
				return;
			}
		}
		open(p, s, now, tripStreak(p, now), "trip policy pressure " + round(pressure) + " >= " + (limit == 1 ? "1" : round(limit))
				+ " (failure rate " + round(s.window.failureRate()) + ", slow-call rate "
				+ round(s.window.slowCallRate()) + ")");
	}

	/** The pressure a trip needs: 1, or during the warm-up its factor (a cold provider's first minutes). */
	double tripLimit(BreakerConfig c, long now) {
		return c.warmUpNanos > 0 && now - createdAt < c.warmUpNanos ? c.warmUpThresholdFactor() : 1;
	}

	/** A trip sooner after a re-close than the last open wait lasted continues the streak of re-opens. */
	static int tripStreak(BreakerPhase closed, long now) {
		return closed.lastOpenWait > 0 && now - closed.enteredAt < closed.lastOpenWait ? closed.streak + 1 : 0;
	}

	void decideHalfOpen(BreakerPhase p, Settings s, long now) {
		BreakerConfig c = s.config;
		long tally = p.probes;
		int calls = BreakerPhase.field(tally, BreakerPhase.CALLS);
		int failures = BreakerPhase.field(tally, BreakerPhase.FAILURES);
		int slow = BreakerPhase.field(tally, BreakerPhase.SLOW);
		int healthy = BreakerPhase.field(tally, BreakerPhase.HEALTHY);
		double pressure = ProbePressure.of(s.evaluator, calls, failures, slow, c);
		// with counted probes, close only once the result cannot change: judge as if every probe still
		// to come failed slowly, so a lucky first few cannot close a breaker hovering at its threshold
		int probes = c.halfOpenProbes();
		int outstanding = probes > 0 ? Math.max(0, probes - calls) : 0;
		double worst = outstanding == 0 ? pressure
				: ProbePressure.of(s.evaluator, calls + outstanding, failures + outstanding, slow + outstanding, c);
		boolean healthyProbes = healthy >= c.successesToClose() && worst < 1 - c.hysteresis();
		// a tree's parent also waits until its children no longer reach the share that trips it
		String heldOpen = healthyProbes && s.evaluator instanceof CorrelatedFailurePolicy.Judge judge
				? judge.holdsOpen(now) : null;
		if (healthyProbes && heldOpen == null) {
			if (now - p.dwellUntil >= 0) {
				close(p, s, now, healthy + " of " + calls + " probes healthy, probe pressure " + round(pressure)
						+ " < " + round(1 - c.hysteresis()));
			}
			else {
				p.closeReady = true;
			}
			return;
		}
		p.closeReady = false;
		if (calls >= c.successesToClose() && pressure >= 1) {
			reopen(p, s, now, "probe pressure " + round(pressure) + " >= 1 after " + calls + " probes");
		}
		else if (c.halfOpenProbes() > 0 && calls >= c.halfOpenProbes()) {
			reopen(p, s, now, heldOpen != null ? "all " + calls + " probes used while " + heldOpen
					: "all " + calls + " probes used without reaching probe pressure < " + round(1 - c.hysteresis()));
		}
		else if (now - (p.enteredAt + c.maxTimeInHalfOpenNanos) >= 0) {
			reopen(p, s, now, "no decision within maxTimeInHalfOpen " + c.maxTimeInHalfOpen());
		}
	}

	void open(BreakerPhase from, Settings s, long now, int streak, String reason) {
		long wait = openWaitNanos(s.config, streak, from.seq + 1);
		transition(from, BreakerPhase.open(from.seq + 1, now, wait, streak), reason);
	}

	void reopen(BreakerPhase from, Settings s, long now, String reason) {
		open(from, s, now, from.streak + 1, reason);
	}

	boolean close(BreakerPhase from, Settings s, long now, String reason) {
		BreakerPhase closed = BreakerPhase.closed(from.seq + 1, now, now + s.config.minimumDwellNanos, from.streak,
				from.lastOpenWait, s.config.rampUpNanos);
		// the window is fresh before the close is published: a call granted by the new CLOSED stay is
		// judged on it, never on the failures that tripped the breaker (HALF_OPEN decides on its probe
		// tally, not on the window, so clearing it first is safe even if another transition wins); the
		// event still shows the window as it was when the breaker closed
		BreakerSnapshot before = listeners.length != 0 ? windowAt(closed.enteredAt) : null;
		freshWindow(s, now);
		return transition(from, closed, reason, before);
	}

	private BreakerSnapshot windowAt(long time) {
		SlidingWindow window = settings.window;
		if (window.timeBased()) {
			window.advanceTo(time);
		}
		return BreakerSnapshot.of(window);
	}

	void freshWindow(Settings s, long now) {
		handOverWaiting(s, now); // empties the batch: the reset below forgets it with the rest
		s.window.reset();
		consecutiveFailures = 0;
		try {
			s.evaluator.reset(now);
		}
		catch (Throwable t) {
			Callbacks.dropped(t);
		}
	}

	/** The wait of the {@code streak}-th consecutive open: grown, capped, then lengthened by jitter. */
	long openWaitNanos(BreakerConfig c, int streak, long seq) {
		double grown = c.openWaitNanos * Math.pow(c.openWaitMultiplier(), streak);
		double capped = Math.min(grown, c.maxOpenWaitNanos);
		double jittered = capped + capped * c.openWaitJitter() * unitRandom(jitterSeed + seq);
		return (long) Math.min(jittered, (double) (Long.MAX_VALUE / 4));
	}

	/** A well-mixed value in [0, 1) from a seed (SplitMix64's finaliser). */
	private static double unitRandom(long seed) {
		long z = seed * 0x9E3779B97F4A7C15L;
		z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
		z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
		z = z ^ (z >>> 31);
		return (z >>> 11) * 0x1.0p-53;
	}

	boolean transition(BreakerPhase from, BreakerPhase to, String reason) {
		return transition(from, to, reason, null);
	}

	/** @param window the window to report, when taken before the transition; else read now */
	boolean transition(BreakerPhase from, BreakerPhase to, String reason, @Nullable BreakerSnapshot window) {
		if (!PHASE.compareAndSet(this, from, to)) {
			return false;
		}
		metrics.breakerTransition(name, from.state, to.state);
		BreakerListener[] ls = listeners;
		if (ls.length != 0) {
			// the window as of the transition's own time: a caller that passed its time costs no clock read
			emit(ls, new BreakerEvent.StateTransition(name, to.enteredAt, from.state, to.state, reason,
					window != null ? window : windowAt(to.enteredAt)));
		}
		return true;
	}

	void operatorTransition(BreakerState target) {
		for (;;) {
			BreakerPhase p = phase;
			if (p.state == target) {
				return;
			}
			long now = clock.nanoTime();
			BreakerPhase next = target == BreakerState.CLOSED ? BreakerPhase.closed(p.seq + 1, now, now, 0, 0, 0)
					: BreakerPhase.simple(target, p.seq + 1, now);
			if (transition(p, next, "operator")) {
				if (target == BreakerState.CLOSED) {
					freshWindow(settings, now);
				}
				return;
			}
		}
	}

	/**
	 * Swaps the config, keeping the window when its shape is unchanged and the trip policy's evaluator
	 * (what it learned, and its batch) when the policy is equal.
	 *
	 * @return the settings replaced
	 */
	Settings swapConfig(BreakerConfig config) {
		Settings old;
		Settings next;
		do {
			old = settings;
			SlidingWindow window = old.window.sameShape(config) ? old.window
					: SlidingWindow.of(config, clock.nanoTime());
			boolean samePolicy = old.config.tripPolicy().equals(config.tripPolicy());
			TripPolicy.Evaluator evaluator = samePolicy ? old.evaluator : config.tripPolicy().newEvaluator();
			next = new Settings(config, window, evaluator, samePolicy ? old.batch : null, clock);
		}
		while (!SETTINGS.compareAndSet(this, old, next));
		return old;
	}

	/** The live window (tests compare its slots with its totals). */
	SlidingWindow window() {
		return settings.window;
	}

	/** The current settings (tests read the success batch). */
	Settings settings() {
		return settings;
	}

	/** The current phase (tests read probe accounting). */
	BreakerPhase phase() {
		return phase;
	}

	// ---------------------------------------------------------------- listeners

	void listen(BreakerListener listener) {
		for (;;) {
			BreakerListener[] old = listeners;
			BreakerListener[] next = Arrays.copyOf(old, old.length + 1);
			next[old.length] = listener;
			if (LISTENERS.compareAndSet(this, old, next)) {
				return;
			}
		}
	}

	boolean unlisten(BreakerListener listener) {
		for (;;) {
			BreakerListener[] old = listeners;
			int i = Arrays.asList(old).indexOf(listener);
			if (i < 0) {
				return false;
			}
			BreakerListener[] next = new BreakerListener[old.length - 1];
			System.arraycopy(old, 0, next, 0, i);
			System.arraycopy(old, i + 1, next, i, old.length - i - 1);
			if (LISTENERS.compareAndSet(this, old, next.length == 0 ? NO_LISTENERS : next)) {
				return true;
			}
		}
	}

	void emit(BreakerListener[] ls, BreakerEvent event) {
		for (BreakerListener l : ls) {
			try {
				l.onEvent(event);
			}
			catch (Throwable t) {
				Callbacks.dropped(t);
			}
		}
	}

	static String round(double v) {
		return String.valueOf(Math.round(v * 1000) / 1000.0);
	}

	/** Config, window and evaluator swapped together by {@link #swapConfig}. */
	static final class Settings {
		final BreakerConfig config;
		final SlidingWindow window;
		final TripPolicy.Evaluator evaluator;

		/** Whether the evaluator is the classic, stateless one (judged inline on the record path). */
		final boolean classic;
		/** Whether every recorded call needs a clock reading (false only for stateless count-based judging). */
		final boolean callsNeedTime;
		/** Fast successes on their way to a batching evaluator; null when the evaluator does not batch. */
		final @Nullable SuccessBatch batch;

		/** @param batch the batch of the same evaluator before a reconfiguration, or null for a new one */
		Settings(BreakerConfig config, SlidingWindow window, TripPolicy.Evaluator evaluator, @Nullable SuccessBatch batch,
				BreakerClock clock) {
			this.config = config;
			this.window = window;
			this.evaluator = evaluator;
			this.classic = FailureRatePolicy.isClassic(evaluator);
			// a pending trip delay judges successes too, at their time
			this.callsNeedTime = window.timeBased() || !classic || config.tripDelayNanos > 0;
			this.batch = classic ? null : batch != null ? batch : SuccessBatch.forEvaluator(evaluator, clock);
		}
	}
}
