package dev.aiguard.load;

/**
 * One sub-score of the governor's health score. The governor asks every signal once per decision,
 * on its decision thread: an implementation must be cheap and must not block.
 *
 * <pre>{@code
 * HealthSignal queue = HealthSignals.of("queue", stats -> 100.0 - Math.min(queueDepth.get(), 100));
 * LoadGovernor governor = LoadGovernor.builder("chat").capacity(40).signal(queue, 0.2).build();
 * }</pre>
 *
 * @see HealthSignals
 */
public interface HealthSignal {

	/** @return the signal's name: the key in {@link LoadState#subScores()} and the metrics' {@code signal} tag */
	String name();

	/**
	 * @param interval what the guard measured over the signal window that just ended (the last
	 *         intervals' totals, see {@link LoadGovernor.Builder#signalWindow}); a rate signal should
	 *         report no data below {@link IntervalStats#minSamples()} samples
	 * @return the sub-score, 0 (worst) to 100 (best); {@code NaN} when the signal has no data, which
	 *         leaves it out of the score (the other weights are renormalised: neutral). Values outside 0..100
	 *         are clamped; a throw counts as no data and is reported to {@code Hooks.onErrorDropped}.
	 */
	double score(IntervalStats interval);
}
