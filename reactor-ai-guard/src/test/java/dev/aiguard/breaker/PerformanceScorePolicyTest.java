package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class PerformanceScorePolicyTest {

	private static final long MS = 1_000_000L;
	private final BreakerConfig config = BreakerConfig.custom().minimumCalls(5).build();

	@Test
	void scoreWeighsTheTtftRatioAndTheFailureRate() {
		PerformanceScorePolicy policy = TripPolicy.performanceScore(Duration.ofMillis(500)).alpha(0.6)
				.threshold(1.0);
		PerformanceScorePolicy.ScoreEvaluator e = (PerformanceScorePolicy.ScoreEvaluator) policy.newEvaluator();
		WindowCounts window = counts(10, 2, 0);
		for (int i = 0; i < 10; i++) {
			e.onCall(window, config, Outcome.SUCCESS, 1000 * MS, false, 0); // twice the baseline
		}
		assertThat(e.ttftRatio()).isCloseTo(2.0, offset(1e-9));
		// 0.6 × 2 + 0.4 × 0.2 = 1.28
		assertThat(e.pressure(window, config, 0)).isCloseTo(1.28, offset(1e-9));
	}

	@Test
	void aHealthyProviderScoresAboutAlphaAndDoesNotTrip() {
		PerformanceScorePolicy.ScoreEvaluator e = (PerformanceScorePolicy.ScoreEvaluator) TripPolicy
				.performanceScore(Duration.ofMillis(500)).newEvaluator();
		WindowCounts window = counts(10, 0, 0);
		for (int i = 0; i < 10; i++) {
			assertThat(e.onCall(window, config, Outcome.SUCCESS, 500 * MS, false, 0)).isFalse();
		}
		assertThat(e.pressure(window, config, 0)).isCloseTo(0.5, offset(1e-9));
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 501 * MS, false, 0)).isTrue();
	}

	@Test
	void recentTtftWeighsMoreThanOld() {
		PerformanceScorePolicy.ScoreEvaluator e = (PerformanceScorePolicy.ScoreEvaluator) TripPolicy
				.performanceScore(Duration.ofMillis(100)).halfLife(Duration.ofSeconds(1)).newEvaluator();
		WindowCounts window = counts(10, 0, 0);
		e.onCall(window, config, Outcome.SUCCESS, 100 * MS, false, 0);
		e.onCall(window, config, Outcome.SUCCESS, 400 * MS, false, 1000 * MS); // one half-life later
		// weights 0.5 and 1 (relative): (50 + 400) / 1.5 = 300 ms → ratio 3
		assertThat(e.ttftRatio()).isCloseTo(3.0, offset(1e-9));
	}

	@Test
	void belowMinimumCallsOrWithoutFirstTokensItStaysCalm() {
		PerformanceScorePolicy.ScoreEvaluator e = (PerformanceScorePolicy.ScoreEvaluator) TripPolicy
				.performanceScore(Duration.ofMillis(100)).newEvaluator();
		assertThat(e.pressure(counts(4, 4, 0), config, 0)).isZero();
		assertThat(e.ttftRatio()).isEqualTo(1.0);
		assertThat(e.pressure(counts(10, 10, 0), config, 0)).isEqualTo(1.0); // 0.5 × 1 + 0.5 × 1
	}

	@Test
	void invalidSettingsNameTheFieldAndValue() {
		assertThatThrownBy(() -> TripPolicy.performanceScore(Duration.ofMillis(100)).alpha(1.5))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("alpha").hasMessageContaining("1.5");
		assertThatThrownBy(() -> TripPolicy.performanceScore(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseline");
		assertThatThrownBy(() -> TripPolicy.performanceScore(Duration.ofMillis(1)).threshold(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("threshold");
	}
}
