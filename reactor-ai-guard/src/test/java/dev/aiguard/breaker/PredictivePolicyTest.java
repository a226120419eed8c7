package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class PredictivePolicyTest {

	private static final long SECOND = 1_000_000_000L;
	private final BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.5).minimumCalls(10).build();

	private PredictivePolicy.HoltEvaluator evaluator(PredictivePolicy policy) {
		return (PredictivePolicy.HoltEvaluator) policy.newEvaluator();
	}

	/** One call per second, failure rate of the window rising by {@code step} each second. */
	private static double feed(PredictivePolicy.HoltEvaluator e, BreakerConfig config, double start, double step,
			int seconds) {
		double rate = start;
		for (int s = 0; s < seconds; s++) {
			rate = start + step * s;
			WindowCounts w = counts(1000, Math.round(rate * 1000), 0);
			e.onCall(w, config, Outcome.FAILURE, -1, false, s * SECOND);
		}
		return rate;
	}

	@Test
	void tripsBeforeTheThresholdWhenTheTrendCrossesItWithinTheHorizon() {
		PredictivePolicy.HoltEvaluator e = evaluator(TripPolicy.predictive(TripPolicy.failureRate()));
		double rate = feed(e, config, 0.30, 0.02, 6); // 30 % → 40 %, threshold 50 %
		WindowCounts now = counts(1000, Math.round(rate * 1000), 0);

		assertThat(TripPolicy.failureRate().newEvaluator().pressure(now, config, 5 * SECOND)).isLessThan(1.0);
		assertThat(e.forecast()).isGreaterThanOrEqualTo(1.0);
		assertThat(e.pressure(now, config, 5 * SECOND)).isGreaterThanOrEqualTo(1.0);
	}

	@Test
	void aFlatScoreBelowTheThresholdDoesNotTrip() {
		PredictivePolicy.HoltEvaluator e = evaluator(TripPolicy.predictive(TripPolicy.failureRate()));
		feed(e, config, 0.40, 0, 10);
		WindowCounts now = counts(1000, 400, 0);
		assertThat(e.pressure(now, config, 9 * SECOND)).isCloseTo(0.8, org.assertj.core.data.Offset.offset(1e-6));
	}

	@Test
	void aRisingButLowScoreIsNotArmed() {
		PredictivePolicy.HoltEvaluator e = evaluator(
				TripPolicy.predictive(TripPolicy.failureRate()).armedAt(0.6).horizon(Duration.ofSeconds(20)));
		double rate = feed(e, config, 0.05, 0.04, 6); // 5 % → 25 %: pressure 0.5 < armedAt
		WindowCounts now = counts(1000, Math.round(rate * 1000), 0);
		assertThat(e.forecast()).isGreaterThanOrEqualTo(1.0);
		assertThat(e.pressure(now, config, 5 * SECOND)).isLessThan(1.0);
	}

	@Test
	void noForecastBeforeWarmupOrWhenItIsStale() {
		PredictivePolicy.HoltEvaluator e = evaluator(TripPolicy.predictive(TripPolicy.failureRate()).warmupSamples(5));
		feed(e, config, 0.30, 0.05, 4);
		assertThat(e.forecast()).isEqualTo(-1);

		PredictivePolicy.HoltEvaluator stale = evaluator(TripPolicy.predictive(TripPolicy.failureRate()));
		double rate = feed(stale, config, 0.30, 0.02, 6);
		WindowCounts now = counts(1000, Math.round(rate * 1000), 0);
		assertThat(stale.pressure(now, config, 60 * SECOND)).isLessThan(1.0);
	}

	@Test
	void theInnerPolicyStillTripsOnItsOwn() {
		PredictivePolicy.HoltEvaluator e = evaluator(TripPolicy.predictive(TripPolicy.failureRate()));
		assertThat(e.pressure(counts(100, 60, 0), config, 0)).isEqualTo(1.2);
	}

	@Test
	void holtFollowsALinearSeries() {
		PredictivePolicy.HoltEvaluator e = evaluator(TripPolicy.predictive(TripPolicy.failureRate())
				.levelSmoothing(0.8).trendSmoothing(0.8).horizon(Duration.ofSeconds(5)));
		for (int s = 0; s < 30; s++) {
			e.observe(0.1 + 0.01 * s, 1);
		}
		// last sample 0.39; five steps ahead on a slope of 0.01 ≈ 0.44
		assertThat(e.forecast()).isBetween(0.43, 0.45);
	}

	@Test
	void invalidSettingsNameTheFieldAndValue() {
		assertThatThrownBy(() -> TripPolicy.predictive(TripPolicy.failureRate()).armedAt(1))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("armedAt");
		assertThatThrownBy(() -> TripPolicy.predictive(TripPolicy.predictive(TripPolicy.failureRate())))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inner");
		assertThatThrownBy(() -> TripPolicy.predictive(TripPolicy.failureRate()).horizon(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("horizon");
	}
}
