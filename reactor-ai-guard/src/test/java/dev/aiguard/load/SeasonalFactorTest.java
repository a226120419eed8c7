package dev.aiguard.load;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.within;

class SeasonalFactorTest {

	@ParameterizedTest
	@ValueSource(ints = { 1, 0, -24 })
	void refusesSeasonLengthBelowTwo(int seasonLength) {
		assertThatIllegalArgumentException().isThrownBy(() -> SeasonalFactor.of(seasonLength))
				.withMessage("seasonLength must be >= 2, was " + seasonLength);
		assertThatIllegalArgumentException().isThrownBy(() -> SeasonalFactor.adjusting(seasonLength, Holt.of(0.3, 0.1)))
				.withMessage("seasonLength must be >= 2, was " + seasonLength);
	}

	@ParameterizedTest
	@ValueSource(doubles = { -1.0, -0.0001, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY })
	void refusesNegativeAndNonFiniteValues(double bad) {
		SeasonalFactor factors = SeasonalFactor.of(3);
		assertThatIllegalArgumentException().isThrownBy(() -> factors.observe(bad))
				.withMessage("value must be finite and >= 0, was " + bad);
		assertThat(factors.observations()).isZero();

		SeasonalFactor.Adjusted adjusted = SeasonalFactor.adjusting(3, Holt.of(0.3, 0.1));
		assertThatIllegalArgumentException().isThrownBy(() -> adjusted.observe(bad))
				.withMessage("value must be finite and >= 0, was " + bad);
		assertThat(adjusted.observations()).isZero();
		assertThat(adjusted.deseasonalised().observations()).isZero();
	}

	@Test
	void refusesSlotsOutOfRangeAndStepsAheadBelowOne() {
		SeasonalFactor factors = SeasonalFactor.of(24);
		assertThatIllegalArgumentException().isThrownBy(() -> factors.factor(24))
				.withMessage("slot must be in 0..23, was 24");
		assertThatIllegalArgumentException().isThrownBy(() -> factors.factor(-1))
				.withMessage("slot must be in 0..23, was -1");
		assertThatIllegalArgumentException().isThrownBy(() -> factors.factorAhead(0))
				.withMessage("stepsAhead must be >= 1, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> SeasonalFactor.adjusting(24, Holt.of(0.3, 0.1)).forecast(0))
				.withMessage("stepsAhead must be >= 1, was 0");
		assertThatNullPointerException().isThrownBy(() -> SeasonalFactor.adjusting(24, null))
				.withMessage("deseasonalised");
	}

	@Test
	void everyFactorIsOneUntilAFullSeasonWasSeen() {
		SeasonalFactor factors = SeasonalFactor.of(3);
		factors.observe(1.0);
		factors.observe(9.0);
		assertThat(factors.ready()).isFalse();
		assertThat(factors.factor(0)).isEqualTo(1.0);
		assertThat(factors.factor(1)).isEqualTo(1.0);
		assertThat(factors.factor(2)).isEqualTo(1.0);

		factors.observe(5.0);
		assertThat(factors.ready()).isTrue();
		assertThat(factors.factor(0)).isCloseTo(0.2, within(1e-15));
		assertThat(factors.factor(1)).isCloseTo(1.8, within(1e-15));
		assertThat(factors.factor(2)).isCloseTo(1.0, within(1e-15));
	}

	@Test
	void slotsWrapAfterASeason() {
		SeasonalFactor factors = SeasonalFactor.of(3);
		assertThat(factors.nextSlot()).isZero();
		factors.observe(1.0);
		factors.observe(2.0);
		assertThat(factors.nextSlot()).isEqualTo(2);
		factors.observe(3.0);
		assertThat(factors.nextSlot()).isZero();
		assertThat(factors.observations()).isEqualTo(3);
		assertThat(factors.seasonLength()).isEqualTo(3);
		// next value goes to slot 0 (factor 0.5), two ahead to slot 1, four ahead to slot 0 again
		assertThat(factors.factorAhead(1)).isCloseTo(0.5, within(1e-15));
		assertThat(factors.factorAhead(2)).isCloseTo(1.0, within(1e-15));
		assertThat(factors.factorAhead(3)).isCloseTo(1.5, within(1e-15));
		assertThat(factors.factorAhead(4)).isCloseTo(0.5, within(1e-15));
	}

	@Test
	void aSlotsFactorIsTheMeanOfItsValuesOverTheMeanOfTheSlotMeans() {
		SeasonalFactor factors = SeasonalFactor.of(2);
		for (double v : new double[] { 2.0, 6.0, 4.0 }) {
			factors.observe(v);
		}
		// slot means 3 and 6; each slot counts once: overall 4.5, so the factors average 1
		assertThat(factors.factor(0)).isCloseTo(3.0 / 4.5, within(1e-15));
		assertThat(factors.factor(1)).isCloseTo(6.0 / 4.5, within(1e-15));

		factors.observe(8.0);
		// whole seasons: the overall mean is the mean of all values (5)
		assertThat(factors.factor(0)).isCloseTo(0.6, within(1e-15));
		assertThat(factors.factor(1)).isCloseTo(1.4, within(1e-15));
	}

	@Test
	void anAllZeroHistoryHasNoSeason() {
		SeasonalFactor factors = SeasonalFactor.of(4);
		for (int i = 0; i < 8; i++) {
			factors.observe(0.0);
		}
		assertThat(factors.ready()).isTrue();
		for (int slot = 0; slot < 4; slot++) {
			assertThat(factors.factor(slot)).isEqualTo(1.0);
		}
		assertThat(factors.toString()).contains("seasonLength=4", "n=8");
	}

	@Test
	void adjustedDividesObservationsAndMultipliesForecasts() {
		Recording inner = new Recording(10.0);
		SeasonalFactor.Adjusted adjusted = new SeasonalFactor.Adjusted(SeasonalFactor.of(2), inner);

		adjusted.observe(1.0);
		adjusted.observe(3.0);
		// first season: factors 1, the inner forecaster sees the raw values
		assertThat(inner.seen).containsExactly(1.0, 3.0);
		assertThat(adjusted.factors().factor(0)).isCloseTo(0.5, within(1e-15));

		adjusted.observe(2.0);
		adjusted.observe(6.0);
		// divided by the factor known before each value: slot 0 = 1 / 2, then slot 1 = 3 / 2.25
		assertThat(inner.seen).containsExactly(1.0, 3.0, 4.0, 4.5);
		assertThat(adjusted.observations()).isEqualTo(4);
		assertThat(adjusted.ready()).isTrue();

		// slot means 1.5 and 4.5: factors 0.5 and 1.5; next is slot 0
		assertThat(adjusted.forecast(1)).isCloseTo(10.0 * 0.5, within(1e-12));
		assertThat(adjusted.forecast(2)).isCloseTo(10.0 * 1.5, within(1e-12));
		assertThat(adjusted.forecast(3)).isCloseTo(10.0 * 0.5, within(1e-12));
		assertThat(inner.asked).containsExactly(1, 2, 3);
	}

	@Test
	void forecastsTheLastValueUntilTheProfileAndTheInnerForecasterAreReady() {
		SeasonalFactor.Adjusted adjusted = SeasonalFactor.adjusting(3, Holt.of(0.3, 0.1));
		assertThat(adjusted.ready()).isFalse();
		assertThat(adjusted.forecast(1)).isZero();
		adjusted.observe(7.0);
		adjusted.observe(8.0);
		assertThat(adjusted.deseasonalised().ready()).isTrue();
		assertThat(adjusted.ready()).isFalse();
		assertThat(adjusted.forecast(2)).isEqualTo(8.0);
		adjusted.observe(9.0);
		assertThat(adjusted.ready()).isTrue();
		// Holt saw 7, 8, 9 raw: level 9, trend 1; the next slot's factor is 7 / 8
		assertThat(adjusted.forecast(1)).isCloseTo(10.0 * 7.0 / 8.0, within(1e-12));

		Recording slow = new Recording(1.0).readyAfter(5);
		SeasonalFactor.Adjusted waiting = new SeasonalFactor.Adjusted(SeasonalFactor.of(2), slow);
		waiting.observe(4.0);
		waiting.observe(4.0);
		waiting.observe(6.0);
		assertThat(waiting.factors().ready()).isTrue();
		assertThat(waiting.ready()).isFalse();
		assertThat(waiting.forecast(1)).isEqualTo(6.0);
	}

	@Test
	void withHoltItLearnsAMultiplicativeDailyShape() {
		double[] shape = { 50.0, 100.0, 150.0, 100.0 };
		SeasonalFactor.Adjusted adjusted = SeasonalFactor.adjusting(4, Holt.of(0.5, 0.3));
		for (int t = 0; t < 400; t++) {
			adjusted.observe(shape[t % 4]);
		}
		for (int k = 1; k <= 8; k++) {
			assertThat(adjusted.forecast(k)).as("k=%d", k).isCloseTo(shape[(k - 1) % 4], within(1e-6));
		}
		assertThat(adjusted.factors().factor(2)).isCloseTo(1.5, within(1e-12));
		assertThat(adjusted.toString()).contains("SeasonalFactor", "Holt");
	}

	@Test
	void aSlotThatOnlyEverSawZeroForecastsZeroAndLeavesTheLevelAlone() {
		Recording inner = new Recording(80.0);
		SeasonalFactor.Adjusted adjusted = new SeasonalFactor.Adjusted(SeasonalFactor.of(2), inner);
		adjusted.observe(0.0);
		adjusted.observe(100.0);
		adjusted.observe(0.0);
		// slot 0's factor is 0: the inner forecaster observes its own one-step forecast instead
		assertThat(inner.seen).containsExactly(0.0, 100.0, 80.0);
		assertThat(adjusted.forecast(1)).isCloseTo(80.0 * 2.0, within(1e-12));
		assertThat(adjusted.forecast(2)).isZero();
	}

	/** Records what it observes and is asked; forecasts a constant. */
	static final class Recording implements Forecaster {

		final List<Double> seen = new ArrayList<>();
		final List<Integer> asked = new ArrayList<>();
		final double constant;
		int readyAfter = 1;

		Recording(double constant) {
			this.constant = constant;
		}

		Recording readyAfter(int values) {
			this.readyAfter = values;
			return this;
		}

		@Override
		public void observe(double value) {
			seen.add(value);
		}

		@Override
		public double forecast(int stepsAhead) {
			asked.add(stepsAhead);
			return constant;
		}

		@Override
		public boolean ready() {
			return seen.size() >= readyAfter;
		}

		@Override
		public long observations() {
			return seen.size();
		}
	}
}
