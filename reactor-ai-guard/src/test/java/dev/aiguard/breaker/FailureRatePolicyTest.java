package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class FailureRatePolicyTest {

	private final BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.5).slowCallRateThreshold(0.8)
			.minimumCalls(10).build();
	private final TripPolicy.Evaluator evaluator = TripPolicy.failureRate().newEvaluator();

	@Test
	void pressureIsTheFailureRateOverItsThreshold() {
		assertThat(evaluator.pressure(counts(10, 5, 0), config, 0)).isEqualTo(1.0);
		assertThat(evaluator.pressure(counts(10, 4, 0), config, 0)).isEqualTo(0.8);
		assertThat(evaluator.pressure(counts(20, 20, 0), config, 0)).isEqualTo(2.0);
	}

	@Test
	void slowCallRateTripsOnItsOwn() {
		assertThat(evaluator.pressure(counts(10, 0, 8), config, 0)).isEqualTo(1.0);
		assertThat(evaluator.pressure(counts(10, 0, 7), config, 0)).isLessThan(1.0);
	}

	@Test
	void noJudgementBelowMinimumCalls() {
		assertThat(evaluator.pressure(counts(9, 9, 9), config, 0)).isZero();
	}

	@Test
	void onlyFailedOrSlowCallsAskForAJudgement() {
		WindowCounts w = counts(10, 0, 0);
		assertThat(evaluator.onCall(w, config, Outcome.SUCCESS, 1, false, 0)).isFalse();
		assertThat(evaluator.onCall(w, config, Outcome.SUCCESS, 1, true, 0)).isTrue();
		assertThat(evaluator.onCall(w, config, Outcome.STALLED, -1, false, 0)).isTrue();
	}
}
