package dev.aiguard.load;

import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;

/**
 * The governor's decision, free of Reactor and of time sources: from the previous {@link LoadState}
 * and one interval's {@link IntervalStats}, the next state. The interval's request rate feeds the
 * {@link Forecaster} and the smoothed load; the {@link WeightedSignals} score the
 * {@link SignalWindow}'s totals, and that score is smoothed over decisions; the level is the worst
 * any of them asks for. The load and the forecast raise the level at once; the score only once it
 * has stayed past a worse level's line for {@code riseAfter}. Recovery waits the dwell time at the
 * current level, goes one level at a time, and only when every input is clear of the line that
 * entered the level with a margin (hysteresis). A held state keeps its level. Decision loop only.
 */
final class LevelStateMachine {

	private static final LoadLevel[] LEVELS = LoadLevel.values();
	private static final long UNSET = Long.MIN_VALUE;
	/** A recovering score must clear its level's threshold by this much. */
	static final double SCORE_MARGIN = 5.0;

	private final double capacity;
	private final Supplier<? extends Forecaster> forecasters;
	private Forecaster forecaster;
	private final int horizon;
	private final int warmupIntervals;
	private final double smoothing;
	private final WeightedSignals signals;
	private final SignalWindow window;
	/** How much of each decision's score enters the smoothed score the levels read. */
	private final double scoreSmoothing;
	/** How long the score must stay past a worse level's line before the level rises to it. */
	private final long riseAfterNanos;
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
	/** The health score smoothed over decisions; NaN while no signal has data. */
	private double smoothedScore = Double.NaN;
	/** Since when the score's level has been worse than the current level; UNSET when it is not. */
	private long scoreWorseSince = UNSET;

	LevelStateMachine(GovernorSettings s, Forecaster forecaster, WeightedSignals signals, LoadAction[][] actions) {
		this.capacity = s.capacity;
		this.forecasters = s.forecaster;
		this.forecaster = forecaster;
		this.horizon = s.horizon;
		this.warmupIntervals = s.warmupIntervals;
		this.smoothing = s.smoothing;
		this.signals = signals;
		this.window = new SignalWindow(s.signalWindowIntervals(), s.minSamples);
		this.scoreSmoothing = s.scoreSmoothing;
		this.riseAfterNanos = s.riseAfter().toNanos();
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
	 * Forgets what was measured: the signal window, the smoothed score and load, and the forecast
	 * (a new forecaster from the configured supplier).
	 *
	 * @return the state after a reset at {@code now}, at {@code level}, entered by {@code change}
	 */
	LoadState reset(LoadState previous, LoadLevel level, LoadEvent change, long now) {
		window.clear();
		smoothedScore = Double.NaN;
		smoothedRate = Double.NaN;
		scoreWorseSince = UNSET;
		forecaster = Objects.requireNonNull(forecasters.get(), "forecaster.get()");
		return initial(now).afterReset(level, previous.intervals(), change, previous.held());
	}

	/** Forgets a score on its way past a line: a hold or its release starts the confirmation afresh. */
	void restartRise() {
		scoreWorseSince = UNSET;
	}

	/**
	 * One decision: the state after {@code previous} given what the interval measured. Its level
	 * differs from the previous one exactly when it carries a new {@link LoadState#lastChange()}; a
	 * held {@code previous} keeps its level.
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

		WeightedSignals.Scores scores = signals.score(window.add(stats));
		double rawScore = scores.score();
		// one decision's score is one window's evidence: the levels read its moving average, and a
		// decision without any data starts the average afresh (no opinion is not a bad opinion)
		smoothedScore = Double.isNaN(rawScore) ? Double.NaN
				: Double.isNaN(smoothedScore) ? rawScore
						: scoreSmoothing * rawScore + (1.0 - scoreSmoothing) * smoothedScore;
		// the levels read the smoothed rate: one noisy interval must not cross a line on its own
		smoothedRate = Double.isNaN(smoothedRate) ? rate : smoothing * rate + (1.0 - smoothing) * smoothedRate;
		double load = smoothedRate / capacity;

		LoadEvent event = null;
		if (previous.held()) {
			// pinned: everything above is computed and published, the level stays
			scoreWorseSince = UNSET;
		}
		else {
			event = transition(previous, now, mode, scores, load, peak, peakAt);
		}
		LoadLevel decided = event == null ? previous.level() : event.to();
		long since = event == null ? previous.levelSinceNanos() : now;
		return new LoadState(decided, mode, smoothedScore, scores.subScores(), load, rate, forecast, peak, since,
				intervals, event != null ? event : previous.lastChange(), stats, previous.held());
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
		double score = smoothedScore;
		LoadLevel level = previous.level();
		LoadLevel scoreLevel = confirmedScoreLevel(scores.score(), level, now);
		LoadLevel loadLevel = loadLevel(load);
		LoadLevel forecastLevel = mode == LoadState.Mode.FORECAST && peak >= overloadLine ? LoadLevel.WARNING
				: LoadLevel.HEALTHY;
		LoadLevel target = worst(worst(scoreLevel, loadLevel), forecastLevel);

		if (target.isWorseThan(level)) {
			scoreWorseSince = UNSET;
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
	 * The level the score raises to: a rise needs both the decision's own score and the average past
	 * the line (the average alone would stretch one bad decision over the next few, the decision's
	 * alone is one window's noise), and for {@code riseAfter}; until then HEALTHY.
	 */
	private LoadLevel confirmedScoreLevel(double rawScore, LoadLevel level, long now) {
		LoadLevel scoreLevel = better(scoreLevel(rawScore), scoreLevel(smoothedScore));
		if (!scoreLevel.isWorseThan(level)) {
			scoreWorseSince = UNSET;
			return LoadLevel.HEALTHY;
		}
		if (scoreWorseSince == UNSET) {
			scoreWorseSince = now;
		}
		return now - scoreWorseSince >= riseAfterNanos ? scoreLevel : LoadLevel.HEALTHY;
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

	private static LoadLevel better(LoadLevel a, LoadLevel b) {
		return a.isWorseThan(b) ? b : a;
	}
}
