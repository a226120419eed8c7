package dev.aiguard.breaker;

import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.concurrent.atomic.DoubleAdder;

import org.jspecify.annotations.Nullable;

/**
 * Two exponentially decayed sums, kept with forward decay: an event at time {@code t} is added with
 * weight {@code 2^((t - landmark) / halfLife)}, so adding never rewrites the past and needs no lock
 * (a {@link DoubleAdder} per sum). The decayed value at {@code now} is the sum times
 * {@code 2^(-(now - landmark) / halfLife)}; the ratio of the two sums needs no decay at all. When the
 * weights grow large the landmark moves forward (once every 512 half-lives), rescaling both sums; a
 * record racing with that move may be lost, which is harmless for an estimate.
 */
final class DecayingSums {

	private static final double LN2 = Math.log(2);
	private static final double MAX_EXPONENT = 512;
	/** {@code 2^x} is looked up in steps of {@code 2^-STEP_BITS}, the rest comes from a short series. */
	private static final int STEP_BITS = 10;
	private static final double STEPS = 1 << STEP_BITS;
	/** {@code 2^(k / STEPS)} for k in [0, STEPS). */
	private static final double[] POWERS = new double[1 << STEP_BITS];

	static {
		for (int k = 0; k < POWERS.length; k++) {
			POWERS[k] = Math.pow(2, k / STEPS);
		}
	}

	private static final AtomicReferenceFieldUpdater<DecayingSums, Landmark> LANDMARK =
			AtomicReferenceFieldUpdater.newUpdater(DecayingSums.class, Landmark.class, "landmark");

	private final double halfLifeNanos;
	/** Half-lives per nanosecond: a multiplication on the record path instead of a division. */
	private final double perNano;
	private volatile @Nullable Landmark landmark;

	/** The landmark is set by the first event, so any clock origin (even a negative one) works. */
	DecayingSums(long halfLifeNanos) {
		this.halfLifeNanos = halfLifeNanos;
		this.perNano = 1.0 / halfLifeNanos;
	}

	/**
	 * {@code 2^x} for {@code |x| ≤ 512}, as exact as {@link Math#exp} to a few ulps but without it on
	 * the record path: the whole and table parts of {@code x} are exact powers, the remainder (under
	 * 1/1024) a four-term series whose error is below 10^-17.
	 */
	static double exp2(double x) {
		double scaled = x * STEPS;
		double floor = Math.floor(scaled);
		long steps = (long) floor;
		double r = (scaled - floor) * (LN2 / STEPS); // in [0, ln2 / 1024)
		double series = 1 + r * (1 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24))));
		return Math.scalb(POWERS[(int) (steps & (POWERS.length - 1))] * series, (int) (steps >> STEP_BITS));
	}

	void add(long nowNanos, double first, double second) {
		Landmark l = landmark;
		if (l == null) {
			LANDMARK.compareAndSet(this, null, new Landmark(nowNanos, 0, 0));
			l = landmark;
			if (l == null) {
				return; // reset meanwhile
			}
		}
		double x = (nowNanos - l.at) * perNano;
		if (x > MAX_EXPONENT) {
			l = moveLandmark(l, nowNanos);
			if (l == null) {
				return;
			}
			x = (nowNanos - l.at) * perNano;
		}
		if (x < -MAX_EXPONENT) {
			return; // far behind the landmark (a clock that stepped back): weightless
		}
		double weight = exp2(x);
		if (first != 0) {
			l.first.add(first * weight);
		}
		if (second != 0) {
			l.second.add(second * weight);
		}
	}

	private Landmark moveLandmark(Landmark old, long nowNanos) {
		double scale = Math.exp(-((nowNanos - old.at) / halfLifeNanos) * LN2);
		Landmark moved = new Landmark(nowNanos, old.first.sum() * scale, old.second.sum() * scale);
		LANDMARK.compareAndSet(this, old, moved);
		Landmark now = landmark;
		return now != null ? now : moved;
	}

	/** @return the first sum decayed to {@code nowNanos} */
	double first(long nowNanos) {
		Landmark l = landmark;
		return l == null ? 0 : l.first.sum() * Math.exp(-((nowNanos - l.at) / halfLifeNanos) * LN2);
	}

	/** @return the second sum decayed to {@code nowNanos} */
	double second(long nowNanos) {
		Landmark l = landmark;
		return l == null ? 0 : l.second.sum() * Math.exp(-((nowNanos - l.at) / halfLifeNanos) * LN2);
	}

	/** @return first / second (the decay cancels), or {@code orElse} when the second is 0 */
	double ratio(double orElse) {
		Landmark l = landmark;
		if (l == null) {
			return orElse;
		}
		double second = l.second.sum();
		return second <= 0 ? orElse : l.first.sum() / second;
	}

	void reset() {
		landmark = null;
	}

	private static final class Landmark {
		final long at;
		final DoubleAdder first = new DoubleAdder();
		final DoubleAdder second = new DoubleAdder();

		Landmark(long at, double first, double second) {
			this.at = at;
			this.first.add(first);
			this.second.add(second);
		}
	}
}
