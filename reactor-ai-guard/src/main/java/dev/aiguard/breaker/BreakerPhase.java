package dev.aiguard.breaker;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * One stay in one state. Immutable but for the HALF_OPEN probe accounting; a transition replaces
 * the whole object, so permits know which stay granted them.
 */
final class BreakerPhase {

	static final AtomicIntegerFieldUpdater<BreakerPhase> GRANTED = AtomicIntegerFieldUpdater
			.newUpdater(BreakerPhase.class, "granted");
	static final AtomicLongFieldUpdater<BreakerPhase> OFFERED = AtomicLongFieldUpdater
			.newUpdater(BreakerPhase.class, "offered");
	static final AtomicLongFieldUpdater<BreakerPhase> PROBES = AtomicLongFieldUpdater
			.newUpdater(BreakerPhase.class, "probes");
	static final AtomicLongFieldUpdater<BreakerPhase> ABOVE = AtomicLongFieldUpdater
			.newUpdater(BreakerPhase.class, "aboveSince");
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

	private BreakerPhase(BreakerState state, long seq, long enteredAt, long dwellUntil, long openUntil, int streak,
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

	static BreakerPhase closed(long seq, long now, long dwellUntil, int streak, long lastOpenWait, long rampNanos) {
		return new BreakerPhase(BreakerState.CLOSED, seq, now, dwellUntil, 0, streak, lastOpenWait, rampNanos);
	}

	static BreakerPhase open(long seq, long now, long wait, int streak) {
		return new BreakerPhase(BreakerState.OPEN, seq, now, now, now + wait, streak, wait, 0);
	}

	static BreakerPhase halfOpen(BreakerPhase open, long now, BreakerConfig config) {
		return new BreakerPhase(BreakerState.HALF_OPEN, open.seq + 1, now, now + config.minimumDwellNanos, 0, open.streak,
				open.lastOpenWait, 0);
	}

	static BreakerPhase simple(BreakerState state, long seq, long now) {
		return new BreakerPhase(state, seq, now, now, 0, 0, 0, 0);
	}
}
