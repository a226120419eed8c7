package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class DecayedFailureRatePolicyTest {

	private static final long SECOND = 1_000_000_000L;
	private final BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.5).minimumCalls(1).build();
	private final WindowCounts window = counts(100, 0, 0);

	private DecayedFailureRatePolicy.DecayedEvaluator evaluator(DecayedFailureRatePolicy policy) {
		return (DecayedFailureRatePolicy.DecayedEvaluator) policy.newEvaluator();
	}

	@Test
	void recentCallsWeighMoreThanOldOnes() {
		DecayedFailureRatePolicy.DecayedEvaluator e = evaluator(
				TripPolicy.decayedFailureRate().halfLife(Duration.ofSeconds(10)));
		for (int i = 0; i < 10; i++) {
			e.onCall(window, config, Outcome.FAILURE, -1, false, 0);
		}
		for (int i = 0; i < 10; i++) {
			e.onCall(window, config, Outcome.SUCCESS, 1, false, 10 * SECOND);
		}
		// 10 failures aged one half-life weigh 5; 10 fresh successes weigh 10: 5 / 15
		assertThat(e.rate()).isCloseTo(1.0 / 3, offset(1e-9));
		assertThat(e.pressure(window, config, 10 * SECOND)).isCloseTo(2.0 / 3, offset(1e-9));
	}

	@Test
	void aStallWeighsMoreThanA503() {
		DecayedFailureRatePolicy.DecayedEvaluator plain = evaluator(TripPolicy.decayedFailureRate());
		DecayedFailureRatePolicy.DecayedEvaluator stalls = evaluator(TripPolicy.decayedFailureRate());
		for (int i = 0; i < 4; i++) {
			plain.onCall(window, config, i == 0 ? Outcome.FAILURE : Outcome.SUCCESS, 1, false, 0);
			stalls.onCall(window, config, i == 0 ? Outcome.STALLED : Outcome.SUCCESS, 1, false, 0);
		}
		assertThat(plain.rate()).isEqualTo(0.25);
		assertThat(stalls.rate()).isEqualTo(0.5); // severity 2 by default
		assertThat(stalls.pressure(window, config, 0)).isEqualTo(1.0);
	}

	@Test
	void severitiesAreConfigurable() {
		DecayedFailureRatePolicy policy = TripPolicy.decayedFailureRate().severity(Outcome.INCOMPLETE, 4)
				.severity(Outcome.FAILURE, 0.5);
		DecayedFailureRatePolicy.DecayedEvaluator e = evaluator(policy);
		e.onCall(window, config, Outcome.INCOMPLETE, -1, false, 0);
		e.onCall(window, config, Outcome.FAILURE, -1, false, 0);
		assertThat(e.rate()).isEqualTo(2.25);
		assertThat(policy.severity(Outcome.SUCCESS)).isZero();
	}

	@Test
	void theRateSurvivesAVeryLongRunWithoutOverflow() {
		DecayedFailureRatePolicy.DecayedEvaluator e = evaluator(
				TripPolicy.decayedFailureRate().halfLife(Duration.ofMillis(1)));
		long t = -5 * SECOND; // any clock origin
		for (int i = 0; i < 10_000; i++) {
			t += SECOND;
			e.onCall(window, config, i % 2 == 0 ? Outcome.FAILURE : Outcome.SUCCESS, 1, false, t);
			assertThat(e.rate()).isBetween(0.0, 1.0);
		}
		assertThat(Double.isFinite(e.rate())).isTrue();
	}

	@Test
	void resetForgetsAndMinimumCallsGates() {
		DecayedFailureRatePolicy.DecayedEvaluator e = evaluator(TripPolicy.decayedFailureRate());
		e.onCall(window, config, Outcome.FAILURE, -1, false, 0);
		assertThat(e.pressure(counts(0, 0, 0), BreakerConfig.defaults(), 0)).isZero();
		e.reset(0);
		assertThat(e.pressure(window, config, 0)).isZero();
	}

	@Test
	void invalidSettingsNameTheFieldAndValue() {
		assertThatThrownBy(() -> TripPolicy.decayedFailureRate().halfLife(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("halfLife").hasMessageContaining("PT0S");
		assertThatThrownBy(() -> TripPolicy.decayedFailureRate().severity(Outcome.STALLED, -1))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("STALLED").hasMessageContaining("-1");
		assertThatThrownBy(() -> TripPolicy.decayedFailureRate().severity(Outcome.SUCCESS, 1))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SUCCESS");
	}

	@Test
	void equalPoliciesAreEqual() {
		assertThat(TripPolicy.decayedFailureRate().halfLife(Duration.ofSeconds(3)))
				.isEqualTo(TripPolicy.decayedFailureRate().halfLife(Duration.ofSeconds(3)))
				.isNotEqualTo(TripPolicy.decayedFailureRate());
	}
}
