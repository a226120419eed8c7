package dev.aiguard.breaker;

import java.util.concurrent.atomic.LongAdder;

import org.jspecify.annotations.Nullable;

/**
 * How a {@link CircuitBreaker} hands out permits in each state: CLOSED at once (or a growing share
 * while it ramps up), OPEN refuses until its wait ends and the next call opens the HALF_OPEN stay,
 * HALF_OPEN lets probes through by count or by share (P0 first when configured), and every refusal
 * is counted and reported.
 */
abstract class BreakerAdmission extends BreakerSettlement {

	/** Handed out while DISABLED: settles to nothing. */
	private static final BreakerPermit DISABLED_PERMIT = (outcome, ttft) -> {
	};

	final LongAdder rejected = new LongAdder();

	BreakerAdmission(String name, BreakerConfig config, BreakerWiring<?> wiring) {
		super(name, config, wiring);
	}

	/** The priority rank of a call asked for without one. */
	static final int NO_PRIORITY = -1;

	/**
	 * @param rank the call's priority ordinal, or {@link #NO_PRIORITY}
	 * @return the permit, or null when the call is refused
	 */
	@Nullable
	BreakerPermit acquire(BreakerPhase p, long givenNow, boolean timed, int rank) {
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
					BreakerPhase h = BreakerPhase.halfOpen(p, now, c);
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
	@Nullable
	BreakerPermit rampAcquire(BreakerPhase p, long now) {
		long elapsed = now - p.enteredAt;
		if (elapsed >= p.rampNanos) {
			p.ramping = false;
			return new Permit(this, p, Permit.CALL);
		}
		long share = elapsed <= 0 ? 0 : (long) ((double) elapsed / p.rampNanos * BreakerPhase.CREDIT_UNIT);
		long before = BreakerPhase.OFFERED.getAndAdd(p, share);
		if ((before + share) / BreakerPhase.CREDIT_UNIT > before / BreakerPhase.CREDIT_UNIT) {
			return new Permit(this, p, Permit.CALL);
		}
		return reject(p, now, true);
	}

	/** Marks "the phase moved on, look again" inside {@link CircuitBreaker#tryAcquire()}. */
	private static final BreakerPermit RETRY = (outcome, ttft) -> {
	};

	/** The deterministic share: the 1st offered call, then each time {@code k × share} crosses an integer. */
	private static boolean shareAdmits(BreakerPhase p, double share) {
		long k = BreakerPhase.OFFERED.getAndIncrement(p);
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
	private @Nullable BreakerPermit claimOnEntry(BreakerPhase h, BreakerConfig c, int rank) {
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

	private @Nullable BreakerPermit acquireProbe(BreakerPhase p, long now, int rank) {
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
				if (BreakerPhase.GRANTED.compareAndSet(p, granted, granted + 1)) {
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
	private @Nullable BreakerPermit reject(BreakerPhase p, long now, boolean knownNow) {
		rejected.increment();
		metrics.breakerRejected(name);
		BreakerListener[] ls = listeners;
		if (ls.length != 0) {
			emit(ls, new BreakerEvent.CallRejected(name, knownNow ? now : clock.nanoTime(), p.state));
		}
		return null;
	}
}
