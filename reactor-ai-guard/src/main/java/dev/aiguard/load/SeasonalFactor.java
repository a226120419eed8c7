package dev.aiguard.load;

import java.util.Objects;

/**
 * A multiplicative seasonal profile learnt from little history: one factor per slot of a season
 * (e.g. 24 hourly slots of a day), the slot's mean value divided by the overall mean. A factor of
 * 1.5 says the slot usually sees 50 % more than average.
 *
 * <p>Each {@link #observe(double)} records a value in the current slot and moves on to the next
 * one, wrapping after {@code seasonLength} slots; slot 0 is the slot of the first value. The
 * profile is {@linkplain #ready() ready} once every slot has seen a value, i.e. after one full
 * season; until then every factor is 1.0. The overall mean is the mean of the slot means (each slot
 * counts once, however many values it holds), so the factors always average exactly 1 — on whole
 * seasons it equals the mean of all values. When the overall mean is 0 every factor is 1.0.
 *
 * <p>Meant for non-negative series such as request rates: a negative or non-finite value is
 * refused. Unlike {@link HoltWinters}, which needs two seasons and adapts its seasonal terms
 * quickly, this profile needs one season and averages over all history.
 *
 * <p>{@link #adjusting(int, Forecaster)} pairs a fresh profile with a non-seasonal forecaster:
 *
 * <pre>{@code
 * Forecaster hourly = SeasonalFactor.adjusting(24, Holt.of(0.3, 0.1));
 * for (double rate : ratesPerHour) hourly.observe(rate);
 * double nextHour = hourly.forecast(1);
 * }</pre>
 */
public final class SeasonalFactor {

	private final int seasonLength;
	private final double[] sums;
	private final long[] counts;
	private long n;

	private SeasonalFactor(int seasonLength) {
		this.seasonLength = seasonLength;
		this.sums = new double[seasonLength];
		this.counts = new long[seasonLength];
	}

	/**
	 * @param seasonLength slots per season, at least 2
	 * @throws IllegalArgumentException when {@code seasonLength < 2}
	 */
	public static SeasonalFactor of(int seasonLength) {
		if (seasonLength < 2) {
			throw new IllegalArgumentException("seasonLength must be >= 2, was " + seasonLength);
		}
		return new SeasonalFactor(seasonLength);
	}

	/**
	 * A forecaster that removes the season before {@code deseasonalised} sees a value and puts it
	 * back into its forecasts, with a fresh profile of {@code seasonLength} slots.
	 *
	 * @param seasonLength slots per season, at least 2
	 * @param deseasonalised a non-seasonal forecaster, e.g. {@link Holt}; the returned forecaster
	 *        feeds it and must be its only feeder
	 * @throws IllegalArgumentException when {@code seasonLength < 2}
	 * @see Adjusted
	 */
	public static Adjusted adjusting(int seasonLength, Forecaster deseasonalised) {
		Objects.requireNonNull(deseasonalised, "deseasonalised");
		return new Adjusted(of(seasonLength), deseasonalised);
	}

	/**
	 * Records {@code value} in the current slot and moves to the next slot.
	 *
	 * @throws IllegalArgumentException when {@code value} is negative or not finite
	 */
	public void observe(double value) {
		requireNonNegative(value);
		int slot = nextSlot();
		sums[slot] += value;
		counts[slot]++;
		n++;
	}

	static void requireNonNegative(double value) {
		if (!(Double.isFinite(value) && value >= 0.0)) {
			throw new IllegalArgumentException("value must be finite and >= 0, was " + value);
		}
	}

	/** @return the slot the next observed value falls in, 0..seasonLength-1 */
	public int nextSlot() {
		return (int) (n % seasonLength);
	}

	/** @return whether every slot has seen a value (one full season observed) */
	public boolean ready() {
		return n >= seasonLength;
	}

	/**
	 * @param slot 0..seasonLength-1
	 * @return the slot's mean divided by the overall mean; 1.0 before {@link #ready()} or when the
	 *         overall mean is 0
	 * @throws IllegalArgumentException when {@code slot} is out of range
	 */
	public double factor(int slot) {
		if (slot < 0 || slot >= seasonLength) {
			throw new IllegalArgumentException("slot must be in 0.." + (seasonLength - 1) + ", was " + slot);
		}
		if (!ready()) {
			return 1.0;
		}
		double overall = 0.0;
		for (int i = 0; i < seasonLength; i++) {
			overall += sums[i] / counts[i];
		}
		overall /= seasonLength;
		if (overall == 0.0) {
			return 1.0;
		}
		return (sums[slot] / counts[slot]) / overall;
	}

	/**
	 * @param stepsAhead slots after the last observed one, at least 1
	 * @return the factor of that slot
	 * @throws IllegalArgumentException when {@code stepsAhead < 1}
	 */
	public double factorAhead(int stepsAhead) {
		if (stepsAhead < 1) {
			throw new IllegalArgumentException("stepsAhead must be >= 1, was " + stepsAhead);
		}
		return factor((int) ((n + stepsAhead - 1) % seasonLength));
	}

	/** @return values observed so far */
	public long observations() {
		return n;
	}

	/** @return slots per season */
	public int seasonLength() {
		return seasonLength;
	}

	@Override
	public String toString() {
		return "SeasonalFactor{seasonLength=" + seasonLength + ", n=" + n + '}';
	}

	/**
	 * A non-seasonal forecaster run on seasonally adjusted values: each observation is divided by
	 * its slot's factor (as known before the observation) before the inner forecaster sees it, and
	 * each forecast is the inner forecast multiplied by the factor of the forecast slot. During the
	 * first season every factor is 1.0, so the inner forecaster sees the raw values.
	 *
	 * <p>A slot whose factor is 0 (it never saw anything but 0) says nothing about the level: the
	 * inner forecaster observes its own one-step forecast there, and forecasts for the slot are 0.
	 *
	 * <p>Ready when both the profile (one full season) and the inner forecaster are; before that
	 * {@link #forecast(int)} returns the last observation (0 when none).
	 */
	public static final class Adjusted implements Forecaster {

		private final SeasonalFactor factors;
		private final Forecaster deseasonalised;
		private double last;

		Adjusted(SeasonalFactor factors, Forecaster deseasonalised) {
			this.factors = factors;
			this.deseasonalised = deseasonalised;
		}

		/**
		 * @throws IllegalArgumentException when {@code value} is negative or not finite
		 */
		@Override
		public void observe(double value) {
			requireNonNegative(value);
			double factor = factors.factor(factors.nextSlot());
			deseasonalised.observe(factor > 0.0 ? value / factor : deseasonalised.forecast(1));
			factors.observe(value);
			last = value;
		}

		@Override
		public double forecast(int stepsAhead) {
			if (stepsAhead < 1) {
				throw new IllegalArgumentException("stepsAhead must be >= 1, was " + stepsAhead);
			}
			if (!ready()) {
				return last;
			}
			return deseasonalised.forecast(stepsAhead) * factors.factorAhead(stepsAhead);
		}

		@Override
		public boolean ready() {
			return factors.ready() && deseasonalised.ready();
		}

		@Override
		public long observations() {
			return factors.observations();
		}

		/** @return the seasonal profile (read it; this forecaster is the one that feeds it) */
		public SeasonalFactor factors() {
			return factors;
		}

		/** @return the forecaster of the seasonally adjusted values */
		public Forecaster deseasonalised() {
			return deseasonalised;
		}

		@Override
		public String toString() {
			return "SeasonalFactor.Adjusted{" + factors + ", " + deseasonalised + '}';
		}
	}
}
