package dev.aiguard.load;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.within;

class HoltWintersTest {

	static final double[] PATTERN = { 10.0, 20.0, 30.0, 40.0 };

	@ParameterizedTest
	@ValueSource(doubles = { 0.0, -0.5, 1.01, Double.NaN })
	void refusesAlphaOutsideTheUnitInterval(double alpha) {
		assertThatIllegalArgumentException().isThrownBy(() -> HoltWinters.additive(alpha, 0.1, 0.1, 4))
				.withMessage("alpha must be in (0, 1], was " + alpha);
	}

	@ParameterizedTest
	@ValueSource(doubles = { -0.01, 2.0, Double.NaN })
	void refusesBetaOutsideTheUnitInterval(double beta) {
		assertThatIllegalArgumentException().isThrownBy(() -> HoltWinters.additive(0.3, beta, 0.1, 4))
				.withMessage("beta must be in [0, 1], was " + beta);
	}

	@ParameterizedTest
	@ValueSource(doubles = { -0.01, 1.5, Double.NEGATIVE_INFINITY })
	void refusesGammaOutsideTheUnitInterval(double gamma) {
		assertThatIllegalArgumentException().isThrownBy(() -> HoltWinters.additive(0.3, 0.1, gamma, 4))
				.withMessage("gamma must be in [0, 1], was " + gamma);
	}

	@ParameterizedTest
	@ValueSource(ints = { 1, 0, -3, Integer.MAX_VALUE })
	void refusesSeasonLengthOutOfRange(int seasonLength) {
		assertThatIllegalArgumentException().isThrownBy(() -> HoltWinters.additive(0.3, 0.1, 0.1, seasonLength))
				.withMessage("seasonLength must be in 2.." + HoltWinters.MAX_SEASON_LENGTH + ", was " + seasonLength);
	}

	@Test
	void acceptsTheEdges() {
		HoltWinters hw = HoltWinters.additive(1.0, 0.0, 1.0, 2);
		assertThat(hw.alpha()).isEqualTo(1.0);
		assertThat(hw.beta()).isZero();
		assertThat(hw.gamma()).isEqualTo(1.0);
		assertThat(hw.seasonLength()).isEqualTo(2);
		assertThat(HoltWinters.additive(0.3, 1.0, 0.0, 3).gamma()).isZero();
	}

	@Test
	void forecastsTheLastValueUntilTwoSeasonsArrived() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4);
		assertThat(hw.forecast(1)).isZero();
		assertThat(hw.level()).isZero();
		for (int i = 0; i < 7; i++) {
			hw.observe(PATTERN[i % 4] + i);
			assertThat(hw.ready()).isFalse();
			assertThat(hw.forecast(1)).isEqualTo(PATTERN[i % 4] + i);
			assertThat(hw.forecast(5)).isEqualTo(PATTERN[i % 4] + i);
			assertThat(hw.level()).isEqualTo(PATTERN[i % 4] + i);
			assertThat(hw.trend()).isZero();
			assertThat(hw.season(1)).isZero();
			assertThat(hw.sse()).isZero();
		}
		hw.observe(PATTERN[3] + 7);
		assertThat(hw.ready()).isTrue();
		assertThat(hw.observations()).isEqualTo(8);
		assertThat(hw.forecast(1)).isEqualTo(hw.level() + hw.trend() + hw.season(1));
		assertThat(hw.forecast(6)).isEqualTo(hw.level() + 6 * hw.trend() + hw.season(2));
	}

	@Test
	void refusesStepsAheadBelowOneAndSeasonIndexOutOfRange() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4);
		assertThatIllegalArgumentException().isThrownBy(() -> hw.forecast(0))
				.withMessage("stepsAhead must be >= 1, was 0");
		feedPattern(hw, 3);
		assertThatIllegalArgumentException().isThrownBy(() -> hw.forecast(-1))
				.withMessage("stepsAhead must be >= 1, was -1");
		assertThatIllegalArgumentException().isThrownBy(() -> hw.season(0))
				.withMessage("i must be in 1..4, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> hw.season(5))
				.withMessage("i must be in 1..4, was 5");
	}

	@Test
	void refusesNonFiniteValuesWithoutChangingState() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4);
		hw.observe(1.0);
		for (double bad : new double[] { Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY }) {
			assertThatIllegalArgumentException().isThrownBy(() -> hw.observe(bad))
					.withMessage("value must be finite, was " + bad);
		}
		assertThat(hw.observations()).isEqualTo(1);
		feedPattern(hw, 3);
		assertThat(hw.ready()).isTrue();
		assertThatIllegalArgumentException().isThrownBy(() -> hw.observe(Double.NaN));
		assertThat(hw.observations()).isEqualTo(13);
	}

	@Test
	void aPurelySeasonalSeriesIsForecastExactly() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4);
		feedPattern(hw, 2);

		// the 2x4 moving average of a periodic series is its mean: level 25, no trend
		assertThat(hw.level()).isCloseTo(25.0, within(1e-12));
		assertThat(hw.trend()).isCloseTo(0.0, within(1e-12));
		for (int i = 1; i <= 4; i++) {
			assertThat(hw.season(i)).isCloseTo(PATTERN[i - 1] - 25.0, within(1e-12));
		}
		assertThat(hw.sse()).isCloseTo(0.0, within(1e-20));
		hw.observe(PATTERN[0]);
		for (int k = 1; k <= 9; k++) {
			assertThat(hw.forecast(k)).as("k=%d", k).isCloseTo(PATTERN[k % 4], within(1e-12));
		}
	}

	@Test
	void anOddSeasonUsesThePlainMovingAverage() {
		double[] pattern = { 5.0, 1.0, 3.0 };
		HoltWinters hw = HoltWinters.additive(0.5, 0.2, 0.3, 3);
		for (int t = 0; t < 6; t++) {
			hw.observe(pattern[t % 3]);
		}
		assertThat(hw.level()).isCloseTo(3.0, within(1e-12));
		assertThat(hw.trend()).isCloseTo(0.0, within(1e-12));
		assertThat(hw.forecast(1)).isCloseTo(5.0, within(1e-12));
		assertThat(hw.forecast(2)).isCloseTo(1.0, within(1e-12));
		assertThat(hw.forecast(6)).isCloseTo(3.0, within(1e-12));
	}

	@Test
	void centredMovingAverageHalvesTheEndWeightsForAnEvenSeason() {
		double[] x = { 1, 2, 3, 4, 5, 6, 7, 8 };
		double[] even = HoltWinters.centredMovingAverage(x, 4);
		assertThat(even[0]).isNaN();
		assertThat(even[1]).isNaN();
		assertThat(even[2]).isCloseTo((0.5 * 1 + 2 + 3 + 4 + 0.5 * 5) / 4, within(1e-15));
		assertThat(even[5]).isCloseTo((0.5 * 4 + 5 + 6 + 7 + 0.5 * 8) / 4, within(1e-15));
		assertThat(even[6]).isNaN();
		double[] odd = HoltWinters.centredMovingAverage(new double[] { 3, 6, 9, 12, 15, 18 }, 3);
		assertThat(odd[0]).isNaN();
		assertThat(odd[1]).isCloseTo(6.0, within(1e-15));
		assertThat(odd[4]).isCloseTo(15.0, within(1e-15));
		assertThat(odd[5]).isNaN();
	}

	@Test
	void learnsATrendUnderTheSeason() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4);
		int n = 400;
		for (int t = 0; t < n; t++) {
			hw.observe(100.0 + 2.0 * t + PATTERN[t % 4]);
		}
		assertThat(hw.trend()).isCloseTo(2.0, within(1e-6));
		for (int k = 1; k <= 8; k++) {
			int t = n - 1 + k;
			assertThat(hw.forecast(k)).as("k=%d", k).isCloseTo(100.0 + 2.0 * t + PATTERN[t % 4], within(1e-6));
		}
		// a season later: the same seasonal term, trend * seasonLength higher
		assertThat(hw.forecast(7) - hw.forecast(3)).isCloseTo(4 * hw.trend(), within(1e-9));
	}

	@Test
	void gammaZeroKeepsTheStartingSeasonalFigure() {
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.0, 4);
		feedPattern(hw, 2);
		double[] figure = { hw.season(1), hw.season(2), hw.season(3), hw.season(4) };
		for (int t = 0; t < 40; t++) {
			hw.observe(PATTERN[t % 4] * (1 + 0.1 * t));
		}
		// 40 values later the season is back at the same position
		for (int i = 1; i <= 4; i++) {
			assertThat(hw.season(i)).isEqualTo(figure[i - 1]);
		}
	}

	@Test
	void smoothsTheBufferedSecondSeasonAtTheStart() {
		List<Long> times = new ArrayList<>();
		HoltWinters hw = HoltWinters.additive(0.3, 0.1, 0.2, 4)
				.onStep((t, xhat, level, trend, season) -> times.add(t));
		feedPattern(hw, 2);
		assertThat(times).containsExactly(5L, 6L, 7L, 8L);
		hw.observe(1.0);
		assertThat(times).endsWith(9L);
	}

	@Test
	void describesItself() {
		assertThat(HoltWinters.additive(0.3, 0.1, 0.2, 24).toString())
				.contains("alpha=0.3", "beta=0.1", "gamma=0.2", "seasonLength=24", "n=0");
	}

	private static void feedPattern(HoltWinters hw, int seasons) {
		for (int t = 0; t < 4 * seasons; t++) {
			hw.observe(PATTERN[t % 4]);
		}
	}
}
