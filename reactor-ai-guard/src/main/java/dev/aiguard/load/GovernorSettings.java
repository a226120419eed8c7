package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * What a {@link LoadGovernor.Builder} collects, with the checks: each setter checks its own value,
 * {@link #validate()} checks the values against each other. Every error is an
 * {@link IllegalArgumentException} naming the field and the value. Owned by one builder, read
 * once by the governor it builds.
 */
final class GovernorSettings {

	final String name;
	double capacity = Double.NaN;
	Duration interval = Duration.ofSeconds(1);
	@Nullable
	Scheduler clock;
	Supplier<? extends Forecaster> forecaster = () -> Holt.of(0.3, 0.1);
	int horizon = 5;
	double overloadLine = 0.85;
	double degradeAt = 0.8;
	double recoverBelow = 0.6;
	double degradedAt = Double.POSITIVE_INFINITY;
	double criticalAt = Double.POSITIVE_INFINITY;
	double smoothing = 0.3;
	double scoreSmoothing = 0.3;
	int minSamples = 10;
	/** Null: the default, 10 s but at least one interval. */
	@Nullable
	Duration signalWindow;
	/** Null: the default, 3 s but at most half the dwell. */
	@Nullable
	Duration riseAfter;
	double[] scoreThresholds = {80.0, 60.0, 40.0};
	Duration dwell = Duration.ofSeconds(30);
	int warmupIntervals = 10;
	final LinkedHashMap<String, WeightedSignals.Entry> signals = new LinkedHashMap<>();
	LoadRules rules = LoadRules.defaults();
	@Nullable
	PriorityLanes lanes;
	LaneResizing laneResizing = LaneResizing.KEEP_TOTAL;
	final List<LoadListener> listeners = new ArrayList<>();
	GuardMetrics metrics = GuardMetrics.noop();

	GovernorSettings(String name) {
		if (name == null || name.isBlank()) {
			throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
		}
		this.name = name;
		signal(HealthSignals.cpu(), 0.20);
		signal(HealthSignals.memory(), 0.15);
		signal(HealthSignals.responseTime(), 0.35);
		signal(HealthSignals.errorRate(), 0.30);
	}

	void capacity(double requestsPerSecond) {
		requirePositive("capacity", requestsPerSecond);
		this.capacity = requestsPerSecond;
	}

	void interval(Duration interval) {
		Objects.requireNonNull(interval, "interval");
		if (interval.isNegative() || interval.isZero()) {
			throw new IllegalArgumentException("interval must be > 0, was " + interval);
		}
		this.interval = interval;
	}

	void horizon(int intervals) {
		if (intervals < 1) {
			throw new IllegalArgumentException("horizon must be >= 1, was " + intervals);
		}
		this.horizon = intervals;
	}

	void overloadLine(double shareOfCapacity) {
		requirePositive("overloadLine", shareOfCapacity);
		this.overloadLine = shareOfCapacity;
	}

	void degradeAt(double load) {
		requirePositive("degradeAt", load);
		this.degradeAt = load;
	}

	void recoverBelow(double load) {
		requirePositive("recoverBelow", load);
		this.recoverBelow = load;
	}

	void loadThresholds(double warning, double degraded, double critical) {
		requirePositive("loadThresholds.warning", warning);
		requirePositiveOrInfinite("loadThresholds.degraded", degraded);
		requirePositiveOrInfinite("loadThresholds.critical", critical);
		this.degradeAt = warning;
		this.degradedAt = degraded;
		this.criticalAt = critical;
	}

	void scoreThresholds(double warning, double degraded, double critical) {
		requireScore("scoreThresholds.warning", warning);
		requireScore("scoreThresholds.degraded", degraded);
		requireScore("scoreThresholds.critical", critical);
		this.scoreThresholds = new double[] {warning, degraded, critical};
	}

	void dwell(Duration dwell) {
		Objects.requireNonNull(dwell, "dwell");
		if (dwell.isNegative()) {
			throw new IllegalArgumentException("dwell must be >= 0, was " + dwell);
		}
		this.dwell = dwell;
	}

	void warmupIntervals(int intervals) {
		if (intervals < 0) {
			throw new IllegalArgumentException("warmupIntervals must be >= 0, was " + intervals);
		}
		this.warmupIntervals = intervals;
	}

	void signal(HealthSignal signal, double weight) {
		Objects.requireNonNull(signal, "signal");
		String signalName = Objects.requireNonNull(signal.name(), "signal.name()");
		if (!(weight > 0.0) || Double.isInfinite(weight)) {
			throw new IllegalArgumentException("weight of signal '" + signalName + "' must be a finite number > 0, was "
					+ weight);
		}
		signals.put(signalName, new WeightedSignals.Entry(signal, weight));
	}

	void withoutSignal(String signalName) {
		Objects.requireNonNull(signalName, "signalName");
		if (signals.remove(signalName) == null) {
			throw new IllegalArgumentException("withoutSignal: no signal named '" + signalName + "', signals are "
					+ signals.keySet());
		}
	}

	void loadSmoothing(double alpha) {
		if (!(alpha > 0.0 && alpha <= 1.0)) {
			throw new IllegalArgumentException("loadSmoothing must be in (0, 1], was " + alpha);
		}
		this.smoothing = alpha;
	}

	void scoreSmoothing(double alpha) {
		if (!(alpha > 0.0 && alpha <= 1.0)) {
			throw new IllegalArgumentException("scoreSmoothing must be in (0, 1], was " + alpha);
		}
		this.scoreSmoothing = alpha;
	}

	void minSamples(int samples) {
		if (samples < 0) {
			throw new IllegalArgumentException("minSamples must be >= 0, was " + samples);
		}
		this.minSamples = samples;
	}

	void signalWindow(Duration window) {
		Objects.requireNonNull(window, "signalWindow");
		if (window.isNegative() || window.isZero()) {
			throw new IllegalArgumentException("signalWindow must be > 0, was " + window);
		}
		this.signalWindow = window;
	}

	void riseAfter(Duration confirmation) {
		Objects.requireNonNull(confirmation, "riseAfter");
		if (confirmation.isNegative()) {
			throw new IllegalArgumentException("riseAfter must be >= 0, was " + confirmation);
		}
		this.riseAfter = confirmation;
	}

	/** @return the signal window set, or the default: 10 s, at least one interval */
	Duration signalWindow() {
		if (signalWindow != null) {
			return signalWindow;
		}
		Duration fallback = Duration.ofSeconds(10);
		return fallback.compareTo(interval) < 0 ? interval : fallback;
	}

	/** @return the intervals the signal window spans: {@code ceil(window ÷ interval)}, at least 1 */
	int signalWindowIntervals() {
		long intervalNanos = interval.toNanos();
		return (int) Math.max(1L, (signalWindow().toNanos() + intervalNanos - 1) / intervalNanos);
	}

	/** @return the confirmation set, or the default: 3 s, at most half the dwell */
	Duration riseAfter() {
		if (riseAfter != null) {
			return riseAfter;
		}
		Duration fallback = Duration.ofSeconds(3);
		Duration half = dwell.dividedBy(2);
		return half.compareTo(fallback) < 0 ? half : fallback;
	}

	/**
	 * Checks the values against each other.
	 *
	 * @return the governor's forecaster, made by the configured supplier
	 */
	Forecaster validate() {
		if (Double.isNaN(capacity)) {
			throw new IllegalArgumentException("capacity is required (requests per second the service sustains), was "
					+ "not set");
		}
		boolean bothOff = Double.isInfinite(degradedAt) && Double.isInfinite(criticalAt);
		if (!(degradeAt < degradedAt && (degradedAt < criticalAt || bothOff))) {
			throw new IllegalArgumentException("loadThresholds must increase (warning < degraded < critical), were "
					+ degradeAt + ", " + degradedAt + ", " + criticalAt);
		}
		if (!(recoverBelow < degradeAt)) {
			throw new IllegalArgumentException("recoverBelow must be < degradeAt (" + degradeAt + "), was "
					+ recoverBelow);
		}
		if (!(scoreThresholds[0] > scoreThresholds[1] && scoreThresholds[1] > scoreThresholds[2])) {
			throw new IllegalArgumentException("scoreThresholds must decrease (warning > degraded > critical), were "
					+ scoreThresholds[0] + ", " + scoreThresholds[1] + ", " + scoreThresholds[2]);
		}
		if (signalWindow != null && signalWindow.compareTo(interval) < 0) {
			throw new IllegalArgumentException("signalWindow must be >= interval (" + interval + "), was "
					+ signalWindow);
		}
		if (riseAfter != null && !dwell.isZero() && riseAfter.compareTo(dwell) >= 0) {
			throw new IllegalArgumentException("riseAfter must be shorter than dwell (" + dwell + "), was " + riseAfter);
		}
		return Objects.requireNonNull(forecaster.get(), "forecaster.get()");
	}

	private static void requirePositive(String field, double value) {
		if (!(value > 0.0) || Double.isInfinite(value)) {
			throw new IllegalArgumentException(field + " must be a finite number > 0, was " + value);
		}
	}

	private static void requirePositiveOrInfinite(String field, double value) {
		if (!(value > 0.0)) {
			throw new IllegalArgumentException(field + " must be > 0 (or infinite: off), was " + value);
		}
	}

	private static void requireScore(String field, double value) {
		if (!(value > 0.0 && value <= 100.0)) {
			throw new IllegalArgumentException(field + " must be in (0, 100], was " + value);
		}
	}
}
