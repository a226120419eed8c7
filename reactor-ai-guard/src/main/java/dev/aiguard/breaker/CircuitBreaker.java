package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.concurrent.atomic.LongAdder;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.metrics.GuardMetrics;

/**
 * A circuit breaker that judges token streams: each attempt takes a {@link BreakerPermit} and settles
 * it once with its {@link Outcome}; "slow" means a slow <em>first token</em>; stalls and truncated
 * streams are failures; client errors are ignored unless configured; a cancelled attempt hands its
 * permission back without counting (a HALF_OPEN probe slot comes back with it).
 *
 * <pre>{@code
 * CircuitBreaker breaker = CircuitBreaker.builder("openai")
 *     .config(BreakerConfig.custom().failureRateThreshold(0.5).build())
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .listener(event -> log.info("{}", event))
 *     .build();
 *
 * BreakerPermit permit = breaker.tryAcquire();
 * if (permit == null) {
 *     throw new BreakerOpenException(breaker.name(), breaker.state());
 * }
 * // ... stream the answer, then exactly once:
 * permit.record(Outcome.SUCCESS, timeToFirstTokenNanos);
 * }</pre>
 *
 * <h2>States</h2>
 * CLOSED lets calls through and trips to OPEN when its {@link TripPolicy} reports a pressure of 1 or
 * more (after {@link BreakerConfig#minimumDwell()} when it was just re-closed). OPEN refuses calls
 * until its wait has passed; the next {@link #tryAcquire()} then moves it to HALF_OPEN — lazily, no
 * timer — and holds that stay's first probe. HALF_OPEN lets probes through (a count or a share of traffic); it closes once
 * {@link BreakerConfig#successesToClose()} probes were healthy and the probes' pressure is below
 * {@code 1 - hysteresis} (and the dwell has passed) — with counted probes, only once that holds even if
 * every outstanding probe failed — and re-opens when the probes' pressure reaches 1,
 * when every counted probe was used without closing, or after
 * {@link BreakerConfig#maxTimeInHalfOpen()}. Each consecutive re-open multiplies the wait (capped,
 * with jitter); a breaker that stays closed at least as long as its last wait earns the short wait
 * back. FORCED_OPEN and DISABLED are left only through the operator methods.
 *
 * <p>Beside the trip policy: {@link BreakerConfig#consecutiveFailuresToTrip()} failures in a row trip
 * at once; {@link BreakerConfig#tripDelay()} ignores a pressure spike shorter than the delay;
 * {@link BreakerConfig#warmUp()} relaxes the trip limit after the breaker is built; after a re-close
 * {@link BreakerConfig#rampUp()} admits a linearly growing share of calls (the rest are refused like
 * calls to an open breaker, and count as rejections, not failures); and
 * {@link BreakerConfig#slowTimeToFirstTokenPerPromptToken()} grants long prompts a later first token.
 *
 * <h2>Threads</h2>
 * Lock-free: the state is one immutable phase object swapped by CAS (one CAS decides each
 * transition); recording a success on a CLOSED breaker costs one atomic operation on the window and
 * no clock read when the caller passes its time ({@link #tryAcquire(long)},
 * {@link BreakerPermit#record(Outcome, long, long)}). Transitions, rejections and reconfigurations
 * are reported to listeners and to {@link GuardMetrics} on the calling thread; a throwing listener or
 * metrics implementation is logged and ignored.
 */
public final class CircuitBreaker implements BreakerGate {

	private static final BreakerListener[] NO_LISTENERS = {};

	private static final AtomicReferenceFieldUpdater<CircuitBreaker, Phase> PHASE = AtomicReferenceFieldUpdater
			.newUpdater(CircuitBreaker.class, Phase.class, "phase");
	private static final AtomicReferenceFieldUpdater<CircuitBreaker, Settings> SETTINGS = AtomicReferenceFieldUpdater
			.newUpdater(CircuitBreaker.class, Settings.class, "settings");
	private static final AtomicReferenceFieldUpdater<CircuitBreaker, BreakerListener[]> LISTENERS =
			AtomicReferenceFieldUpdater.newUpdater(CircuitBreaker.class, BreakerListener[].class, "listeners");
	private static final AtomicIntegerFieldUpdater<CircuitBreaker> CONSECUTIVE = AtomicIntegerFieldUpdater
			.newUpdater(CircuitBreaker.class, "consecutiveFailures");

	/** Handed out while DISABLED: settles to nothing. */
	private static final BreakerPermit DISABLED_PERMIT = (outcome, ttft) -> {
	};

	private final String name;
	private final BreakerClock clock;
	private final Clock wallClock;
	private final GuardMetrics metrics;
	private final long jitterSeed;
	/** The breaker clock when the breaker was built: the warm-up counts from here. */
	private final long createdAt;
	private final LongAdder rejected = new LongAdder();

	private volatile Settings settings;
	private volatile Phase phase;
	private volatile BreakerListener[] listeners;
	/** Failures in a row recorded while CLOSED; a success (or a re-close) sets it back to 0. */
	private volatile int consecutiveFailures;

	private CircuitBreaker(Builder b) {
		this.name = b.name;
		this.clock = b.clock;
		this.wallClock = b.wallClock;
		this.metrics = GuardMetrics.isolated(b.metrics);
		this.jitterSeed = ThreadLocalRandom.current().nextLong();
		long now = clock.nanoTime();
		this.createdAt = now;
		this.settings = new Settings(b.config, SlidingWindow.of(b.config, now), b.config.tripPolicy().newEvaluator(),
				null, clock);
		this.listeners = b.listeners.isEmpty() ? NO_LISTENERS : b.listeners.toArray(NO_LISTENERS);
		this.phase = Phase.closed(0, now, now, 0, 0, 0);
	}

	/** @return a breaker with {@code config}, the system clock, no metrics and no listeners */
	public static CircuitBreaker of(String name, BreakerConfig config) {
		return builder(name).config(config).build();
	}

	/** @return a builder for a breaker named {@code name} */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	// ---------------------------------------------------------------- permission

	/**
	 * Asks to make one call (one attempt of a stream).
	 *
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses (the refusal is
	 * already counted, reported to metrics and to listeners)
	 */
	public BreakerPermit tryAcquire() {
		Phase p = phase;
		// the hot case first: CLOSED needs no time (unless it ramps up after a re-close)
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, clock.nanoTime()) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, 0, false, NO_PRIORITY);
	}

	/**
	 * Asks to make one call at a priority. CLOSED costs the same as {@link #tryAcquire()}; the priority
	 * matters only where probing is priority-aware: within {@link BreakerConfig#p0ProbeWindow()} of
	 * entering HALF_OPEN a {@code P1} or {@code P2} call is refused (the probe slots go to {@code P0}
	 * first), and while OPEN a share {@link BreakerConfig#openP0ProbeShare()} of the {@code P0} calls
	 * still passes.
	 *
	 * <pre>{@code
	 * BreakerPermit permit = breaker.tryAcquire(Priority.P0);
	 * }</pre>
	 *
	 * @param priority the call's priority
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses
	 */
	public BreakerPermit tryAcquire(Priority priority) {
		Phase p = phase;
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, clock.nanoTime()) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, 0, false, priority.ordinal());
	}

	/**
	 * {@inheritDoc} Allocates the exception only on a refusal.
	 */
	@Override
	public BreakerPermit acquire(Priority priority) {
		BreakerPermit permit = tryAcquire(priority);
		if (permit == null) {
			throw new BreakerOpenException(name, phase.state);
		}
		return permit;
	}

	@Override
	public boolean weighsPromptTokens() {
		return settings.config.slowPerPromptTokenNanos > 0;
	}

	/**
	 * Asks to make one call, at a time the caller has already read from the breaker's clock (for
	 * example the pipeline scheduler's {@code now(NANOSECONDS)}), so the breaker reads no clock of its
	 * own. A CLOSED breaker needs no time at all; OPEN and HALF_OPEN use {@code nowNanos} for their
	 * waits.
	 *
	 * <pre>{@code
	 * long now = scheduler.now(TimeUnit.NANOSECONDS);
	 * BreakerPermit permit = breaker.tryAcquire(now);
	 * }</pre>
	 *
	 * @param nowNanos the breaker clock's current reading (same origin as {@link Builder#clock})
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses
	 */
	public BreakerPermit tryAcquire(long nowNanos) {
		Phase p = phase;
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, nowNanos) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, nowNanos, true, NO_PRIORITY);
	}

	/** The priority rank of a call asked for without one. */
	private static final int NO_PRIORITY = -1;

	/** @param rank the call's priority ordinal, or {@link #NO_PRIORITY} */
	private BreakerPermit acquire(Phase p, long givenNow, boolean timed, int rank) {
		for (;; p = phase) {
			switch (p.state) {
				case CLOSED:
					return p.ramping ? rampAcquire(p, timed ? givenNow : clock.nanoTime())
							: new Permit(this, p, Permit.CALL);
				case DISABLED:
					return DISABLED_PERMIT;
				case FORCED_OPEN:
					return reject(p, givenNow, timed);
				case OPEN: {
					long now = timed ? givenNow : clock.nanoTime();
					if (now - p.openUntil < 0) {
						double share = settings.config.openP0ProbeShare();
						if (rank == 0 && share > 0 && shareAdmits(p, share)) {
							// counted in the window, decides nothing: the OPEN stay ends with its wait
							return new Permit(this, p, Permit.CALL);
						}
						return reject(p, now, true);
					}
					BreakerConfig c = settings.config;
					Phase h = Phase.halfOpen(p, now, c);
					BreakerPermit first = claimOnEntry(h, c, rank);
					if (transition(p, h, "open wait elapsed") && first != null) {
						return first; // the call that ends the wait is the stay's first probe
					}
					break; // read the new phase
				}
				case HALF_OPEN: {
					BreakerPermit permit = acquireProbe(p, timed ? givenNow : clock.nanoTime(), rank);
					if (permit != RETRY) {
						return permit;
					}
					break;
				}
				default:
					throw new IllegalStateException(p.state.name());
			}
		}
	}

	/**
	 * A CLOSED stay that ramps up after a re-close: each offered call adds the current share
	 * {@code elapsed / rampUp} to a credit, and a call whose addition crosses a whole unit is admitted.
	 * So any run of calls admits the sum of their shares (rounded), spread evenly, with one atomic add
	 * and no lock; the others are refused as an OPEN breaker would. The first call at or after the
	 * ramp's end ends it for good.
	 */
	private BreakerPermit rampAcquire(Phase p, long now) {
		long elapsed = now - p.enteredAt;
		if (elapsed >= p.rampNanos) {
			p.ramping = false;
			return new Permit(this, p, Permit.CALL);
		}
		long share = elapsed <= 0 ? 0 : (long) ((double) elapsed / p.rampNanos * Phase.CREDIT_UNIT);
		long before = Phase.OFFERED.getAndAdd(p, share);
		if ((before + share) / Phase.CREDIT_UNIT > before / Phase.CREDIT_UNIT) {
			return new Permit(this, p, Permit.CALL);
		}
		return reject(p, now, true);
	}

	/** Marks "the phase moved on, look again" inside {@link #tryAcquire()}. */
	private static final BreakerPermit RETRY = (outcome, ttft) -> {
	};

	/** The deterministic share: the 1st offered call, then each time {@code k × share} crosses an integer. */
	private static boolean shareAdmits(Phase p, double share) {
		long k = Phase.OFFERED.getAndIncrement(p);
		return Math.ceil((k + 1) * share) > Math.ceil(k * share);
	}

	/**
	 * Claims the first probe of a HALF_OPEN stay before the stay is published, so the call whose
	 * transition wins holds that probe: a failed probe settled by another thread right after the
	 * transition cannot leave the call that opened the stay with a refusal.
	 *
	 * @return the first probe's permit, or {@code null} when this call may not take it (a lower
	 *         priority inside {@code p0ProbeWindow}, or no probe configured)
	 */
	private BreakerPermit claimOnEntry(Phase h, BreakerConfig c, int rank) {
		if (rank > 0 && c.p0ProbeWindowNanos > 0) {
			return null;
		}
		if (c.halfOpenProbes() > 0) {
			h.granted = 1;
			return new Permit(this, h, Permit.PROBE_SLOT);
		}
		if (c.halfOpenProbeRatio() > 0) {
			h.offered = 1; // the first offered call is always within the share
			return new Permit(this, h, Permit.PROBE);
		}
		return null;
	}

	private BreakerPermit acquireProbe(Phase p, long now, int rank) {
		Settings s = settings;
		BreakerConfig c = s.config;
		if (now - (p.enteredAt + c.maxTimeInHalfOpenNanos) >= 0) {
			reopen(p, s, now, "no decision within maxTimeInHalfOpen " + c.maxTimeInHalfOpen());
			return RETRY;
		}
		if (p.closeReady && now - p.dwellUntil >= 0) {
			decideHalfOpen(p, s, now);
			if (phase != p) {
				return RETRY;
			}
		}
		if (rank > 0 && now - p.enteredAt < c.p0ProbeWindowNanos) {
			return reject(p, now, true); // the probe slots go to P0 first
		}
		int probes = c.halfOpenProbes();
		if (probes > 0) {
			for (;;) {
				int granted = p.granted;
				if (granted >= probes) {
					return reject(p, now, true);
				}
				if (Phase.GRANTED.compareAndSet(p, granted, granted + 1)) {
					return new Permit(this, p, Permit.PROBE_SLOT);
				}
			}
		}
		if (shareAdmits(p, c.halfOpenProbeRatio())) {
			return new Permit(this, p, Permit.PROBE);
		}
		return reject(p, now, true);
	}

	/** @param knownNow whether {@code now} is a clock reading (else the clock is read if someone listens) */
	private BreakerPermit reject(Phase p, long now, boolean knownNow) {
		rejected.increment();
		metrics.breakerRejected(name);
		BreakerListener[] ls = listeners;
		if (ls.length != 0) {
			emit(ls, new BreakerEvent.CallRejected(name, knownNow ? now : clock.nanoTime(), p.state));
		}
		return null;
	}

	// ---------------------------------------------------------------- settlement

	/**
	 * Counts one settled permit.
	 *
	 * @param givenNow the caller's clock reading when {@code timed}, else ignored
	 */
	void settle(Permit permit, Outcome outcome, long ttftNanos, long givenNow, boolean timed) {
		Settings s = settings;
		BreakerConfig c = s.config;
		Outcome counted = outcome;
		int flags;
		switch (outcome) {
			case SUCCESS:
				flags = SlidingWindow.CALL_BIT;
				break;
			case FAILURE:
				flags = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT;
				break;
			case STALLED:
				flags = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT | SlidingWindow.STALL_BIT;
				break;
			case INCOMPLETE:
				flags = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT | SlidingWindow.INCOMPLETE_BIT;
				break;
			case INVALID:
				// a rejected answer is a failed call; trip policies weigh it as a plain failure
				flags = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT;
				counted = Outcome.FAILURE;
				break;
			case CLIENT_ERROR:
				if (c.recordClientErrors()) {
					flags = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT;
					counted = Outcome.FAILURE;
					break;
				}
				release(permit);
				return;
			default: // CANCELLED, REJECTED: not a call
				release(permit);
				return;
		}
		long slowNanos = c.slowNanos;
		long policyTtft = ttftNanos;
		int promptTokens = permit.promptTokens;
		if (promptTokens > 0 && c.slowPerPromptTokenNanos > 0) {
			// no overflow: at most 2^31 tokens × 1 s per token, plus at most 365 days
			slowNanos += promptTokens * c.slowPerPromptTokenNanos;
			if (ttftNanos > 0) {
				policyTtft = (long) (ttftNanos * (c.slowNanosDouble / slowNanos));
			}
		}
		boolean slow = ttftNanos >= 0 && ttftNanos >= slowNanos;
		if (slow) {
			flags |= SlidingWindow.SLOW_BIT;
		}
		SuccessBatch batch = s.batch;
		if (batch != null) {
			// a fast success that cannot raise the pressure, of a CLOSED stay, with no trip waiting out its
			// delay: to the batch
			if (flags == SlidingWindow.CALL_BIT && permit.kind == Permit.CALL && batch.quiet(policyTtft)
					&& (c.tripDelayNanos == 0 || phase.aboveSince == Phase.NEVER)
					&& batched(s, batch, permit, policyTtft, givenNow, timed)) {
				return;
			}
		}
		// a count window judged by the classic rule needs no time for a call that cannot trip it
		long now = timed ? givenNow
				: s.callsNeedTime || (flags & ~SlidingWindow.CALL_BIT) != 0 || permit.kind != Permit.CALL
						? clock.nanoTime() : 0;
		// the successes batched before this call reach the policies first (batch != null: now is a reading)
		int handed = batch != null ? handOver(s, batch, now, false) : HANDED;
		boolean judge = handed == HANDED_RAISED;
		s.window.record(now, flags);
		if (s.classic) {
			judge = slow || counted != Outcome.SUCCESS; // the classic rule's onCall, without the call
		}
		else {
			try {
				judge |= s.evaluator.onCall(s.window, c, counted, policyTtft, slow, now);
			}
			catch (Throwable t) {
				Callbacks.dropped(t);
			}
			if (batch != null) {
				batch.refreshQuietBound(); // the call may have taught the policies a new baseline
			}
		}
		Phase p = permit.phase;
		if (p != phase) {
			return; // granted in an earlier phase: counted in the window, decides nothing
		}
		if (p.state == BreakerState.CLOSED) {
			int inARow = c.consecutiveFailuresToTrip();
			if (inARow > 0 && consecutive(flags) >= inARow && now - p.dwellUntil >= 0) {
				open(p, s, now, tripStreak(p, now), inARow + " consecutive failures");
				return;
			}
			// while a trip waits out its delay, successes are judged too, so a fall of the pressure is seen
			if ((judge || c.tripDelayNanos > 0 && p.aboveSince != Phase.NEVER) && now - p.dwellUntil >= 0) {
				// with successes on their way to the window, the thread carrying them judges once they are in
				if (handed != HANDING_ELSEWHERE || !batch.oweJudgement()) {
					judgeClosed(p, s, now);
				}
			}
		}
		else if (p.state == BreakerState.HALF_OPEN) {
			boolean failed = (flags & SlidingWindow.FAILURE_BIT) != 0;
			// one atomic add for the whole probe result: a decision never sees a call without its verdict
			p.addProbe(failed, slow);
			decideHalfOpen(p, s, now);
		}
	}

	/**
	 * Records a fast success through the batch: the window and the trip policies count it when the
	 * batch is handed over, so the record path reads no clock.
	 *
	 * @return false when the batch is full (the caller records the call directly)
	 */
	private boolean batched(Settings s, SuccessBatch batch, Permit permit, long policyTtft, long givenNow,
			boolean timed) {
		int added = batch.add(policyTtft, givenNow, timed);
		if (added == SuccessBatch.HAND_OVER_FIRST) {
			// the batch is older than the bound: it goes first, this success opens the next one
			handOver(s, batch, timed ? givenNow : clock.nanoTime(), true);
			added = batch.add(policyTtft, givenNow, timed);
		}
		if (added == SuccessBatch.FULL || added == SuccessBatch.HAND_OVER_FIRST) {
			return false;
		}
		if (consecutiveFailures != 0 && permit.phase == phase) {
			consecutiveFailures = 0;
		}
		if (added == SuccessBatch.ADDED_HAND_OVER) {
			handOver(s, batch, timed ? givenNow : clock.nanoTime(), true);
		}
		return true;
	}

	/**
	 * Hands the pending fast successes to the trip policies, and judges when one of them may have
	 * raised the pressure. Skipped when another thread is handing over (its hand-over or the next takes
	 * what this one would have).
	 *
	 * @param judge whether to judge a CLOSED breaker here when a success may have raised the pressure
	 * (false when the caller is about to record a call of its own and judges after it, or only reads)
	 * @return {@link #HANDED_RAISED} when one of the successes may have raised the pressure,
	 * {@link #HANDED} when not, {@link #HANDING_ELSEWHERE} when another thread is handing over
	 */
	private int handOver(Settings s, SuccessBatch batch, long now, boolean judge) {
		if (!batch.tryLock()) {
			return HANDING_ELSEWHERE;
		}
		return handOverLocked(s, batch, now, judge);
	}

	/** {@link #handOver} for the holder of the batch's lock; frees it. */
	int handOverLocked(Settings s, SuccessBatch batch, long now, boolean judge) {
		boolean raised = false;
		boolean owed;
		try {
			raised = batch.handOver(s.window, s.config, now);
		}
		catch (Throwable t) {
			Callbacks.dropped(t);
		}
		finally {
			owed = batch.unlock();
		}
		// a call recorded while the batch was on its way left its judgement to this thread
		if (raised && judge || owed) {
			Phase p = phase;
			if (p.state == BreakerState.CLOSED && now - p.dwellUntil >= 0 && settings == s) {
				judgeClosed(p, s, owed ? clock.nanoTime() : now);
			}
		}
		return raised ? HANDED_RAISED : HANDED;
	}

	/**
	 * Hands over what waits in the batch, if any, before the window or the policies are read; it judges
	 * only a judgement a record left to the hand-over.
	 */
	private void handOverWaiting(Settings s, long now) {
		if (s.batch != null) {
			handOver(s, s.batch, now, false);
		}
	}

	private static final int HANDED = 0;
	private static final int HANDED_RAISED = 1;
	private static final int HANDING_ELSEWHERE = 2;

	/** Counts a failure in a row, or ends the row; a success writes only when there is a row to end. */
	private int consecutive(int flags) {
		if ((flags & SlidingWindow.FAILURE_BIT) != 0) {
			return CONSECUTIVE.incrementAndGet(this);
		}
		if (consecutiveFailures != 0) {
			consecutiveFailures = 0;
		}
		return 0;
	}

	private void release(Permit permit) {
		if (permit.kind == Permit.PROBE_SLOT) {
			Phase.GRANTED.decrementAndGet(permit.phase);
		}
	}

	private void judgeClosed(Phase p, Settings s, long now) {
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
			if (since != Phase.NEVER) {
				Phase.ABOVE.compareAndSet(p, since, Phase.NEVER); // the spike is over before the delay
			}
			return;
		}
		if (c.tripDelayNanos > 0) {
			long since = p.aboveSince;
			if (since == Phase.NEVER) {
				Phase.ABOVE.compareAndSet(p, Phase.NEVER, now);
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
	private double tripLimit(BreakerConfig c, long now) {
		return c.warmUpNanos > 0 && now - createdAt < c.warmUpNanos ? c.warmUpThresholdFactor() : 1;
	}

	/** A trip sooner after a re-close than the last open wait lasted continues the streak of re-opens. */
	private static int tripStreak(Phase closed, long now) {
		return closed.lastOpenWait > 0 && now - closed.enteredAt < closed.lastOpenWait ? closed.streak + 1 : 0;
	}

	private void decideHalfOpen(Phase p, Settings s, long now) {
		BreakerConfig c = s.config;
		long tally = p.probes;
		int calls = Phase.field(tally, Phase.CALLS);
		int failures = Phase.field(tally, Phase.FAILURES);
		int slow = Phase.field(tally, Phase.SLOW);
		int healthy = Phase.field(tally, Phase.HEALTHY);
		double pressure = FailureRatePolicy.ratePressure(calls, failures, slow, c);
		// with counted probes, close only once the result cannot change: judge as if every probe still
		// to come failed slowly, so a lucky first few cannot close a breaker hovering at its threshold
		int probes = c.halfOpenProbes();
		int outstanding = probes > 0 ? Math.max(0, probes - calls) : 0;
		double worst = outstanding == 0 ? pressure
				: FailureRatePolicy.ratePressure(calls + outstanding, failures + outstanding, slow + outstanding, c);
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

	private void open(Phase from, Settings s, long now, int streak, String reason) {
		long wait = openWaitNanos(s.config, streak, from.seq + 1);
		transition(from, Phase.open(from.seq + 1, now, wait, streak), reason);
	}

	private void reopen(Phase from, Settings s, long now, String reason) {
		open(from, s, now, from.streak + 1, reason);
	}

	private boolean close(Phase from, Settings s, long now, String reason) {
		Phase closed = Phase.closed(from.seq + 1, now, now + s.config.minimumDwellNanos, from.streak,
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

	private void freshWindow(Settings s, long now) {
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

	private boolean transition(Phase from, Phase to, String reason) {
		return transition(from, to, reason, null);
	}

	/** @param window the window to report, when taken before the transition; else read now */
	private boolean transition(Phase from, Phase to, String reason, BreakerSnapshot window) {
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

	// ---------------------------------------------------------------- operator controls

	/** Refuses every call until another operator transition. */
	public void transitionToForcedOpen() {
		operatorTransition(BreakerState.FORCED_OPEN);
	}

	/** Permits every call and records nothing until another operator transition. */
	public void transitionToDisabled() {
		operatorTransition(BreakerState.DISABLED);
	}

	/** Closes the breaker with an empty window and no re-open streak. */
	public void transitionToClosed() {
		operatorTransition(BreakerState.CLOSED);
	}

	/**
	 * Opens the breaker as a trip would, but for {@code wait} instead of the configured open wait: calls
	 * are refused until the wait has passed, then the breaker probes from HALF_OPEN as usual. Meant for a
	 * verdict reached elsewhere, such as a peer instance that tripped on the same provider
	 * ({@code reactor-ai-guard-redis} shares breaker state this way). From CLOSED the re-open streak
	 * continues as after a trip, from HALF_OPEN it grows by one; an OPEN breaker starts a new OPEN stay
	 * that ends after {@code wait} (reported as an OPEN → OPEN transition), which lines its probing up
	 * with the peer's. FORCED_OPEN and DISABLED are operator states: they are left alone.
	 *
	 * <pre>{@code
	 * breaker.transitionToOpen(Duration.ofSeconds(30), "peer api-2: failure rate 0.6 >= 0.5");
	 * }</pre>
	 *
	 * @param wait how long the breaker refuses calls before probing; not negative
	 * @param reason why, reported in the {@link BreakerEvent.StateTransition}
	 * @return whether the breaker moved to a new OPEN stay ({@code false} in FORCED_OPEN or DISABLED)
	 * @throws IllegalArgumentException when {@code wait} is negative
	 */
	public boolean transitionToOpen(Duration wait, String reason) {
		Objects.requireNonNull(wait, "wait");
		Objects.requireNonNull(reason, "reason");
		if (wait.isNegative()) {
			throw new IllegalArgumentException("wait must not be negative: " + wait);
		}
		long waitNanos = saturatedNanos(wait);
		for (;;) {
			Phase p = phase;
			if (p.state == BreakerState.FORCED_OPEN || p.state == BreakerState.DISABLED) {
				return false;
			}
			long now = clock.nanoTime();
			int streak = p.state == BreakerState.CLOSED ? tripStreak(p, now)
					: p.state == BreakerState.HALF_OPEN ? p.streak + 1 : p.streak;
			if (transition(p, Phase.open(p.seq + 1, now, waitNanos, streak), reason)) {
				return true;
			}
		}
	}

	/**
	 * Closes an OPEN or HALF_OPEN breaker as healthy probes would: a fresh window, the configured
	 * minimum dwell and ramp-up, and the re-open streak kept (a trip soon after continues it). Meant for
	 * a verdict reached elsewhere, such as a peer instance whose probes succeeded. Unlike the operator's
	 * {@link #transitionToClosed()}, it leaves CLOSED, FORCED_OPEN and DISABLED breakers alone.
	 *
	 * <pre>{@code
	 * breaker.transitionToClosed("peer api-2: 3 of 3 probes healthy");
	 * }</pre>
	 *
	 * @param reason why, reported in the {@link BreakerEvent.StateTransition}
	 * @return whether the breaker closed ({@code false} when it was not OPEN or HALF_OPEN)
	 */
	public boolean transitionToClosed(String reason) {
		Objects.requireNonNull(reason, "reason");
		for (;;) {
			Phase p = phase;
			if (p.state != BreakerState.OPEN && p.state != BreakerState.HALF_OPEN) {
				return false;
			}
			if (close(p, settings, clock.nanoTime(), reason)) {
				return true;
			}
		}
	}

	private static long saturatedNanos(Duration d) {
		try {
			return Math.min(d.toNanos(), Long.MAX_VALUE / 4);
		}
		catch (ArithmeticException tooLong) {
			return Long.MAX_VALUE / 4;
		}
	}

	private void operatorTransition(BreakerState target) {
		for (;;) {
			Phase p = phase;
			if (p.state == target) {
				return;
			}
			long now = clock.nanoTime();
			Phase next = target == BreakerState.CLOSED ? Phase.closed(p.seq + 1, now, now, 0, 0, 0)
					: Phase.simple(target, p.seq + 1, now);
			if (transition(p, next, "operator")) {
				if (target == BreakerState.CLOSED) {
					freshWindow(settings, now);
				}
				return;
			}
		}
	}

	/**
	 * Replaces the config at runtime, atomically. The window is kept when its shape (type, size, bucket
	 * length) is unchanged, else a fresh one starts; the trip policy keeps its evaluator (and what it
	 * learned) when the new policy is equal to the old. New thresholds apply from the next recorded call.
	 * Emits a {@link BreakerEvent.ConfigChanged}.
	 *
	 * @param config the new config
	 * @param reason why, for the audit trail
	 */
	public void reconfigure(BreakerConfig config, String reason) {
		Objects.requireNonNull(config, "config");
		Objects.requireNonNull(reason, "reason");
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
		BreakerListener[] ls = listeners;
		if (ls.length != 0) {
			emit(ls, new BreakerEvent.ConfigChanged(name, clock.nanoTime(), Instant.now(wallClock), old.config,
					config, reason));
		}
	}

	// ---------------------------------------------------------------- reading

	/** @return the breaker's name */
	public String name() {
		return name;
	}

	/**
	 * @return the current state. Transitions out of OPEN happen lazily on the next
	 * {@link #tryAcquire()}, so an OPEN breaker whose wait has passed still reports OPEN until then.
	 */
	public BreakerState state() {
		return phase.state;
	}

	/**
	 * When the breaker lets a probe through, for dashboards and health views.
	 *
	 * @return empty unless the state is OPEN; else the time left of the open wait, {@link Duration#ZERO}
	 *         once it has passed (the next {@link #tryAcquire()} moves the breaker to HALF_OPEN)
	 */
	public Optional<Duration> untilProbe() {
		Phase p = phase;
		if (p.state != BreakerState.OPEN) {
			return Optional.empty();
		}
		long left = p.openUntil - clock.nanoTime();
		return Optional.of(left <= 0 ? Duration.ZERO : Duration.ofNanos(left));
	}

	/**
	 * @return the length of the open wait the breaker is in (OPEN) or last went through; zero when it
	 *         has not opened since it was built or last moved by an operator. With
	 *         {@code openWaitMultiplier > 1} a re-open from HALF_OPEN, or a trip within one open wait of
	 *         closing, waits {@code multiplier} times longer than the last, up to {@code maxOpenWait}.
	 */
	public Duration lastOpenWait() {
		return Duration.ofNanos(phase.lastOpenWait);
	}

	/**
	 * The open wait the breaker would get if it opened next, as things stand: after a failed probe
	 * (OPEN, HALF_OPEN), after a trip (CLOSED: longer when the last open ended less than its own wait
	 * ago), or the first wait (after an operator transition). Jitter included: the breaker's jitter
	 * is a function of its transition count, so this is the wait it would really use.
	 *
	 * @return the next open wait
	 */
	public Duration nextOpenWait() {
		Phase p = phase;
		BreakerConfig c = settings.config;
		long wait;
		switch (p.state) {
			// a failed probe: OPEN -> HALF_OPEN -> OPEN again, one step further in the streak
			case OPEN -> wait = openWaitNanos(c, p.streak + 1, p.seq + 2);
			case HALF_OPEN -> wait = openWaitNanos(c, p.streak + 1, p.seq + 1);
			case CLOSED -> {
				wait = openWaitNanos(c, tripStreak(p, clock.nanoTime()), p.seq + 1);
			}
			// an operator state is left by an operator transition, which starts the streak over
			default -> wait = openWaitNanos(c, 0, p.seq + 2);
		}
		return Duration.ofNanos(wait);
	}

	/** @return the current config */
	public BreakerConfig config() {
		return settings.config;
	}

	/** @return the window's failure rate now, a fraction in [0, 1] */
	public double failureRate() {
		return current().failureRate();
	}

	/** @return the window's slow-call rate now, a fraction in [0, 1] */
	public double slowCallRate() {
		return current().slowCallRate();
	}

	/** @return a copy of the window now */
	public BreakerSnapshot snapshot() {
		return BreakerSnapshot.of(current());
	}

	/** @return calls refused since the breaker was created */
	public long rejectedCalls() {
		return rejected.sum();
	}

	private SlidingWindow current() {
		return slid(settings, clock.nanoTime());
	}

	/** The window of {@code s} with the batched successes in and slid to {@code nowNanos}, without a copy. */
	private SlidingWindow slid(Settings s, long nowNanos) {
		handOverWaiting(s, nowNanos);
		if (s.window.timeBased()) {
			s.window.advanceTo(nowNanos);
		}
		return s.window;
	}

	/** {@link #judgementAt}: no calls in the window, or an operator state (FORCED_OPEN, DISABLED). */
	static final int IDLE = 0;
	/** {@link #judgementAt}: CLOSED, calls in the window, the trip policy's pressure below the trip limit. */
	static final int HEALTHY = 1;
	/** {@link #judgementAt}: OPEN with its wait running, or CLOSED at the trip limit (waiting out a dwell or delay). */
	static final int FAILING = 2;
	/** {@link #judgementAt}: HALF_OPEN, or OPEN with its wait over (the next call probes). */
	static final int PROBING = 3;

	/**
	 * The breaker's judgement of itself at {@code nowNanos}, a reading of its clock: what a parent in
	 * a {@link BreakerTree} follows. A CLOSED breaker asks its trip policy (after handing over its
	 * batched successes), so a parent of parents follows its children's correlation rule in turn.
	 *
	 * @return {@link #IDLE}, {@link #HEALTHY}, {@link #FAILING} or {@link #PROBING}
	 */
	int judgementAt(long nowNanos) {
		Phase p = phase;
		switch (p.state) {
			case OPEN:
				return nowNanos - p.openUntil < 0 ? FAILING : PROBING;
			case HALF_OPEN:
				return PROBING;
			case CLOSED:
				break;
			default:
				return IDLE; // FORCED_OPEN, DISABLED: an operator's state, not evidence
		}
		Settings s = settings;
		SlidingWindow window = slid(s, nowNanos);
		double pressure;
		try {
			pressure = s.evaluator.pressure(window, s.config, nowNanos);
		}
		catch (Throwable t) {
			Callbacks.dropped(t);
			pressure = 0;
		}
		if (pressure >= tripLimit(s.config, nowNanos)) {
			return FAILING;
		}
		return window.calls() > 0 ? HEALTHY : IDLE;
	}

	/** The live window (tests compare its slots with its totals). */
	SlidingWindow window() {
		return settings.window;
	}

	/** The current settings (tests read the success batch). */
	Settings settings() {
		return settings;
	}

	/** The trip policy's evaluator (tests read what it learned). */
	TripPolicy.Evaluator evaluator() {
		Settings s = settings;
		handOverWaiting(s, clock.nanoTime());
		return s.evaluator;
	}

	/** The current phase (tests read probe accounting). */
	Phase phase() {
		return phase;
	}

	// ---------------------------------------------------------------- listeners

	/** Adds a listener; it must not block (see {@link BreakerListener}). */
	public void addListener(BreakerListener listener) {
		Objects.requireNonNull(listener, "listener");
		for (;;) {
			BreakerListener[] old = listeners;
			BreakerListener[] next = Arrays.copyOf(old, old.length + 1);
			next[old.length] = listener;
			if (LISTENERS.compareAndSet(this, old, next)) {
				return;
			}
		}
	}

	/** @return whether {@code listener} was registered and is now removed */
	public boolean removeListener(BreakerListener listener) {
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

	private void emit(BreakerListener[] ls, BreakerEvent event) {
		for (BreakerListener l : ls) {
			try {
				l.onEvent(event);
			}
			catch (Throwable t) {
				Callbacks.dropped(t);
			}
		}
	}


	private static String round(double v) {
		return String.valueOf(Math.round(v * 1000) / 1000.0);
	}

	@Override
	public String toString() {
		return "CircuitBreaker{" + name + ", " + phase.state + "}";
	}

	// ---------------------------------------------------------------- internals

	/** Config, window and evaluator swapped together by {@link #reconfigure}. */
	static final class Settings {
		final BreakerConfig config;
		final SlidingWindow window;
		final TripPolicy.Evaluator evaluator;

		/** Whether the evaluator is the classic, stateless one (judged inline on the record path). */
		final boolean classic;
		/** Whether every recorded call needs a clock reading (false only for stateless count-based judging). */
		final boolean callsNeedTime;
		/** Fast successes on their way to a batching evaluator; null when the evaluator does not batch. */
		final SuccessBatch batch;

		/** @param batch the batch of the same evaluator before a reconfiguration, or null for a new one */
		Settings(BreakerConfig config, SlidingWindow window, TripPolicy.Evaluator evaluator, SuccessBatch batch,
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

	/**
	 * One stay in one state. Immutable but for the HALF_OPEN probe accounting; a transition replaces
	 * the whole object, so permits know which stay granted them.
	 */
	static final class Phase {

		static final AtomicIntegerFieldUpdater<Phase> GRANTED = AtomicIntegerFieldUpdater.newUpdater(Phase.class,
				"granted");
		static final AtomicLongFieldUpdater<Phase> OFFERED = AtomicLongFieldUpdater.newUpdater(Phase.class,
				"offered");
		static final AtomicLongFieldUpdater<Phase> PROBES = AtomicLongFieldUpdater.newUpdater(Phase.class, "probes");
		static final AtomicLongFieldUpdater<Phase> ABOVE = AtomicLongFieldUpdater.newUpdater(Phase.class, "aboveSince");
		/** One admitted call's worth of ramp credit (2^24: overflows after 2^39 calls). */
		static final long CREDIT_UNIT = 1L << 24;
		/** {@link #aboveSince} while the pressure is below the trip limit. */
		static final long NEVER = Long.MIN_VALUE;

		/** Bit offsets of the four 16-bit counts packed in {@link #probes}. */
		static final int CALLS = 0;
		static final int FAILURES = 16;
		static final int SLOW = 32;
		static final int HEALTHY = 48;
		static final int MAX_COUNT = 0xFFFF;

		final BreakerState state;
		/** Transition number, also the jitter's seed offset. */
		final long seq;
		final long enteredAt;
		/** Automatic transitions out (trip, close) wait until this time. */
		final long dwellUntil;
		/** OPEN: when probing may start. */
		final long openUntil;
		/** Consecutive re-opens that led to this stay. */
		final int streak;
		/** The wait of the latest OPEN stay, 0 when none. */
		final long lastOpenWait;
		/** CLOSED after a re-close: the ramp-up period, 0 when none. */
		final long rampNanos;

		volatile int granted;
		/**
		 * HALF_OPEN ratio probes: calls offered so far. OPEN: P0 calls offered to the share that still
		 * passes. A ramping CLOSED stay: its credit in
		 * {@link #CREDIT_UNIT}s, starting just below one unit so the first call with a share is admitted.
		 */
		volatile long offered;
		/** CLOSED: whether the stay still ramps up (cleared by the first call after the ramp's end). */
		volatile boolean ramping;
		/** CLOSED: since when the pressure has been at the trip limit, waiting out the trip delay. */
		volatile long aboveSince = NEVER;
		/** HALF_OPEN probe results: calls, failures, slow and healthy calls, 16 bits each. */
		volatile long probes;
		volatile boolean closeReady;

		static int field(long tally, int offset) {
			return (int) (tally >>> offset) & MAX_COUNT;
		}

		/** Counts one probe result in one CAS; each count stops at its maximum instead of overflowing. */
		void addProbe(boolean failed, boolean slow) {
			for (;;) {
				long t = probes;
				long next = t;
				next = bump(next, CALLS);
				if (failed) {
					next = bump(next, FAILURES);
				}
				if (slow) {
					next = bump(next, SLOW);
				}
				if (!failed && !slow) {
					next = bump(next, HEALTHY);
				}
				if (PROBES.compareAndSet(this, t, next)) {
					return;
				}
			}
		}

		private static long bump(long tally, int offset) {
			return field(tally, offset) == MAX_COUNT ? tally : tally + (1L << offset);
		}

		private Phase(BreakerState state, long seq, long enteredAt, long dwellUntil, long openUntil, int streak,
				long lastOpenWait, long rampNanos) {
			this.state = state;
			this.seq = seq;
			this.enteredAt = enteredAt;
			this.dwellUntil = dwellUntil;
			this.openUntil = openUntil;
			this.streak = streak;
			this.lastOpenWait = lastOpenWait;
			this.rampNanos = rampNanos;
			this.ramping = rampNanos > 0;
			this.offered = rampNanos > 0 ? CREDIT_UNIT - 1 : 0;
		}

		static Phase closed(long seq, long now, long dwellUntil, int streak, long lastOpenWait, long rampNanos) {
			return new Phase(BreakerState.CLOSED, seq, now, dwellUntil, 0, streak, lastOpenWait, rampNanos);
		}

		static Phase open(long seq, long now, long wait, int streak) {
			return new Phase(BreakerState.OPEN, seq, now, now, now + wait, streak, wait, 0);
		}

		static Phase halfOpen(Phase open, long now, BreakerConfig config) {
			return new Phase(BreakerState.HALF_OPEN, open.seq + 1, now, now + config.minimumDwellNanos, 0, open.streak,
					open.lastOpenWait, 0);
		}

		static Phase simple(BreakerState state, long seq, long now) {
			return new Phase(state, seq, now, now, 0, 0, 0, 0);
		}
	}

	/**
	 * A permission; the first {@link #record} wins, later ones are ignored.
	 *
	 * <p>A HALF_OPEN probe is claimed by a CAS, so racing settlements of one probe count once or give
	 * the slot back, never both. A CLOSED permit is claimed with a plain read and write of the same
	 * field, which saves an atomic operation per call. That is still exactly once for every repeat
	 * ordered after the first settlement (the same thread, or signals of one Reactive Streams
	 * subscription, which never overlap), and for the one race Reactive Streams allows, a cancel
	 * against the terminal signal: settling a CLOSED permit as cancelled changes nothing, so either
	 * the outcome counts once or nothing does. Only two <em>counting</em> outcomes reported at the
	 * same instant from unsynchronised threads could both count; the guard's end path is once-guarded,
	 * so it never does that.
	 */
	static final class Permit implements BreakerPermit {

		static final int CALL = 0;
		static final int PROBE_SLOT = 1;
		static final int PROBE = 2;

		private static final VarHandle SETTLED;

		static {
			try {
				SETTLED = MethodHandles.lookup().findVarHandle(Permit.class, "settled", int.class);
			}
			catch (ReflectiveOperationException e) {
				throw new ExceptionInInitializerError(e);
			}
		}

		final CircuitBreaker breaker;
		final Phase phase;
		final int kind;
		/** 1 once settled: plain access for a CLOSED permit, CAS for a probe. */
		private int settled;
		/** The attempt's prompt size, 0 when not told. */
		int promptTokens;

		Permit(CircuitBreaker breaker, Phase phase, int kind) {
			this.breaker = breaker;
			this.phase = phase;
			this.kind = kind;
		}

		private boolean claim() {
			if (kind == CALL) {
				if (settled != 0) {
					return false;
				}
				settled = 1;
				return true;
			}
			return SETTLED.compareAndSet(this, 0, 1);
		}

		@Override
		public BreakerPermit promptTokens(int tokens) {
			this.promptTokens = tokens;
			return this;
		}

		@Override
		public void record(Outcome outcome, long timeToFirstTokenNanos) {
			Objects.requireNonNull(outcome, "outcome");
			if (claim()) {
				breaker.settle(this, outcome, timeToFirstTokenNanos, 0, false);
			}
		}

		@Override
		public void record(Outcome outcome, long timeToFirstTokenNanos, long nowNanos) {
			Objects.requireNonNull(outcome, "outcome");
			if (claim()) {
				breaker.settle(this, outcome, timeToFirstTokenNanos, nowNanos, true);
			}
		}
	}

	/**
	 * Builds a {@link CircuitBreaker}.
	 *
	 * <pre>{@code
	 * CircuitBreaker breaker = CircuitBreaker.builder("anthropic")
	 *     .config(config)
	 *     .clock(() -> scheduler.now(TimeUnit.NANOSECONDS))
	 *     .metrics(metrics)
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder {

		private final String name;
		private BreakerConfig config = BreakerConfig.defaults();
		private BreakerClock clock = BreakerClock.system();
		private Clock wallClock = Clock.systemUTC();
		private GuardMetrics metrics = GuardMetrics.noop();
		private final List<BreakerListener> listeners = new ArrayList<>();

		private Builder(String name) {
			BreakerConfig.notNull("name", name);
			if (name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
		}

		/** @param config the config (default {@link BreakerConfig#defaults()}) */
		public Builder config(BreakerConfig config) {
			this.config = BreakerConfig.notNull("config", config);
			return this;
		}

		/** @param clock the monotonic clock all waits and windows use (default {@link BreakerClock#system()}) */
		public Builder clock(BreakerClock clock) {
			this.clock = BreakerConfig.notNull("clock", clock);
			return this;
		}

		/** @param wallClock the clock that stamps {@link BreakerEvent.ConfigChanged#at()} (default UTC) */
		public Builder wallClock(Clock wallClock) {
			this.wallClock = BreakerConfig.notNull("wallClock", wallClock);
			return this;
		}

		/** @param metrics where the state gauge, transitions, rejections and rates go (default no-op) */
		public Builder metrics(GuardMetrics metrics) {
			this.metrics = BreakerConfig.notNull("metrics", metrics);
			return this;
		}

		/** @param listener a listener to register from the start (repeatable) */
		public Builder listener(BreakerListener listener) {
			listeners.add(BreakerConfig.notNull("listener", listener));
			return this;
		}

		/** @return the breaker, CLOSED, announced to the metrics */
		public CircuitBreaker build() {
			CircuitBreaker breaker = new CircuitBreaker(this);
			breaker.metrics.breakerCreated(breaker.name, breaker::state, breaker::failureRate,
					breaker::slowCallRate);
			return breaker;
		}
	}
}
