package dev.aiguard.load;

/**
 * Holt's linear (double) exponential smoothing: a level and a trend, each smoothed once per
 * observation, and forecasts {@code level + k * trend}.
 *
 * <p>Started like R's {@code stats::HoltWinters(x, gamma = FALSE)}: the level starts at the second
 * value, the trend at the difference of the first two, and smoothing (and the sum of squared
 * one-step errors, {@link #sse()}) starts at the third. With the same α and β the level, trend and
 * SSE equal R's.
 *
 * <pre>{@code
 * Holt holt = Holt.of(0.3, 0.1);
 * for (double rate : rates) holt.observe(rate);
 * double inFiveIntervals = holt.forecast(5);
 * }</pre>
 */
public final class Holt implements Forecaster {

	private final double alpha;
	private final double beta;

	private long n;
	private double first;
	private double level;
	private double trend;
	private double sse;

	private Holt(double alpha, double beta) {
		this.alpha = alpha;
		this.beta = beta;
	}

	/**
	 * @param alpha level smoothing, in (0, 1]
	 * @param beta trend smoothing, in [0, 1]
	 * @throws IllegalArgumentException naming the parameter out of range
	 */
	public static Holt of(double alpha, double beta) {
		if (!(alpha > 0.0 && alpha <= 1.0)) {
			throw new IllegalArgumentException("alpha must be in (0, 1], was " + alpha);
		}
		if (!(beta >= 0.0 && beta <= 1.0)) {
			throw new IllegalArgumentException("beta must be in [0, 1], was " + beta);
		}
		return new Holt(alpha, beta);
	}

	@Override
	public void observe(double value) {
		if (!Double.isFinite(value)) {
			throw new IllegalArgumentException("value must be finite, was " + value);
		}
		n++;
		if (n == 1) {
			first = value;
			level = value;
			return;
		}
		if (n == 2) {
			level = value;
			trend = value - first;
			return;
		}
		double predicted = level + trend;
		double error = value - predicted;
		sse += error * error;
		double previous = level;
		level = alpha * value + (1.0 - alpha) * predicted;
		trend = beta * (level - previous) + (1.0 - beta) * trend;
	}

	@Override
	public double forecast(int stepsAhead) {
		if (stepsAhead < 1) {
			throw new IllegalArgumentException("stepsAhead must be >= 1, was " + stepsAhead);
		}
		if (n < 2) {
			return level;
		}
		return level + stepsAhead * trend;
	}

	@Override
	public boolean ready() {
		return n >= 2;
	}

	@Override
	public long observations() {
		return n;
	}

	/** @return the smoothed level (the last observation before two were seen) */
	public double level() {
		return level;
	}

	/** @return the smoothed trend per interval (0 before two observations) */
	public double trend() {
		return trend;
	}

	/** @return the sum of squared one-step-ahead errors from the third observation on */
	public double sse() {
		return sse;
	}

	/** @return the level smoothing factor */
	public double alpha() {
		return alpha;
	}

	/** @return the trend smoothing factor */
	public double beta() {
		return beta;
	}

	@Override
	public String toString() {
		return "Holt{alpha=" + alpha + ", beta=" + beta + ", n=" + n + ", level=" + level + ", trend=" + trend + '}';
	}
}
