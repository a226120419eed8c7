package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.load.LaneResizing;
import dev.aiguard.load.LoadAction;
import org.jspecify.annotations.Nullable;

/**
 * The load governor ({@code dev.aiguard.load.LoadGovernor}), {@code aiguard.load}: one per
 * application, attached to every policy unless the policy says {@code load: false}. An unset
 * setting takes the governor's default, which its description names.
 *
 * <pre>
 * aiguard:
 *   load:
 *     enabled: true
 *     capacity: 50
 *     rules:
 *       degraded:
 *         p2: { action: shed }
 * </pre>
 */
public class LoadProperties {

	/** Whether a load governor is built, started with the context and attached to the policies. */
	private boolean enabled;

	/** The governor's name in metrics and messages. */
	private String name = "load";

	/** Requests per second the service sustains, > 0; required when enabled. */
	@Nullable
	private Double capacity;

	/** Time between decisions. Default: 1s. */
	@Nullable
	private Duration interval;

	/** Intervals the request rate is forecast ahead. Default: 5. */
	@Nullable
	private Integer horizon;

	/** Forecast peak, as a share of capacity, that raises the level to at least WARNING. Default: 0.85. */
	@Nullable
	private Double overloadLine;

	/** Load (offered rate / capacity) that enters WARNING. Default: 0.8. */
	@Nullable
	private Double degradeAt;

	/** Load under which WARNING is left; each level is left below its threshold times recover-below / degrade-at. Default: 0.6. */
	@Nullable
	private Double recoverBelow;

	/** Loads entering WARNING, DEGRADED and CRITICAL (three increasing numbers, the first replaces degrade-at; Infinity turns a line off, DEGRADED's only with CRITICAL's). Default: 0.8, Infinity, Infinity: the load alone goes no further than WARNING. */
	@Nullable
	private List<Double> loadThresholds;

	/** Share of each interval's offered rate in the smoothed load the levels read, in (0, 1]; 1 reads each interval alone. Default: 0.3. */
	@Nullable
	private Double loadSmoothing;

	/** Share of each decision's health score in the smoothed score the levels read, in (0, 1]; 1 reads each decision alone. Default: 0.3. */
	@Nullable
	private Double scoreSmoothing;

	/** Samples (attempts, first tokens) a rate signal needs in the signal window before it counts; below it the signal is neutral. Default: 10. */
	@Nullable
	private Integer minSamples;

	/** The span the signals read, at least the interval. Default: 10s. */
	@Nullable
	private Duration signalWindow;

	/** How long the score must stay past a worse level's line before the level rises; shorter than the dwell. Default: 3s, at most half the dwell. */
	@Nullable
	private Duration riseAfter;

	/** Whether the shared lanes (aiguard.lanes) are sized by the governor's rules at each level. */
	private boolean lanes = true;

	/** Where the permits a level takes from a lane go: keep-total (to the nearest more urgent open lane) or scale (dropped). Default: keep-total. */
	private LaneResizing laneResizing = LaneResizing.KEEP_TOTAL;

	/** Health scores under which WARNING, DEGRADED and CRITICAL hold (three decreasing numbers, 0..100). Default: 80, 60, 40. */
	@Nullable
	private List<Double> scoreThresholds;

	/** Least time at a level before recovering from it. Default: 30s. */
	@Nullable
	private Duration dwell;

	/** Decisions on current values only, before the forecast takes part. Default: 10. */
	@Nullable
	private Integer warmupIntervals;

	/** The request-rate forecast: Holt's linear smoothing. */
	private Forecast forecast = new Forecast();

	/**
	 * Weights of the health signals by name: cpu (0.20), memory (0.15), response-time (0.35),
	 * error-rate (0.30); 0 leaves a signal out.
	 */
	private Map<String, Double> signals = new LinkedHashMap<>();

	/**
	 * Overrides of the rules, by level ({@code warning}, {@code degraded}, {@code critical},
	 * {@code healthy}) and priority ({@code p0}, {@code p1}, {@code p2}): an action and a lane factor.
	 */
	private Map<String, Map<String, Rule>> rules = new LinkedHashMap<>();

	public boolean isEnabled() {
		return enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public String getName() {
		return name;
	}

	public void setName(String name) {
		this.name = name;
	}

	public @Nullable Double getCapacity() {
		return capacity;
	}

	public void setCapacity(@Nullable Double capacity) {
		this.capacity = capacity;
	}

	public @Nullable Duration getInterval() {
		return interval;
	}

	public void setInterval(@Nullable Duration interval) {
		this.interval = interval;
	}

	public @Nullable Integer getHorizon() {
		return horizon;
	}

	public void setHorizon(@Nullable Integer horizon) {
		this.horizon = horizon;
	}

	public @Nullable Double getOverloadLine() {
		return overloadLine;
	}

	public void setOverloadLine(@Nullable Double overloadLine) {
		this.overloadLine = overloadLine;
	}

	public @Nullable Double getDegradeAt() {
		return degradeAt;
	}

	public void setDegradeAt(@Nullable Double degradeAt) {
		this.degradeAt = degradeAt;
	}

	public @Nullable Double getRecoverBelow() {
		return recoverBelow;
	}

	public void setRecoverBelow(@Nullable Double recoverBelow) {
		this.recoverBelow = recoverBelow;
	}

	public @Nullable Double getLoadSmoothing() {
		return loadSmoothing;
	}

	public void setLoadSmoothing(@Nullable Double loadSmoothing) {
		this.loadSmoothing = loadSmoothing;
	}

	public @Nullable Double getScoreSmoothing() {
		return scoreSmoothing;
	}

	public void setScoreSmoothing(@Nullable Double scoreSmoothing) {
		this.scoreSmoothing = scoreSmoothing;
	}

	public @Nullable Integer getMinSamples() {
		return minSamples;
	}

	public void setMinSamples(@Nullable Integer minSamples) {
		this.minSamples = minSamples;
	}

	public @Nullable Duration getSignalWindow() {
		return signalWindow;
	}

	public void setSignalWindow(@Nullable Duration signalWindow) {
		this.signalWindow = signalWindow;
	}

	public @Nullable Duration getRiseAfter() {
		return riseAfter;
	}

	public void setRiseAfter(@Nullable Duration riseAfter) {
		this.riseAfter = riseAfter;
	}

	public boolean isLanes() {
		return lanes;
	}

	public void setLanes(boolean lanes) {
		this.lanes = lanes;
	}

	public LaneResizing getLaneResizing() {
		return laneResizing;
	}

	public void setLaneResizing(LaneResizing laneResizing) {
		this.laneResizing = laneResizing;
	}

	public @Nullable List<Double> getLoadThresholds() {
		return loadThresholds;
	}

	public void setLoadThresholds(@Nullable List<Double> loadThresholds) {
		this.loadThresholds = loadThresholds;
	}

	public @Nullable List<Double> getScoreThresholds() {
		return scoreThresholds;
	}

	public void setScoreThresholds(@Nullable List<Double> scoreThresholds) {
		this.scoreThresholds = scoreThresholds;
	}

	public @Nullable Duration getDwell() {
		return dwell;
	}

	public void setDwell(@Nullable Duration dwell) {
		this.dwell = dwell;
	}

	public @Nullable Integer getWarmupIntervals() {
		return warmupIntervals;
	}

	public void setWarmupIntervals(@Nullable Integer warmupIntervals) {
		this.warmupIntervals = warmupIntervals;
	}

	public Forecast getForecast() {
		return forecast;
	}

	public void setForecast(Forecast forecast) {
		this.forecast = forecast;
	}

	public Map<String, Double> getSignals() {
		return signals;
	}

	public void setSignals(Map<String, Double> signals) {
		this.signals = signals;
	}

	public Map<String, Map<String, Rule>> getRules() {
		return rules;
	}

	public void setRules(Map<String, Map<String, Rule>> rules) {
		this.rules = rules;
	}

	/** Holt's smoothing of the request rate. */
	public static class Forecast {

		/** Level smoothing, between 0 and 1. Default: 0.3. */
		private double alpha = 0.3;

		/** Trend smoothing, between 0 and 1. Default: 0.1. */
		private double beta = 0.1;

		public double getAlpha() {
			return alpha;
		}

		public void setAlpha(double alpha) {
			this.alpha = alpha;
		}

		public double getBeta() {
			return beta;
		}

		public void setBeta(double beta) {
			this.beta = beta;
		}
	}

	/** What one priority gets at one level; an unset part keeps the default rules' value. */
	public static class Rule {

		/** realtime, cheaper-first, fallback-first, static-or-shed or shed. */
		@Nullable
		private LoadAction action;

		/** The lane's capacity as a share (0..1) of its configured concurrency; 0 closes it, any share above keeps one permit. */
		@Nullable
		private Double laneFactor;

		public @Nullable LoadAction getAction() {
			return action;
		}

		public void setAction(@Nullable LoadAction action) {
			this.action = action;
		}

		public @Nullable Double getLaneFactor() {
			return laneFactor;
		}

		public void setLaneFactor(@Nullable Double laneFactor) {
			this.laneFactor = laneFactor;
		}
	}
}
