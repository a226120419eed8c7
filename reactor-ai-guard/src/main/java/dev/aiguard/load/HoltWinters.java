package dev.aiguard.load;

import org.jspecify.annotations.Nullable;

/**
 * Additive Holt-Winters smoothing: a level, a trend and one seasonal term per position in a
 * season of {@code f} intervals, each smoothed once per observation. The forecast {@code k}
 * intervals ahead is {@code level + k * trend + season(k)}, the seasonal term repeating every
 * {@code f} steps.
 *
 * <p>Reproduces R's {@code stats::HoltWinters(x, alpha, beta, gamma, seasonal = "additive")} with
 * fixed parameters, start included: the first {@code 2 f} values are buffered; when the
 * {@code 2f}-th arrives they are decomposed like R's {@code decompose} (centred moving average —
 * for an even {@code f} the {@code 2 x f} average with half weights at both ends — and the
 * seasonal figure as the per-position mean of the detrended values, centred to sum to zero); a
 * least-squares line through the non-missing moving averages gives the starting level (its
 * intercept) and trend (its slope). Smoothing then runs from time {@code f + 1} over the buffered
 * values, as R does, and continues online with every further value. Level, trend, seasonal terms
 * and {@link #sse()} equal R's {@code coef()} and {@code SSE}.
 *
 * <pre>{@code
 * HoltWinters hourly = HoltWinters.additive(0.3, 0.1, 0.2, 24);
 * for (double rate : ratesPerHour) hourly.observe(rate);
 * double sameHourTomorrow = hourly.forecast(24);
 * }</pre>
 */
public final class HoltWinters implements Forecaster {

	/** Largest season length: the start buffers two seasons in one array. */
	public static final int MAX_SEASON_LENGTH = Integer.MAX_VALUE / 2 - 8;

	private final double alpha;
	private final double beta;
	private final double gamma;
	private final int f;

	/** The first {@code 2 f} values, until the start; released afterwards. */
	private double @Nullable [] startWindow;

	/** Seasonal term of time t (1-based) at index (t - 1) mod f: the last f times observed. */
	private final double[] season;

	private long n;
	private double last;
	private double level;
	private double trend;
	private double sse;
	private @Nullable StepListener stepListener;

	private HoltWinters(double alpha, double beta, double gamma, int seasonLength) {
		this.alpha = alpha;
		this.beta = beta;
		this.gamma = gamma;
		this.f = seasonLength;
		this.startWindow = new double[2 * seasonLength];
		this.season = new double[seasonLength];
	}

	/**
	 * @param alpha level smoothing, in (0, 1]
	 * @param beta trend smoothing, in [0, 1]
	 * @param gamma seasonal smoothing, in [0, 1]
	 * @param seasonLength intervals per season, 2..{@link #MAX_SEASON_LENGTH} (e.g. 24 for hourly
	 *        values and a daily cycle); the model is ready after two seasons
	 * @throws IllegalArgumentException naming the parameter out of range
	 */
	public static HoltWinters additive(double alpha, double beta, double gamma, int seasonLength) {
		if (!(alpha > 0.0 && alpha <= 1.0)) {
			throw new IllegalArgumentException("alpha must be in (0, 1], was " + alpha);
		}
		if (!(beta >= 0.0 && beta <= 1.0)) {
			throw new IllegalArgumentException("beta must be in [0, 1], was " + beta);
		}
		if (!(gamma >= 0.0 && gamma <= 1.0)) {
			throw new IllegalArgumentException("gamma must be in [0, 1], was " + gamma);
		}
		if (seasonLength < 2 || seasonLength > MAX_SEASON_LENGTH) {
			throw new IllegalArgumentException(
					"seasonLength must be in 2.." + MAX_SEASON_LENGTH + ", was " + seasonLength);
		}
		return new HoltWinters(alpha, beta, gamma, seasonLength);
	}

	@Override
	public void observe(double value) {
		if (!Double.isFinite(value)) {
			throw new IllegalArgumentException("value must be finite, was " + value);
		}
		n++;
		last = value;
		double[] window = startWindow;
		if (window == null) {
			smooth(value, n);
			return;
		}
		window[(int) n - 1] = value;
		if (n == window.length) {
			start(window);
			startWindow = null;
			// R smooths from time f + 1, so the second buffered season is filtered too
			for (int t = f + 1; t <= window.length; t++) {
				smooth(window[t - 1], t);
			}
		}
	}

	/** Level, trend and seasonal figure from the first two seasons, as R's start does. */
	private void start(double[] window) {
		double[] movingAverage = centredMovingAverage(window, f);
		int from = movingAverage.length;
		int to = -1;
		for (int i = 0; i < movingAverage.length; i++) {
			if (!Double.isNaN(movingAverage[i])) {
				from = Math.min(from, i);
				to = i;
			}
		}
		// least-squares line through (1, ma[from]), (2, ma[from + 1]), ...: intercept at 0
		int points = to - from + 1;
		double meanX = (points + 1) / 2.0;
		double meanY = mean(movingAverage, from, points);
		double sxy = 0.0;
		double sxx = 0.0;
		for (int i = 0; i < points; i++) {
			double dx = (i + 1) - meanX;
			sxy += dx * (movingAverage[from + i] - meanY);
			sxx += dx * dx;
		}
		trend = sxy / sxx;
		level = meanY - trend * meanX;

		for (int position = 0; position < f; position++) {
			double sum = 0.0;
			int count = 0;
			for (int i = position; i < window.length; i += f) {
				if (!Double.isNaN(movingAverage[i])) {
					sum += window[i] - movingAverage[i];
					count++;
				}
			}
			season[position] = sum / count;
		}
		double centre = mean(season, 0, f);
		for (int position = 0; position < f; position++) {
			season[position] -= centre;
		}
	}

	/**
	 * R's {@code filter(x, w, sides = 2)} with {@code w} the {@code 2 x f} weights (even
	 * {@code f}) or {@code f} equal weights (odd); NaN where the window does not fit.
	 */
	static double[] centredMovingAverage(double[] x, int f) {
		double[] weights;
		if (f % 2 == 0) {
			weights = new double[f + 1];
			for (int j = 0; j <= f; j++) {
				weights[j] = (j == 0 || j == f ? 0.5 : 1.0) / f;
			}
		}
		else {
			weights = new double[f];
			for (int j = 0; j < f; j++) {
				weights[j] = 1.0 / f;
			}
		}
		int half = weights.length / 2;
		double[] out = new double[x.length];
		for (int i = 0; i < x.length; i++) {
			int newest = i + half;
			int oldest = newest - (weights.length - 1);
			if (oldest < 0 || newest >= x.length) {
				out[i] = Double.NaN;
				continue;
			}
			double sum = 0.0;
			for (int j = 0; j < weights.length; j++) {
				sum += weights[j] * x[newest - j];
			}
			out[i] = sum;
		}
		return out;
	}

	/** Mean with a correction pass, as R's {@code mean} refines its first estimate. */
	private static double mean(double[] values, int from, int count) {
		double sum = 0.0;
		for (int i = from; i < from + count; i++) {
			sum += values[i];
		}
		double mean = sum / count;
		double residual = 0.0;
		for (int i = from; i < from + count; i++) {
			residual += values[i] - mean;
		}
		return mean + residual / count;
	}

	/** One smoothing step with the value of time {@code t} (1-based). */
	private void smooth(double value, long t) {
		int slot = (int) ((t - 1) % f);
		double seasonal = season[slot];
		double predicted = level + trend + seasonal;
		StepListener listener = stepListener;
		if (listener != null) {
			listener.step(t, predicted, level, trend, seasonal);
		}
		double error = value - predicted;
		sse += error * error;
		double previousLevel = level;
		level = alpha * (value - seasonal) + (1.0 - alpha) * (level + trend);
		trend = beta * (level - previousLevel) + (1.0 - beta) * trend;
		season[slot] = gamma * (value - level) + (1.0 - gamma) * seasonal;
	}

	@Override
	public double forecast(int stepsAhead) {
		if (stepsAhead < 1) {
			throw new IllegalArgumentException("stepsAhead must be >= 1, was " + stepsAhead);
		}
		if (!ready()) {
			return last;
		}
		return level + stepsAhead * trend + season[slotAhead(stepsAhead)];
	}

	private int slotAhead(int stepsAhead) {
		return (int) ((n + stepsAhead - 1) % f);
	}

	/** @return whether two seasons ({@code 2 * seasonLength} values) were observed */
	@Override
	public boolean ready() {
		return startWindow == null;
	}

	@Override
	public long observations() {
		return n;
	}

	/** @return the smoothed level, R's coefficient {@code a}; before {@link #ready()} the last value (0 when none) */
	public double level() {
		return ready() ? level : last;
	}

	/** @return the smoothed trend per interval, R's coefficient {@code b}; 0 before {@link #ready()} */
	public double trend() {
		return ready() ? trend : 0.0;
	}

	/**
	 * @param i 1 for the interval after the last observed one, up to {@code seasonLength}
	 * @return the seasonal term of that interval, R's coefficient {@code s<i>}; 0 before
	 *         {@link #ready()}
	 * @throws IllegalArgumentException when {@code i} is not in 1..seasonLength
	 */
	public double season(int i) {
		if (i < 1 || i > f) {
			throw new IllegalArgumentException("i must be in 1.." + f + ", was " + i);
		}
		return ready() ? season[slotAhead(i)] : 0.0;
	}

	/** @return the sum of squared one-step-ahead errors from time {@code seasonLength + 1} on (0 before ready) */
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

	/** @return the seasonal smoothing factor */
	public double gamma() {
		return gamma;
	}

	/** @return intervals per season */
	public int seasonLength() {
		return f;
	}

	/** Lets tests see every smoothing step, including those run over the buffered start window. */
	HoltWinters onStep(StepListener listener) {
		this.stepListener = listener;
		return this;
	}

	/** One smoothing step: R's {@code fitted()} row of time {@code t}. */
	interface StepListener {

		/**
		 * @param t the time (1-based) of the value about to be smoothed in
		 * @param predicted the one-step prediction of that value ({@code xhat})
		 * @param level the level it was predicted from
		 * @param trend the trend it was predicted from
		 * @param season the seasonal term it was predicted with
		 */
		void step(long t, double predicted, double level, double trend, double season);
	}

	@Override
	public String toString() {
		return "HoltWinters{alpha=" + alpha + ", beta=" + beta + ", gamma=" + gamma + ", seasonLength=" + f
				+ ", n=" + n + ", level=" + level() + ", trend=" + trend() + '}';
	}
}
