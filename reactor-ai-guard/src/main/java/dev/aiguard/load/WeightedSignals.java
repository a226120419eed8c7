package dev.aiguard.load;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

import dev.aiguard.internal.Callbacks;
import org.jspecify.annotations.Nullable;

/**
 * The governor's {@link HealthSignal}s and their weights: each interval every signal gives a
 * sub-score in [0, 100] (NaN when it has no data), and the health score is their weighted mean
 * over the signals that had data. A signal that throws counts as one without data.
 */
final class WeightedSignals {

	/** A signal and its weight, as registered. */
	record Entry(HealthSignal signal, double weight) {
	}

	/** One interval's scores: by signal in registration order, the weighted mean, and the lowest. */
	record Scores(Map<String, Double> subScores, double score, @Nullable String lowestName, double lowest) {
	}

	private final HealthSignal[] signals;
	private final double[] weights;

	WeightedSignals(Collection<Entry> entries) {
		this.signals = new HealthSignal[entries.size()];
		this.weights = new double[entries.size()];
		int i = 0;
		for (Entry e : entries) {
			signals[i] = e.signal();
			weights[i] = e.weight();
			i++;
		}
	}

	/** @return every signal's sub-score as NaN: the scores before the first decision */
	Map<String, Double> noScores() {
		Map<String, Double> none = new LinkedHashMap<>();
		for (HealthSignal s : signals) {
			none.put(s.name(), Double.NaN);
		}
		return Collections.unmodifiableMap(none);
	}

	/** @return a gauge per signal, in registration order, of its sub-score in the state {@code state} gives */
	Map<String, DoubleSupplier> subScoreGauges(Supplier<LoadState> state) {
		Map<String, DoubleSupplier> gauges = new LinkedHashMap<>();
		for (HealthSignal s : signals) {
			String signal = s.name();
			gauges.put(signal, () -> {
				Double v = state.get().subScores().get(signal);
				return v == null ? Double.NaN : v;
			});
		}
		return Collections.unmodifiableMap(gauges);
	}

	/** Scores one interval. */
	Scores score(IntervalStats stats) {
		Map<String, Double> subScores = new LinkedHashMap<>();
		double weighted = 0.0;
		double weightSum = 0.0;
		String lowestName = null;
		double lowest = Double.POSITIVE_INFINITY;
		for (int i = 0; i < signals.length; i++) {
			double sub = subScore(signals[i], stats);
			subScores.put(signals[i].name(), sub);
			if (!Double.isNaN(sub)) {
				weighted += weights[i] * sub;
				weightSum += weights[i];
				if (sub < lowest) {
					lowest = sub;
					lowestName = signals[i].name();
				}
			}
		}
		double score = weightSum > 0.0 ? weighted / weightSum : Double.NaN;
		return new Scores(Collections.unmodifiableMap(subScores), score, lowestName, lowest);
	}

	private static double subScore(HealthSignal signal, IntervalStats stats) {
		double value;
		try {
			value = signal.score(stats);
		}
		catch (Throwable failure) {
			Callbacks.dropped(failure);
			return Double.NaN;
		}
		if (Double.isNaN(value)) {
			return Double.NaN;
		}
		return Math.max(0.0, Math.min(100.0, value));
	}
}
