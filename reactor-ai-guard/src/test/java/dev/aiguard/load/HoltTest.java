package dev.aiguard.load;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.within;

class HoltTest {

	@ParameterizedTest
	@ValueSource(doubles = { 0.0, -0.1, 1.0000001, Double.NaN, Double.POSITIVE_INFINITY })
	void refusesAlphaOutsideTheUnitInterval(double alpha) {
		assertThatIllegalArgumentException().isThrownBy(() -> Holt.of(alpha, 0.1))
				.withMessage("alpha must be in (0, 1], was " + alpha);
	}

	@ParameterizedTest
	@ValueSource(doubles = { -0.1, 1.5, Double.NaN })
	void refusesBetaOutsideTheUnitInterval(double beta) {
		assertThatIllegalArgumentException().isThrownBy(() -> Holt.of(0.3, beta))
				.withMessage("beta must be in [0, 1], was " + beta);
	}

	@Test
	void acceptsTheEdgesOfTheUnitInterval() {
		assertThat(Holt.of(1.0, 0.0).alpha()).isEqualTo(1.0);
		assertThat(Holt.of(1.0, 0.0).beta()).isEqualTo(0.0);
		assertThat(Holt.of(0.5, 1.0).beta()).isEqualTo(1.0);
	}

	@Test
	void forecastsTheLastValueUntilTwoValuesArrived() {
		Holt holt = Holt.of(0.3, 0.1);
		assertThat(holt.ready()).isFalse();
		assertThat(holt.forecast(1)).isZero();

		holt.observe(42.0);
		assertThat(holt.ready()).isFalse();
		assertThat(holt.forecast(3)).isEqualTo(42.0);
		assertThat(holt.observations()).isEqualTo(1);

		holt.observe(50.0);
		assertThat(holt.ready()).isTrue();
		assertThat(holt.level()).isEqualTo(50.0);
		assertThat(holt.trend()).isEqualTo(8.0);
		assertThat(holt.forecast(2)).isEqualTo(66.0);
		assertThat(holt.sse()).isZero();
	}

	@Test
	void refusesStepsAheadBelowOne() {
		Holt holt = Holt.of(0.3, 0.1);
		holt.observe(1.0);
		holt.observe(2.0);
		assertThatIllegalArgumentException().isThrownBy(() -> holt.forecast(0))
				.withMessage("stepsAhead must be >= 1, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> Holt.of(0.3, 0.1).forecast(-2))
				.withMessage("stepsAhead must be >= 1, was -2");
	}

	@Test
	void refusesNonFiniteValuesWithoutChangingState() {
		Holt holt = Holt.of(0.3, 0.1);
		holt.observe(10.0);
		for (double bad : new double[] { Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY }) {
			assertThatIllegalArgumentException().isThrownBy(() -> holt.observe(bad))
					.withMessage("value must be finite, was " + bad);
		}
		assertThat(holt.observations()).isEqualTo(1);
		assertThat(holt.forecast(1)).isEqualTo(10.0);
	}

	@Test
	void followsALineExactly() {
		Holt holt = Holt.of(0.3, 0.1);
		for (int t = 0; t < 50; t++) {
			holt.observe(5.0 + 3.0 * t);
		}
		assertThat(holt.level()).isCloseTo(5.0 + 3.0 * 49, within(1e-9));
		assertThat(holt.trend()).isCloseTo(3.0, within(1e-12));
		assertThat(holt.forecast(4)).isCloseTo(5.0 + 3.0 * 53, within(1e-9));
		assertThat(holt.sse()).isCloseTo(0.0, within(1e-18));
	}

	@Test
	void smoothsAStepChangeAndCountsItsErrors() {
		Holt holt = Holt.of(0.5, 0.0);
		holt.observe(10.0);
		holt.observe(10.0);
		holt.observe(20.0);
		// predicted 10, error 10; level halfway; beta 0 keeps the trend at 0
		assertThat(holt.level()).isEqualTo(15.0);
		assertThat(holt.trend()).isZero();
		assertThat(holt.sse()).isEqualTo(100.0);
		holt.observe(15.0);
		assertThat(holt.level()).isEqualTo(15.0);
		assertThat(holt.sse()).isEqualTo(100.0);
	}

	@Test
	void alphaOneTracksTheLastValue() {
		Holt holt = Holt.of(1.0, 0.0);
		double[] values = { 3.0, 7.0, 2.0, 9.0 };
		for (double v : values) {
			holt.observe(v);
		}
		assertThat(holt.level()).isEqualTo(9.0);
		assertThat(holt.trend()).isEqualTo(4.0);
		assertThat(holt.forecast(1)).isEqualTo(13.0);
		assertThat(holt.observations()).isEqualTo(4);
		assertThat(holt.toString()).contains("alpha=1.0", "beta=0.0", "n=4");
	}
}
