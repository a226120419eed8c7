package dev.aiguard.load;

import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * What a {@link LoadGovernor} decided last, and on which inputs. Immutable: the governor publishes a
 * new snapshot per decision, so a reader sees one consistent decision.
 *
 * <pre>{@code
 * LoadState s = governor.state();
 * log.info("{} ({}) score {} load {} forecast peak {}", s.level(), s.mode(), s.score(), s.load(), s.forecastPeak());
 * }</pre>
 */
public final class LoadState {

	/** Which thresholds decided. */
	public enum Mode {
		/** Fewer decisions than the warm-up: static thresholds on current values, no forecast. */
		COLD_START,
		/** The forecast takes part: an overload forecast within the horizon holds at least WARNING. */
		FORECAST
	}

	private static final double[] NO_FORECAST = new double[0];

	private final LoadLevel level;
	private final Mode mode;
	private final double score;
	private final Map<String, Double> subScores;
	private final double load;
	private final double requestRate;
	private final double[] forecast;
	private final double forecastPeak;
	private final long levelSinceNanos;
	private final long intervals;
	@Nullable
	private final LoadEvent lastChange;
	@Nullable
	private final IntervalStats interval;
	private final boolean held;

	LoadState(LoadLevel level, Mode mode, double score, Map<String, Double> subScores, double load, double requestRate,
			double[] forecast, double forecastPeak, long levelSinceNanos, long intervals, @Nullable LoadEvent lastChange,
			@Nullable IntervalStats interval, boolean held) {
		this.level = level;
		this.mode = mode;
		this.score = score;
		this.subScores = subScores;
		this.load = load;
		this.requestRate = requestRate;
		this.forecast = forecast;
		this.forecastPeak = forecastPeak;
		this.levelSinceNanos = levelSinceNanos;
		this.intervals = intervals;
		this.lastChange = lastChange;
		this.interval = interval;
		this.held = held;
	}

	/** This state at another level, entered at {@code sinceNanos} by {@code change}: a hold or its release. */
	LoadState withLevel(LoadLevel newLevel, long sinceNanos, LoadEvent change, boolean isHeld) {
		return new LoadState(newLevel, mode, score, subScores, load, requestRate, forecast, forecastPeak, sinceNanos,
				intervals, change, interval, isHeld);
	}

	/** This state before any decision, at {@code newLevel} after {@code decisions} decisions and a reset. */
	LoadState afterReset(LoadLevel newLevel, long decisions, LoadEvent change, boolean isHeld) {
		return new LoadState(newLevel, mode, score, subScores, load, requestRate, forecast, forecastPeak, levelSinceNanos,
				decisions, change, interval, isHeld);
	}

	/** The state before any decision: HEALTHY, cold, no data. */
	static LoadState initial(Mode mode, Map<String, Double> noScores, long sinceNanos) {
		return new LoadState(LoadLevel.HEALTHY, mode, Double.NaN, noScores, 0.0, 0.0, NO_FORECAST, 0.0, sinceNanos, 0,
				null, null, false);
	}

	/** @return the level in force */
	public LoadLevel level() {
		return level;
	}

	/** @return whether the forecast took part in the last decision */
	public Mode mode() {
		return mode;
	}

	/**
	 * @return the health score 0..100 the levels read: the weighted mean of the sub-scores with data,
	 *         smoothed over decisions ({@link LoadGovernor.Builder#scoreSmoothing(double)}); NaN when
	 *         no signal had data
	 */
	public double score() {
		return score;
	}

	/** @return each signal's sub-score, in registration order (NaN: no data); unmodifiable */
	public Map<String, Double> subScores() {
		return subScores;
	}

	/** @return the offered load the levels read: the smoothed request rate ÷ capacity */
	public double load() {
		return load;
	}

	/** @return requests offered per second in the last interval */
	public double requestRate() {
		return requestRate;
	}

	/** @return forecast request rates (per second) for 1..horizon intervals ahead; a copy */
	public double[] forecast() {
		return forecast.clone();
	}

	/** @return the highest forecast rate ÷ capacity (0 before the first decision) */
	public double forecastPeak() {
		return forecastPeak;
	}

	/** @return the governor's clock, in nanoseconds, when the current level was entered */
	public long levelSinceNanos() {
		return levelSinceNanos;
	}

	/** @return decisions made so far */
	public long intervals() {
		return intervals;
	}

	/** @return the last level change, or null when the level never changed */
	@Nullable
	public LoadEvent lastChange() {
		return lastChange;
	}

	/**
	 * @return whether the level is pinned by {@link LoadGovernor#hold(LoadLevel)}: the decisions still
	 *         compute score, load and forecast, but do not move the level
	 */
	public boolean held() {
		return held;
	}

	/** @return what the guard measured in the last interval, or null before the first decision */
	@Nullable
	public IntervalStats interval() {
		return interval;
	}

	@Override
	public String toString() {
		return "LoadState{level=" + level + ", mode=" + mode + ", score=" + score + ", subScores=" + subScores
				+ ", load=" + load + ", requestRate=" + requestRate + ", forecastPeak=" + forecastPeak + ", intervals="
				+ intervals + ", held=" + held + ", lastChange=" + lastChange + '}';
	}
}
