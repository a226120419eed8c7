package dev.aiguard.load;

import java.util.Locale;
import java.util.concurrent.TimeUnit;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;

/**
 * The governor's decision, free of Reactor and of time sources: from the previous {@link LoadState}
 * and one interval's {@link IntervalStats}, the next state. The interval's request rate feeds the
 * {@link Forecaster} and the smoothed load; the {@link WeightedSignals} give the health score; the
 * level is the worst any of them asks for. Escalation is immediate; recovery waits the dwell time
 * at the current level, goes one level at a time, and only when every input is clear of the line
 * that entered the level with a margin (hysteresis). Decision loop only.
 */
final class LevelStateMachine {

	private static final LoadLevel[] LEVELS = LoadLevel.values();
	/** A recovering score must clear its level's threshold by this much. */
	static final double SCORE_MARGIN = 5.0;

	private final double capacity;
	private final Forecaster forecaster;
	private final int horizon;
	private final int warmupIntervals;
	private final double smoothing;
	private final WeightedSignals signals;
	/** Load entering WARNING, DEGRADED, CRITICAL. */
	private final double[] loadThresholds;
	/** Each level is left below its load threshold times this. */
	private final double recoveryRatio;
	/** Score under which WARNING, DEGRADED, CRITICAL hold. */
	private final double[] scoreThresholds;
	private final double overloadLine;
	private final long dwellNanos;
	/** [level][priority], never changed. */
	private final LoadAction[][] actions;

	/** The offered rate smoothed over intervals; NaN before the first decision. */
	private double smoothedRate = Double.NaN;

	LevelStateMachine(GovernorSettings s, Forecaster forecaster, WeightedSignals signals, LoadAction[][] actions) {
		this.capacity = s.capacity;
		this.forecaster = forecaster;
		this.horizon = s.horizon;
		this.warmupIntervals = s.warmupIntervals;
		this.smoothing = s.smoothing;
		this.signals = signals;
		this.loadThresholds = new double[] {s.degradeAt, s.degradedAt, s.criticalAt};
		this.recoveryRatio = s.recoverBelow / s.degradeAt;
		this.scoreThresholds = s.scoreThresholds.clone();
		this.overloadLine = s.overloadLine;
		this.dwellNanos = s.dwell.toNanos();
		this.actions = actions;
	}

	/** @return the state before the first decision, at {@code sinceNanos} */
	LoadState initial(long sinceNanos) {
		return LoadState.initial(warmupIntervals > 0 ? LoadState.Mode.COLD_START : LoadState.Mode.FORECAST,
				signals.noScores(), sinceNanos);
	}

	/**
	 * One decision: the state after {@code previous} given what the interval measured. Its level
	 * differs from the previous one exactly when it carries a new {@link LoadState#lastChange()}.
	 */
	LoadState next(LoadState previous, IntervalStats stats, long now) {
		double rate = stats.requestRate();
		forecaster.observe(rate);
		long intervals = previous.intervals() + 1;
		LoadState.Mode mode = intervals > warmupIntervals && forecaster.ready()
				? LoadState.Mode.FORECAST : LoadState.Mode.COLD_START;

		double[] forecast = new double[horizon];
		double peakRate = 0.0;
		int peakAt = 1;
		for (int k = 1; k <= horizon; k++) {
			double f = Math.max(0.0, forecaster.forecast(k));
			forecast[k - 1] = f;
			if (f > peakRate) {
				peakRate = f;
				peakAt = k;
			}
		}
		double peak = peakRate / capacity;

		WeightedSignals.Scores scores = signals.score(stats);
		// the levels read the smoothed rate: one noisy interval must not cross a line on its own
		smoothedRate = Double.isNaN(smoothedRate) ? rate : smoothing * rate + (1.0 - smoothing) * smoothedRate;
		double load = smoothedRate / capacity;

		LoadEvent event = transition(previous, now, mode, scores, load, peak, peakAt);
		LoadLevel decided = event == null ? previous.level() : event.to();
		long since = event == null ? previous.levelSinceNanos() : now;
		return new LoadState(decided, mode, scores.score(), scores.subScores(), load, rate, forecast, peak, since,
				intervals, event != null ? event : previous.lastChange(), stats);
	}

	/**
	 * The level rules.
	 *
	 * @param peak the forecast peak as a share of capacity, {@code peakAt} intervals ahead
	 * @return the level change, or null when the level stays
	 */
	@Nullable
	private LoadEvent transition(LoadState previous, long now, LoadState.Mode mode, WeightedSignals.Scores scores,
			double load, double peak, int peakAt) {
		double score = scores.score();
		LoadLevel scoreLevel = scoreLevel(score);
		LoadLevel loadLevel = loadLevel(load);
		LoadLevel forecastLevel = mode == LoadState.Mode.FORECAST && peak >= overloadLine ? LoadLevel.WARNING
				: LoadLevel.HEALTHY;
		LoadLevel level = previous.level();
		LoadLevel target = worst(worst(scoreLevel, loadLevel), forecastLevel);

		if (target.isWorseThan(level)) {
			LoadEvent.Reason reason;
			String detail;
			if (scoreLevel == target) {
				reason = LoadEvent.Reason.SCORE;
				detail = String.format(Locale.ROOT, "%s=%.1f", scores.lowestName(), scores.lowest());
			}
			else if (loadLevel == target) {
				reason = LoadEvent.Reason.LOAD;
				detail = String.format(Locale.ROOT, "load %.2f of capacity", load);
			}
			else {
				reason = LoadEvent.Reason.FORECAST;
				detail = String.format(Locale.ROOT, "forecast peak %.2f of capacity in %d intervals", peak, peakAt);
			}
			return new LoadEvent(level, target, reason, detail, score, load, peak, now);
		}
		if (level != LoadLevel.HEALTHY && now - previous.levelSinceNanos() >= dwellNanos
				&& mayLeave(level, score, load, forecastLevel)) {
			LoadLevel better = LEVELS[level.ordinal() - 1];
			String detail = String.format(Locale.ROOT, "score %.1f, load %.2f, forecast peak %.2f after %d ms at %s",
					score, load, peak, TimeUnit.NANOSECONDS.toMillis(now - previous.levelSinceNanos()), level);
			return new LoadEvent(level, better, LoadEvent.Reason.RECOVERY, detail, score, load, peak, now);
		}
		return null;
	}

	/**
	 * The earliest a shed {@code priority} can be served again: the rest of the dwell at the current
	 * level plus a dwell per further level (recovery goes one level at a time).
	 */
	long nanosUntilServed(LoadState s, Priority priority, long now) {
		long remaining = Math.max(0L, dwellNanos - (now - s.levelSinceNanos()));
		int steps = 0;
		for (int l = s.level().ordinal(); l > 0 && refuses(actions[l][priority.ordinal()]); l--) {
			steps++;
		}
		return remaining + Math.max(0, steps - 1) * dwellNanos;
	}

	private static boolean refuses(LoadAction action) {
		return action == LoadAction.SHED || action == LoadAction.STATIC_OR_SHED;
	}

	private LoadLevel scoreLevel(double score) {
		if (Double.isNaN(score)) {
			return LoadLevel.HEALTHY;
		}
		for (int l = LEVELS.length - 1; l > 0; l--) {
			if (score < scoreThresholds[l - 1]) {
				return LEVELS[l];
			}
		}
		return LoadLevel.HEALTHY;
	}

	private LoadLevel loadLevel(double load) {
		for (int l = LEVELS.length - 1; l > 0; l--) {
			if (load >= loadThresholds[l - 1]) {
				return LEVELS[l];
			}
		}
		return LoadLevel.HEALTHY;
	}

	/** Hysteresis: leaving {@code level} needs every input clear of the line that entered it, with margin. */
	private boolean mayLeave(LoadLevel level, double score, double load, LoadLevel forecastLevel) {
		int i = level.ordinal() - 1;
		boolean scoreAllows = Double.isNaN(score) || score >= Math.min(scoreThresholds[i] + SCORE_MARGIN, 100.0);
		boolean loadAllows = load < loadThresholds[i] * recoveryRatio;
		boolean forecastAllows = forecastLevel.compareTo(LEVELS[i]) <= 0;
		return scoreAllows && loadAllows && forecastAllows;
	}

	private static LoadLevel worst(LoadLevel a, LoadLevel b) {
		return a.isWorseThan(b) ? a : b;
	}
}
