package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.constant;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.set;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.with;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.properties.LoadProperties;
import dev.aiguard.core.Priority;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.HealthSignals;
import dev.aiguard.load.Holt;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.load.LoadRules;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/** {@code aiguard.load} → the {@link LoadGovernor}: thresholds, forecast, health signals and rules. */
final class LoadGovernorMapper {

	private static final Map<String, Double> DEFAULT_WEIGHTS = Map.of(HealthSignals.CPU, 0.20, HealthSignals.MEMORY,
			0.15, HealthSignals.RESPONSE_TIME, 0.35, HealthSignals.ERROR_RATE, 0.30);

	private LoadGovernorMapper() {
	}

	/**
	 * The load governor of {@code aiguard.load}, not started.
	 *
	 * @param l the properties under {@code aiguard.load}
	 * @param signals health signals of the context: each replaces the default of its name or adds
	 *        one, weighted by {@code aiguard.load.signals.<name>}
	 * @param lanes the shared lanes, sized by the rules at each level unless
	 *        {@code aiguard.load.lanes=false}; {@code null} when there are none
	 * @param metrics where the governor reports its level and decisions
	 */
	static LoadGovernor governor(LoadProperties l, List<HealthSignal> signals, @Nullable PriorityLanes lanes,
			GuardMetrics metrics) {
		String at = AiGuardProperties.PREFIX + ".load";
		LoadGovernor.Builder b = make(at + ".name", l.getName(), LoadGovernor::builder);
		if (l.getCapacity() == null) {
			throw new InvalidGuardPropertyException(at + ".capacity", null,
					"the load governor needs the requests per second the service sustains", null);
		}
		set(at + ".capacity", l.getCapacity(), b::capacity);
		set(at + ".interval", l.getInterval(), b::interval);
		set(at + ".horizon", l.getHorizon(), b::horizon);
		set(at + ".overload-line", l.getOverloadLine(), b::overloadLine);
		set(at + ".degrade-at", l.getDegradeAt(), b::degradeAt);
		set(at + ".recover-below", l.getRecoverBelow(), b::recoverBelow);
		List<Double> loads = l.getLoadThresholds();
		if (loads != null) {
			double[] t = three(at + ".load-thresholds", loads, true);
			if (l.getDegradeAt() != null && l.getDegradeAt() != t[0]) {
				throw new InvalidGuardPropertyException(at + ".load-thresholds", loads,
						"its first value is the WARNING threshold, and degrade-at (" + l.getDegradeAt()
								+ ") says another; set one of them",
						null);
			}
			set(at + ".load-thresholds", t, v -> b.loadThresholds(v[0], v[1], v[2]));
		}
		List<Double> scores = l.getScoreThresholds();
		if (scores != null) {
			double[] t = three(at + ".score-thresholds", scores, false);
			set(at + ".score-thresholds", t, v -> b.scoreThresholds(v[0], v[1], v[2]));
		}
		double warningAt = loads != null ? loads.get(0) : l.getDegradeAt() != null ? l.getDegradeAt() : 0.8;
		if (l.getRecoverBelow() != null && !(l.getRecoverBelow() < warningAt)) {
			throw new InvalidGuardPropertyException(at + ".recover-below", l.getRecoverBelow(),
					"must be below the load that enters WARNING (" + warningAt + ")", null);
		}
		set(at + ".load-smoothing", l.getLoadSmoothing(), b::loadSmoothing);
		set(at + ".score-smoothing", l.getScoreSmoothing(), b::scoreSmoothing);
		set(at + ".min-samples", l.getMinSamples(), b::minSamples);
		set(at + ".signal-window", l.getSignalWindow(), b::signalWindow);
		set(at + ".rise-after", l.getRiseAfter(), b::riseAfter);
		if (lanes != null && l.isLanes()) {
			b.lanes(lanes, l.getLaneResizing());
		}
		set(at + ".dwell", l.getDwell(), b::dwell);
		set(at + ".warmup-intervals", l.getWarmupIntervals(), b::warmupIntervals);
		LoadProperties.Forecast f = l.getForecast();
		double alpha = f.getAlpha();
		double beta = f.getBeta();
		make(at + ".forecast", () -> Holt.of(alpha, beta));
		b.forecaster(() -> Holt.of(alpha, beta));
		signals(at + ".signals", b, l.getSignals(), signals);
		b.rules(rules(at + ".rules", l.getRules()));
		b.metrics(metrics);
		return make(at, b::build);
	}

	/** @param increasing whether the thresholds must rise from WARNING to CRITICAL (else fall) */
	private static double[] three(String property, List<Double> values, boolean increasing) {
		if (values.size() != 3 || values.contains(null)) {
			throw new InvalidGuardPropertyException(property, values,
					"give three numbers, for WARNING, DEGRADED and CRITICAL", null);
		}
		double[] t = { values.get(0), values.get(1), values.get(2) };
		boolean bothOff = increasing && Double.isInfinite(t[1]) && Double.isInfinite(t[2]);
		boolean ordered = increasing ? t[0] < t[1] && (t[1] < t[2] || bothOff) : t[0] > t[1] && t[1] > t[2];
		if (!ordered) {
			throw new InvalidGuardPropertyException(property, values, "the thresholds of WARNING, DEGRADED and CRITICAL "
					+ "must " + (increasing ? "increase" : "decrease"), null);
		}
		return t;
	}

	/**
	 * Signals given as objects replace the default of their name or add one; a weight property
	 * reweighs a signal, and 0 leaves it out. A signal that is not a default needs its weight.
	 */
	private static void signals(String at, LoadGovernor.Builder b, Map<String, Double> weights,
			List<HealthSignal> given) {
		Map<String, HealthSignal> signals = new LinkedHashMap<>();
		for (HealthSignal signal : given) {
			signals.put(signal.name(), signal);
		}
		for (String name : weights.keySet()) {
			if (!DEFAULT_WEIGHTS.containsKey(name) && !signals.containsKey(name)) {
				throw new InvalidGuardPropertyException(at + "." + name, weights.get(name),
						"no health signal of that name (defaults: " + DEFAULT_WEIGHTS.keySet() + ", HealthSignal beans: "
								+ signals.keySet() + ")",
						null);
			}
			signals.putIfAbsent(name, defaultSignal(name));
		}
		signals.forEach((name, signal) -> {
			Double weight = weights.containsKey(name) ? weights.get(name) : DEFAULT_WEIGHTS.get(name);
			if (weight == null) {
				throw new InvalidGuardPropertyException(at + "." + name, null,
						"the health signal '" + name + "' needs a weight (0 leaves it out)", null);
			}
			if (weight == 0) {
				if (DEFAULT_WEIGHTS.containsKey(name)) {
					set(at + "." + name, name, b::withoutSignal);
				}
			}
			else {
				set(at + "." + name, weight, v -> b.signal(signal, v));
			}
		});
	}

	private static HealthSignal defaultSignal(String name) {
		return switch (name) {
			case HealthSignals.CPU -> HealthSignals.cpu();
			case HealthSignals.MEMORY -> HealthSignals.memory();
			case HealthSignals.RESPONSE_TIME -> HealthSignals.responseTime();
			default -> HealthSignals.errorRate();
		};
	}

	private static LoadRules rules(String at, Map<String, Map<String, LoadProperties.Rule>> overrides) {
		LoadRules rules = LoadRules.defaults();
		for (Map.Entry<String, Map<String, LoadProperties.Rule>> byLevel : overrides.entrySet()) {
			LoadLevel level = constant(at + "." + byLevel.getKey(), byLevel.getKey(), LoadLevel.class);
			for (Map.Entry<String, LoadProperties.Rule> byPriority : byLevel.getValue().entrySet()) {
				String where = at + "." + byLevel.getKey() + "." + byPriority.getKey();
				Priority priority = constant(where, byPriority.getKey(), Priority.class);
				LoadProperties.Rule rule = byPriority.getValue();
				LoadRules current = rules;
				rules = with(where + ".action", rule.getAction(), current, (r, a) -> r.withAction(level, priority, a));
				LoadRules withAction = rules;
				rules = with(where + ".lane-factor", rule.getLaneFactor(), withAction,
						(r, factor) -> r.withLaneFactor(level, priority, factor));
			}
		}
		return rules;
	}
}
