package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.aiguard.core.Outcome;
import dev.aiguard.internal.Callbacks;

/**
 * How a {@link CircuitBreaker} counts a settled permit: the outcome's flags, slowness by time to first
 * token (scaled by prompt size), fast successes batched on their way to the trip policies, the window,
 * and the judgement the state machine then makes. Also what a parent of a {@link BreakerTree} reads of
 * the breaker ({@link #judgementAt}).
 */
abstract class BreakerSettlement extends BreakerStateMachine {

	BreakerSettlement(String name, BreakerConfig config, BreakerWiring<?> wiring) {
		super(name, config, wiring);
	}

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
					&& (c.tripDelayNanos == 0 || phase.aboveSince == BreakerPhase.NEVER)
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
		BreakerPhase p = permit.phase;
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
			if ((judge || c.tripDelayNanos > 0 && p.aboveSince != BreakerPhase.NEVER) && now - p.dwellUntil >= 0) {
				// with successes on their way to the window, the thread carrying them judges once they are in
				if (handed != HANDING_ELSEWHERE || batch == null || !batch.oweJudgement()) {
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
			BreakerPhase p = phase;
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
	@Override
	final void handOverWaiting(Settings s, long now) {
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
			BreakerPhase.GRANTED.decrementAndGet(permit.phase);
		}
	}

	SlidingWindow current() {
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
		BreakerPhase p = phase;
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

	/** The trip policy's evaluator (tests read what it learned). */
	TripPolicy.Evaluator evaluator() {
		Settings s = settings;
		handOverWaiting(s, clock.nanoTime());
		return s.evaluator;
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

		final BreakerSettlement breaker;
		final BreakerPhase phase;
		final int kind;
		/** 1 once settled: plain access for a CLOSED permit, CAS for a probe. */
		private int settled;
		/** The attempt's prompt size, 0 when not told. */
		int promptTokens;

		Permit(BreakerSettlement breaker, BreakerPhase phase, int kind) {
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
}
